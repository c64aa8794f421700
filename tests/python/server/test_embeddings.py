"""POST /v1/embeddings end to end with the official openai client.

Oracles (never stride's own output):
  * all-MiniLM-L6-v2 (a BERT encoder, scripts/fetch_models): transformers'
    BertModel on the same folder with sentence-transformers' pooling (the mean
    over the tokens, then L2 normalization), tokens from Hugging Face
    tokenizers; cosine >= 0.9999 for every text.
  * decoder models: the tiny f32 llama and gemma3 (scripts/oracles/
    make_tiny_models.py) served from their GGUF with an f32 KV cache, against
    transformers' last_hidden_state (after the final norm) on the HF folder,
    pooled the same way (last token or mean, normalized or not).

Run: STRIDE_BIN=build/stride ~/.cache/stride/venv/bin/python -m pytest -q tests/python/server/test_embeddings.py
"""
import base64
import http.client
import json
import os
import threading

import numpy as np
import openai
import pytest
import torch
from tokenizers import Tokenizer
from transformers import AutoModel

from conftest import GEN, ROOT
from stride_server import StrideServer

MINILM = os.path.join(ROOT, "models", "all-MiniLM-L6-v2")
TINY = os.path.join(GEN, "tiny")

TEXTS = [
    "Hello world",
    "The quick brown fox jumps over the lazy dog.",
    "A man is eating food.",
    "A man is eating a piece of bread.",
    "The girl is carrying a baby.",
    "unicode: café naïve résumé Ångström façade",
    "CAFÉ NAÏVE Résumé ÅNGSTRÖM Müller Größe Straße",
    "Привет, как дела? Ελληνικά γράμματα",
    "中文测试：你好，世界！日本語のテキスト、カタカナ。한국어 텍스트",
    "emoji 🚀🔥 👨‍👩‍👧‍👦 ❤️ 🇫🇷 and 😀😃😄",
    "math ∑∫√∞ ≠ ≤ ≥ ± × ÷ → ⇒ ∀∃",
    "tiếng Việt có dấu: Nguyễn Thị Minh Khai",
    "numbers: 1234567 3.14159 -42 1,000,000 0x1F 2024-05-17",
    "def fib(n):\n    return n if n < 2 else fib(n - 1) + fib(n - 2)",
    "zero\u200bwidth\ufeffbom and a\u0301 combining accent\t\ttabs\r\n",
    "supercalifragilisticexpialidocious antidisestablishmentarianism",
    "brackets [like] these, (parens) and {braces}: all punctuation",
    " ".join(["Sentence embeddings map text to vectors whose cosine says how alike two texts are."] * 24),
]


def client(srv):
    return openai.OpenAI(base_url=srv.url + "/v1", api_key="unused", max_retries=0, timeout=300)


def cosine(a, b):
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    return float(a @ b / np.linalg.norm(a) / np.linalg.norm(b))


@pytest.fixture(scope="module")
def minilm_oracle():
    assert os.path.isdir(MINILM), f"{MINILM} missing: run scripts/fetch_models"
    tok = Tokenizer.from_file(os.path.join(MINILM, "tokenizer.json"))
    tok.no_truncation()
    tok.no_padding()
    model = AutoModel.from_pretrained(MINILM, dtype=torch.float32).eval()

    def embed(text):
        ids = tok.encode(text).ids
        with torch.no_grad():
            h = model(input_ids=torch.tensor([ids])).last_hidden_state[0].double()
        v = h.mean(0)
        return (v / v.norm()).numpy(), len(ids)
    return embed


@pytest.fixture(scope="module")
def minilm_server():
    srv = StrideServer(MINILM, env={"STRIDE_MAX_EMBEDDING_INPUTS": "32"})
    yield srv
    srv.stop()


