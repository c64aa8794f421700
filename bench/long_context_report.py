"""The figures of bench/long_context_speed.py: medians over reps, fits above a cap, ratios against
the anchors, decode bytes and bandwidth, the plot, the markdown table and the cost estimate."""
import re
import statistics
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from anchors import IK, MAINLINE  # noqa: E402
from sparse_prefill import quadratic_fit  # noqa: E402

STRIDE_PREFIX = "stride "
ANCHORS = (MAINLINE, IK)
# Rough costs for --dry-run before any row of a configuration exists: prefill seconds a*L + c*L^2,
# decode seconds per token d0 + d1*L at depth L, set from quiet-machine figures at 16K on a 2-core
# Zen 2 with 2 threads (2026-12-05: llama.cpp prefill 41.2 tok/s and decode 6.0; stride dense 66.0
# and 13.2, sparse_prefill 160.6, topk:sparsity=0.9 decode 29.3) and guessed short-prompt speeds
# (ik_llama.cpp's 16K figures are guesses). Measured rows replace them.
DEFAULT_COSTS = {MAINLINE: (6.7e-3, 1.08e-6, 0.02, 9.0e-6), IK: (4.2e-3, 0.8e-6, 0.02, 7.5e-6),
                 "dense": (2.9e-3, 7.5e-7, 0.02, 3.4e-6), "sparse_prefill": (2.9e-3, 2.0e-7, 0.02, 3.4e-6),
                 "topk": (2.9e-3, 7.5e-7, 0.02, 8.7e-7)}


def cpu_slug(name):
    """A file-name part for a CPU model name: "Intel(R) Xeon(R) Processor" -> "intel_xeon_processor"."""
    name = re.sub(r"\((r|tm)\)|\bcpu\b", "", name.lower())
    return re.sub(r"[^a-z0-9]+", "_", name).strip("_") or "cpu"


def weight_bytes_per_token(model):
    """Weight bytes one decode step reads (bench/compare.py's count: an untied embedding is gathered)."""
    from compare import model_bytes
    return model_bytes(model)


def kv_bytes_per_token(info):
    """f16 K and V bytes per token over all layers (`stride info --json`'s shape)."""
    return info["n_layer"] * info["n_head_kv"] * (info["head_dim"] + info["head_dim_v"]) * 2


def summary_bytes_per_page(info):
    """Bytes of one page's key summaries (kv/store/page_summary.h: f32 min and max per kv head)."""
    return info["n_head_kv"] * 2 * info["head_dim"] * 4


def reads_summaries(series):
    """Whether a stride series' decode steps scan page summaries (top-k decode)."""
    policy = series[len(STRIDE_PREFIX):] if series.startswith(STRIDE_PREFIX) else ""
    return policy.startswith("topk") and "decode=dense" not in policy


def prefill_fit(points):
    """Prefill seconds against length from [(L, seconds)]: a + b*L + c*L^2 by least squares from 3
    points, b*L + c*L^2 through 2; None below."""
    if len(points) >= 3:
        return quadratic_fit(points)
    if len(points) == 2:
        (l1, t1), (l2, t2) = points
        b, c = np.linalg.solve([[l1, l1 * l1], [l2, l2 * l2]], [t1, t2])
        return lambda x: float(b * x + c * x * x)
    return None


def decode_fit(points):
    """Decode seconds per token against depth from [(L, seconds)]: a + b*L by least squares (2+ points)."""
    if len(points) < 2:
        return None
    b, a = np.polyfit([p[0] for p in points], [p[1] for p in points], 1)
    return lambda x: float(a + b * x)


