#!/usr/bin/env python3
"""Fault injection against `stride serve`; each fault records what was
expected, what happened and whether they agree:

  kill9_switch        kill -9 while POST /admin/model loads a new version, and
                      while `stride model publish` copies one in; the restarted
                      server serves the configured (last good) version
  corrupt_version     a new version with a flipped byte (sha256 mismatch), a
                      truncated GGUF with a matching record, random bytes: the
                      switch is refused (422) and the old version keeps serving
  sigterm_streams     SIGTERM with streams running: they finish, a request on
                      an open connection gets 503, the process exits 0
  offload_disk_full   the KV offload file on an 8 MiB tmpfs smaller than the
                      tier (mounted here, always unmounted): evictions past the
                      disk's end, and a disk already full at start-up
  pool_exhausted      a prompt larger than the whole KV pool, and one that
                      takes most of it, while small requests keep coming

Writes JSON and a PNG (one bar per check), prints a summary; exit status 1 when
any check disagrees. Needs root for the tmpfs.

  ~/.cache/stride/venv/bin/python bench/faults.py [--only kill9_switch,...] [--out bench/out/faults]
"""
import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import tempfile
import threading
import time

from serving_common import (GEMMA, OUT_DIR, SMOL, StrideServer, binary, call, metrics, rss_kb, stream,  # noqa: F401
                            token_prompt, wait_idle, write_json)

ADMIN = "faults-admin-key"


class Fault:
    def __init__(self, name):
        self.name = name
        self.checks = []  # (what, expected, observed, ok)
        self.notes = []

    def check(self, what, expected, observed, ok):
        self.checks.append({"what": what, "expected": expected, "observed": observed, "ok": bool(ok)})
        print(f"[{self.name}] {'ok  ' if ok else 'FAIL'} {what}: expected {expected}; observed {observed}", flush=True)
        return ok

    def note(self, s):
        self.notes.append(s)
        print(f"[{self.name}] {s}", flush=True)

    def as_dict(self):
        return {"fault": self.name, "ok": all(c["ok"] for c in self.checks) and bool(self.checks),
                "checks": self.checks, "notes": self.notes}


def publish(model_dir, version, path):
    return subprocess.run([binary(), "model", "publish", "--model-dir", model_dir, "--version", version, path],
                          capture_output=True, text=True, timeout=300)


def list_versions(model_dir):
    r = subprocess.run([binary(), "model", "list", "--model-dir", model_dir, "--json"], capture_output=True,
                       text=True, timeout=120)
    try:
        return r.returncode, json.loads(r.stdout)
    except ValueError:
        return r.returncode, r.stdout + r.stderr


def served_version(srv):
    r = call(srv.port, "/v1/models", method="GET", timeout=30)
    try:
        return r["body"]["data"][0]["version"]
    except (TypeError, KeyError, IndexError):
        return f"HTTP {r['status']} {r['error'] or ''}"


def completes(srv, n=4):
    r = call(srv.port, "/v1/completions", {"prompt": "The capital of France is", "max_tokens": n, "temperature": 0},
             timeout=120)
    return r["status"] == 200, r["status"], (r["body"] or {}).get("choices", [{}])[0].get("text") \
        if isinstance(r["body"], dict) else r["body"]


def versioned_server(model_dir, version, extra_env=None, wait=True):
    env = {"STRIDE_MODEL_DIR": model_dir, "STRIDE_ADMIN_KEYS": ADMIN}
    if version:  # else the server follows <model_dir>/ACTIVE
        env["STRIDE_MODEL_VERSION"] = version
    env.update(extra_env or {})
    return StrideServer(None, extra_args=["--kv-budget", "64M"], env=env, wait=wait)


def admin(srv, body, timeout=300):
    return call(srv.port, "/admin/model", body, headers={"Authorization": f"Bearer {ADMIN}"}, timeout=timeout)


def active_of(model_dir):
    try:
        with open(os.path.join(model_dir, "ACTIVE")) as fh:
            return fh.read().strip()
    except OSError as e:
        return f"unreadable: {e}"


def second_model():
    return GEMMA if os.path.exists(GEMMA) else SMOL


