"""`stride serve` access control, limits and lifecycle: API keys (401), the IP
allowlist (403), the bounded queue (429 + Retry-After), request timeouts, the
audit log, start-up config errors, and SIGTERM draining."""
import concurrent.futures as cf
import json
import os
import subprocess
import tempfile
import socket
import time

import openai
import pytest

from stride_server import ROOT, SMOL, StrideServer, binary

KEY = "sk-test-0123456789"


def error_of(status, body, want_status, want_type):
    assert status == want_status, body
    e = json.loads(body)["error"]
    assert set(e) == {"message", "type", "param", "code"} and e["type"] == want_type, e
    return e


@pytest.fixture(scope="module")
def keyed():
    d = tempfile.mkdtemp()
    keys = os.path.join(d, "keys")
    with open(keys, "w") as f:
        f.write("# test keys\nother-key\n" + KEY + "\n")
    audit = os.path.join(d, "audit.jsonl")
    cfg = os.path.join(d, "cfg.yaml")
    with open(cfg, "w") as f:
        f.write(f"api_keys_file: {keys}\naudit_log: {audit}\nmax_batch: 1\nmax_queue: 1\n"
                f"request_timeout_s: 1.5\nkv_budget: 32M\n")
    s = StrideServer(SMOL, config=cfg)
    s.audit = audit
    yield s
    s.__exit__(None, None, None)


def test_api_keys(keyed):
    body = {"model": keyed.model_name, "prompt": "Hi", "max_tokens": 2, "temperature": 0}
    e = error_of(*keyed.post("/v1/completions", body)[::2], 401, "authentication_error")
    assert e["code"] == "invalid_api_key"
    error_of(*keyed.post("/v1/completions", body, headers={"Authorization": "Bearer wrong"})[::2], 401,
             "authentication_error")
    s, _, _ = keyed.post("/v1/completions", body, headers={"Authorization": f"Bearer {KEY}"})
    assert s == 200
    c = openai.OpenAI(base_url=keyed.url + "/v1", api_key=KEY, max_retries=0)
    assert c.models.list().data[0].id == "SmolLM2-135M-Instruct.Q4_1.gguf"
    r = c.completions.create(model="SmolLM2-135M-Instruct.Q4_1.gguf", prompt="Hi", max_tokens=2, temperature=0)
    assert r.usage.completion_tokens >= 1
    assert keyed.get("/health")[0] == 200  # probes need no key
    # The key never reaches the logs or the audit trail.
    assert KEY not in keyed.logs()
    lines = [json.loads(x) for x in open(keyed.audit)]
    requests = [x for x in lines if "kind" not in x]  # event lines (failed logins) have a kind
    ok = [x for x in requests if x["status"] == 200 and x["endpoint"] == "/v1/completions"]
    failed = [x for x in lines if x.get("kind") == "auth_failed"]
    assert len(failed) == 2 and all(x["client_ip"] == "127.0.0.1" for x in failed), failed
    assert ok and ok[-1]["key_id"] == "key#1" and ok[-1]["prompt_tokens"] > 0
    assert {"time", "request_id", "client_ip", "model_version", "completion_tokens", "latency_s"} <= set(ok[-1])
    assert "prompt" not in ok[-1]
    assert KEY not in open(keyed.audit).read()


def test_queue_full_429_and_timeout(keyed):
    auth = {"Authorization": f"Bearer {KEY}"}
    # 1200 tokens (within the 32M KV budget) take several seconds even at a
    # few hundred tokens/s, so the 1.5 s timeout always ends the first request.
    body = {"model": keyed.model_name, "prompt": "Count: one two three", "max_tokens": 1200, "temperature": 0, "ignore_eos": True}
    with cf.ThreadPoolExecutor(6) as ex:
        futs = [ex.submit(keyed.post, "/v1/completions", body, headers=auth) for _ in range(6)]
        results = [f.result() for f in futs]
    codes = sorted(r[0] for r in results)
    assert 429 in codes, codes
    r429 = next(r for r in results if r[0] == 429)
    assert r429[1].get("Retry-After") == "1"
    error_of(r429[0], r429[2], 429, "rate_limit_error")
    done = [json.loads(r[2]) for r in results if r[0] == 200]
    assert done, codes
    # A timed-out request stopped short as a max_tokens cap stops it: OpenAI's "length", and stride's reason
    # in the extension member.
    for d in done:
        assert d["choices"][0]["finish_reason"] == "length"
    assert any(d["choices"][0].get("stride_finish_reason") == "timeout" for d in done)
    m = keyed.metrics()
    assert m["stride_kv_cache_pages_used"] == 0


