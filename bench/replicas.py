#!/usr/bin/env python3
"""Three stride replicas behind nginx (deploy/nginx), under 16 streams:

  affinity  sessions that share a long per-session prefix, round robin against
            consistent hashing on X-Session-Id: the prefix-cache hit rate
            (tokens reused / tokens looked up, summed over the replicas' /metrics);
  kill      kill -9 one replica under load: which requests fail (only those in
            flight on it may) and how soon new requests succeed again;
  rolling   a rolling version switch one replica at a time (drain in nginx,
            SIGTERM, restart on v2, /ready, back in rotation), then a rolling
            rollback through POST /admin/model: zero failed requests.

nginx is Debian's, run as the current user in a temporary prefix; a watcher
thread polls every replica's /ready and reloads nginx when membership changes,
as `deploy/nginx/stride_nginx.py watch` does in production.

  ~/.cache/stride/venv/bin/python bench/replicas.py [--quick] [--out bench/out/replicas]

Writes OUT.json and OUT.png and exits non-zero when a check fails.
"""
import argparse
import http.client
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "deploy", "nginx"))
from serving_common import (DONE, OUT_DIR, SMOL, binary, cpu_name, free_port, metrics, plt,  # noqa: E402
                            sse_events, write_json)
from stride_nginx import Balancer, Watcher  # noqa: E402

ADMIN_KEY = "replicas-bench-admin"


class Replica:
    """One `stride serve` on a fixed loopback port, restartable in place."""

    def __init__(self, name, args, threads=1):
        self.name = name
        self.port = free_port()
        self.addr = f"127.0.0.1:{self.port}"
        self.args = list(args)
        self.threads = threads
        self.proc = None
        self.log_path = None
        self.starts = 0

    def start(self, args=None):
        if args is not None:
            self.args = list(args)
        self.starts += 1
        fd, self.log_path = tempfile.mkstemp(prefix=f"stride-{self.name}-{self.starts}-", suffix=".log")
        env = {k: v for k, v in os.environ.items() if not k.startswith("STRIDE_")}
        env["STRIDE_ADMIN_KEYS"] = ADMIN_KEY
        self.proc = subprocess.Popen([binary(), "serve", "--port", str(self.port), "--threads", str(self.threads)]
                                     + self.args, stdout=fd, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                     env=env)
        os.close(fd)

    def logs(self):
        with open(self.log_path, errors="replace") as f:
            return f.read()

    def wait_ready(self, timeout=120):
        t0 = time.time()
        while time.time() - t0 < timeout:
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.name} exited {self.proc.returncode}:\n{self.logs()[-3000:]}")
            if http_status(self.port, "GET", "/ready") == 200:
                return time.time() - t0
            time.sleep(0.05)
        raise RuntimeError(f"{self.name} not ready after {timeout}s")

    def kill9(self):
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()

    def sigterm(self, timeout=120):
        """SIGTERM: the replica drains its running requests and exits; returns its exit code."""
        self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout)

    def version(self):
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        c.request("GET", "/v1/models")
        body = json.loads(c.getresponse().read())
        c.close()
        return body["data"][0].get("version")

    def admin_switch(self, version):
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=120)
        c.request("POST", "/admin/model", body=json.dumps({"version": version}),
                  headers={"Authorization": f"Bearer {ADMIN_KEY}", "Content-Type": "application/json"})
        r = c.getresponse()
        body = r.read()
        c.close()
        if r.status != 200:
            raise RuntimeError(f"{self.name}: admin switch to {version}: {r.status} {body[:300]!r}")
        return json.loads(body)

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def http_status(port, method, path, timeout=2):
    try:
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
        c.request(method, path)
        r = c.getresponse()
        r.read()
        c.close()
        return r.status
    except OSError:
        return None


