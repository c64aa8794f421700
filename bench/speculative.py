"""Speculative decoding: tokens/s and acceptance, speculative against plain,
side by side on one server and model (requests choose with the `speculative`
field), on three tasks:
  quote  document QA whose answers quote the document
  edit   code editing: rewrite a given block with a small change
  free   free generation (few repeats: the drafts rarely hit)
Modes: off, prompt-lookup, and draft when --draft-model is given (a draft of
the same vocabulary). Each request is streamed; decode tokens/s counts the
tokens after the first over the time after the first (prefill excluded), and
the acceptance rate comes from the /metrics counters around each request.
The modes take turns request by request, so load changes reach them alike.
The prefix cache is off, so every request prefills its whole prompt.

Writes bench/out/speculative.json and .png. The machine's load average is
recorded before and after (the figures are only comparable on a quiet machine).

  python bench/speculative.py [--model M] [--draft-model D] [--repeats 3] [--max-tokens 160]
"""
import argparse
import datetime
import os
import time

from serving_common import OUT_DIR, SMOL, StrideServer, cpu_name, metrics, plt, stream, write_json

DOC = (
    "The Harbor Library was founded in 1887 by a group of fishermen who wanted a dry place to read. "
    "Its first building stood on Pier Street and held four hundred books, most of them donated by sailors. "
    "In 1923 a fire destroyed the reading room, and the town raised money to move the library up the hill. "
    "The new building opened in 1926 with a clock tower, a map room and a children's corner. "
    "Since 1990 the library has kept a digital catalogue, and in 2015 it began lending tools and seeds. "
    "The library is open every day except Monday, from nine in the morning to seven in the evening. "
)
QUESTIONS = [
    "When did the library start lending tools? Quote the sentence of the document that says so.",
    "What happened in 1923? Quote the document exactly.",
    "What are the opening hours? Answer with the exact sentence from the document.",
]
CODE = '''def load_users(path):
    users = []
    with open(path) as f:
        for line in f:
            name, age, email = line.strip().split(",")
            users.append({"name": name, "age": int(age), "email": email})
    return users


def adults(users):
    return [u for u in users if u["age"] >= 18]
'''
EDITS = [
    "Rewrite the code above with the function load_users renamed to read_users. Output the whole code.",
    "Rewrite the code above so that adults uses the age 21 instead of 18. Output the whole code.",
    "Rewrite the code above with the parameter path renamed to filename. Output the whole code.",
]
FREE = [
    "Write a short story about a fox who learns to play the violin.",
    "Explain why the sky is blue to a ten-year-old.",
    "Describe a perfect summer day in a small village.",
]


def tasks():
    return {
        "quote": [[{"role": "user", "content": "Document:\n" + DOC + "\n\n" + q}] for q in QUESTIONS],
        "edit": [[{"role": "user", "content": "```python\n" + CODE + "```\n\n" + e}] for e in EDITS],
        "free": [[{"role": "user", "content": f}] for f in FREE],
    }


COUNTERS = {"drafted": "stride_spec_decode_num_draft_tokens_total",
            "accepted": "stride_spec_decode_num_accepted_tokens_total",
            "verify_steps": "stride_spec_decode_num_verify_steps_total"}


