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
import os
import random
import sys
import threading
import time

from replica_cluster import Cluster, nginx_version
from replica_load import Load, one_request, summarize, timeline
from serving_common import OUT_DIR, cpu_name, metrics, plt, write_json


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


def replica_totals(cluster, names):
    """Sums of /metrics series over the replicas."""
    out = dict.fromkeys(names, 0.0)
    for r in cluster.replicas:
        m = metrics(r.port)
        for n in names:
            out[n] += m.get(n, 0.0)
    return out


def phase_disconnect(cluster, streams, max_tokens=256, events_before_close=2, seed=5):
    """`streams` clients open long streams through nginx and hang up after a
    couple of tokens: nginx must close the upstream connection, so every
    replica cancels the request and frees its pages."""
    counters = ["stride_request_success_total{finished_reason=\"cancelled\"}", "stride_generation_tokens_total"]
    before = replica_totals(cluster, counters)
    rng = random.Random(seed)

    def run():
        body = {"prompt": [rng.randrange(300, 20000) for _ in range(48)], "max_tokens": max_tokens,
                "temperature": 0, "ignore_eos": True, "stream": True}
        one_request(cluster.lb_port, body, close_after_tokens=events_before_close)

    t0 = time.time()
    threads = [threading.Thread(target=run) for _ in range(streams)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    t_closed = time.time()
    idle_after = None
    while time.time() - t_closed < 30:
        busy = replica_totals(cluster, ["stride_num_requests_running", "stride_num_requests_waiting",
                                        "stride_kv_cache_pages_used"])
        if not any(busy.values()):
            idle_after = time.time() - t_closed
            break
        time.sleep(0.05)
    after = replica_totals(cluster, counters)
    return {"streams": streams, "max_tokens": max_tokens, "closed_after_tokens": events_before_close,
            "seconds": round(t_closed - t0, 3), "idle_after_close_s": None if idle_after is None else round(idle_after, 3),
            "cancelled": after[counters[0]] - before[counters[0]],
            "tokens_generated": after[counters[1]] - before[counters[1]]}


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
    # A request sent after the victim died can only fail on it through a kept-alive
    # connection nginx had not yet seen close: nginx writes the request, the write
    # or the read fails, and a sent POST is not retried. A fresh connect is refused
    # and retried elsewhere.
    stale = [r for r in new_failed if r["upstream"] == victim.addr and r["t_start"] - t_dead < 1.0]
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
        "new_requests_failed_on_stale_keepalive": len(stale),
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
        # The rest runs under round robin: every replica carries its share of the streams.
        cluster.set_balance("roundrobin")
        ph = phase_disconnect(cluster, streams)
        result["disconnect"] = ph
        log(f"disconnect: {ph['streams']} streams of {ph['max_tokens']} tokens closed after {ph['closed_after_tokens']}: "
            f"{ph['cancelled']:.0f} cancelled on the replicas, {ph['tokens_generated']:.0f} tokens generated, "
            f"every replica idle with no KV page in use {ph['idle_after_close_s']} s after the last close")
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
    if not k["failed_all_on_victim"]:
        bad.append(f"kill: a request failed on another replica: {k['failures'][:3]}")
    if k["failed"] - k["new_requests_failed"] > k["in_flight_on_victim"]:
        bad.append(f"kill: {k['failed']} failed, more than the {k['in_flight_on_victim']} in flight on the victim")
    if k["new_requests_failed"] > k["new_requests_failed_on_stale_keepalive"] or \
            k["new_requests_failed_on_stale_keepalive"] > 2:
        bad.append(f"kill: {k['new_requests_failed']} requests sent after the kill failed "
                   f"({k['new_requests_failed_on_stale_keepalive']} on a stale keep-alive connection)")
    for key in ("rolling_restart", "rolling_admin"):
        r = result[key]
        if r["failed"]:
            bad.append(f"{key}: {r['failed']} failed: {r['failures'][:3]}")
        if set(r["versions"]) != {r["target"]}:
            bad.append(f"{key}: versions {r['versions']}, expected {r['target']}")
    d = result["disconnect"]
    if d["cancelled"] != d["streams"] or d["idle_after_close_s"] is None:
        bad.append(f"disconnect: {d['cancelled']} of {d['streams']} cancelled, idle after {d['idle_after_close_s']} s")
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
