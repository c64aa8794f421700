#!/usr/bin/env python3
"""Memory at long context, stride against llama.cpp on the same GGUF.

stride: one `stride stream --no-ppl` per (policy, KV type) pushes text to the
longest length and reports, at each length, the KV bytes it holds and the
process's peak RSS; `stride plan --json` gives the prediction beside it.
sparse_prefill holds every key, as dense does (only the prompt's attention is
sparse), so its KV and RSS are dense's at a fraction of the prefill time.

llama.cpp (through llama-cpp-python, the build the tests use): a context of
n_ctx = length with f16 or q8_0 K and V (flash attention on, which q8_0 V
needs). llama.cpp allocates and clears its whole KV cache when the context is
created, so its KV bytes (its own log line) are exact for a full context;
its peak RSS is measured after a short prompt (--llama-prompt tokens), a lower
bound of the peak after a full one (its per-batch compute buffers are sized
at creation but only touched as used).

Both run with YaRN factor 4 over 32768 (Qwen's own long-context setting);
the scaling changes no byte counts.

    bench/long_memory.py --lengths 32768,131072
Writes bench/out/long_memory.json and .png.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
QWEN = os.path.join(ROOT, "models", "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf")
YARN = ["--rope-scaling", "yarn", "--rope-scale", "4", "--yarn-orig-ctx", "32768"]
GGML_TYPE = {"f16": 1, "q8_0": 8}

LLAMA_PROBE = r"""
import json, resource, sys
import llama_cpp
model, n_ctx, kv, n_prompt = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
llm = llama_cpp.Llama(model_path=model, n_ctx=n_ctx, n_threads=1, n_batch=512, flash_attn=True,
                      type_k=kv, type_v=kv, rope_scaling_type=llama_cpp.LLAMA_ROPE_SCALING_TYPE_YARN,
                      rope_freq_scale=0.25, yarn_orig_ctx=32768, verbose=True)
ids = [(i * 7919) % 20000 + 100 for i in range(n_prompt)]
llm.eval(ids)
print(json.dumps({"peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024}))
"""


def stride_stream(binary, model, policy, kv_type, lengths, threads):
    """{length: checkpoint row} of one streamed sequence."""
    cmd = [binary, "stream", "-m", model, "-a", policy, "--kv-type", kv_type, "--tokens", str(max(lengths)),
           "--checkpoints", ",".join(map(str, lengths)), "--decode-steps", "1", "--threads", str(threads),
           "--no-ppl", *YARN]
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(f"stream {policy} {kv_type}: {out.stderr[-1000:]}")
    rows = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
    return dict(zip(sorted(lengths), rows))


def stride_plan(binary, model, policy, kv_type, length):
    plan_kv = "int8" if kv_type == "int8" else kv_type
    p = subprocess.run([binary, "plan", "-m", model, "-a", policy, "-c", str(length), "--kv-type", plan_kv,
                        "--json", *YARN], capture_output=True, text=True, check=True)
    return json.loads(p.stdout.strip().splitlines()[-1])


def llama_probe(python, model, length, kv, n_prompt):
    """llama.cpp's KV bytes (from its log) and peak RSS at n_ctx = length."""
    p = subprocess.run([python, "-c", LLAMA_PROBE, model, str(length), str(GGML_TYPE[kv]), str(n_prompt)],
                       capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"llama.cpp {kv} {length}: {p.stderr[-1500:]}")
    row = json.loads(p.stdout.strip().splitlines()[-1])
    mib = [float(m) for m in re.findall(r"KV buffer size\s*=\s*([0-9.]+) MiB", p.stderr)]
    if not mib:
        raise RuntimeError("llama.cpp printed no KV buffer size")
    row["kv_bytes"] = int(sum(mib) * 2**20)
    return row


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default=QWEN)
    ap.add_argument("--binary", default=os.environ.get("STRIDE_BIN", os.path.join(ROOT, "build", "stride")))
    ap.add_argument("--python", default=os.path.expanduser("~/.cache/stride/venv/bin/python"))
    ap.add_argument("--lengths", default="32768,131072")
    ap.add_argument("--policies", nargs="*", default=["sparse_prefill", "rswa:sinks=4,window=1020"])
    ap.add_argument("--kv-types", nargs="*", default=["f16", "int8"])
    ap.add_argument("--llama-prompt", type=int, default=512)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "out", "long_memory"))
    a = ap.parse_args()
    lengths = [int(x) for x in a.lengths.split(",")]
    rows = []
    for kv in a.kv_types:
        llama_kv = "q8_0" if kv == "int8" else kv
        for L in lengths:
            row = {"engine": "llama.cpp", "kv_type": llama_kv, "length": L, **llama_probe(a.python, a.model, L, llama_kv, a.llama_prompt)}
            rows.append(row)
            print(json.dumps(row), flush=True)
        for pol in a.policies:
            if pol.startswith("rswa") and kv != a.kv_types[0]:
                continue  # constant either way; one KV type shows it
            t0 = time.time()
            measured = stride_stream(a.binary, a.model, pol, kv, lengths, a.threads)
            for L in lengths:
                m, plan = measured[L], stride_plan(a.binary, a.model, pol, kv, L)
                row = {"engine": "stride", "policy": pol, "kv_type": kv, "length": L, "kv_bytes": m["kv_bytes"],
                       "peak_rss_bytes": m["peak_rss_bytes"], "plan_kv_bytes": plan["kv_bytes"],
                       "plan_total_bytes": plan["total_bytes"], "stream_seconds": round(time.time() - t0, 1)}
                rows.append(row)
                print(json.dumps(row), flush=True)
    os.makedirs(os.path.dirname(a.out), exist_ok=True)
    with open(a.out + ".json", "w") as f:
        json.dump({"model": os.path.basename(a.model), "date": time.strftime("%Y-%m-%d"), "rows": rows}, f, indent=1)
    plot(rows, a.out + ".png")
    return 0


def plot(rows, path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib missing: JSON only", file=sys.stderr)
        return
    fig, ax = plt.subplots(1, 2, figsize=(11, 4))
    series = sorted({(r["engine"], r.get("policy", ""), r["kv_type"]) for r in rows})
    for eng, pol, kv in series:
        pts = [r for r in rows if (r["engine"], r.get("policy", ""), r["kv_type"]) == (eng, pol, kv)]
        label = f"{eng} {pol} {kv}".replace("  ", " ")
        xs = [r["length"] for r in pts]
        ax[0].plot(xs, [r["kv_bytes"] / 2**20 for r in pts], "o-", label=label)
        ax[1].plot(xs, [r["peak_rss_bytes"] / 2**20 for r in pts], "o-", label=label)
    ax[0].set(xscale="log", yscale="log", xlabel="context tokens", ylabel="KV MiB")
    ax[1].set(xscale="log", xlabel="context tokens", ylabel="peak RSS MiB")
    ax[0].legend(fontsize=6); ax[1].legend(fontsize=6)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    print(path)


if __name__ == "__main__":
    sys.exit(main())