def run_task(port, messages_list, modes, repeats, max_tokens):
    """Every prompt in every mode, the modes interleaved request by request so
    that a change in the machine's load reaches them alike."""
    res = {m: {"requests": 0, "decode_tokens": 0, "decode_seconds": 0.0, "total_seconds": 0.0,
               "drafted": 0, "accepted": 0, "verify_steps": 0, "texts": []} for m in modes}
    for _ in range(repeats):
        for messages in messages_list:
            for mode in modes:
                body = {"messages": messages, "max_tokens": max_tokens, "temperature": 0, "speculative": mode,
                        "stream_options": {"include_usage": True}}
                before = metrics(port)
                r = stream(port, "/v1/chat/completions", body)
                after = metrics(port)
                assert r["status"] == 200 and r["done"], r
                out = res[mode]
                out["decode_tokens"] += r["usage"]["completion_tokens"] - 1
                out["decode_seconds"] += r["elapsed"] - r["ttft"]
                out["total_seconds"] += r["elapsed"]
                out["requests"] += 1
                out["texts"].append(r["text"])
                for key, name in COUNTERS.items():
                    out[key] += after.get(name, 0) - before.get(name, 0)
    for out in res.values():
        out["decode_tok_s"] = out["decode_tokens"] / out["decode_seconds"] if out["decode_seconds"] > 0 else 0.0
        out["acceptance_rate"] = out["accepted"] / out["drafted"] if out["drafted"] else None
        out["tokens_per_verify_step"] = ((out["accepted"] + out["verify_steps"]) / out["verify_steps"]
                                         if out["verify_steps"] else None)
    return res


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default=SMOL)
    ap.add_argument("--draft-model", default="", help="a draft of the same vocabulary (adds the 'draft' mode)")
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--max-tokens", type=int, default=160)
    ap.add_argument("--draft-max", type=int, default=8)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    modes = ["off", "prompt-lookup"] + (["draft"] if args.draft_model else [])
    extra = ["--draft-max", str(args.draft_max), "--max-batch", "1"]
    if args.draft_model:
        extra += ["--draft-model", args.draft_model]
    report = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
              "cpu": cpu_name(), "threads": args.threads, "model": os.path.basename(args.model),
              "draft_model": os.path.basename(args.draft_model) if args.draft_model else None,
              "draft_max": args.draft_max, "max_tokens": args.max_tokens, "repeats": args.repeats,
              "load_average_before": os.getloadavg(), "tasks": {}}
    with StrideServer(args.model, threads=args.threads, extra_args=extra, env={"STRIDE_CACHE_REUSE": "false"}) as srv:
        for task, messages_list in tasks().items():
            # One warm-up request per task.
            run_task(srv.port, messages_list[:1], ["off"], 1, 16)
            res = run_task(srv.port, messages_list, modes, args.repeats, args.max_tokens)
            base = res["off"]["decode_tok_s"]
            for m in modes:
                res[m]["speedup"] = res[m]["decode_tok_s"] / base if base else None
                res[m]["same_text_as_off"] = res[m]["texts"] == res["off"]["texts"]
            report["tasks"][task] = res
            print(task, {m: (round(res[m]["decode_tok_s"], 1), res[m]["acceptance_rate"] and round(res[m]["acceptance_rate"], 3),
                             round(res[m]["speedup"], 2)) for m in modes}, flush=True)
    report["load_average_after"] = os.getloadavg()
    for t in report["tasks"].values():
        for r in t.values():
            r["texts"] = [x[:200] for x in r["texts"]]
    path = os.path.join(OUT_DIR, "speculative.json")
    write_json(path, report)

    p = plt()
    fig, (a1, a2) = p.subplots(1, 2, figsize=(11, 4))
    names = list(report["tasks"])
    w = 0.8 / len(modes)
    for i, m in enumerate(modes):
        xs = [k + (i - (len(modes) - 1) / 2) * w for k in range(len(names))]
        a1.bar(xs, [report["tasks"][t][m]["decode_tok_s"] for t in names], w, label=m)
        if m != "off":
            a2.bar(xs, [report["tasks"][t][m]["acceptance_rate"] or 0 for t in names], w, label=m)
    a1.set_xticks(range(len(names)), [f"{t}\n" + ", ".join(f"{report['tasks'][t][m]['speedup']:.2f}x" for m in modes[1:])
                                      for t in names])
    a1.set_ylabel("decode tokens/s")
    a1.set_title(f"{report['model']}, {report['cpu'][:40]}, {args.threads} threads", fontsize=9)
    a1.legend(fontsize=8)
    a2.set_xticks(range(len(names)), names)
    a2.set_ylabel("accepted / drafted")
    a2.set_ylim(0, 1)
    a2.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(os.path.join(OUT_DIR, "speculative.png"), dpi=110)
    print("wrote", path)


if __name__ == "__main__":
    main()
