#!/usr/bin/env python3
"""Long-context speed, side by side: stride's policies against llama-bench of llama.cpp and ik_llama.cpp.

    ~/.cache/stride/venv/bin/python bench/long_context_speed.py [--lengths 16384,32768] [--threads 2]
        [--reps 1] [--policies dense sparse_prefill ...] [--skip ENGINE] [--cap NAME=TOKENS]
        [--dry-run] [--out bench/out/long_context_speed_<cpu>]

For each length L and rep, one unit after another (the order rotates each rep), on the same GGUF
with the same threads and random-token prompts (llama-bench's own: uniform over the vocabulary,
so the work is comparable; stride gets a seeded draw of the same kind):
  * llama.cpp (mainline, scripts/build_llama_bench): `llama-bench -fa 1 -p L -n 0 -r 1 --no-warmup`
    for prefill (its warm-up would run the whole L-token prompt a second time) and
    `-fa 1 -p 0 -n G -d L -r 1` for decoding G tokens at depth L (the depth prompt is untimed);
  * ik_llama.cpp (scripts/build_ik_llama_bench): `llama-bench -rtr 1 -fa 1 -p L -n 0 -gp L,G -r 1`,
    prefill and then decoding G tokens after an L-token prompt, in one process;
  * stride, per policy: `stride run --prompt-ids-file <L ids> -n G+1 --ignore-eos --json`: prefill
    tok/s of the L-token prompt and decode tok/s over the G steps after it (with YaRN factor 4 over
    32768 when L passes the model's trained context, as Qwen documents for long inputs; llama-bench
    has no RoPE flags, and the scaling changes no work).
Each row records the process's CPU seconds and peak RSS; stride's rows also the KV pages its
decode steps read, from which the bytes a decode step reads (weights + pages read + the page
summaries a top-k selector scans; estimate=rerank's shortlist key reads are not counted, so
its figure is a lower bound) and the achieved GB/s against the triad of build/machine_peak.
Rows are appended to OUT.json as they finish; a re-run with the same --out skips finished rows
(other lengths, policies or reps add theirs; another model, thread count or --gen is refused).
--cap NAME=TOKENS (NAME: llama.cpp, ik_llama.cpp or a policy) measures NAME only up to TOKENS;
longer lengths get a fit (bench/long_context_report.py), marked extrapolated. Writes OUT.json,
OUT.png (tok/s against length, prefill and decode) and OUT.md (the table, also printed).
"""
import argparse
import datetime
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
import anchors  # noqa: E402
import long_context_report as report_mod  # noqa: E402
from anchors import IK, MAINLINE  # noqa: E402
from long_memory import YARN  # noqa: E402
from measured import run_measured_usage  # noqa: E402
from shapes import cpu_model, git_commit, triad_gbs  # noqa: E402

QWEN = ROOT / "models" / "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"
POLICIES = ["dense", "sparse_prefill", "topk:sparsity=0.9,prefill=dense",
            "topk:sparsity=0.9,prefill=dense,estimate=rerank"]
STRIDE = "stride"
ENGINES = (MAINLINE, IK, STRIDE)


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def unit_names(policies, skip):
    """The run units of one (length, rep), in their first-rep order."""
    names = []
    if MAINLINE not in skip:
        names += [f"{MAINLINE} prefill", f"{MAINLINE} decode"]
    if IK not in skip:
        names.append(IK)
    if STRIDE not in skip:
        names += [f"{STRIDE} {p}" for p in policies]
    return names


def series_of(unit):
    """The plotted series a unit's figures belong to: an anchor engine or `stride <policy>`."""
    return unit if unit.startswith(STRIDE + " ") else unit.split(" ")[0]


def parse_caps(items):
    """{name: tokens} of --cap NAME=TOKENS items; NAME may be a policy holding "=" itself."""
    return {c.rsplit("=", 1)[0]: int(c.rsplit("=", 1)[1]) for c in items}


def capped(unit, length, caps):
    """Whether CAPS (name -> longest length measured) leave UNIT at LENGTH unmeasured."""
    s = series_of(unit)
    name = s.split(" ", 1)[1] if s.startswith(STRIDE + " ") else s
    return name in caps and length > caps[name]


def anchor_command(unit, binary, model, length, threads, gen):
    base = [binary, "-m", model, "-t", threads, "-fa", "1", "-r", "1", "-o", "json"]
    if unit == f"{MAINLINE} prefill":
        return base + ["-p", length, "-n", 0, "--no-warmup"]
    if unit == f"{MAINLINE} decode":
        return base + ["-p", 0, "-n", gen, "-d", length]
    return base + ["-rtr", "1", "-p", length, "-n", 0, "-gp", f"{length},{gen}"]


