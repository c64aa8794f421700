#!/usr/bin/env python3
"""Saved sessions: the time to the first token of a request that continues a
saved N-token document ("session": restore its KV pages from disk, prefill
only the question) against prefilling the whole document, side by side.

For each length, on Gemma-3-270M (trained to 32K; its local layers keep a
512-token window, its global layers every token):
  * save:     POST /v1/sessions/doc with the document's token ids (prefill + write)
  * restore:  a restarted server, completion of document + question with
              "session": "doc", max_tokens 1, end to end over HTTP (file read,
              checksum, pages into the prefix cache, question prefill, token)
  * prefill:  a fresh server with the prefix cache off, the same completion
and the ratio prefill / restore, the file size, and whether the first
token's top log-probs agree exactly. The session file is read through the OS
page cache (it was just written), as a server restarted on the same host
sees it.

Writes bench/out/session_restore.json and bench/out/session_restore.png.
Run: ~/.cache/stride/venv/bin/python bench/session_restore.py [--lengths 4096,32704] [--threads 2]
"""
import argparse
import datetime
import os
import tempfile
import time

from serving_common import GEMMA, OUT_DIR, StrideServer, call, cpu_name, plt, rng, token_prompt, write_json

QUESTION_TOKENS = 16


def first_token(port, prompt, session=None):
    body = {"prompt": prompt, "max_tokens": 1, "temperature": 0, "logprobs": 5}
    if session:
        body["session"] = session
    t0 = time.perf_counter()
    r = call(port, "/v1/completions", body, timeout=3600)
    dt = time.perf_counter() - t0
    assert r["status"] == 200, r
    choice = r["body"]["choices"][0]
    cached = (r["body"]["usage"].get("prompt_tokens_details") or {}).get("cached_tokens", 0)
    return dt, choice["logprobs"]["top_logprobs"], cached


def one_length(n, threads, model):
    g = rng(n)
    doc = token_prompt(n, g)
    question = token_prompt(QUESTION_TOKENS, g)
    with tempfile.TemporaryDirectory(prefix="stride-sessions-") as d:
        args = ["--session-dir", d, "--ctx-size", str(n + 64), "--kv-budget", "1G"]
        with StrideServer(model, extra_args=args, threads=threads) as s:
            t0 = time.perf_counter()
            r = call(s.port, "/v1/sessions/doc", {"prompt_token_ids": doc}, timeout=3600)
            save_s = time.perf_counter() - t0
            assert r["status"] == 200, r
            saved = r["body"]
        with StrideServer(model, extra_args=args, threads=threads) as s:
            restore_s, restore_top, cached = first_token(s.port, doc + question, session="doc")
    with StrideServer(model, extra_args=["--ctx-size", str(n + 64), "--kv-budget", "1G"], threads=threads,
                      env={"STRIDE_CACHE_REUSE": "false"}) as s:
        prefill_s, prefill_top, _ = first_token(s.port, doc + question)
    row = {"doc_tokens": n, "question_tokens": QUESTION_TOKENS, "file_bytes": saved["bytes"],
           "restored_tokens": cached, "save_s": save_s, "restore_first_token_s": restore_s,
           "prefill_first_token_s": prefill_s, "speedup": prefill_s / restore_s,
           "top_logprobs_identical": restore_top == prefill_top}
    print(row, flush=True)
    return row


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lengths", default="4096,32704", help="document lengths in tokens (Gemma-3-270M: at most 32704)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--model", default=GEMMA)
    a = ap.parse_args()
    rows = [one_length(int(n), a.threads, a.model) for n in a.lengths.split(",")]
    out = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"), "cpu": cpu_name(),
           "threads": a.threads, "model": os.path.basename(a.model), "rows": rows}
    write_json(os.path.join(OUT_DIR, "session_restore.json"), out)
    p = plt()
    fig, ax = p.subplots(figsize=(7, 4))
    xs = range(len(rows))
    ax.bar([x - 0.2 for x in xs], [r["prefill_first_token_s"] for r in rows], 0.4, label="prefill + first token")
    ax.bar([x + 0.2 for x in xs], [r["restore_first_token_s"] for r in rows], 0.4, label="restore session + first token")
    for x, r in zip(xs, rows):
        ax.annotate(f"{r['speedup']:.0f}x\n{r['file_bytes'] / 2**20:.0f} MiB", (x + 0.2, r["restore_first_token_s"]),
                    ha="center", va="bottom", fontsize=8)
    ax.set_xticks(list(xs), [f"{r['doc_tokens']} tokens" for r in rows])
    ax.set_ylabel("seconds to the first token")
    ax.set_title(f"{out['model']}, {a.threads} threads, {out['cpu']}", fontsize=8)
    ax.legend()
    fig.tight_layout()
    fig.savefig(os.path.join(OUT_DIR, "session_restore.png"), dpi=120)


if __name__ == "__main__":
    main()