def test_minilm_matches_transformers(minilm_server, minilm_oracle):
    r = client(minilm_server).embeddings.create(model="all-MiniLM-L6-v2", input=TEXTS, encoding_format="float")
    assert r.object == "list" and r.model == "all-MiniLM-L6-v2"
    assert [d.index for d in r.data] == list(range(len(TEXTS)))
    total = 0
    for text, d in zip(TEXTS, r.data):
        want, n_tokens = minilm_oracle(text)
        total += n_tokens
        assert len(d.embedding) == 384
        c = cosine(d.embedding, want)
        assert c >= 0.9999, f"cosine {c} for {text[:40]!r}"
        assert abs(np.linalg.norm(d.embedding) - 1.0) < 1e-5
    assert r.usage.prompt_tokens == total and r.usage.total_tokens == total
    assert any(minilm_oracle(t)[1] > 400 for t in TEXTS)  # the long text is long


def test_minilm_base64_equals_float(minilm_server):
    c = client(minilm_server)
    floats = c.embeddings.create(model="all-MiniLM-L6-v2", input=TEXTS[:5], encoding_format="float")
    raw = c.embeddings.create(model="all-MiniLM-L6-v2", input=TEXTS[:5], encoding_format="base64")
    default = c.embeddings.create(model="all-MiniLM-L6-v2", input=TEXTS[:5])  # the client asks base64, decodes
    for f, b, d in zip(floats.data, raw.data, default.data):
        assert isinstance(b.embedding, str)
        decoded = np.frombuffer(base64.b64decode(b.embedding), dtype="<f4")
        assert np.array_equal(decoded, np.asarray(f.embedding, dtype=np.float32))
        assert np.array_equal(np.asarray(d.embedding, dtype=np.float32), decoded)


def test_minilm_batching_keeps_order_and_values(minilm_server):
    c = client(minilm_server)
    texts = TEXTS[:8]
    batch = c.embeddings.create(model="all-MiniLM-L6-v2", input=texts, encoding_format="float")
    rev = c.embeddings.create(model="all-MiniLM-L6-v2", input=texts[::-1], encoding_format="float")
    for i, text in enumerate(texts):
        one = c.embeddings.create(model="all-MiniLM-L6-v2", input=text, encoding_format="float").data[0].embedding
        assert np.allclose(batch.data[i].embedding, one, atol=1e-5)
        assert np.allclose(rev.data[len(texts) - 1 - i].embedding, one, atol=1e-5)


def test_minilm_token_inputs_equal_text(minilm_server):
    tok = Tokenizer.from_file(os.path.join(MINILM, "tokenizer.json"))
    tok.no_truncation()
    tok.no_padding()
    c = client(minilm_server)
    ids = [tok.encode(t).ids for t in TEXTS[:3]]
    by_text = c.embeddings.create(model="all-MiniLM-L6-v2", input=TEXTS[:3], encoding_format="float")
    by_ids = c.embeddings.create(model="all-MiniLM-L6-v2", input=ids, encoding_format="float")
    one = c.embeddings.create(model="all-MiniLM-L6-v2", input=ids[0], encoding_format="float")
    for a, b in zip(by_text.data, by_ids.data):
        assert np.allclose(a.embedding, b.embedding, atol=1e-6)
    assert np.allclose(one.data[0].embedding, by_text.data[0].embedding, atol=1e-6)


@pytest.mark.parametrize("body,param", [
    ({}, "input"),
    ({"input": ""}, "input"),
    ({"input": []}, "input"),
    ({"input": [[]]}, "input"),
    ({"input": ["a", 1]}, "input"),
    ({"input": [["a"]]}, "input"),
    ({"input": [1, "a"]}, "input"),
    ({"input": [1.5]}, "input"),
    ({"input": {"text": "a"}}, "input"),
    ({"input": 42}, "input"),
    ({"input": [-1]}, "input"),
    ({"input": [30522]}, "input"),
    ({"input": [18446744073709551615]}, "input"),
    ({"input": [[101] * 513]}, "input"),
    ({"input": " ".join(["word"] * 600)}, "input"),
    ({"input": ["a"] * 33}, "input"),
    ({"input": "a", "encoding_format": "int8"}, "encoding_format"),
    ({"input": "a", "encoding_format": 1}, "encoding_format"),
    ({"input": "a", "dimensions": 100}, "dimensions"),
    ({"input": "a", "dimensions": "384"}, "dimensions"),
    ({"input": "a", "dimensions": 0}, "dimensions"),
    ({"input": "a", "user": 7}, "user"),
    ({"input": "a", "model": ["x"]}, "model"),
])
def test_minilm_rejects_bad_requests(minilm_server, body, param):
    status, _, raw = minilm_server.post("/v1/embeddings", {"model": minilm_server.model_name, **body})
    assert status == 400, raw
    err = json.loads(raw)["error"]
    assert err["param"] == param and err["type"] == "invalid_request_error"


