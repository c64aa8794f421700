#!/usr/bin/env python3
"""Context parallelism: one prompt spread by position over 1, 2 and 4 ranks
(`stride run --shard-world W`, ring prefill then decode across ranks), with
each rank's compute seconds, the bytes it exchanged per token and layer, its
peak KV bytes, and the speed-up those project for ranks on separate hosts.

The ranks here are processes of one machine that share its cores (2 vCPUs on
the machine this was written on), so their wall times say little: the figure
is each rank's CPU time (one thread each). On N separate hosts a step takes
about as long as its slowest rank's compute, plus what the transfers do not
overlap, so the projection is

    prefill speed-up(W) = CPU(1 rank) / max over ranks of CPU(rank)
    decode  speed-up(W) = CPU per token(1 rank) / (max over ranks of CPU per token
                          + n_layer * round trip)

with the round trip an assumption (--rtt-us, a LAN's). The one-rank run is
the same sharded path on one rank (a rendezvous, no peers).

    bench/context_parallel.py --tokens 8192 --ranks 1,2,4 --decode 32
    bench/context_parallel.py --tokens 131072 --ranks 4 --attention rswa:sinks=4,window=1024 --kv int8
    bench/context_parallel.py --tokens 1048576 --ranks 4 --attention rswa:sinks=4,window=1024 --kv int8 --decode 8
Past the model's trained context pass the RoPE scaling to every rank:
    bench/context_parallel.py --tokens 131072 --ranks 4 --attention rswa:sinks=4,window=1024 --kv int8
        --run-args "--rope-scaling yarn --rope-scale 4 --yarn-orig-ctx 32768"
A long run's rank counts may run apart, at once, then join in one report (the
projection needs the one-rank run, the longest):
    bench/context_parallel.py --combine out_1.json out_2.json log_with_summary_lines.txt --tag _joined
The prompt is --text (default: the long validation text scripts/setup installs,
~/.cache/stride/debian-reference.txt) tokenized and repeated to --tokens; the
report records its path, sha256 and the prompt's first and last ids.
Writes bench/out/context_parallel_<tokens>[_<policy>_<kv>].json and .png.
--attention sets every layer's policy (R-SWA and windows send a rank only
the pages its queries see; top-k needs prefill=dense across ranks), --kv the
KV storage (int8 pages travel with their scales).
"""
import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# What reports from before --text record as their prompt: the docs/*.md of the checkout they ran in.
DOCS_PROMPT = "docs prompt"


def default_text():
    """The long validation text that scripts/setup installs (its LONG_TEXT)."""
    return os.path.join(os.path.expanduser("~"), ".cache", "stride", "debian-reference.txt")