# ---------------------------------------------------------------------------------------------------------------
def kill9_switch(args):
    f = Fault("kill9_switch")
    d = tempfile.mkdtemp(prefix="stride-fault-models-")
    try:
        publish(d, "v1", SMOL)
        publish(d, "v2", second_model())
        # 1. kill -9 while the admin API loads v2 (the server follows ACTIVE, which publish set to v1).
        srv = versioned_server(d, None)
        th = threading.Thread(target=admin, args=(srv, {"version": "v2"}), daemon=True)
        th.start()
        time.sleep(args.kill_after)
        srv.proc.send_signal(signal.SIGKILL)
        srv.proc.wait(30)
        f.note(f"killed -9 {args.kill_after}s into the switch to v2 (exit {srv.proc.returncode})")
        srv.__exit__(None, None, None)
        rc, versions = list_versions(d)
        f.check("model dir intact after kill -9", "v1, v2 listed", [v.get("version") for v in versions]
                if isinstance(versions, list) else versions,
                isinstance(versions, list) and {v.get("version") for v in versions} == {"v1", "v2"})
        f.check("ACTIVE after kill -9 mid-switch", "v1", active_of(d), active_of(d) == "v1")
        srv = versioned_server(d, None, wait=False)
        try:
            srv.wait_ready(120)
            v = served_version(srv)
            f.check("restart after kill -9 mid-switch serves", "v1", v, v == "v1")
            ok, st, text = completes(srv)
            f.check("restarted server completes", "200", f"{st} {text!r}", ok)
            # The switch itself still works after the restart.
            r = admin(srv, {"version": "v2"})
            f.check("switch to v2 after restart", "200 version v2",
                    f"{r['status']} {(r['body'] or {}).get('version') if isinstance(r['body'], dict) else r['body']}",
                    r["status"] == 200)
            # 2. kill -9 right after a completed switch: a restart serves the switched-to version.
            srv.proc.send_signal(signal.SIGKILL)
            srv.proc.wait(30)
        except AssertionError as e:
            f.check("restart after kill -9 mid-switch", "ready", str(e)[-300:], False)
        finally:
            srv.__exit__(None, None, None)
        for pinned, want in [(None, "v2"), ("v1", "v1")]:
            srv = versioned_server(d, pinned, wait=False)
            try:
                srv.wait_ready(120)
                v = served_version(srv)
                how = f"STRIDE_MODEL_VERSION={pinned}" if pinned else "following ACTIVE"
                f.check(f"restart after kill -9 following a completed switch to v2 ({how})", want, v, v == want)
            except AssertionError as e:
                f.check("restart after kill -9 following a switch", "ready", str(e)[-300:], False)
            finally:
                srv.__exit__(None, None, None)

        # 3. kill -9 while `stride model publish` copies v3 in: no half version, and v3 can be published again.
        src = second_model()
        p = subprocess.Popen([binary(), "model", "publish", "--model-dir", d, "--version", "v3", src],
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        time.sleep(0.05)
        p.send_signal(signal.SIGKILL)
        p.wait(30)
        rc, versions = list_versions(d)
        names = [v.get("version") for v in versions] if isinstance(versions, list) else versions
        f.note(f"publish of v3 killed -9 after 50 ms (exit {p.returncode}); model dir now holds "
               f"{sorted(os.listdir(d))}")
        f.check("model list after kill -9 during publish", "v1, v2 (v3 absent or whole)", names,
                isinstance(versions, list) and {"v1", "v2"} <= set(names))
        if isinstance(versions, list) and "v3" in names:
            srv = versioned_server(d, "v3", wait=False)
            try:
                srv.wait_ready(120)
                f.check("a v3 that appeared after the kill is whole (serves)", "ready", "ready", True)
            except AssertionError as e:
                f.check("a v3 that appeared after the kill is whole (serves)", "ready", str(e)[-300:], False)
            finally:
                srv.__exit__(None, None, None)
        else:
            r = publish(d, "v3", src)
            f.check("publish v3 again after the killed publish", "exit 0",
                    f"exit {r.returncode} {r.stderr.strip()[-300:]}", r.returncode == 0)
    finally:
        shutil.rmtree(d, ignore_errors=True)
    return f


def corrupt_version(args):
    f = Fault("corrupt_version")
    d = tempfile.mkdtemp(prefix="stride-fault-models-")
    scratch = tempfile.mkdtemp(prefix="stride-fault-files-")
    try:
        publish(d, "v1", SMOL)
        publish(d, "v2", SMOL)
        v2 = [os.path.join(d, "v2", n) for n in os.listdir(os.path.join(d, "v2")) if n.endswith(".gguf")][0]
        with open(v2, "r+b") as fh:  # flip one byte in the middle of the published file
            fh.seek(os.path.getsize(v2) // 2)
            b = fh.read(1)
            fh.seek(-1, 1)
            fh.write(bytes([b[0] ^ 0xFF]))
        trunc = os.path.join(scratch, "truncated.gguf")
        with open(SMOL, "rb") as src, open(trunc, "wb") as dst:
            dst.write(src.read(os.path.getsize(SMOL) // 3))
        publish(d, "v3", trunc)  # the record matches the truncated file
        junk = os.path.join(scratch, "random.gguf")
        with open(junk, "wb") as fh:
            fh.write(b"GGUF" + os.urandom(1 << 20))
        publish(d, "v4", junk)
        srv = versioned_server(d, "v1")
        try:
            # A stream running across the failed switches must finish untouched.
            holder = {}
            th = threading.Thread(target=lambda: holder.update(r=stream(
                srv.port, "/v1/completions", {"prompt": "Once upon a time", "max_tokens": 48, "temperature": 0,
                                              "ignore_eos": True})), daemon=True)
            th.start()
            for ver, what in (("v2", "flipped byte (sha256 mismatch)"), ("v3", "truncated GGUF, matching record"),
                              ("v4", "random bytes with a GGUF magic")):
                r = admin(srv, {"version": ver})
                msg = r["body"]["error"]["message"] if isinstance(r["body"], dict) and "error" in r["body"] \
                    else r["body"]
                f.check(f"switch to {ver} ({what})", "422 still serving 'v1'", f"{r['status']} {msg!r:.200}",
                        r["status"] == 422 and "still serving 'v1'" in str(msg))
                v = served_version(srv)
                ok, st, text = completes(srv)
                f.check(f"after the {ver} attempt: served version and a completion", "v1, 200", f"{v}, {st}",
                        v == "v1" and ok)
            th.join(120)
            res = holder.get("r", {})
            f.check("stream running across the failed switches", "48 tokens, finish length, [DONE]",
                    f"{res.get('events')} events, {res.get('finish_reason')}, done={res.get('done')}",
                    res.get("done") and res.get("finish_reason") == "length")
            f.check("server alive", "running", "running" if srv.proc.poll() is None else f"exit {srv.proc.returncode}",
                    srv.proc.poll() is None)
        finally:
            srv.__exit__(None, None, None)
        # A corrupt version named at start-up: refused with the reason, non-zero exit.
        srv = versioned_server(d, "v2", wait=False)
        try:
            srv.wait_ready(60)
            f.check("start-up on the corrupt v2", "refused (non-zero exit)", "served", False)
        except AssertionError as e:
            msg = str(e)
            f.check("start-up on the corrupt v2", "refused with the sha256 reason",
                    msg.splitlines()[0][:120] + " ... " + msg[-200:].replace("\n", " "),
                    srv.proc.poll() not in (None, 0) and "sha256" in msg.lower())
        finally:
            srv.__exit__(None, None, None)
    finally:
        shutil.rmtree(d, ignore_errors=True)
        shutil.rmtree(scratch, ignore_errors=True)
    return f


def sigterm_streams(args):
    f = Fault("sigterm_streams")
    srv = StrideServer(SMOL, extra_args=["--kv-budget", "64M", "--max-batch", "8"])
    try:
        n, max_tokens = 4, 48
        results = [None] * n
        opened = threading.Semaphore(0)

        def one(i):
            results[i] = stream(srv.port, "/v1/completions",
                                {"prompt": f"Story number {i}:", "max_tokens": max_tokens, "temperature": 0,
                                 "ignore_eos": True, "stream_options": {"include_usage": True}},
                                on_open=opened.release)

        import http.client
        keep = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=60)
        keep.request("GET", "/health")
        keep.getresponse().read()  # an idle keep-alive connection
        threads = [threading.Thread(target=one, args=(i,), daemon=True) for i in range(n)]
        for t in threads:
            t.start()
        for _ in range(n):
            opened.acquire(timeout=60)
        time.sleep(0.3)
        t_sig = time.time()
        srv.proc.send_signal(signal.SIGTERM)
        time.sleep(0.2)
        r_keep = call(srv.port, "/v1/completions", {"prompt": "late", "max_tokens": 2}, conn=keep, timeout=30)
        r_ready = call(srv.port, "/ready", method="GET", timeout=5)
        r_new = call(srv.port, "/v1/completions", {"prompt": "late", "max_tokens": 2}, timeout=5)
        for t in threads:
            t.join(120)
        try:
            rc = srv.proc.wait(60)
        except subprocess.TimeoutExpired:
            rc = "still running after 60 s"
        exit_s = time.time() - t_sig
        f.check("running streams after SIGTERM", f"{n} finish with {max_tokens} tokens, length, [DONE]",
                [(r or {}).get("usage", {}) and r["usage"].get("completion_tokens") for r in results] +
                [(r or {}).get("finish_reason") for r in results],
                all(r and r["done"] and r["finish_reason"] == "length" and r["usage"] and
                    r["usage"]["completion_tokens"] == max_tokens for r in results))
        body = r_keep["body"]
        f.check("new request on an open keep-alive connection during the drain", "503 draining",
                f"{r_keep['status']} {body if not isinstance(body, dict) else body.get('error', {}).get('code')} "
                f"{r_keep['error'] or ''}", r_keep["status"] == 503)
        f.check("new connection during the drain", "503, or refused (the listener is closed)",
                f"{r_new['status']} {r_new['error'] or ''}"[:200],
                r_new["status"] == 503 or (r_new["status"] is None and "Refused" in (r_new["error"] or "")))
        f.note(f"/ready during the drain: {r_ready['status']} {r_ready['body'] if r_ready['status'] else r_ready['error']}")
        f.check("exit status after the drain", "0", f"{rc} after {exit_s:.1f} s", rc == 0)
    finally:
        srv.stop(signal.SIGKILL) if srv.proc.poll() is None else None
        os.unlink(srv.log.name)
    return f


def _fill_prefix_cache(srv, n_prompts, prompt_tokens, seed=7):
    """Distinct prompts one after another, so finished sequences' pages go to the
    prefix cache and later ones evict them (to the offload tier when there is one)."""
    r = random.Random(seed)
    statuses = []
    for i in range(n_prompts):
        res = call(srv.port, "/v1/completions", {"prompt": token_prompt(prompt_tokens, r), "max_tokens": 2,
                                                 "temperature": 0}, timeout=120)
        statuses.append(res["status"] if res["status"] is not None else res["error"][:80])
        if res["status"] is None or (srv.proc.poll() is not None):
            break
    return statuses


def fill(path):
    """Writes zeros to path until the file system is full."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        for chunk in (1 << 20, 4096, 1):
            try:
                while True:
                    os.write(fd, b"\0" * chunk)
            except OSError:
                pass
    finally:
        os.close(fd)


def offload_disk_full(args):
    f = Fault("offload_disk_full")
    mnt = tempfile.mkdtemp(prefix="stride-fault-tmpfs-")
    mounted = False
    try:
        r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8M", "tmpfs", mnt], capture_output=True, text=True)
        if r.returncode != 0:
            f.check("mount an 8 MiB tmpfs", "mounted", r.stderr.strip(), False)
            return f
        mounted = True
        # 1. The tier (64 MiB) is larger than the disk (8 MiB): evicted pages land past the disk's end.
        offload = os.path.join(mnt, "kv-offload.bin")
        srv = StrideServer(SMOL, extra_args=["--kv-budget", "8M"], wait=False,
                           env={"STRIDE_KV_OFFLOAD_BYTES": "64M", "STRIDE_KV_OFFLOAD_FILE": offload})
        try:
            try:
                srv.wait_ready(120)
            except AssertionError as e:
                f.check("start with a 64 MiB offload file on an 8 MiB disk", "serves, or a start-up error naming "
                        "the file", next((ln for ln in str(e).splitlines() if "offload file" in ln), str(e).splitlines()[0])[-300:],
                        srv.proc.returncode not in (None, 0) and
                        ("offload" in str(e).lower() or "space" in str(e).lower()))
                srv = None
            if srv:
                call(srv.port, "/v1/completions", {"prompt": "warm up", "max_tokens": 2})
                m0 = metrics(srv.port)
                f.note(f"started: pool {m0.get('stride_kv_cache_pages_capacity')} pages, tier "
                       f"{m0.get('stride_kv_offload_slots_capacity')} slots; disk use "
                       f"{shutil.disk_usage(mnt).used >> 10} KiB")
                statuses = _fill_prefix_cache(srv, args.offload_prompts, 200)
                m1 = metrics(srv.port)
                alive = srv.proc.poll() is None
                f.note(f"after {len(statuses)} distinct prompts: offloaded "
                       f"{m1.get('stride_kv_offload_pages_offloaded_total')} pages, tier slots used "
                       f"{m1.get('stride_kv_offload_slots_used')}, disk use {shutil.disk_usage(mnt).used >> 10} KiB")
                tail = "" if alive else srv.logs()[-400:].replace("\n", " | ")
                f.check("requests while evictions fill the disk", "all 200, server alive",
                        f"{statuses.count(200)}/{len(statuses)} 200, statuses {sorted(set(map(str, statuses)))}, "
                        f"{'alive' if alive else f'exit {srv.proc.returncode} ' + tail}",
                        alive and statuses.count(200) == len(statuses) == args.offload_prompts)
                if alive:
                    ok, st, _ = completes(srv)
                    f.check("a completion afterwards", "200", st, ok)
        finally:
            if srv:
                srv.stop(signal.SIGKILL) if srv.proc.poll() is None else None
        # 2. The disk is already full when the server starts.
        if os.path.exists(offload):
            os.unlink(offload)
        fill(os.path.join(mnt, "filler"))
        f.note(f"disk filled: {shutil.disk_usage(mnt).free} bytes free")
        srv = StrideServer(SMOL, extra_args=["--kv-budget", "8M"], wait=False,
                           env={"STRIDE_KV_OFFLOAD_BYTES": "4M", "STRIDE_KV_OFFLOAD_FILE": offload})
        try:
            try:
                srv.wait_ready(120)
                statuses = _fill_prefix_cache(srv, args.offload_prompts, 200, seed=8)
                time.sleep(0.5)
                alive = srv.proc.poll() is None
                tail = srv.logs()[-400:].replace("\n", " | ")
                f.check("start with the disk already full, then evictions", "start-up error naming the file, or "
                        "serving with every request 200",
                        f"started; {statuses.count(200)}/{len(statuses)} 200; "
                        f"{'alive' if alive else f'exit {srv.proc.returncode} ' + tail}",
                        alive and statuses.count(200) == len(statuses))
            except AssertionError as e:
                msg = str(e)
                f.check("start with the disk already full", "start-up error naming the file",
                        msg.splitlines()[0][:100] + " ... " + msg[-250:].replace("\n", " | "),
                        srv.proc.returncode not in (None, 0, -7) and ("offload" in msg.lower() or
                                                                      "space" in msg.lower()))
        finally:
            srv.stop(signal.SIGKILL) if srv.proc.poll() is None else None
    finally:
        if mounted:
            subprocess.run(["umount", mnt], capture_output=True)
        try:
            os.rmdir(mnt)
        except OSError:
            pass
    return f


def pool_exhausted(args):
    f = Fault("pool_exhausted")
    srv = StrideServer(SMOL, extra_args=["--kv-budget", "16M", "--max-batch", "8"])
    try:
        call(srv.port, "/v1/completions", {"prompt": "warm up", "max_tokens": 2})  # gauges appear after a step
        m = metrics(srv.port)
        cap_pages = int(m["stride_kv_cache_pages_capacity"])
        info = subprocess.run([binary(), "info", "--model", SMOL], capture_output=True, text=True, timeout=60).stdout
        n_layer = int(next(l.split()[1] for l in info.splitlines() if l.startswith("layers:")))
        cap_tokens = cap_pages * 32 // n_layer  # every layer has its own pages
        f.note(f"pool: {cap_pages} pages of 32 tokens over {n_layer} layers ({cap_tokens} tokens per sequence)")
        r = random.Random(3)
        for label, n_tok, expect_ok in (("larger than the pool", int(cap_tokens * 1.5), False),
                                        ("most of the pool", int(cap_tokens * 0.8), True)):
            small = []
            stop = threading.Event()

            def smalls():
                rr = random.Random(len(label))
                while not stop.is_set():
                    small.append(call(srv.port, "/v1/completions",
                                      {"prompt": token_prompt(12, rr), "max_tokens": 8, "temperature": 0},
                                      timeout=120))

            workers = [threading.Thread(target=smalls, daemon=True) for _ in range(3)]
            for w in workers:
                w.start()
            time.sleep(0.5)
            big = call(srv.port, "/v1/completions", {"prompt": token_prompt(n_tok, r), "max_tokens": 8,
                                                     "temperature": 0}, timeout=300)
            time.sleep(1.0)
            stop.set()
            for w in workers:
                w.join(120)
            bad = [s for s in small if s["status"] != 200]
            err = big["body"]["error"] if isinstance(big["body"], dict) and "error" in big["body"] else None
            if expect_ok:
                f.check(f"a {n_tok}-token prompt ({label})", "200", f"{big['status']} {err or ''}",
                        big["status"] == 200)
            else:
                f.check(f"a {n_tok}-token prompt ({label})", "an error naming the pool (4xx/503), not a hang",
                        f"{big['status']} {err and err.get('message')!r:.200} after {big['elapsed']:.1f} s",
                        big["status"] in (400, 413, 503) and big["elapsed"] < 60)
            f.check(f"small requests beside the {label} prompt", "all 200",
                    f"{len(small) - len(bad)}/{len(small)} 200" + (f", e.g. {bad[0]['status']} {bad[0]['error']}"
                                                                    if bad else ""),
                    small and not bad)
        end = wait_idle(srv.port)
        f.check("pool after both", "running 0, server alive",
                f"running {end.get('stride_num_requests_running')}, pages used "
                f"{end.get('stride_kv_cache_pages_used')}, preemptions {end.get('stride_num_preemptions_total')}",
                srv.proc.poll() is None and end.get("stride_num_requests_running") == 0)
    finally:
        srv.__exit__(None, None, None)
    return f


FAULTS = {"kill9_switch": kill9_switch, "corrupt_version": corrupt_version, "sigterm_streams": sigterm_streams,
          "offload_disk_full": offload_disk_full, "pool_exhausted": pool_exhausted}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", default=",".join(FAULTS))
    ap.add_argument("--kill-after", type=float, default=0.3, help="seconds into the switch before kill -9")
    ap.add_argument("--offload-prompts", type=int, default=40)
    ap.add_argument("--out", default=os.path.join(OUT_DIR, "faults"))
    args = ap.parse_args()
    report = {"date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "faults": []}
    for name in args.only.split(","):
        t0 = time.time()
        try:
            fault = FAULTS[name](args)
        except Exception as e:  # noqa: BLE001 - a crashed scenario is a result too
            fault = Fault(name)
            fault.check("scenario ran", "no exception", repr(e), False)
        d = fault.as_dict()
        d["seconds"] = time.time() - t0
        report["faults"].append(d)
    write_json(args.out + ".json", report)
    from serving_common import plt
    p = plt()
    rows = [(fl["fault"], c) for fl in report["faults"] for c in fl["checks"]]
    fig, ax = p.subplots(figsize=(12, 0.35 * len(rows) + 1))
    ax.barh(range(len(rows)), [1] * len(rows), color=["tab:green" if c["ok"] else "tab:red" for _, c in rows])
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels([f"{n}: {c['what'][:70]}" for n, c in rows], fontsize=7)
    ax.invert_yaxis()
    ax.set_xticks([])
    ax.set_title(f"faults ({report['date']}): green = behaved as expected, red = did not")
    fig.tight_layout()
    fig.savefig(args.out + ".png", dpi=100)
    print()
    for fl in report["faults"]:
        print(f"{'PASS' if fl['ok'] else 'FAIL'} {fl['fault']} ({fl['seconds']:.0f} s)")
        for c in fl["checks"]:
            if not c["ok"]:
                print(f"     - {c['what']}: expected {c['expected']}; observed {c['observed']}")
    print(f"wrote {args.out}.json and {args.out}.png")
    return 0 if all(fl["ok"] for fl in report["faults"]) else 1


if __name__ == "__main__":
    raise SystemExit(main())