def test_minilm_other_errors(minilm_server):
    status, _, raw = minilm_server.post("/v1/embeddings", {"input": "a", "model": "other"})
    assert status == 404 and json.loads(raw)["error"]["code"] == "model_not_found"
    status, _, _ = minilm_server.post("/v1/embeddings", "[1, 2]")
    assert status == 400
    status, _, raw = minilm_server.post("/v1/embeddings", {"model": minilm_server.model_name, "input": "a", "dimensions": 384, "user": "u"})
    assert status == 200 and len(json.loads(raw)["data"][0]["embedding"]) == 384
    # An encoder generates nothing: a clear 400, not a crash.
    name = minilm_server.model_name
    for path, body in [("/v1/chat/completions", {"model": name, "messages": [{"role": "user", "content": "hi"}]}),
                       ("/v1/completions", {"model": name, "prompt": "hi"}), ("/tokenize", {"prompt": "hi"})]:
        status, _, raw = minilm_server.post(path, body)
        assert status == 400 and json.loads(raw)["error"]["code"] == "embedding_model", raw
    status, _, raw = minilm_server.get("/v1/models")
    assert status == 200 and json.loads(raw)["data"][0]["id"] == "all-MiniLM-L6-v2"
    assert json.loads(raw)["data"][0]["max_model_len"] == 512


# ---- decoder models -----------------------------------------------------------------------

def _tiny(name):
    with open(os.path.join(TINY, "manifest.json")) as f:
        m = json.load(f)["models"][name]
    return os.path.join(TINY, m["gguf"]["f32"]), os.path.join(TINY, m["hf"]), m["n_vocab"]


def _hf_states(hf_dir, ids):
    model = AutoModel.from_pretrained(hf_dir, dtype=torch.float32, attn_implementation="eager").eval()
    with torch.no_grad():
        return [model(input_ids=torch.tensor([x])).last_hidden_state[0].double().numpy() for x in ids]


@pytest.mark.parametrize("name", ["llama", "gemma3"])
@pytest.mark.parametrize("pooling,normalize", [("last", "true"), ("mean", "false")])
def test_decoder_embeddings_match_transformers(name, pooling, normalize):
    gguf, hf_dir, n_vocab = _tiny(name)
    rng = np.random.default_rng(7)
    ids = [rng.integers(3, n_vocab, size=n).tolist() for n in (1, 5, 40, 77)]
    want = []
    for h in _hf_states(hf_dir, ids):
        v = h[-1] if pooling == "last" else h.mean(0)
        want.append(v / np.linalg.norm(v) if normalize == "true" else v)
    env = {"STRIDE_KV_TYPE": "f32", "STRIDE_EMBEDDING_NORMALIZE": normalize,
           "STRIDE_PREFILL_CHUNK": "16"}  # inputs longer than a step are pooled over several
    with StrideServer(gguf, env=env, extra_args=["--embedding-pooling", pooling]) as srv:
        r = client(srv).embeddings.create(model=os.path.basename(gguf), input=ids, encoding_format="float")
        assert r.usage.prompt_tokens == sum(len(x) for x in ids)
        for d, w in zip(r.data, want):
            got = np.asarray(d.embedding, dtype=np.float64)
            assert got.shape == w.shape
            assert cosine(got, w) >= 0.9999
            assert np.max(np.abs(got - w)) < 1e-4 * max(1.0, np.max(np.abs(w)))