def prompt_source(text_path):
    """The fixed text a run's prompt is cut from, and its identity for the report; it is not the
    repository's docs, so a docs change does not change later runs' prompts."""
    if not os.path.isfile(text_path) or os.path.getsize(text_path) == 0:
        raise SystemExit(f"prompt text {text_path} is missing or empty: run scripts/setup (it installs "
                         "~/.cache/stride/debian-reference.txt) or pass --text FILE")
    with open(text_path, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()
    return {"path": text_path, "sha256": digest}


def prompt_ids(binary, model, n, text_path):
    """n token ids of the text, repeated as needed."""
    r = subprocess.run([binary, "tokenize", "-m", model, "-f", text_path], capture_output=True, text=True, check=True)
    ids = r.stdout.split()
    if not ids:
        raise SystemExit(f"{text_path} tokenizes to no ids")
    text_tokens = len(ids)
    while len(ids) < n:
        ids += ids
    return ids[:n], text_tokens


def prompt_record(source, ids, text_tokens):
    """What the report says of its prompt: the text (path, sha256), its length in tokens, the ends of the ids."""
    return dict(source, text_tokens=text_tokens, first_ids=[int(i) for i in ids[:8]],
                last_ids=[int(i) for i in ids[-8:]])


def run_ranks(binary, model, ids, world, decode, timeout_s, policy, kv, chunk=0, shard_tokens=None, run_args=()):
    """Every rank's JSON line of one `stride run --shard-world world`."""
    with tempfile.TemporaryDirectory() as meet:
        prefix = f"bench-{time.time_ns()}"  # one for the whole set
        ids_file = os.path.join(meet, "ids.txt")  # a long prompt's ids overflow one argument
        with open(ids_file, "w") as f:
            f.write(" ".join(ids))
        procs = []
        for rank in range(world):
            cmd = [binary, "run", "-m", model, "--prompt-ids-file", ids_file, "-n", str(decode), "--temperature", "0",
                   "-a", policy, "--kv-type", kv,
                   "--ignore-eos", "--threads", "1", "--json", "--shard-world", str(world), "--shard-rank", str(rank),
                   "--rendezvous", f"file:{meet}", "--shard-prefix", prefix,
                   "--shard-timeout-ms", str(timeout_s * 1000), "--shard-chunk", str(chunk)]
            if shard_tokens is not None:
                cmd += ["--shard-tokens", str(shard_tokens)]
            cmd += list(run_args)
            procs.append(subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
        rows = []
        for rank, p in enumerate(procs):
            out, err = p.communicate(timeout=timeout_s)
            if p.returncode != 0:
                raise RuntimeError(f"rank {rank}/{world}: {err[-1000:]}")
            rows.append(json.loads(out.strip().splitlines()[-1]))
        return rows


def summarise(rows, n_layer, n_tokens, decode, one=None):
    world = len(rows)
    steps = decode - 1  # the last token is sampled, not run
    prefill_bytes = sum(r["prefill_bytes_sent"] for r in rows)
    decode_bytes = sum(r["payload_bytes_sent"] - r["prefill_bytes_sent"] for r in rows)
    s = {
        "ranks": world,
        "tokens": n_tokens,
        # Each rank's positions [pos_begin, pos_end): the layout the set cut the prompt by.
        "shard_positions": [[r.get("pos_begin"), r.get("pos_end")] for r in rows],
        "prefill_cpu_seconds": [r["prefill_cpu_seconds"] for r in rows],
        "prefill_wall_seconds": [r["prefill_seconds"] for r in rows],
        "decode_cpu_seconds_per_token": [r["decode_cpu_seconds"] / steps for r in rows],
        "peak_kv_bytes": [r["peak_kv_bytes"] for r in rows],
        # The process's peak resident memory (weights, KV pages touched, activations): getrusage's maxrss.
        "peak_rss_bytes": [r.get("peak_rss_bytes") for r in rows],
        # What each rank sent: in the prefill (ring), and per decoded token (queries, partial states, top-k scores).
        "prefill_bytes_sent": [r["prefill_bytes_sent"] for r in rows],
        "decode_bytes_sent_per_token": [(r["payload_bytes_sent"] - r["prefill_bytes_sent"]) / steps if steps else 0
                                        for r in rows],
        # Every rank's payload together, per prompt token and layer (ring prefill) and per decoded token and layer.
        "prefill_bytes_per_token_layer": prefill_bytes / (n_tokens * n_layer),
        "decode_bytes_per_token_layer": decode_bytes / (steps * n_layer) if steps else 0,
        # Each rank's decode work per token, every layer (DecodeWork): the partial states it computed and
        # the pages its plans read; under a window or R-SWA neither grows with the shard.
        "decode_partials_per_token": [r.get("decode_partials", 0) / steps if steps else 0 for r in rows],
        "decode_pages_read_per_token": [r.get("decode_pages_read", 0) / steps if steps else 0 for r in rows],
        "generated_ids": rows[0]["generated_ids"],
        "same_tokens_as_one_rank": None if one is None else rows[0]["generated_ids"] == one["generated_ids"],
    }
    return s


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default=os.path.join(ROOT, "models", "SmolLM2-135M-Instruct.Q4_1.gguf"))
    ap.add_argument("--binary", default=os.environ.get("STRIDE_BIN", os.path.join(ROOT, "build", "stride")))
    ap.add_argument("--text", default=default_text(),
                    help="the text the prompt is cut from, repeated to --tokens (default: the long validation text "
                    "scripts/setup installs)")
    ap.add_argument("--tokens", type=int, default=8192)
    ap.add_argument("--ranks", default="1,2,4")
    ap.add_argument("--decode", type=int, default=32, help="tokens generated (decode steps + 1)")
    ap.add_argument("--rtt-us", type=float, default=100.0, help="assumed round trip between hosts, for the projection")
    ap.add_argument("--attention", default="dense", help="attention policy of every layer (stride run -a)")
    ap.add_argument("--kv", default="f16", choices=["f16", "f32", "int8"], help="KV storage (stride run --kv-type)")
    ap.add_argument("--chunk", type=int, default=0,
                    help="tokens of a rank's shard run through a layer at a time (stride run --shard-chunk; 0: the prefill chunk)")
    ap.add_argument("--shard-tokens", default=None,
                    help="stride run --shard-tokens (0: the balanced cut, by prefill cost; default: auto)")
    ap.add_argument("--machine", default="ranks as processes of one shared, loaded 2-vCPU machine (they share its "
                    "2 cores): CPU seconds per rank are the figure, wall times are not")
    ap.add_argument("--tag", default="", help="added to the output's name")
    ap.add_argument("--run-args", default="",
                    help="more `stride run` flags for every rank, e.g. \"--rope-scaling yarn --rope-scale 4 --yarn-orig-ctx 32768\"")
    ap.add_argument("--timeout", type=int, default=3600)
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "out"))
    ap.add_argument("--replot", metavar="JSON", help="only draw the PNG of an earlier report")
    ap.add_argument("--combine", nargs="+", metavar="FILE",
                    help="one report of rank counts run apart: reports, or the summary lines a run printed")
    a = ap.parse_args()
    if a.combine:
        combine(a.combine, a.binary, a.rtt_us, a.out, a.tag)
        return
    if a.replot:
        with open(a.replot) as f:
            plot(json.load(f), a.replot[:-len(".json")])
        return

    info = json.loads(subprocess.run([a.binary, "info", "--model", a.model, "--json"], capture_output=True,
                                     text=True, check=True).stdout)
    n_layer = info.get("config", info)["n_layer"]
    source = prompt_source(a.text)
    ids, text_tokens = prompt_ids(a.binary, a.model, a.tokens, a.text)
    runs, one = [], None
    for world in [int(w) for w in a.ranks.split(",")]:
        t0 = time.monotonic()
        rows = run_ranks(a.binary, a.model, ids, world, a.decode, a.timeout, a.attention, a.kv, a.chunk,
                         a.shard_tokens, a.run_args.split())
        s = summarise(rows, n_layer, a.tokens, a.decode, one)
        s["wall_seconds"] = time.monotonic() - t0
        if world == 1:
            one = rows[0]
        runs.append(s)
        print(json.dumps(s), flush=True)
    project(runs, n_layer, a.tokens, a.rtt_us)
    report = {
        "date": time.strftime("%Y-%m-%d"),
        "model": os.path.basename(a.model),
        "machine": a.machine,
        "shard_tokens": a.shard_tokens if a.shard_tokens is not None else "auto",
        "threads_per_rank": 1,
        "attention": a.attention,
        "kv_type": a.kv,
        "shard_chunk": a.chunk,
        "rtt_us_assumed": a.rtt_us,
        "run_args": a.run_args,
        "n_layer": n_layer,
        "tokens": a.tokens,
        "prompt": prompt_record(source, ids, text_tokens),
        "runs": runs,
    }
    write(report, a.out, a.tag)


