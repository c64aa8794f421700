"""Helpers shared by the serving robustness scripts (soak.py, faults.py,
overload.py): raw HTTP calls that report what happened instead of raising,
SSE reading with an optional early disconnect, /metrics parsing, the
server's RSS from /proc, percentiles, prompts of a given token length."""
import http.client
import json
import os
import random
import socket
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "python"))
from stride_server import GEMMA, ROOT, SMOL, StrideServer, binary, free_port  # noqa: E402,F401

OUT_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "out")


def pct(xs, p):
    if not xs:
        return None
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


def rss_kb(pid):
    """VmRSS of a process in KiB (None once it is gone)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def metrics(port, timeout=10):
    """/metrics as {name_with_labels: value}; {} when the server does not answer."""
    try:
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
        c.request("GET", "/metrics")
        r = c.getresponse()
        body = r.read().decode()
        c.close()
    except OSError:
        return {}
    out = {}
    for line in body.splitlines():
        if line.startswith("#") or not line.strip():
            continue
        name, value = line.rsplit(" ", 1)
        out[name] = float(value)
    return out


OPENAI_PATHS = ("/v1/chat/completions", "/v1/completions", "/v1/responses", "/v1/embeddings")
_served = {}


def served_model(port, timeout=30):
    """The first name the server on `port` serves (GET /v1/models), asked once per port."""
    if port not in _served:
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
        try:
            c.request("GET", "/v1/models")
            _served[port] = json.loads(c.getresponse().read())["data"][0]["id"]
        finally:
            c.close()
    return _served[port]


def with_model(port, path, body):
    """OpenAI's endpoints require `model`: a body that leaves it out gets the served model's name."""
    if path in OPENAI_PATHS and isinstance(body, dict) and "model" not in body:
        return {"model": served_model(port), **body}
    return body


def call(port, path, body=None, method="POST", headers=None, timeout=600, conn=None):
    """One request. Returns {status, headers, body (parsed JSON or text), elapsed, error}."""
    t0 = time.perf_counter()
    own = conn is None
    try:
        if own:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
        h = {"Content-Type": "application/json"}
        h.update(headers or {})
        body = with_model(port, path, body)
        data = None if body is None else (body if isinstance(body, (bytes, str)) else json.dumps(body))
        conn.request(method, path, body=data, headers=h)
        r = conn.getresponse()
        raw = r.read()
        try:
            parsed = json.loads(raw)
        except ValueError:
            parsed = raw.decode("utf-8", "replace")
        return {"status": r.status, "headers": dict(r.getheaders()), "body": parsed,
                "elapsed": time.perf_counter() - t0, "error": None}
    except Exception as e:  # noqa: BLE001 - callers count every failure
        return {"status": None, "headers": {}, "body": None, "elapsed": time.perf_counter() - t0, "error": repr(e)}
    finally:
        if own and conn is not None:
            conn.close()


DONE = object()  # what sse_events yields for `data: [DONE]`


def sse_events(response):
    """The `data:` events of a Server-Sent Events response, parsed as JSON; DONE
    for the final `[DONE]`, after which it stops."""
    for raw in response:
        line = raw.decode("utf-8", "replace").strip()
        if not line.startswith("data:"):
            continue
        data = line[5:].strip()
        if data == "[DONE]":
            yield DONE
            return
        yield json.loads(data)


def stream(port, path, body, disconnect_after=None, timeout=600, on_open=None):
    """A streamed completion. Reads `data:` events until [DONE], or closes the
    socket after `disconnect_after` events (a deliberate disconnect).

    Returns {status, events, text, finish_reason, done, usage, error_event,
    ttft, elapsed, error, disconnected}."""
    t0 = time.perf_counter()
    res = {"status": None, "events": 0, "text": "", "finish_reason": None, "done": False, "usage": None,
           "error_event": None, "ttft": None, "elapsed": None, "error": None, "disconnected": False}
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request("POST", path, body=json.dumps(dict(with_model(port, path, body), stream=True)),
                     headers={"Content-Type": "application/json"})
        r = conn.getresponse()
        res["status"] = r.status
        if r.status != 200:
            res["body"] = r.read().decode("utf-8", "replace")
            return res
        if on_open:
            on_open()
        for obj in sse_events(r):
            if obj is DONE:
                res["done"] = True
                break
            if "error" in obj:
                res["error_event"] = obj["error"]
                continue
            res["events"] += 1
            if obj.get("usage"):
                res["usage"] = obj["usage"]
            for ch in obj.get("choices", []):
                piece = ch.get("text") if "text" in ch else (ch.get("delta") or {}).get("content")
                if piece and res["ttft"] is None:
                    res["ttft"] = time.perf_counter() - t0
                res["text"] += piece or ""
                if ch.get("finish_reason"):
                    res["finish_reason"] = ch["finish_reason"]
            if disconnect_after is not None and res["events"] >= disconnect_after:
                res["disconnected"] = True
                conn.sock.shutdown(socket.SHUT_RDWR)
                break
    except Exception as e:  # noqa: BLE001
        res["error"] = repr(e)
    finally:
        res["elapsed"] = time.perf_counter() - t0
        conn.close()
    return res


def abandon(port, path, body, after_s):
    """Sends a non-streamed request and closes the connection after `after_s` seconds."""
    s = socket.create_connection(("127.0.0.1", port), timeout=30)
    data = json.dumps(body).encode()
    s.sendall(f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
              f"Content-Length: {len(data)}\r\n\r\n".encode() + data)
    time.sleep(after_s)
    s.close()


WORDS = ("the history of the city and its rivers bridges markets harbours walls gardens towers "
         "bells roads winters summers merchants scholars ships lanterns libraries").split()


def token_prompt(n, rng, vocab_lo=300, vocab_hi=20000):
    """A prompt of exactly n token ids (completions accept lists of ids)."""
    return [rng.randrange(vocab_lo, vocab_hi) for _ in range(n)]


def text_prompt(n_words, rng):
    return " ".join(rng.choice(WORDS) for _ in range(n_words))


def wait_idle(port, timeout=120):
    """Waits until no request is running or waiting; returns the last metrics."""
    t0 = time.time()
    m = {}
    while time.time() - t0 < timeout:
        m = metrics(port)
        if m and m.get("stride_num_requests_running", 1) == 0 and m.get("stride_num_requests_waiting", 1) == 0:
            return m
        time.sleep(0.5)
    return m


def write_json(path, obj):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        json.dump(obj, f, indent=1)


def plt():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as p
    return p


def cpu_name():
    """The CPU's model name from /proc/cpuinfo."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown"


def rng(seed):
    return random.Random(seed)
