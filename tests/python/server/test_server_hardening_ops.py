"""Operational hardening through the real binary: /tokenize is rate-limited,
/metrics can require a key, the audit log records failed logins and admin
actions, is 0600, is reopened on SIGHUP (logrotate), and reports the tokens a
client that hung up really received."""
import json
import os
import signal
import socket
import stat
import time

from stride_server import SMOL, StrideServer


def lines(path):
    with open(path) as f:
        return [json.loads(l) for l in f if l.strip()]


def wait_for(pred, timeout=10):
    t0 = time.time()
    while time.time() - t0 < timeout:
        if pred():
            return True
        time.sleep(0.05)
    return False


def test_tokenize_is_rate_limited():
    with StrideServer(SMOL, extra_args=["--kv-budget", "16M"], env={"STRIDE_RATE_LIMIT_RPM": "6"}) as s:
        assert s.post("/tokenize", {"prompt": "hello"})[0] == 200
        status, headers, body = s.post("/tokenize", {"prompt": "hello"})
        assert status == 429 and int(headers["Retry-After"]) >= 1, body
        status, _, body = s.post("/detokenize", {"tokens": [1, 2]})
        assert status == 429, body
        assert s.get("/health")[0] == 200


def test_metrics_can_require_a_key():
    env = {"STRIDE_API_KEYS": "k1", "STRIDE_METRICS_REQUIRE_KEY": "true"}
    with StrideServer(SMOL, extra_args=["--kv-budget", "16M"], env=env) as s:
        assert s.get("/metrics")[0] == 401
        status, _, body = s.get("/metrics", headers={"Authorization": "Bearer k1"})
        assert status == 200 and b"stride_kv_cache_pages_used" in body
    with StrideServer(SMOL, extra_args=["--kv-budget", "16M"], env={"STRIDE_API_KEYS": "k1"}) as s:
        assert s.get("/metrics")[0] == 200  # the default: open to scrapers


def test_audit_log_events_mode_reopen_and_delivered_tokens(tmp_path):
    log = tmp_path / "audit.jsonl"
    env = {"STRIDE_API_KEYS": "user-key", "STRIDE_ADMIN_KEYS": "admin-key", "STRIDE_AUDIT_LOG": str(log)}
    with StrideServer(SMOL, extra_args=["--kv-budget", "32M"], env=env) as s:
        assert stat.S_IMODE(os.stat(log).st_mode) == 0o600
        assert s.post("/v1/completions", {"model": s.model_name, "prompt": "x"}, headers={"Authorization": "Bearer wrong"})[0] == 401
        assert s.post("/admin/model", {"version": "v9"}, headers={"Authorization": "Bearer user-key"})[0] == 401
        status, _, body = s.post("/admin/model", {"model": SMOL}, headers={"Authorization": "Bearer admin-key"})
        assert status == 200, body
        assert wait_for(lambda: any(l.get("kind") == "admin_model_switch" for l in lines(log)))
        kinds = [l.get("kind") for l in lines(log)]
        assert kinds.count("auth_failed") == 2, kinds
        assert all("wrong" not in json.dumps(l) and "user-key" not in json.dumps(l) for l in lines(log))

        # logrotate: move the file away, SIGHUP, and new lines go to a new file.
        rotated = tmp_path / "audit.jsonl.1"
        os.rename(log, rotated)
        s.proc.send_signal(signal.SIGHUP)
        assert wait_for(lambda: log.exists())
        assert stat.S_IMODE(os.stat(log).st_mode) == 0o600
        assert s.wait_ready() is None

        # A streaming client that reads a few chunks and hangs up.
        c = socket.create_connection(("127.0.0.1", s.port), timeout=60)
        data = json.dumps({"model": s.model_name, "prompt": "Once upon a time", "max_tokens": 400, "temperature": 0,
                           "ignore_eos": True, "stream": True}).encode()
        c.sendall((f"POST /v1/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer user-key\r\n"
                   f"Content-Type: application/json\r\nContent-Length: {len(data)}\r\n\r\n").encode() + data)
        got = b""
        while got.count(b"data: ") < 10:
            got += c.recv(65536)
        c.close()
        seen = got.count(b"data: ")

        def disconnected():
            return [l for l in lines(log) if l.get("finish_reason") == "client_disconnected"]
        assert wait_for(lambda: disconnected(), timeout=20), lines(log)
        rec = disconnected()[0]
        assert seen <= rec["completion_tokens"] < 400, (seen, rec)
        assert rec["key_id"] == "key#0"
        assert any(l.get("kind") == "sighup" for l in lines(log))
        assert all(l.get("kind") != "sighup" for l in lines(rotated))