def project(runs, n_layer, n_tokens, rtt_us):
    """Each run's projection for ranks on separate hosts, against the one-rank run where there is one."""
    base = next((r for r in runs if r["ranks"] == 1), None)  # a long run may leave out one rank
    for r in runs:
        # The ranks may run in any order (the fastest first): compare with the one-rank tokens at the end.
        if base is not None and r["ranks"] > 1 and "generated_ids" in base:
            r["same_tokens_as_one_rank"] = r.get("generated_ids") == base["generated_ids"]
        # The busiest rank's prefill CPU seconds per token of its shard (tokens / ranks): under a
        # window the cost of a token does not grow with the context, so a longer prompt costs this per token.
        r["prefill_cpu_seconds_per_shard_token"] = max(r["prefill_cpu_seconds"]) * r["ranks"] / n_tokens
        if base is None:
            continue
        r["projected_prefill_speedup"] = base["prefill_cpu_seconds"][0] / max(r["prefill_cpu_seconds"])
        latency = (n_layer * rtt_us * 1e-6) if r["ranks"] > 1 else 0.0
        r["projected_decode_speedup"] = base["decode_cpu_seconds_per_token"][0] / (
            max(r["decode_cpu_seconds_per_token"]) + latency)
        r["projected_prefill_efficiency"] = r["projected_prefill_speedup"] / r["ranks"]
        r["projected_decode_efficiency"] = r["projected_decode_speedup"] / r["ranks"]


