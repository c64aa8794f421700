"""Saved sessions: a prompt's KV pages written to session_dir by
POST /v1/sessions/{name}, listed, shown and deleted; a request with
"session" continues from them, also after a restart, with exactly the tokens
and top log-probs of a fresh server prefilling the same prompt (for dense,
window, R-SWA and top-k attention). Damaged, foreign or oversized files,
hostile names and prompts the session does not start are refused with a
clear error; the files of an encrypted model are encrypted."""
import hashlib
import json
import os
import subprocess

import openai
import pytest

from stride_server import SMOL, StrideServer, binary

MODEL = "SmolLM2-135M-Instruct.Q4_1.gguf"
DOC = " ".join(
    f"Ledger entry {i}: the clerk of the river town counted {i * 7 % 50 + 3} barrels of apples, "
    f"{i * 11 % 40 + 2} sacks of grain and noted that the bridge toll was {i % 9 + 1} coins."
    for i in range(1, 15))
QUESTION = "\nQuestion: how many sacks of grain were counted in entry 9?\nAnswer:"


def client(url):
    return openai.OpenAI(base_url=url + "/v1", api_key="x", max_retries=0, timeout=300)


def complete(url, prompt, session=None, n=8):
    extra = {"ignore_eos": True}
    if session:
        extra["session"] = session
    r = client(url).completions.create(model=MODEL, prompt=prompt, max_tokens=n, temperature=0, logprobs=5,
                                       extra_body=extra)
    lp = r.choices[0].logprobs
    return {"text": r.choices[0].text, "tokens": lp.tokens, "logprobs": lp.token_logprobs,
            "top": lp.top_logprobs}, r.usage


def save(srv, name, body):
    status, _, raw = srv.post("/v1/sessions/" + name, body)
    return status, json.loads(raw)


def session_args(d, *extra):
    return ["--session-dir", str(d), *extra]


@pytest.mark.parametrize("attention", ["dense", "window:size=64", "rswa:sinks=4,window=60,pos=rel",
                                       "topk:sparsity=0.75"])