def stride_command(binary, model, policy, ids_file, length, threads, gen, n_ctx_train):
    cmd = [binary, "run", "-m", model, "--prompt-ids-file", ids_file, "-n", gen + 1, "--temperature", 0,
           "--seed", 0, "--ignore-eos", "--json", "--threads", threads, "-a", policy]
    return cmd + (YARN if length > n_ctx_train else [])


def parse_anchor(unit, out, length, gen):
    """{prefill_tok_s, decode_tok_s, build_commit} of one anchor unit's llama-bench JSON output."""
    by_test = {anchors.test_name(r): r for r in anchors.parse_json_rows(out)}
    row = {"build_commit": next(iter(by_test.values())).get("build_commit")}
    if unit == f"{MAINLINE} decode":
        row["decode_tok_s"] = float(by_test[f"tg{gen}@d{length}"]["avg_ts"])
    else:
        row["prefill_tok_s"] = float(by_test[f"pp{length}"]["avg_ts"])
        if unit == IK:
            row["decode_tok_s"] = float(by_test[f"tg{gen}@pp{length}"]["avg_ts"])
    return row


def parse_stride(out, gen):
    """The figures of one `stride run --json` (its last line)."""
    j = json.loads(out.strip().splitlines()[-1])
    if int(j["generated_tokens"]) != gen + 1:
        raise SystemExit(f"stride generated {j['generated_tokens']} tokens, asked for {gen + 1}")
    keep = ("prefill_tok_s", "decode_tok_s", "prefill_seconds", "decode_seconds", "decode_pages_read",
            "decode_pages_present")
    row = {k: j[k] for k in keep}
    row["page_bytes"] = j["kv"]["stride_kv_cache_page_bytes"]
    row["self_peak_rss_bytes"] = j["peak_rss_bytes"]
    return row


class Runs:
    """The output JSON: the configuration and one row per finished (unit, length, rep), saved after
    every row so that a stopped run resumes where it stopped."""

    def __init__(self, path, config):
        self.path = Path(path)
        self.doc = {"config": config, "rows": [], "errors": []}
        if self.path.exists():
            old = json.loads(self.path.read_text())
            if old.get("config") != config:
                raise SystemExit(f"{self.path} holds a run of another configuration:\n  {old.get('config')}\n"
                                 f"against\n  {config}\npass another --out, or remove it")
            self.doc["rows"] = old.get("rows", [])

    def done(self, unit, length, rep):
        return any((r["unit"], r["length"], r["rep"]) == (unit, length, rep) for r in self.doc["rows"])

    def add(self, row):
        self.doc["rows"].append(row)
        self.save()

    def fail(self, unit, length, rep, message):
        self.doc["errors"].append({"unit": unit, "length": length, "rep": rep, "error": message[-2000:]})
        self.save()

    def save(self):
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(self.doc, indent=1) + "\n")
        os.replace(tmp, self.path)


def prompt_file(tmpdir, length, n_vocab):
    """A file of LENGTH token ids drawn uniformly from the vocabulary (seeded by the length)."""
    path = Path(tmpdir) / f"ids_{length}.txt"
    if not path.exists():
        ids = np.random.default_rng(length).integers(0, n_vocab, length)
        path.write_text(" ".join(map(str, ids.tolist())))
    return str(path)


def plan(a, names, lengths, caps, runs):
    """[(length, rep, unit)] still to run, in the interleaved order."""
    todo = []
    for L in lengths:
        for rep in range(a.reps):
            k = rep % len(names)
            for u in names[k:] + names[:k]:
                if not capped(u, L, caps) and not runs.done(u, L, rep):
                    todo.append((L, rep, u))
    return todo