def write(report, out, tag_suffix):
    os.makedirs(out, exist_ok=True)
    tag = "" if report["attention"] == "dense" and report["kv_type"] == "f16" else "_" + "".join(
        c if c.isalnum() else "-" for c in f"{report['attention']}_{report['kv_type']}")
    stem = os.path.join(out, f"context_parallel_{report['tokens']}{tag}{tag_suffix}")
    with open(stem + ".json", "w") as f:
        json.dump(report, f, indent=1)
    plot(report, stem)


def report_prompt(report):
    """A report's prompt record; reports from before the fixed text cut theirs from the repository's docs."""
    return report.get("prompt", DOCS_PROMPT)


def combine(paths, binary, rtt_us, out, tag_suffix):
    """One report of rank counts run apart (in parallel, so none waits on another): each path a report
    or the summary lines a run printed; the first report gives the settings, the projection is redone."""
    report, runs, prompts = None, {}, []
    for path in paths:
        with open(path) as f:
            text = f.read()
        try:
            parts = [json.loads(text)]
        except json.JSONDecodeError:
            parts = [json.loads(line) for line in text.splitlines() if line.startswith('{"ranks"')]
        for part in parts:
            if "runs" in part:
                prompts.append(report_prompt(part))
                report = report or part
                runs.update({r["ranks"]: r for r in part["runs"]})
            else:
                runs[part["ranks"]] = part
    if report is None:
        raise SystemExit("--combine needs one report among its files (the settings)")
    if any(p != prompts[0] for p in prompts):
        raise SystemExit(f"--combine: the reports ran different prompts: {prompts}")
    report = dict(report, prompt=prompts[0], runs=[runs[w] for w in sorted(runs)],
                  combined_from=[os.path.basename(p) for p in paths])
    if "n_layer" not in report:
        info = json.loads(subprocess.run([binary, "info", "--model", os.path.join(ROOT, "models", report["model"]),
                                          "--json"], capture_output=True, text=True, check=True).stdout)
        report["n_layer"] = info.get("config", info)["n_layer"]
    report.setdefault("tokens", report["runs"][0]["tokens"])
    project(report["runs"], report["n_layer"], report["tokens"], rtt_us)
    write(report, out, tag_suffix)


def plot(report, stem):
    """The report's PNG beside its JSON: CPU and bytes sent per rank, and the projected speed-up."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib missing: JSON only", file=sys.stderr)
        return
    runs = report["runs"]
    fig, ax = plt.subplots(1, 4, figsize=(20, 4))
    for r in runs:
        xs = [f"{r['ranks']}r/{i}" for i in range(r["ranks"])]
        ax[0].bar(xs, r["prefill_cpu_seconds"], label=f"{r['ranks']} ranks")
        ax[1].bar(xs, [b / 1e6 for b in r["prefill_bytes_sent"]], label=f"{r['ranks']} ranks")
        if all(r.get("peak_rss_bytes") or [None]):  # reports from before the ranks gave it have none
            ax[3].bar(xs, [b / 1e6 for b in r["peak_rss_bytes"]], label=f"{r['ranks']} ranks")
    ax[0].set_ylabel("prefill CPU seconds per rank")
    ax[0].set_title(f"{report['runs'][0]['tokens']} tokens, {report['model']}\n"
                    f"{report['attention']}, {report['kv_type']} KV")
    ax[0].legend()
    ax[1].set_ylabel("prefill MB sent per rank (all layers)")
    ax[1].legend()
    ranks = [r["ranks"] for r in runs]
    ax[2].plot(ranks, ranks, "k:", label="ideal")
    if all("projected_prefill_speedup" in r for r in runs):
        ax[2].plot(ranks, [r["projected_prefill_speedup"] for r in runs], "o-", label="prefill (projected)")
        ax[2].plot(ranks, [r["projected_decode_speedup"] for r in runs], "s-",
                   label=f"decode (projected, RTT {report['rtt_us_assumed']:g} us)")
    ax[2].set_xlabel("ranks (separate hosts)")
    ax[2].set_ylabel("speed-up over one rank")
    ax[2].legend()
    ax[3].set_ylabel("peak RSS per rank (MB)")
    fig.suptitle("Context parallelism: ranks measured on one shared 2-vCPU machine (CPU time), projected to hosts")
    fig.tight_layout()
    fig.savefig(stem + ".png", dpi=110)
    print(f"wrote {stem}.json and .png")

if __name__ == "__main__":
    main()
