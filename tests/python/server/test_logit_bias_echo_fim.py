"""logit_bias, echo with prompt log-probs (max_tokens 0: prompt scoring),
suffix as fill-in-the-middle and llama-server's /infill, end to end through
the official openai client and raw HTTP.

Oracles: the unbiased request's own top_logprobs for what a bias must change
(OpenAI's documented effect of -100 / +100), llama.cpp (llama-cpp-python,
logits_all) for every prompt token's log-prob, and llama.cpp's tokenizer and
greedy decode for the fill-in-the-middle prompt on Qwen2.5-Coder.
"""
import json
import math
import os

import llama_cpp
import numpy as np
import openai
import pytest

import official_spec as spec
from stride_server import ROOT, SMOL, StrideServer

SMOL_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
QWEN = os.path.join(ROOT, "models", "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf")
QWEN_NAME = os.path.basename(QWEN)
PROMPT = "The capital of France is"

# Prompt log-probs against llama.cpp on the same quantized file. The kernels
# differ (activation quantization, summation order): on SmolLM2 Q4_1 a
# token's log-prob differs by 0.1 nats on average and 0.5 at worst (the same
# as `stride score`'s, so this is the model's arithmetic, not the scoring
# path). A row taken from the wrong position would be off by nats.
MAX_LOGPROB_DIFF = 0.75
MAX_MEAN_LOGPROB_DIFF = 0.15


def llama(path, logits_all=False):
    return llama_cpp.Llama(model_path=path, n_ctx=512, n_batch=512, n_threads=2, seed=1, logits_all=logits_all, verbose=False)


def log_softmax(x):
    x = np.asarray(x, dtype=np.float64)
    m = x.max()
    return x - m - np.log(np.exp(x - m).sum())


@pytest.fixture(scope="module")
def srv():
    s = StrideServer(SMOL, extra_args=["--kv-budget", "64M"], env={"STRIDE_MAX_TOKENS_CAP": "256"})
    yield s
    s.__exit__(None, None, None)


@pytest.fixture(scope="module")
def client(srv):
    return openai.OpenAI(base_url=srv.url + "/v1", api_key="unused", max_retries=0, timeout=120)


def post(srv, path, body):
    status, _, raw = srv.request("POST", path, json.dumps(body).encode(), {"Content-Type": "application/json"})
    return status, json.loads(raw) if raw else None


def error_param(srv, path, body):
    status, b = post(srv, path, body)
    assert status == 400, b
    assert set(b["error"]) == {"message", "type", "param", "code"}, b
    return b["error"]["param"], b["error"]["message"]


# --- logit_bias -----------------------------------------------------------


@pytest.fixture(scope="module")
def smol_llama():
    return llama(SMOL, logits_all=True)


def one_token(llm, piece):
    """llama.cpp's id of the single token spelled `piece`."""
    ids = llm.tokenize(piece.encode(), add_bos=False, special=False)
    assert len(ids) == 1, (piece, ids)
    return ids[0]


def test_logit_bias_ban_takes_the_second_choice(client, smol_llama):
    base = client.completions.create(model=SMOL_NAME, prompt=PROMPT, max_tokens=1, temperature=0, logprobs=5)
    top = base.choices[0].logprobs.top_logprobs[0]
    ranked = sorted(top.items(), key=lambda kv: -kv[1])
    first, second = ranked[0][0], ranked[1][0]
    assert base.choices[0].text == first
    first_id = one_token(smol_llama, first)
    banned = client.completions.create(model=SMOL_NAME, prompt=PROMPT, max_tokens=1, temperature=0,
                                       logit_bias={str(first_id): -100})
    assert banned.choices[0].text == second
    # The same on chat, where greedy is temperature 0 too.
    msgs = [{"role": "user", "content": "Say one word."}]
    c0 = client.chat.completions.create(model=SMOL_NAME, messages=msgs, max_tokens=1, temperature=0,
                                        logprobs=True, top_logprobs=5)
    alts = c0.choices[0].logprobs.content[0].top_logprobs
    assert c0.choices[0].message.content == alts[0].token
    c1 = client.chat.completions.create(model=SMOL_NAME, messages=msgs, max_tokens=1, temperature=0,
                                        logit_bias={str(one_token(smol_llama, alts[0].token)): -100})
    assert c1.choices[0].message.content == alts[1].token