class Cluster:
    """N replicas serving one model directory (v1 and v2), nginx in front, a /ready watcher."""

    def __init__(self, n=3, threads=1, model=SMOL, v2_model=None, workers=1):
        self.root = tempfile.mkdtemp(prefix="stride-replicas-")
        os.chmod(self.root, 0o755)  # nginx workers may run as another user
        self.model_dir = os.path.join(self.root, "models")
        for version, path in (("v1", model), ("v2", v2_model or model)):
            subprocess.run([binary(), "model", "publish", "--model-dir", self.model_dir, "--version", version, path],
                           check=True, capture_output=True, timeout=300)
        base = ["--model-dir", self.model_dir, "--max-batch", "16", "--kv-budget", "256M"]
        self.base_args = base
        self.replicas = [Replica(f"r{i}", base + ["--model-version", "v1"], threads) for i in range(n)]
        self.lb = Balancer(os.path.join(self.root, "lb"))
        self.lb_port = free_port()
        self.events = []  # (time, text)
        self._watch_stop = threading.Event()
        self._watcher = None
        self.workers = workers

    def start(self, balance="roundrobin"):
        for r in self.replicas:
            r.start()
        for r in self.replicas:
            r.wait_ready()
        self.lb.init(f"127.0.0.1:{self.lb_port}", [r.addr for r in self.replicas], balance,
                     workers=self.workers, upstream_header=True)
        self.lb.start()
        self._watcher = threading.Thread(target=self._watch, daemon=True)
        self._watcher.start()

    def _watch(self):
        watcher = Watcher(self.lb)
        while not self._watch_stop.is_set():
            try:
                if watcher.poll():
                    self.event(f"nginx membership: not ready {self.lb.state()['not_ready'] or 'none'}")
            except Exception as e:  # noqa: BLE001 - retried on the next poll
                self.event(f"watch error: {e}")
            self._watch_stop.wait(0.25)

    def event(self, text):
        self.events.append((time.time(), text))

    def set_balance(self, balance):
        with self.lb.locked():
            st = self.lb.state()
            st["balance"] = balance
            self.lb._save(st)
            self.lb.reload()

    def replica(self, addr):
        return next((r for r in self.replicas if r.addr == addr), None)

    def close(self):
        self._watch_stop.set()
        if self._watcher:
            self._watcher.join(5)
        self.lb.stop()
        for r in self.replicas:
            r.stop()

    def cleanup(self):
        shutil.rmtree(self.root, ignore_errors=True)
        for r in self.replicas:
            if r.log_path and os.path.exists(r.log_path):
                os.unlink(r.log_path)


# ---- load ---------------------------------------------------------------------
def one_request(port, body, headers=None, timeout=120):
    """A streamed completion through nginx. A request succeeds when it gets 200
    and its stream ends with [DONE] after the expected tokens."""
    rec = {"t_start": time.time(), "t_end": None, "status": None, "upstream": None, "ok": False,
           "tokens": 0, "error": None, "usage": None}
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        h = {"Content-Type": "application/json"}
        h.update(headers or {})
        c.request("POST", "/v1/completions", body=json.dumps(body), headers=h)
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


# ---- phases ---------------------------------------------------------------------
def prefix_counters(cluster):
    hits = queries = 0.0
    for r in cluster.replicas:
        m = metrics(r.port)
        hits += m.get("stride_prefix_cache_hits_total", 0.0)
        queries += m.get("stride_prefix_cache_queries_total", 0.0)
    return hits, queries