def test_decoder_embeddings_beside_generation():
    """Embeddings run through the scheduler: a streamed completion keeps going
    while an embedding batch is served, and the embeddings equal those of an
    idle server."""
    gguf, hf_dir, n_vocab = _tiny("llama")
    ids = [[5 + (i * 7 + j) % 200 for j in range(30 + i)] for i in range(12)]
    env = {"STRIDE_KV_TYPE": "f32", "STRIDE_PREFILL_CHUNK": "16", "STRIDE_MAX_BATCH": "4"}
    with StrideServer(gguf, env=env) as srv:
        c = client(srv)
        idle = c.embeddings.create(model=os.path.basename(gguf), input=ids, encoding_format="float")
        text = []

        def stream():
            for chunk in c.completions.create(model=os.path.basename(gguf), prompt=[3, 4, 5], max_tokens=200,
                                              temperature=0, stream=True):
                text.append(chunk.choices[0].text if chunk.choices else "")
        t = threading.Thread(target=stream)
        t.start()
        busy = c.embeddings.create(model=os.path.basename(gguf), input=ids, encoding_format="float")
        t.join()
        assert len(text) > 10
        for a, b in zip(idle.data, busy.data):
            assert np.allclose(a.embedding, b.embedding, atol=1e-6)
        # Text inputs go through the model's own tokenizer.
        r = c.embeddings.create(model=os.path.basename(gguf), input=["hello", "world"], encoding_format="float")
        assert len(r.data) == 2 and len(r.data[0].embedding) == 64
        status, _, raw = srv.post("/v1/embeddings", {"model": srv.model_name, "input": [n_vocab]})
        assert status == 400 and json.loads(raw)["error"]["param"] == "input"


def test_decoder_embeddings_under_kv_pressure():
    """A KV pool too small for two generations, shared with 24 inputs: inputs
    wait, their chunks are deferred, the youngest sequences are preempted and
    recomputed (an input pools again from its first token), and every vector
    still equals transformers'; the pool is empty afterwards."""
    gguf, hf_dir, n_vocab = _tiny("llama")
    rng = np.random.default_rng(11)
    ids = [rng.integers(3, n_vocab, size=n).tolist() for n in (60, 70, 77, 50, 64, 40, 77, 33) * 3]
    want = [h[-1] / np.linalg.norm(h[-1]) for h in _hf_states(hf_dir, ids)]
    env = {"STRIDE_KV_TYPE": "f32", "STRIDE_PREFILL_CHUNK": "16", "STRIDE_MAX_BATCH": "4"}
    # f32 pages of 32 tokens x 2 kv heads x 16 dims (K and V): 8 KiB; 160 KiB = 20 pages over 3 layers,
    # fewer than the two generations need at their end (2 x 5 pages x 3 layers).
    with StrideServer(gguf, env=env, extra_args=["--kv-budget", "160K"]) as srv:
        c = client(srv)
        # Both generations must be resident together: on a fast machine one
        # finishes its 150 tokens in milliseconds, so a thread that starts
        # late would see an empty pool. Connect first, then send both bodies
        # back to back, and read the replies only after the embeddings.
        host, port = srv.url.split("//")[1].split(":")
        conns = [http.client.HTTPConnection(host, int(port), timeout=300) for _ in range(2)]
        for conn in conns:
            conn.connect()
        for seed, conn in enumerate(conns):
            body = {"model": os.path.basename(gguf), "prompt": [3 + seed, 4, 5], "max_tokens": 150,
                    "temperature": 0, "ignore_eos": True}
            conn.request("POST", "/v1/completions", json.dumps(body), {"Content-Type": "application/json"})
        r = c.embeddings.create(model=os.path.basename(gguf), input=ids, encoding_format="float")
        outs = []
        for conn in conns:
            reply = conn.getresponse()
            assert reply.status == 200
            outs.append(json.loads(reply.read())["usage"]["completion_tokens"])
            conn.close()
        assert outs == [150, 150]
        for d, w in zip(r.data, want):
            got = np.asarray(d.embedding, dtype=np.float64)
            assert cosine(got, w) >= 0.9999
            assert np.max(np.abs(got - w)) < 1e-4
        m = srv.metrics()
        assert m["stride_num_preemptions_total"] > 0  # the generations alone cannot both fit
        assert m["stride_kv_cache_pages_used"] == 0