def test_logit_bias_plus_100_forces_a_token(client, smol_llama):
    forced = [one_token(smol_llama, " banana")]
    r = client.completions.create(model=SMOL_NAME, prompt=PROMPT, max_tokens=3, temperature=0,
                                  logit_bias={str(forced[0]): 100})
    assert r.choices[0].text == " banana" * 3
    # Sampled at temperature 1 as well: +100 leaves nothing else any mass.
    s = client.completions.create(model=SMOL_NAME, prompt=PROMPT, max_tokens=2, temperature=1, seed=7,
                                  logit_bias={str(forced[0]): 100})
    assert s.choices[0].text == " banana" * 2


def test_logit_bias_does_not_override_the_grammar(client, smol_llama):
    """+100 on a token the JSON grammar never allows at the start: the grammar's mask wins."""
    banana = one_token(smol_llama, " banana")
    r = client.chat.completions.create(model=SMOL_NAME, messages=[{"role": "user", "content": "Give me a JSON object."}],
                                       max_tokens=24, temperature=0, response_format={"type": "json_object"},
                                       logit_bias={str(banana): 100})
    text = r.choices[0].message.content
    assert text.lstrip().startswith("{") and "banana" not in text.split("{")[0], text


@pytest.mark.parametrize("bias,needle", [
    ({"49152": 1}, "'49152'"),      # one past SmolLM2's last id
    ({"-1": 1}, "'-1'"),
    ({"abc": 1}, "'abc'"),
    ({"12": 101}, "[-100, 100]"),
    ({"12": "high"}, "[-100, 100]"),
])
def test_logit_bias_bad_entries_are_400(srv, bias, needle):
    for path, body in [("/v1/completions", {"prompt": PROMPT, "max_tokens": 1}),
                       ("/v1/chat/completions", {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 1})]:
        param, message = error_param(srv, path, dict(body, model=srv.model_name, logit_bias=bias))
        assert param == "logit_bias" and needle in message, message


def test_logit_bias_bad_key_through_the_client(client):
    with pytest.raises(openai.BadRequestError) as e:
        client.completions.create(model=SMOL_NAME, prompt=PROMPT, max_tokens=1, logit_bias={"999999": 5})
    assert e.value.status_code == 400 and "999999" in str(e.value)


# --- echo and prompt log-probs ----------------------------------------------


def llama_prompt_logprobs(llm, ids):
    llm.reset()
    llm.eval(ids)
    rows = np.array(llm.scores[:len(ids)])
    return [float(log_softmax(rows[i - 1])[ids[i]]) for i in range(1, len(ids))], rows


def test_echo_prompt_logprobs_match_llama_cpp(client, smol_llama):
    text = "The quick brown fox jumps over the lazy dog because it was in a hurry to get home."
    r = client.completions.create(model=SMOL_NAME, prompt=text, max_tokens=0, echo=True, logprobs=3)
    ch = r.choices[0]
    assert ch.text == text and ch.finish_reason == "length"
    assert r.usage.completion_tokens == 0
    lp = ch.logprobs
    ids = smol_llama.tokenize(text.encode(), add_bos=False, special=False)
    assert len(lp.tokens) == len(ids) == r.usage.prompt_tokens
    assert "".join(lp.tokens) == text
    assert lp.token_logprobs[0] is None and lp.top_logprobs[0] is None
    offsets = [len("".join(lp.tokens[:i])) for i in range(len(lp.tokens))]
    assert lp.text_offset == offsets
    want, rows = llama_prompt_logprobs(smol_llama, ids)
    diffs = np.abs(np.array(lp.token_logprobs[1:]) - np.array(want))
    print(f"prompt log-probs vs llama.cpp: max |diff| {diffs.max():.4f}, mean {diffs.mean():.4f}")
    assert diffs.max() <= MAX_LOGPROB_DIFF and diffs.mean() <= MAX_MEAN_LOGPROB_DIFF
    for i in range(1, len(ids)):
        tops = lp.top_logprobs[i]
        assert len(tops) == 3
        ref = log_softmax(rows[i - 1])
        ref_top = [smol_llama.detokenize([int(t)]).decode("utf-8", "replace") for t in np.argsort(-ref)[:3]]
        # The best alternative is llama.cpp's best unless the two nearly tie there.
        best = max(tops, key=tops.get)
        gap = np.sort(ref)[-1] - np.sort(ref)[-2]
        assert best == ref_top[0] or gap < 0.5, (i, tops, ref_top)


