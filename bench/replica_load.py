"""Load through the balancer for bench/replicas.py: streamed completions that
record which replica answered (nginx's X-Stride-Upstream) and whether they
ended whole, and a pool of client threads sending them back to back."""
import http.client
import json
import random
import socket
import threading
import time

from serving_common import DONE, sse_events, with_model

def one_request(port, body, headers=None, timeout=120, close_after_tokens=None):
    """A streamed completion through nginx. A request succeeds when it gets 200
    and its stream ends with [DONE] after the expected tokens. With
    `close_after_tokens` the client hangs up after that many tokens."""
    rec = {"t_start": time.time(), "t_end": None, "status": None, "upstream": None, "ok": False,
           "tokens": 0, "error": None, "usage": None}
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        h = {"Content-Type": "application/json"}
        h.update(headers or {})
        c.request("POST", "/v1/completions", body=json.dumps(with_model(port, "/v1/completions", body)), headers=h)
        r = c.getresponse()
        rec["status"] = r.status
        rec["upstream"] = (r.getheader("X-Stride-Upstream") or "").split(",")[-1].strip() or None
        if r.status != 200:
            rec["error"] = r.read()[:200].decode("utf-8", "replace")
            return rec
        if not body.get("stream"):
            obj = json.loads(r.read())
            rec["usage"] = obj.get("usage")
            rec["tokens"] = (obj.get("usage") or {}).get("completion_tokens", 0)
            rec["ok"] = rec["tokens"] == body["max_tokens"]
            return rec
        done, finish = False, None
        for obj in sse_events(r):
            if obj is DONE:
                done = True
                break
            if "error" in obj:
                rec["error"] = json.dumps(obj["error"])[:200]
                continue
            for ch in obj.get("choices", []):
                if ch.get("finish_reason"):
                    finish = ch["finish_reason"]
                else:
                    rec["tokens"] += 1
            if close_after_tokens is not None and rec["tokens"] >= close_after_tokens:
                c.sock.shutdown(socket.SHUT_RDWR)
                rec["error"] = "closed by the client"
                return rec
        # ignore_eos: a whole answer ends on its length, then [DONE].
        rec["ok"] = done and rec["error"] is None and finish == "length"
        if not rec["ok"] and rec["error"] is None:
            rec["error"] = f"stream ended after {rec['tokens']} tokens, finish={finish}, done={done}"
    except Exception as e:  # noqa: BLE001 - every failure is counted
        rec["error"] = repr(e)
    finally:
        rec["t_end"] = time.time()
        c.close()
    return rec


class Load:
    """`streams` threads, each sending streamed completions back to back until stopped."""

    def __init__(self, port, streams=16, max_tokens=16, prompt_tokens=48, seed=1):
        self.port, self.streams, self.max_tokens, self.prompt_tokens = port, streams, max_tokens, prompt_tokens
        self.records = []
        self.active = {}  # thread index -> t_start of its request in flight
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._rng = random.Random(seed)
        self._threads = []

    def _run(self, i):
        rng = random.Random(self._rng.random())
        while not self._stop.is_set():
            body = {"prompt": [rng.randrange(300, 20000) for _ in range(self.prompt_tokens)],
                    "max_tokens": self.max_tokens, "temperature": 0, "ignore_eos": True, "stream": True}
            with self._lock:
                self.active[i] = time.time()
            rec = one_request(self.port, body)
            with self._lock:
                self.active.pop(i, None)
                self.records.append(rec)

    def start(self):
        for i in range(self.streams):
            t = threading.Thread(target=self._run, args=(i,), daemon=True)
            t.start()
            self._threads.append(t)

    def stop(self):
        self._stop.set()
        for t in self._threads:
            t.join(180)
        return sorted(self.records, key=lambda r: r["t_start"])


def summarize(records, t0):
    ok = [r for r in records if r["ok"]]
    lat = sorted(r["t_end"] - r["t_start"] for r in ok)
    return {"requests": len(records), "ok": len(ok), "failed": len(records) - len(ok),
            "latency_p50_s": lat[len(lat) // 2] if lat else None,
            "latency_max_s": lat[-1] if lat else None,
            "failures": [{"t_start": round(r["t_start"] - t0, 3), "t_end": round(r["t_end"] - t0, 3),
                          "status": r["status"], "upstream": r["upstream"], "tokens": r["tokens"],
                          "error": r["error"]} for r in records if not r["ok"]]}


def timeline(records, t0):
    return [[round(r["t_start"] - t0, 3), round(r["t_end"] - t0, 3), r["upstream"], r["ok"]] for r in records]