def phase_affinity(cluster, balance, sessions=16, turns=6, prefix_tokens=512, suffix_tokens=32, seed=7):
    """Each session sends `turns` requests, one after the other, whose prompts
    share its own prefix of `prefix_tokens` random token ids."""
    cluster.set_balance(balance)
    h0, q0 = prefix_counters(cluster)
    rng = random.Random(seed)
    prefixes = [[rng.randrange(300, 20000) for _ in range(prefix_tokens)] for _ in range(sessions)]
    records, lock = [], threading.Lock()
    placement = {}

    def run(s):
        srng = random.Random(seed * 1000 + s)
        for t in range(turns):
            body = {"prompt": prefixes[s] + [srng.randrange(300, 20000) for _ in range(suffix_tokens)],
                    "max_tokens": 4, "temperature": 0, "ignore_eos": True, "stream": True}
            rec = one_request(cluster.lb_port, body, headers={"X-Session-Id": f"{balance}-{seed}-{s}"})
            with lock:
                records.append(rec)
                placement.setdefault(s, []).append(rec["upstream"])

    t0 = time.time()
    threads = [threading.Thread(target=run, args=(s,)) for s in range(sessions)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(600)
    h1, q1 = prefix_counters(cluster)
    hit_rate = (h1 - h0) / (q1 - q0) if q1 > q0 else 0.0
    replicas_per_session = [len(set(p)) for p in placement.values()]
    return {"balance": balance, "sessions": sessions, "placement": placement, "turns": turns, "prefix_tokens": prefix_tokens,
            "suffix_tokens": suffix_tokens, "hit_tokens": h1 - h0, "looked_up_tokens": q1 - q0,
            "hit_rate": hit_rate, "seconds": time.time() - t0,
            "mean_replicas_per_session": sum(replicas_per_session) / len(replicas_per_session),
            "load": summarize(records, t0)}


def phase_kill(cluster, streams, max_tokens, warm_s, after_s):
    victim = cluster.replicas[1]
    load = Load(cluster.lb_port, streams, max_tokens, seed=11)
    t0 = time.time()
    load.start()
    time.sleep(warm_s)
    m = metrics(victim.port)
    in_flight_metrics = int(m.get("stride_num_requests_running", 0) + m.get("stride_num_requests_waiting", 0))
    t_kill = time.time()
    victim.kill9()
    # The process is gone (its sockets closed) only after the kernel tore it down;
    # until then its listen queue still takes connections.
    t_dead = time.time()
    cluster.event(f"kill -9 {victim.name}")
    with load._lock:
        in_flight_client = len(load.active)
    time.sleep(after_s)
    records = load.stop()
    failed = [r for r in records if not r["ok"]]
    new = [r for r in records if r["t_start"] >= t_dead]
    new_failed = [r for r in new if not r["ok"]]
    first_new_ok = min((r["t_end"] for r in new if r["ok"]), default=None)
    # Restart it so the next phase has every replica again.
    victim.start()
    t_restart = time.time()
    victim.wait_ready()
    t_back = None
    deadline = time.time() + 30
    while time.time() < deadline:
        if victim.addr not in cluster.lb.state()["not_ready"]:
            t_back = time.time()
            break
        time.sleep(0.1)
    # Requests nginx had sent to the victim and that had not ended when it died
    # (the X-Stride-Upstream header names the replica, on a 502 too).
    spanning = [r for r in records if r["upstream"] == victim.addr and r["t_start"] < t_dead and r["t_end"] > t_kill]
    out = summarize(records, t0)
    out.update({
        "victim": victim.addr, "t_kill": round(t_kill - t0, 3),
        "in_flight_on_victim": len(spanning),
        "in_flight_on_victim_metrics": in_flight_metrics,
        "in_flight_all_replicas_client": in_flight_client,
        "failed_all_on_victim": all(r["upstream"] == victim.addr for r in failed),
        "failed_all_started_before_kill": all(r["t_start"] < t_dead for r in failed),
        "new_requests_after_kill": len(new), "new_requests_failed": len(new_failed),
        "recovery_s": round(max((r["t_start"] for r in new_failed), default=t_dead) - t_kill, 3),
        "first_new_request_ok_after_s": round(first_new_ok - t_kill, 3) if first_new_ok else None,
        "victim_teardown_s": round(t_dead - t_kill, 3),
        "restart_ready_s": round(time.time() - t_restart, 3) if t_back is None else round(t_back - t_restart, 3),
        "timeline": timeline(records, t0),
    })
    return out


def phase_rolling(cluster, streams, max_tokens, mode, target):
    """One replica at a time: drain it in nginx, switch it to `target` (restart or
    POST /admin/model), wait for /ready, put it back."""
    load = Load(cluster.lb_port, streams, max_tokens, seed=23 if mode == "restart" else 29)
    t0 = time.time()
    marks = []
    load.start()
    time.sleep(2)
    steps = []
    for r in cluster.replicas:
        s = {"replica": r.name}
        t = time.time()
        cluster.lb.set_drained(r.addr, True)
        marks.append((time.time() - t0, f"drain {r.name}"))
        s["drain_reload_s"] = round(time.time() - t, 3)
        t = time.time()
        if mode == "restart":
            rc = r.sigterm()
            s["sigterm_exit_code"] = rc
            s["sigterm_drain_s"] = round(time.time() - t, 3)
            r.start(cluster.base_args + ["--model-version", target])
            s["ready_s"] = round(r.wait_ready(), 3)
        else:
            s["switch_seconds"] = r.admin_switch(target).get("switch_seconds")
            r.wait_ready()
        s["version"] = r.version()
        marks.append((time.time() - t0, f"{r.name} on {s['version']}"))
        cluster.lb.set_drained(r.addr, False)
        s["step_s"] = round(time.time() - t, 3)
        steps.append(s)
        time.sleep(1.5)  # traffic on the switched replica before the next one leaves
    records = load.stop()
    out = summarize(records, t0)
    out.update({"mode": mode, "target": target, "steps": steps, "marks": marks,
                "versions": [r.version() for r in cluster.replicas], "timeline": timeline(records, t0)})
    return out


# ---- report -----------------------------------------------------------------------
def plot(result, path):
    p = plt()
    fig, axes = p.subplots(1, 3, figsize=(18, 5))
    colors = {}
    for ax, key, title in ((axes[0], "kill", "kill -9 one replica under 16 streams"),
                           (axes[1], "rolling_restart", "rolling switch v1 → v2 (drain, SIGTERM, restart)")):
        ph = result.get(key)
        if not ph:
            ax.set_visible(False)
            continue
        for i, (ts, te, up, ok) in enumerate(ph["timeline"]):
            c = colors.setdefault(up, f"C{len(colors)}") if ok else "red"
            ax.plot([ts, te], [i, i], color=c, lw=1.5 if ok else 3)
        if key == "kill":
            ax.axvline(ph["t_kill"], color="k", ls="--", label="kill -9")
        else:
            for t, text in ph["marks"]:
                ax.axvline(t, color="grey", ls=":", lw=0.8)
        ax.set_xlabel("seconds")
        ax.set_ylabel("request (by start time)")
        ax.set_title(f"{title}\n{ph['failed']} failed of {ph['requests']} (red)")
    aff = result.get("affinity", {})
    names = [b for b in ("roundrobin", "session") if b in aff]
    axes[2].bar(names, [aff[b]["hit_rate"] for b in names], color=["C7", "C2"][:len(names)])
    for i, b in enumerate(names):
        axes[2].text(i, aff[b]["hit_rate"], f"{aff[b]['hit_rate']:.2f}", ha="center", va="bottom")
    axes[2].set_ylim(0, 1)
    axes[2].set_ylabel("prefix-cache hit rate (tokens)")
    axes[2].set_title("sessions sharing a per-session prefix:\nround robin vs consistent hash on X-Session-Id")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def run_all(quick=False, out=None, log=print):
    streams = 16
    max_tokens = 8 if quick else 16
    cluster = Cluster()
    result = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "cpu": cpu_name(),
              "cores": os.cpu_count(), "replicas": 3, "streams": streams, "max_tokens": max_tokens,
              "nginx": nginx_version()}
    try:
        cluster.start()
        turns = 4 if quick else 6
        sessions = 16
        prefix = 256 if quick else 512
        result["affinity"] = {}
        for balance, seed in (("roundrobin", 7), ("session", 8)):
            ph = phase_affinity(cluster, balance, sessions, turns, prefix, seed=seed)
            result["affinity"][balance] = ph
            log(f"affinity {balance:10s}: hit rate {ph['hit_rate']:.3f} "
                f"({ph['hit_tokens']:.0f}/{ph['looked_up_tokens']:.0f} tokens), "
                f"{ph['mean_replicas_per_session']:.2f} replicas per session, {ph['load']['failed']} failed")
        ph = phase_kill(cluster, streams, max_tokens, warm_s=3 if quick else 5, after_s=5 if quick else 8)
        result["kill"] = ph
        log(f"kill -9: {ph['failed']} failed of {ph['requests']} (in flight on the victim: {ph['in_flight_on_victim']}; "
            f"running + waiting in its /metrics just before: {ph['in_flight_on_victim_metrics']}); "
            f"all failures on the victim and started before the kill: "
            f"{ph['failed_all_on_victim'] and ph['failed_all_started_before_kill']}; new requests after the kill "
            f"{ph['new_requests_after_kill']}, failed {ph['new_requests_failed']}, recovery {ph['recovery_s']} s, "
            f"first new success after {ph['first_new_request_ok_after_s']} s")
        ph = phase_rolling(cluster, streams, max_tokens, "restart", "v2")
        result["rolling_restart"] = ph
        log(f"rolling switch v1->v2 (restart): {ph['failed']} failed of {ph['requests']}; versions {ph['versions']}")
        ph = phase_rolling(cluster, streams, max_tokens, "admin", "v1")
        result["rolling_admin"] = ph
        log(f"rolling rollback v2->v1 (admin API): {ph['failed']} failed of {ph['requests']}; "
            f"versions {ph['versions']}")
        result["events"] = [(round(t - cluster.events[0][0], 3), e) for t, e in cluster.events] if cluster.events else []
    finally:
        cluster.close()
        result["nginx_error_log_tail"] = tail(os.path.join(cluster.lb.prefix, "error.log"), 20)
        cluster.cleanup()
    if out:
        write_json(out + ".json", result)
        plot(result, out + ".png")
        log(f"wrote {out}.json and {out}.png")
    return result