def test_restore_after_restart_is_bit_identical_to_a_fresh_prefill(tmp_path, attention):
    d = tmp_path / "sessions"
    with StrideServer(SMOL, extra_args=session_args(d, "--attention", attention)) as s:
        status, saved = save(s, "doc", {"prompt": DOC})
        assert status == 200, saved
        n_tokens = saved["n_tokens"]
        assert n_tokens > 300
        assert saved["cached_tokens"] == n_tokens // 32 * 32
        path = d / "doc.stridekv"
        assert saved["bytes"] == os.path.getsize(path)
        assert saved["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()
        assert [e["name"] for e in json.loads(s.get("/v1/sessions")[2])["data"]] == ["doc"]
        same_server, usage = complete(s.url, DOC + QUESTION, session="doc")
    with StrideServer(SMOL, extra_args=session_args(d, "--attention", attention)) as s:
        restored, usage = complete(s.url, DOC + QUESTION, session="doc")
        assert usage.prompt_tokens_details.cached_tokens == n_tokens // 32 * 32
        assert s.metrics()["stride_session_pages_restored_total"] > 0
    with StrideServer(SMOL, extra_args=["--attention", attention], env={"STRIDE_CACHE_REUSE": "false"}) as s:
        fresh, usage = complete(s.url, DOC + QUESTION)
        assert usage.prompt_tokens_details is None or not usage.prompt_tokens_details.cached_tokens
    assert restored == fresh
    assert same_server == fresh


def test_list_show_delete_and_prefix_checks(tmp_path):
    d = tmp_path / "sessions"
    with StrideServer(SMOL, extra_args=session_args(d)) as s:
        assert save(s, "a", {"prompt": DOC})[0] == 200
        tokens = s.post("/tokenize", {"prompt": "The river town"})
        ids = json.loads(tokens[2])["tokens"]
        status, b = save(s, "b.v2", {"prompt_token_ids": ids})
        assert status == 200 and b["n_tokens"] == len(ids) and b["cached_tokens"] == 0, b
        status, _, raw = s.get("/v1/sessions")
        listed = json.loads(raw)["data"]
        assert [e["name"] for e in listed] == ["a", "b.v2"]
        status, _, raw = s.get("/v1/sessions/a")
        shown = json.loads(raw)
        assert status == 200 and shown["name"] == "a" and shown["attention"][0] == "dense", shown
        # The session's tokens must start the prompt.
        with pytest.raises(openai.BadRequestError) as e:
            complete(s.url, "Something else entirely." + QUESTION, session="a")
        assert "not a prefix" in str(e.value)
        with pytest.raises(openai.NotFoundError):
            complete(s.url, DOC, session="missing")
        # A prompt equal to the session's is fine (its last token is computed).
        _, usage = complete(s.url, DOC, session="a", n=2)
        assert usage.prompt_tokens_details.cached_tokens > 0
        status, _, raw = s.request("DELETE", "/v1/sessions/a")
        assert status == 200 and json.loads(raw)["deleted"] is True
        assert s.get("/v1/sessions/a")[0] == 404
        assert s.request("DELETE", "/v1/sessions/a")[0] == 404
        assert not (d / "a.stridekv").exists()
        assert s.request("PUT", "/v1/sessions/b.v2")[0] == 405
        assert s.post("/v1/sessions", {})[0] == 405


def test_hostile_names_and_bodies(tmp_path):
    d = tmp_path / "sessions"
    with StrideServer(SMOL, extra_args=session_args(d)) as s:
        for name in ["..", ".hidden", "a%2Fb", "%2e%2e%2fescape", "a" * 65, "a%00b", "sp%20ace", "-x"]:
            status, _, raw = s.post("/v1/sessions/" + name, {"prompt": "hello"})
            assert status == 400, (name, raw)
        status, _, raw = s.post("/v1/sessions/../../etc/x", {"prompt": "hello"})
        assert status in (400, 404)
        for body in [{}, {"prompt": 5}, {"prompt": "a", "messages": []}, {"prompt_token_ids": "abc"},
                     {"prompt_token_ids": [10 ** 12]}, {"prompt_token_ids": []}, {"messages": "x"}, [1, 2],
                     {"prompt": "a", "model": "other"}]:
            status, _, raw = s.post("/v1/sessions/ok", body)
            assert status in (400, 404), (body, raw)
        assert s.post("/v1/sessions/ok", b"{not json")[0] == 400
        with pytest.raises(openai.BadRequestError):
            complete(s.url, DOC, session="../x")
        with pytest.raises(openai.BadRequestError):
            complete(s.url, DOC, session=5)
        assert os.listdir(d) == []
        assert s.proc.poll() is None


def test_damaged_foreign_and_oversized_files_are_refused(tmp_path):
    d = tmp_path / "sessions"
    with StrideServer(SMOL, extra_args=session_args(d), env={"STRIDE_SESSION_MAX_TOTAL_BYTES": "40M"}) as s:
        status, saved = save(s, "doc", {"prompt": DOC})
        assert status == 200
        size = saved["bytes"]
        data = bytearray((d / "doc.stridekv").read_bytes())
        data[len(data) // 2] ^= 0x40
        (d / "bad.stridekv").write_bytes(bytes(data))
        (d / "short.stridekv").write_bytes(bytes(data[: len(data) // 3]))
        for name in ["bad", "short"]:
            with pytest.raises(openai.BadRequestError) as e:
                complete(s.url, DOC + QUESTION, session=name)
            assert "corrupt" in str(e.value) or "truncated" in str(e.value)
        # The total cap counts every file in the directory.
        n_more = (40 * 2 ** 20) // size
        codes = [save(s, f"copy{i}", {"prompt": DOC})[0] for i in range(n_more + 1)]
        assert codes[-1] == 413 and 200 in codes, codes
    # Another attention policy (same model) computes other pages: refused by name.
    with StrideServer(SMOL, extra_args=session_args(d, "--attention", "window:size=64")) as s:
        with pytest.raises(openai.BadRequestError) as e:
            complete(s.url, DOC + QUESTION, session="doc")
        assert "attention policy" in str(e.value)
    # A per-file cap below the file's size.
    with StrideServer(SMOL, extra_args=session_args(d), env={"STRIDE_SESSION_MAX_BYTES": str(size // 2)}) as s:
        assert save(s, "again", {"prompt": DOC})[0] == 413
        with pytest.raises(openai.APIStatusError) as e:
            complete(s.url, DOC + QUESTION, session="doc")
        assert e.value.status_code == 413


def test_chat_session_continues_a_conversation(tmp_path):
    d = tmp_path / "sessions"
    system = {"role": "system", "content": "You answer questions about these ledgers.\n" + DOC}
    turn = {"role": "user", "content": "How many sacks of grain were counted in entry 9?"}
    with StrideServer(SMOL, extra_args=session_args(d)) as s:
        status, saved = save(s, "chat", {"messages": [system]})
        assert status == 200, saved
        c = client(s.url)
        r = c.chat.completions.create(model=MODEL, messages=[system, turn], max_tokens=6, temperature=0,
                                      logprobs=True, top_logprobs=3, extra_body={"session": "chat"})
        assert r.usage.prompt_tokens_details.cached_tokens == saved["n_tokens"] // 32 * 32
        with_session = [(t.token, t.logprob) for t in r.choices[0].logprobs.content]
    with StrideServer(SMOL) as s:
        r = client(s.url).chat.completions.create(model=MODEL, messages=[system, turn], max_tokens=6, temperature=0,
                                                  logprobs=True, top_logprobs=3)
        assert with_session == [(t.token, t.logprob) for t in r.choices[0].logprobs.content]


def test_sessions_off(tmp_path):
    with StrideServer(SMOL) as s:
        assert s.get("/v1/sessions")[0] == 404
        assert s.post("/v1/sessions/x", {"prompt": "a"})[0] == 404
        with pytest.raises(openai.BadRequestError) as e:
            complete(s.url, DOC, session="x")
        assert "session_dir" in str(e.value)


def test_encrypted_model_writes_encrypted_sessions(tmp_path):
    key = tmp_path / "k.key"
    enc = tmp_path / "smol.enc.gguf"
    for args in (["model", "genkey", key], ["model", "encrypt", "--key-file", key, SMOL, enc]):
        subprocess.run([binary(), *map(str, args)], check=True, capture_output=True, timeout=300)
    d = tmp_path / "sessions"
    with StrideServer(str(enc), extra_args=session_args(d, "--model-key-file", key)) as s:
        status, saved = save(s, "sealed", {"prompt": DOC})
        assert status == 200, saved
        raw = (d / "sealed.stridekv").read_bytes()
        assert raw[:10] == b"STRIDEENC1"
        assert b"STRIDEKV" not in raw and b"model_sha256" not in raw
        model = client(s.url).models.list().data[0].id
        r = client(s.url).completions.create(model=model, prompt=DOC + QUESTION, max_tokens=6, temperature=0,
                                             extra_body={"session": "sealed"})
        assert r.usage.prompt_tokens_details.cached_tokens > 0
        sealed_text = r.choices[0].text
    with StrideServer(SMOL) as s:
        plain = client(s.url).completions.create(model=MODEL, prompt=DOC + QUESTION, max_tokens=6, temperature=0)
        assert plain.choices[0].text == sealed_text


def oracle_chat_tokens(messages, add_generation_prompt):
    """Tokens of `messages` rendered by Jinja2 with the GGUF's own template, tokenized by llama.cpp."""
    import jinja2
    import llama_cpp
    llm = llama_cpp.Llama(model_path=SMOL, vocab_only=True, verbose=False)
    env = jinja2.Environment(loader=jinja2.BaseLoader(), trim_blocks=False, lstrip_blocks=False)
    env.globals["raise_exception"] = lambda m: (_ for _ in ()).throw(ValueError(m))
    text = env.from_string(llm.metadata["tokenizer.chat_template"]).render(
        messages=messages, add_generation_prompt=add_generation_prompt, bos_token="<|im_start|>",
        eos_token="<|im_end|>")
    return len(llm.tokenize(text.encode(), add_bos=False, special=True))


def test_chat_sessions_leave_out_the_generation_prompt_unless_asked(tmp_path):
    messages = [{"role": "system", "content": "Answer from the ledgers."},
                {"role": "user", "content": "What did the clerk count?"}]
    assert oracle_chat_tokens(messages, False) < oracle_chat_tokens(messages, True)
    with StrideServer(SMOL, extra_args=session_args(tmp_path / "sessions")) as s:
        for gen in (False, True):
            body = {"messages": messages} if not gen else {"messages": messages, "add_generation_prompt": True}
            status, saved = save(s, f"gen-{gen}", body)
            assert status == 200, saved
            assert saved["n_tokens"] == oracle_chat_tokens(messages, gen)
            r = client(s.url).chat.completions.create(model=MODEL, messages=messages, max_tokens=1,
                                                      extra_body={"add_generation_prompt": gen})
            assert r.usage.prompt_tokens == oracle_chat_tokens(messages, gen)