def test_echo_then_generation_offsets_continue(client, smol_llama):
    r = client.completions.create(model=SMOL_NAME, prompt=PROMPT, max_tokens=4, temperature=0, echo=True, logprobs=1)
    plain = client.completions.create(model=SMOL_NAME, prompt=PROMPT, max_tokens=4, temperature=0)
    ch = r.choices[0]
    assert ch.text == PROMPT + plain.choices[0].text
    n_prompt = r.usage.prompt_tokens
    assert len(ch.logprobs.tokens) == n_prompt + r.usage.completion_tokens
    assert "".join(ch.logprobs.tokens) == ch.text
    assert ch.logprobs.text_offset == [len("".join(ch.logprobs.tokens[:i])) for i in range(len(ch.logprobs.tokens))]
    assert all(x is not None for x in ch.logprobs.token_logprobs[1:])


def test_echo_without_logprobs_and_max_tokens_zero(client):
    r = client.completions.create(model=SMOL_NAME, prompt=PROMPT, max_tokens=0, echo=True)
    assert r.choices[0].text == PROMPT and r.choices[0].logprobs is None
    z = client.completions.create(model=SMOL_NAME, prompt=PROMPT, max_tokens=0)
    assert z.choices[0].text == "" and z.choices[0].finish_reason == "length"
    assert z.usage.completion_tokens == 0 and z.usage.prompt_tokens > 0


def test_echo_of_a_token_prompt(client, smol_llama):
    ids = smol_llama.tokenize(PROMPT.encode(), add_bos=False, special=False)
    r = client.completions.create(model=SMOL_NAME, prompt=ids, max_tokens=0, echo=True, logprobs=0)
    assert r.choices[0].text == PROMPT
    want, _ = llama_prompt_logprobs(smol_llama, ids)
    assert np.abs(np.array(r.choices[0].logprobs.token_logprobs[1:]) - want).max() <= MAX_LOGPROB_DIFF


def test_streamed_echo_sends_the_prompt_first(client):
    chunks = list(client.completions.create(model=SMOL_NAME, prompt=PROMPT, max_tokens=3, temperature=0,
                                            echo=True, logprobs=1, stream=True))
    assert chunks[0].choices[0].text == PROMPT
    assert chunks[0].choices[0].logprobs.token_logprobs[0] is None
    text = "".join(c.choices[0].text for c in chunks if c.choices)
    plain = client.completions.create(model=SMOL_NAME, prompt=PROMPT, max_tokens=3, temperature=0)
    assert text == PROMPT + plain.choices[0].text
    no_lp = list(client.completions.create(model=SMOL_NAME, prompt=PROMPT, max_tokens=0, echo=True, stream=True))
    assert no_lp[0].choices[0].text == PROMPT


def assert_prompt_scored(smol_llama, lp, text, n_prompt_tokens=None):
    """`lp` (a choice's log-probs) starts with the prompt `text`, scored as llama.cpp scores it."""
    ids = smol_llama.tokenize(text.encode(), add_bos=False, special=False)
    assert "".join(lp.tokens[:len(ids)]) == text and lp.token_logprobs[0] is None
    want, _ = llama_prompt_logprobs(smol_llama, ids)
    assert np.abs(np.array(lp.token_logprobs[1:len(ids)]) - want).max() <= MAX_LOGPROB_DIFF


BATCH = ["The quick brown fox jumps over the lazy dog.", "One, two, three, four", PROMPT]


@pytest.mark.parametrize("as_tokens", [False, True])
def test_batched_prompts_are_each_echoed_and_scored(client, smol_llama, as_tokens):
    """The scoring use over a batch (lm-eval style): each choice is its own prompt, echoed and scored."""
    prompts = [smol_llama.tokenize(t.encode(), add_bos=False, special=False) for t in BATCH] if as_tokens else BATCH
    raw = client.completions.with_raw_response.create(model=SMOL_NAME, prompt=prompts, max_tokens=0, echo=True,
                                                      logprobs=1)
    spec.assert_valid("CreateCompletionResponse", raw.http_response.json())
    r = raw.parse()
    assert [c.index for c in r.choices] == [0, 1, 2]
    for c, text in zip(r.choices, BATCH):
        assert c.text == text and c.finish_reason == "length"
        assert len(c.logprobs.tokens) == len(smol_llama.tokenize(text.encode(), add_bos=False, special=False))
        assert_prompt_scored(smol_llama, c.logprobs, text)
    assert r.usage.prompt_tokens == sum(len(c.logprobs.tokens) for c in r.choices)


