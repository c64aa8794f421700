#!/usr/bin/env python3
"""all-MiniLM-L6-v2 embeddings: stride's server against transformers (torch,
the same thread count) on the same texts, side by side.

For each batch size, the texts per second of
  * stride: POST /v1/embeddings with that many inputs (one client, end to end
    over HTTP, JSON floats), and
  * transformers: BertModel over the same texts padded to the longest of the
    batch, with sentence-transformers' masked mean pooling and normalization
    (the work sentence-transformers' encode() does),
and the ratio, plus the lowest cosine between the two for the texts.

Writes bench/out/embeddings.json and bench/out/embeddings.png.
Run: ~/.cache/stride/venv/bin/python bench/embeddings.py [--threads 2] [--texts 256]
"""
import argparse
import datetime
import os
import random
import time

import numpy as np
import torch
from tokenizers import Tokenizer
from transformers import AutoModel

from serving_common import OUT_DIR, ROOT, StrideServer, call, cpu_name, plt, write_json

MINILM = os.path.join(ROOT, "models", "all-MiniLM-L6-v2")
WORDS = ("the of and to in is was for on that with as by at from his her an were which are this be has had "
         "model text vector search query document sentence meaning similar cosine embedding language city river "
         "café naïve résumé 東京 Москва über").split()


def texts(n, seed=7):
    rng = random.Random(seed)
    return [" ".join(rng.choice(WORDS) for _ in range(rng.randint(5, 60))).capitalize() + "." for _ in range(n)]


def run_stride(port, batch, items):
    vecs = []
    t0 = time.perf_counter()
    for i in range(0, len(items), batch):
        r = call(port, "/v1/embeddings", {"input": items[i:i + batch], "encoding_format": "float"})
        assert r["status"] == 200, r
        vecs += [d["embedding"] for d in r["body"]["data"]]
    return len(items) / (time.perf_counter() - t0), np.asarray(vecs)


def run_transformers(model, tok, batch, items):
    vecs = []
    t0 = time.perf_counter()
    for i in range(0, len(items), batch):
        enc = tok.encode_batch(items[i:i + batch])
        width = max(len(e.ids) for e in enc)
        ids = torch.tensor([e.ids + [0] * (width - len(e.ids)) for e in enc])
        mask = torch.tensor([[1] * len(e.ids) + [0] * (width - len(e.ids)) for e in enc])
        with torch.no_grad():
            h = model(input_ids=ids, attention_mask=mask).last_hidden_state
        m = mask.unsqueeze(-1).float()
        v = (h * m).sum(1) / m.sum(1)
        vecs += torch.nn.functional.normalize(v, dim=1).tolist()
    return len(items) / (time.perf_counter() - t0), np.asarray(vecs)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--texts", type=int, default=256)
    ap.add_argument("--batches", default="1,8,32,128")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    items = texts(args.texts)
    tok = Tokenizer.from_file(os.path.join(MINILM, "tokenizer.json"))
    tok.no_truncation()
    tok.no_padding()
    model = AutoModel.from_pretrained(MINILM, dtype=torch.float32).eval()
    report = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
              "cpu": cpu_name(), "threads": args.threads, "texts": len(items),
              "mean_tokens": float(np.mean([len(e.ids) for e in tok.encode_batch(items)])), "batches": {}}
    with StrideServer(MINILM, threads=args.threads, env={"STRIDE_MAX_EMBEDDING_INPUTS": "1024"}) as srv:
        run_stride(srv.port, 32, items[:32])  # warm
        for b in [int(x) for x in args.batches.split(",")]:
            s_rate, s_vecs = run_stride(srv.port, b, items)
            t_rate, t_vecs = run_transformers(model, tok, b, items)
            cos = np.sum(s_vecs * t_vecs, axis=1) / np.linalg.norm(s_vecs, axis=1) / np.linalg.norm(t_vecs, axis=1)
            report["batches"][b] = {"stride_texts_per_s": s_rate, "transformers_texts_per_s": t_rate,
                                    "ratio": s_rate / t_rate, "min_cosine": float(cos.min())}
            print(f"batch {b}: stride {s_rate:.1f} texts/s, transformers {t_rate:.1f} texts/s, "
                  f"ratio {s_rate / t_rate:.2f}, min cosine {cos.min():.6f}", flush=True)
    path = os.path.join(OUT_DIR, "embeddings.json")
    write_json(path, report)
    p = plt()
    fig, ax = p.subplots(figsize=(7, 4))
    keys = list(report["batches"])
    x = range(len(keys))
    ax.bar([i - 0.2 for i in x], [report["batches"][k]["stride_texts_per_s"] for k in keys], 0.4, label="stride")
    ax.bar([i + 0.2 for i in x], [report["batches"][k]["transformers_texts_per_s"] for k in keys], 0.4,
           label="transformers (torch)")
    ax.set_xticks(list(x), [f"batch {k}\n{report['batches'][k]['ratio']:.2f}x" for k in keys])
    ax.set_ylabel("texts per second")
    ax.set_title(f"all-MiniLM-L6-v2, {report['cpu']}, {args.threads} threads", fontsize=9)
    ax.legend()
    fig.tight_layout()
    fig.savefig(os.path.join(OUT_DIR, "embeddings.png"), dpi=110)
    print("wrote", path)


if __name__ == "__main__":
    main()