def run_unit(unit, cmd, length, gen, timeout):
    t0 = time.monotonic()
    out, rss, cpu = run_measured_usage(cmd, timeout=timeout)
    row = parse_stride(out, gen) if unit.startswith(STRIDE + " ") else parse_anchor(unit, out, length, gen)
    return {**row, "cpu_s": round(cpu, 2), "peak_rss_bytes": rss, "wall_s": round(time.monotonic() - t0, 2)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default=str(QWEN))
    ap.add_argument("--lengths", default="16384,32768")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--reps", type=int, default=1)
    ap.add_argument("--gen", type=int, default=32, help="tokens decoded at depth L")
    ap.add_argument("--policies", nargs="+", default=POLICIES)
    ap.add_argument("--skip", action="append", default=[], choices=ENGINES, help="leave an engine out")
    ap.add_argument("--cap", action="append", default=[],
                    help="NAME=TOKENS: measure NAME (llama.cpp, ik_llama.cpp or a policy) up to TOKENS, fit above")
    ap.add_argument("--dry-run", action="store_true", help="print the commands and the estimated time, run nothing")
    ap.add_argument("--llama-bench", default=None)
    ap.add_argument("--ik-llama-bench", default=None)
    ap.add_argument("--triad-gbs", type=float, default=None, help="when build/machine_peak is missing")
    ap.add_argument("--timeout", type=int, default=6 * 3600, help="seconds one process may run")
    ap.add_argument("--out", default=None, help="default: bench/out/long_context_speed_<cpu>")
    a = ap.parse_args()
    lengths = sorted(int(x) for x in a.lengths.split(","))
    caps = parse_caps(a.cap)
    out = a.out or str(ROOT / "bench" / "out" / f"long_context_speed_{report_mod.cpu_slug(cpu_model())}")
    sbin = os.environ.get("STRIDE_BIN", str(ROOT / "build" / "stride"))
    info = json.loads(subprocess.run([sbin, "info", "-m", a.model, "--json"], capture_output=True, text=True,
                                     check=True).stdout)
    names = unit_names(a.policies, a.skip)
    config = {"model": os.path.basename(a.model), "threads": a.threads, "gen": a.gen}
    runs = Runs(out + ".json", config)
    todo = plan(a, names, lengths, caps, runs)
    if a.dry_run:  # names only: nothing is built
        bins = {MAINLINE: a.llama_bench or "llama-bench", IK: a.ik_llama_bench or "ik-llama-bench"}
    elif MAINLINE in a.skip and IK in a.skip:
        bins = {}
    else:
        bins = anchors.find_binaries(a.llama_bench, a.ik_llama_bench, IK not in a.skip)
    with tempfile.TemporaryDirectory() as tmp:
        def command(u, L):
            if u.startswith(STRIDE + " "):
                return stride_command(sbin, a.model, u.split(" ", 1)[1], prompt_file(tmp, L, info["n_vocab"]), L,
                                      a.threads, a.gen, info["n_ctx_train"])
            return anchor_command(u, bins[series_of(u)], a.model, L, a.threads, a.gen)

        cost = report_mod.CostModel(runs.doc["rows"], a.gen)
        total = sum(cost.seconds(u, L) for L, _, u in todo)
        for L, rep, u in todo:
            log(f"[{L} rep {rep + 1}] ~{cost.seconds(u, L) / 60:.1f} min: " + " ".join(map(str, command(u, L))))
        log(f"{len(todo)} runs to go, estimated {total / 3600:.2f} h ({cost.source}); "
            f"{len(runs.doc['rows'])} rows already in {out}.json")
        if a.dry_run:
            return
        triad, triad_src = triad_gbs(sbin, a.threads, a.triad_gbs)
        for L, rep, u in todo:
            t0 = time.monotonic()
            try:
                row = run_unit(u, command(u, L), L, a.gen, a.timeout)
            except (SystemExit, subprocess.SubprocessError, ValueError, KeyError) as e:
                log(f"[{L} rep {rep + 1}] {u} FAILED after {time.monotonic() - t0:.0f} s: {e}")
                runs.fail(u, L, rep, str(e))
                continue
            row.update({"unit": u, "series": series_of(u), "length": L, "rep": rep,
                        "yarn": u.startswith(STRIDE + " ") and L > info["n_ctx_train"],
                        "loadavg": os.getloadavg()[0],
                        "finished": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")})
            runs.add(row)
            log(f"[{L} rep {rep + 1}] {u}: prefill {row.get('prefill_tok_s') or 0:.1f} decode "
                f"{row.get('decode_tok_s') or 0:.2f} tok/s, {row['wall_s']:.0f} s wall, load {row['loadavg']:.1f}")
    meta = {"date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "cpu": cpu_model(), "git_commit": git_commit(), "stride_bin": sbin, "llama_bench": bins.get(MAINLINE),
            "ik_llama_bench": bins.get(IK), "lengths": sorted(set(lengths) | {r["length"] for r in runs.doc["rows"]}),
            "caps": caps, "reps": a.reps,
            "triad_gbs": triad, "triad_source": triad_src, "loadavg": os.getloadavg(),
            "weight_bytes_per_token": report_mod.weight_bytes_per_token(a.model),
            "kv_bytes_per_token": report_mod.kv_bytes_per_token(info),
            "summary_bytes_per_page": report_mod.summary_bytes_per_page(info), "statistic": "median"}
    runs.doc.update(meta)
    runs.doc["summary"] = report_mod.summarize(runs.doc)
    runs.save()
    report_mod.plot(runs.doc, out + ".png")
    md = report_mod.markdown(runs.doc)
    Path(out + ".md").write_text(md + "\n")
    print(md)
    log(f"wrote {out}.json, {out}.png and {out}.md")


if __name__ == "__main__":
    main()