def test_echo_with_n_branches_and_a_batch(client, smol_llama):
    """n = 2 over two prompts: every branch starts with its prompt and its prompt's log-probs (scored once,
    on the pages the branches share), then its own tokens; greedy branches equal the plain greedy answer."""
    prompts = [PROMPT, BATCH[1]]
    raw = client.completions.with_raw_response.create(model=SMOL_NAME, prompt=prompts, n=2, max_tokens=4,
                                                      temperature=0, echo=True, logprobs=1)
    spec.assert_valid("CreateCompletionResponse", raw.http_response.json())
    r = raw.parse()
    assert len(r.choices) == 4
    for c in r.choices:
        text = prompts[c.index // 2]
        plain = client.completions.create(model=SMOL_NAME, prompt=text, max_tokens=4, temperature=0)
        assert c.text == text + plain.choices[0].text
        assert "".join(c.logprobs.tokens) == c.text
        assert c.logprobs.text_offset == [len("".join(c.logprobs.tokens[:i])) for i in range(len(c.logprobs.tokens))]
        assert_prompt_scored(smol_llama, c.logprobs, text)
    # Each prompt counted once.
    assert r.usage.prompt_tokens == sum(len(smol_llama.tokenize(t.encode(), add_bos=False, special=False))
                                        for t in prompts)


@pytest.mark.parametrize("logprobs", [None, 1])
def test_streamed_echo_of_a_batch_with_n(client, logprobs):
    prompts = [PROMPT, BATCH[1]]
    chunks = list(client.completions.with_raw_response.create(
        model=SMOL_NAME, prompt=prompts, n=2, max_tokens=3, temperature=0, echo=True, logprobs=logprobs,
        stream=True).parse())
    texts = {}
    for c in chunks:
        spec.assert_completion_chunk_valid(c.model_dump(mode="json", exclude_unset=True))
        for ch in c.choices:
            if ch.index not in texts:
                assert ch.text == prompts[ch.index // 2], (ch.index, ch.text)  # the echo comes first
                if logprobs:
                    assert ch.logprobs.token_logprobs[0] is None
            texts[ch.index] = texts.get(ch.index, "") + ch.text
    for i in range(4):
        plain = client.completions.create(model=SMOL_NAME, prompt=prompts[i // 2], max_tokens=3, temperature=0)
        assert texts[i] == prompts[i // 2] + plain.choices[0].text


def test_echo_is_completions_only(srv):
    param, _ = error_param(srv, "/v1/chat/completions",
                           {"model": srv.model_name, "messages": [{"role": "user", "content": "hi"}], "echo": True})
    assert param == "echo"
    # max_tokens 0 is the prompt alone, a completions use; chat needs at least one token.
    param, _ = error_param(srv, "/v1/chat/completions",
                           {"model": srv.model_name, "messages": [{"role": "user", "content": "hi"}], "max_tokens": 0})
    assert param == "max_tokens"


def test_suffix_on_a_model_without_fim_tokens_is_400(srv):
    param, message = error_param(srv, "/v1/completions", {"model": srv.model_name, "prompt": "def f():", "suffix": "\n"})
    assert param == "suffix" and "fill-in-the-middle" in message
    param, _ = error_param(srv, "/infill", {"input_prefix": "def f():", "input_suffix": "\n"})
    assert param == "input_suffix"


# --- fill-in-the-middle on Qwen2.5-Coder -----------------------------------

FIM_PREFIX = "def add(a, b):\n    return "
FIM_SUFFIX = "\n\nprint(add(1, 2))"
FIM_TOKENS = 6


@pytest.fixture(scope="module")
def qwen_srv():
    s = StrideServer(QWEN, extra_args=["--kv-budget", "64M"])
    yield s
    s.__exit__(None, None, None)


@pytest.fixture(scope="module")
def qwen_llama():
    return llama(QWEN, logits_all=True)


@pytest.fixture(scope="module")
def fim_reference(qwen_llama):
    """llama.cpp's tokens for the special-token FIM string, its greedy continuation and first-step log-probs."""
    text = f"<|fim_prefix|>{FIM_PREFIX}<|fim_suffix|>{FIM_SUFFIX}<|fim_middle|>"
    ids = qwen_llama.tokenize(text.encode(), add_bos=False, special=True)
    qwen_llama.reset()
    qwen_llama.eval(ids)
    first = log_softmax(qwen_llama.scores[len(ids) - 1])
    out = []
    for _ in range(FIM_TOKENS):
        tok = int(np.argmax(qwen_llama.scores[qwen_llama.n_tokens - 1]))
        if llama_cpp.llama_vocab_is_eog(llama_cpp.llama_model_get_vocab(qwen_llama.model), tok):
            break
        out.append(tok)
        qwen_llama.eval([tok])
    return ids, qwen_llama.detokenize(out).decode("utf-8", "replace"), first


def test_fim_suffix_matches_llama_cpp(qwen_srv, qwen_llama, fim_reference):
    ids, greedy, first = fim_reference
    c = openai.OpenAI(base_url=qwen_srv.url + "/v1", api_key="unused", max_retries=0, timeout=120)
    r = c.completions.create(model=QWEN_NAME, prompt=FIM_PREFIX, suffix=FIM_SUFFIX, max_tokens=FIM_TOKENS,
                             temperature=0, logprobs=5)
    assert r.usage.prompt_tokens == len(ids)
    assert r.choices[0].text == greedy, (r.choices[0].text, greedy)
    # The first step's distribution is that of llama.cpp's token sequence:
    # a different prompt sequence would move these log-probs far more.
    top = r.choices[0].logprobs.top_logprobs[0]
    for piece, lp in top.items():
        tid = qwen_llama.tokenize(piece.encode(), add_bos=False, special=False)
        if len(tid) == 1:
            assert abs(lp - first[tid[0]]) <= MAX_LOGPROB_DIFF, (piece, lp, first[tid[0]])


def test_infill_endpoint_in_llama_server_shape(qwen_srv, fim_reference):
    _, greedy, _ = fim_reference
    status, b = post(qwen_srv, "/infill", {"input_prefix": FIM_PREFIX, "input_suffix": FIM_SUFFIX,
                                           "n_predict": FIM_TOKENS, "temperature": 0})
    assert status == 200, b
    assert b["content"] == greedy and b["stop"] is True
    assert b["tokens_predicted"] <= FIM_TOKENS and b["stop_type"] in ("eos", "limit")
    # Streamed: content pieces, then the closing object.
    status, _, raw = qwen_srv.request("POST", "/infill", json.dumps(
        {"input_prefix": FIM_PREFIX, "input_suffix": FIM_SUFFIX, "n_predict": FIM_TOKENS, "temperature": 0,
         "stream": True}).encode(), {"Content-Type": "application/json"})
    assert status == 200
    events = [json.loads(line[6:]) for line in raw.decode().splitlines() if line.startswith("data: ")]
    assert events[-1]["stop"] is True and all(e["stop"] is False for e in events[:-1])
    assert "".join(e["content"] for e in events) == greedy
    param, _ = error_param(qwen_srv, "/infill", {"input_prefix": "x", "input_extra": [{"filename": "a", "text": "b"}]})
    assert param == "input_extra"
    param, _ = error_param(qwen_srv, "/infill", {"input_prefix": "x", "n_predict": "many"})
    assert param == "n_predict"


def test_infill_prompt_starts_the_middle(qwen_srv, qwen_llama):
    """/infill's `prompt` goes after the middle marker, as llama-server documents."""
    middle = "a"
    text = f"<|fim_prefix|>{FIM_PREFIX}<|fim_suffix|>{FIM_SUFFIX}<|fim_middle|>{middle}"
    ids = qwen_llama.tokenize(text.encode(), add_bos=False, special=True)
    status, b = post(qwen_srv, "/infill", {"input_prefix": FIM_PREFIX, "input_suffix": FIM_SUFFIX,
                                           "prompt": middle, "n_predict": 1, "temperature": 0})
    assert status == 200, b
    assert b["tokens_evaluated"] == len(ids)
    qwen_llama.reset()
    qwen_llama.eval(ids)
    want = qwen_llama.detokenize([int(np.argmax(qwen_llama.scores[len(ids) - 1]))]).decode("utf-8", "replace")
    assert b["content"] == want