def _median_figures(rows):
    """{figure: median over ROWS} of their numeric figures, and the number of reps."""
    keys = {k for r in rows for k, v in r.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
    figs = {k: statistics.median(r[k] for r in rows if r.get(k) is not None) for k in keys - {"rep", "length"}}
    figs["reps"] = len({r["rep"] for r in rows})
    return figs


def medians(rows):
    """{series: {length: {figure: median over reps}}} of ROWS. A series run as two units (llama.cpp's
    prefill and decode processes) sums their CPU and wall seconds and keeps the larger peak RSS."""
    by_unit = {}
    for r in rows:
        by_unit.setdefault((r["series"], r["length"], r["unit"]), []).append(r)
    out = {}
    for (s, L, _), rs in sorted(by_unit.items()):
        figs = _median_figures(rs)
        f = out.setdefault(s, {}).setdefault(L, {})
        for k, v in figs.items():
            if k in f and k in ("cpu_s", "wall_s"):
                f[k] += v
            elif k in f and k in ("peak_rss_bytes", "reps"):
                f[k] = max(f[k], v)
            else:
                f[k] = v
    return out


def fill(series_figs, lengths, figure, to_seconds, fit_fn):
    """Set FIGURE (tok/s) at every length in LENGTHS: measured where a row has it, else from FIT_FN over
    the measured points' seconds (TO_SECONDS(L) converts tok/s to seconds and back), marked extrapolated."""
    measured = [(L, to_seconds(L) / f[figure]) for L, f in sorted(series_figs.items()) if f.get(figure)]
    fit = fit_fn(measured)
    for L in lengths:
        f = series_figs.setdefault(L, {})
        if f.get(figure):
            f[figure + "_how"] = "measured"
        elif fit is not None and fit(L) > 0:
            f[figure] = to_seconds(L) / fit(L)
            f[figure + "_how"] = "extrapolated"


def summarize(doc):
    """Per series and length: tok/s (measured or extrapolated), ratios of each stride policy against
    each anchor, and for measured decode rows the bytes a step reads and the bandwidth achieved."""
    gen, lengths = doc["config"]["gen"], doc["lengths"]
    figs = medians(doc["rows"])
    for s, by_len in figs.items():
        fill(by_len, lengths, "prefill_tok_s", lambda L: L, prefill_fit)
        fill(by_len, lengths, "decode_tok_s", lambda L: 1.0, decode_fit)
    wpt, kvpt = doc["weight_bytes_per_token"], doc["kv_bytes_per_token"]
    for s, by_len in figs.items():
        for L, f in by_len.items():
            if f.get("decode_tok_s_how") != "measured":
                continue
            if s.startswith(STRIDE_PREFIX):
                kv = f["decode_pages_read"] / gen * f["page_bytes"]
                summ = f["decode_pages_present"] / gen * doc["summary_bytes_per_page"] if reads_summaries(s) else 0
                f["decode_read_share"] = f["decode_pages_read"] / max(1, f["decode_pages_present"])
            else:  # every key of the depth, in f16
                kv, summ = kvpt * (L + gen / 2), 0
            f["decode_bytes_per_token"] = wpt + kv + summ
            f["decode_gbs"] = f["decode_bytes_per_token"] * f["decode_tok_s"] / 1e9
            if doc.get("triad_gbs"):
                f["decode_bw_share"] = f["decode_gbs"] / doc["triad_gbs"]
    for s, by_len in figs.items():
        if not s.startswith(STRIDE_PREFIX):
            continue
        for L, f in by_len.items():
            for anchor in ANCHORS:
                a = figs.get(anchor, {}).get(L, {})
                for fig in ("prefill", "decode"):
                    key = f"{fig}_tok_s"
                    if f.get(key) and a.get(key):
                        f[f"{fig}_ratio_{anchor}"] = f[key] / a[key]
                        fitted = "extrapolated" in (f.get(key + "_how"), a.get(key + "_how"))
                        f[f"{fig}_ratio_{anchor}_how"] = "extrapolated" if fitted else "measured"
    return {s: {str(L): f for L, f in sorted(by_len.items())} for s, by_len in figs.items()}


def order(summary):
    """Anchors first, then stride's policies as run."""
    return [s for s in ANCHORS if s in summary] + [s for s in summary if s not in ANCHORS]


def markdown(doc):
    summary = doc["summary"]
    loads = [r["loadavg"] for r in doc["rows"] if "loadavg" in r] or [doc["loadavg"][0]]
    md = [f"# Long-context speed: stride against llama.cpp and ik_llama.cpp ({doc['date']}, {doc['cpu']}, "
          f"{doc['config']['threads']} threads, median of {doc['reps']}, 1-minute load {min(loads):.1f} to "
          f"{max(loads):.1f} as the rows finished)", "",
          f"{doc['config']['model']}, random-token prompts, decode = {doc['config']['gen']} tokens at depth L; "
          f"triad {doc.get('triad_gbs') or 0:.1f} GB/s; stride {doc['git_commit'][:12]}; "
          "ratios: stride / anchor; * extrapolated (fit above the cap)", "",
          "| L | engine | prefill tok/s | decode tok/s | prefill / llama.cpp | prefill / ik | decode / llama.cpp "
          "| decode / ik | decode MB/token | decode GB/s | / triad | pages read (decode) | CPU s | peak RSS GB |",
          "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]

    def num(f, k, fmt, star_of=None):
        if f.get(k) is None:
            return "-"
        star = "*" if f.get((star_of or k) + "_how") == "extrapolated" else ""
        return format(f[k], fmt) + star

    for L in doc["lengths"]:
        for s in order(summary):
            f = summary[s].get(str(L))
            if not f:
                continue
            ratio = lambda fig, anchor: num(f, f"{fig}_ratio_{anchor}", ".2f")  # noqa: E731
            md.append(f"| {L} | {s} | {num(f, 'prefill_tok_s', '.1f')} | {num(f, 'decode_tok_s', '.2f')} | "
                      f"{ratio('prefill', MAINLINE)} | {ratio('prefill', IK)} | {ratio('decode', MAINLINE)} | "
                      f"{ratio('decode', IK)} | "
                      f"{num({'v': f['decode_bytes_per_token'] / 1e6} if 'decode_bytes_per_token' in f else {}, 'v', '.1f')} | "
                      f"{num(f, 'decode_gbs', '.1f')} | {num(f, 'decode_bw_share', '.2f')} | "
                      f"{num(f, 'decode_read_share', '.3f')} | {num(f, 'cpu_s', '.0f')} | "
                      f"{num({'v': f['peak_rss_bytes'] / 1e9} if 'peak_rss_bytes' in f else {}, 'v', '.2f')} |")
    md += ["", "CPU s and peak RSS: the whole process (model load, and for llama.cpp's decode and ik's run the "
           "untimed depth prompt too). Decode bytes: weights + KV pages read + page summaries scanned (stride); "
           "weights + every f16 key and value of the depth (anchors)."]
    if doc.get("errors"):
        md += ["", "Failed runs:"] + [f"- {e['unit']} L={e['length']} rep {e['rep'] + 1}: {e['error'][-300:]}"
                                      for e in doc["errors"]]
    return "\n".join(md)


def plot(doc, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    summary = doc["summary"]
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.8))
    for ax, fig_name, title in ((axes[0], "prefill_tok_s", "prefill, L-token prompt"),
                                (axes[1], "decode_tok_s", f"decode, {doc['config']['gen']} tokens at depth L")):
        for i, s in enumerate(order(summary)):
            pts = sorted((int(L), f) for L, f in summary[s].items() if f.get(fig_name))
            if not pts:
                continue
            color = f"C{i}"
            meas = [(L, f[fig_name]) for L, f in pts if f.get(fig_name + "_how") == "measured"]
            if meas:
                ax.plot(*zip(*meas), "o-", color=color, label=s)
            extra = [(L, f[fig_name]) for L, f in pts if f.get(fig_name + "_how") == "extrapolated"]
            if extra:
                ax.plot(*zip(*(meas[-1:] + extra)), "x--", color=color,
                        label=None if meas else f"{s} (extrapolated)")
        ax.set(xscale="log", yscale="log", xlabel="L (tokens)", ylabel="tokens/s", title=title)
        ax.set_xscale("log", base=2)
        ax.grid(True, which="both", alpha=0.3)
    axes[1].legend(fontsize=7, loc="best")
    fig.suptitle(f"{doc['config']['model']}, {doc['config']['threads']} threads, {doc['cpu']}, {doc['date']} "
                 f"(dashed: extrapolated)", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


class CostModel:
    """Estimated seconds of a run unit: from the measured rows of the same series when there are any
    (fits as in summarize), else from DEFAULT_COSTS."""

    def __init__(self, rows, gen):
        self.gen = gen
        figs = medians(rows)
        self.fits = {}
        for s, by_len in figs.items():
            pre = [(L, L / f["prefill_tok_s"]) for L, f in sorted(by_len.items()) if f.get("prefill_tok_s")]
            dec = [(L, 1 / f["decode_tok_s"]) for L, f in sorted(by_len.items()) if f.get("decode_tok_s")]
            self.fits[s] = (prefill_fit(pre), decode_fit(dec))
        self.source = f"fitted to {len(rows)} measured rows where present" if rows else \
            "the default costs of bench/long_context_report.py (a quiet 2-core Zen 2)"

    def _default(self, series):
        key = series[len(STRIDE_PREFIX):] if series.startswith(STRIDE_PREFIX) else series
        if key not in DEFAULT_COSTS:
            key = "sparse_prefill" if "sparse_prefill" in key else "topk" if key.startswith("topk") else "dense"
        a, c, d0, d1 = DEFAULT_COSTS[key]
        return (lambda L: a * L + c * L * L), (lambda L: d0 + d1 * L)

    def seconds(self, unit, length):
        series = unit if unit.startswith(STRIDE_PREFIX) else unit.split(" ")[0]
        pre_d, dec_d = self._default(series)
        pre, dec = self.fits.get(series, (None, None))
        p = (pre or pre_d)(length)
        d = (dec or dec_d)(length) * self.gen
        if unit == f"{MAINLINE} prefill":
            return p + 3
        if unit == f"{MAINLINE} decode":  # the untimed depth prompt runs at prefill speed
            return self._mainline_prefill(length) + d + 3
        if unit == IK:
            return 2 * p + d + 5
        return p + d + 3

    def _mainline_prefill(self, length):
        pre = self.fits.get(MAINLINE, (None, None))[0]
        return (pre or self._default(MAINLINE)[0])(length)