def test_allowlist_applies_at_accept():
    """A client outside the allowlist is closed at accept: it never gets a byte
    read or written, and the server lives on."""
    with StrideServer(SMOL, env={"STRIDE_ALLOWLIST": "10.0.0.0/8,192.168.0.0/16", "STRIDE_KV_BUDGET": "16M"},
                      wait=False) as s:
        got = None
        t0 = time.time()
        while time.time() - t0 < 60 and got is None:
            try:
                c = socket.create_connection(("127.0.0.1", s.port), timeout=5)
            except OSError:
                time.sleep(0.1)
                continue
            try:
                c.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
                got = c.recv(100)
            except (ConnectionResetError, BrokenPipeError):
                got = b""
            finally:
                c.close()
        assert got == b"", got
        assert s.proc.poll() is None, s.logs()


@pytest.mark.parametrize("args,env,needle", [
    (["--max-batch", "0"], {}, "max_batch"),
    ([], {"STRIDE_MAX_QUEUE": "lots"}, "max_queue"),
    (["--host", "0.0.0.0"], {}, "requires API keys"),
])
def test_bad_config_fails_at_startup(args, env, needle):
    with StrideServer(SMOL, extra_args=args, env=env, wait=False) as s:
        assert s.proc.wait(60) != 0
        assert needle in s.logs()


def test_unknown_config_key():
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
        f.write("max_batch: 4\nmax_bacth: 8\n")
    p = subprocess.run([binary(), "serve", "--model", SMOL, "--config", f.name], capture_output=True, timeout=60)
    os.unlink(f.name)
    assert p.returncode != 0 and b"unknown key 'max_bacth'" in p.stderr


def test_example_config_parses():
    cfg = os.path.join(ROOT, "configs", "stride.example.yaml")
    with StrideServer(SMOL, config=cfg, extra_args=["--kv-budget", "16M"]) as s:
        assert s.get("/ready")[0] == 200
        assert "start-up stage done" in s.logs()
        stages = [json.loads(x)["stage"] for x in s.logs().splitlines() if '"stage"' in x]
        assert stages == ["config", "model path", "sha256", "load weights + allocate KV pool",
                          "prepare kernels + warm-up"]


def test_sigterm_drains_and_exits_0():
    s = StrideServer(SMOL, extra_args=["--kv-budget", "16M"])
    try:
        c = openai.OpenAI(base_url=s.url + "/v1", api_key="x", max_retries=0, timeout=120)
        stream = c.completions.create(model="SmolLM2-135M-Instruct.Q4_1.gguf", prompt="Once upon a time",
                                      max_tokens=24, temperature=0, stream=True, extra_body={"ignore_eos": True})
        first = next(iter(stream))
        s.proc.send_signal(15)
        rest = list(stream)
        assert rest[-1].choices[0].finish_reason == "length"
        assert 1 + len(rest) >= 24
        assert s.proc.wait(60) == 0
        assert "draining" in s.logs()
    finally:
        s.__exit__(None, None, None)


def test_rate_limit_per_client():
    with StrideServer(SMOL, env={"STRIDE_RATE_LIMIT_RPM": "6", "STRIDE_KV_BUDGET": "16M"}) as s:
        body = {"model": s.model_name, "prompt": "Hi", "max_tokens": 1}
        assert s.post("/v1/completions", body)[0] == 200
        status, headers, raw = s.post("/v1/completions", body)
        e = error_of(status, raw, 429, "rate_limit_error")
        assert e["code"] == "rate_limit_exceeded"
        assert 1 <= int(headers["Retry-After"]) <= 10
        assert s.get("/health")[0] == 200  # probes are not limited