def checks(result):
    """The properties the deployment promises; returns a list of failures."""
    bad = []
    k = result["kill"]
    if not (k["failed_all_on_victim"] and k["failed_all_started_before_kill"]):
        bad.append(f"kill: a request failed that was not in flight on the victim: {k['failures'][:3]}")
    if k["failed"] > k["in_flight_on_victim"]:
        bad.append(f"kill: {k['failed']} failed, more than the {k['in_flight_on_victim']} in flight on the victim")
    if k["new_requests_failed"]:
        bad.append(f"kill: {k['new_requests_failed']} requests sent after the kill failed")
    for key in ("rolling_restart", "rolling_admin"):
        r = result[key]
        if r["failed"]:
            bad.append(f"{key}: {r['failed']} failed: {r['failures'][:3]}")
        if set(r["versions"]) != {r["target"]}:
            bad.append(f"{key}: versions {r['versions']}, expected {r['target']}")
    a = result["affinity"]
    if not a["session"]["hit_rate"] > a["roundrobin"]["hit_rate"]:
        bad.append(f"affinity: hashing {a['session']['hit_rate']:.3f} not above round robin "
                   f"{a['roundrobin']['hit_rate']:.3f}")
    for b in ("session", "roundrobin"):
        if a[b]["load"]["failed"]:
            bad.append(f"affinity {b}: {a[b]['load']['failed']} failed")
    return bad


def tail(path, n):
    try:
        with open(path, errors="replace") as f:
            return f.read().splitlines()[-n:]
    except OSError:
        return []


def nginx_version():
    try:
        from stride_nginx import nginx_binary
        return subprocess.run([nginx_binary(), "-v"], capture_output=True, text=True).stderr.strip()
    except Exception:  # noqa: BLE001
        return None


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="shorter phases (what the test runs)")
    ap.add_argument("--out", default=os.path.join(OUT_DIR, "replicas"))
    a = ap.parse_args()
    result = run_all(a.quick, a.out)
    bad = checks(result)
    for b in bad:
        print("FAIL:", b)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
