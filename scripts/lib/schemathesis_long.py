"""Driver of scripts/schemathesis_long (see there)."""
import argparse
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# The suite's helpers, and the schemathesis test whose command line and env this reuses.
sys.path.insert(0, os.path.join(ROOT, "tests", "python"))
sys.path.insert(0, os.path.join(ROOT, "tests", "python", "server"))
from stride_server import SMOL, StrideServer, binary  # noqa: E402
from test_openapi_schemathesis import ADMIN_KEY, OPERATIONS, schemathesis_cmd, schemathesis_env  # noqa: E402

LONG_CHECKS = ("not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance,"
               "response_headers_conformance,negative_data_rejection,unsupported_method,allow_header_conformance")


def server(model_dir):
    return StrideServer(None, extra_args=["--kv-budget", "64M"],
                        env={"STRIDE_MODEL_DIR": model_dir, "STRIDE_MODEL_VERSION": "v1",
                             "STRIDE_ADMIN_KEYS": ADMIN_KEY, "STRIDE_MAX_PROMPT_TOKENS": "2048",
                             "STRIDE_MAX_CONTEXT_LENGTH": "8192", "STRIDE_MAX_BATCH": "8"})


def run_one(model_dir, label, extra, examples, seed, report_root, timeout):
    report_dir = os.path.join(report_root, label.replace(" ", "_").replace("/", "_"))
    t0 = time.time()
    with server(model_dir) as srv:
        cmd = schemathesis_cmd(srv.url, report_dir, examples, seed, extra)
        cmd[cmd.index("--checks") + 1] = LONG_CHECKS
        try:
            proc = subprocess.run(cmd, env=schemathesis_env(), capture_output=True, timeout=timeout, cwd=report_root)
            out, rc = (proc.stdout + proc.stderr).decode("utf-8", "replace"), proc.returncode
        except subprocess.TimeoutExpired as e:
            out, rc = ((e.stdout or b"") + (e.stderr or b"")).decode("utf-8", "replace"), "timeout"
        crashed = srv.proc.poll()
        logs_tail = srv.logs()[-1500:] if crashed is not None else ""
    reports = glob.glob(os.path.join(report_dir, "json-*.json"))
    rep = json.load(open(reports[0])) if reports else {}
    return {"label": label, "exit": rc, "seconds": round(time.time() - t0, 1),
            "server_exit": crashed, "server_log_tail": logs_tail,
            "generated": rep.get("test_cases", {}).get("generated"),
            "failures": rep.get("failures", []), "errors": rep.get("errors", []),
            "phases": rep.get("phases"), "output_tail": out[-20000:]}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--examples", type=int, default=2000, help="max examples per operation (fuzzing phase)")
    ap.add_argument("--stateful-seconds", type=int, default=300)
    ap.add_argument("--timeout", type=int, default=3600, help="seconds per operation")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--only", default="", help="comma-separated 'METHOD /path' labels")
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "out", "schemathesis_long"))
    args = ap.parse_args()
    model_dir = tempfile.mkdtemp(prefix="stride-st-long-models-")
    args.out = os.path.abspath(args.out)  # schemathesis runs with the report folder as its working directory
    report_root = args.out + "-reports"
    shutil.rmtree(report_root, ignore_errors=True)
    os.makedirs(report_root)
    runs = []
    try:
        subprocess.run([binary(), "model", "publish", "--model-dir", model_dir, "--version", "v1", SMOL],
                       check=True, capture_output=True, timeout=120)
        ops = sorted(OPERATIONS) if not args.only else args.only.split(",")
        for label in ops:
            r = run_one(model_dir, label, ["--include-name", label],
                        args.examples, args.seed, report_root, args.timeout)
            runs.append(r)
            print(f"[schemathesis_long] {label}: {r['generated']} cases, {len(r['failures'])} failure kinds, "
                  f"{len(r['errors'])} errors, server {'alive' if r['server_exit'] is None else 'EXITED ' + str(r['server_exit'])}"
                  f" ({r['seconds']} s)", flush=True)
        if args.stateful_seconds > 0 and not args.only:
            r = run_one(model_dir, "stateful", ["--phases", "stateful", "--max-time", str(args.stateful_seconds)],
                        args.examples, args.seed, report_root, args.timeout)
            r["label"] = "stateful (links)"
            runs.append(r)
            print(f"[schemathesis_long] stateful: {r['generated']} cases, {len(r['failures'])} failure kinds "
                  f"({r['seconds']} s)", flush=True)
    finally:
        shutil.rmtree(model_dir, ignore_errors=True)
    summary = {"date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "examples_per_operation": args.examples,
               "seed": args.seed, "checks": LONG_CHECKS, "runs": runs,
               "total_cases": sum(r["generated"] or 0 for r in runs),
               "failed_runs": [r["label"] for r in runs if r["exit"] != 0 or r["server_exit"] is not None]}
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out + ".json", "w") as f:
        json.dump(summary, f, indent=1)
    with open(args.out + ".md", "w") as f:
        f.write(f"# schemathesis long run, {summary['date']}\n\n{summary['total_cases']} cases; checks {LONG_CHECKS}\n\n")
        f.write("| operation | cases | failures | errors | server | seconds |\n|---|---|---|---|---|---|\n")
        for r in runs:
            kinds = "; ".join(f"{x['title']} ×{x['count']}" for x in r["failures"]) or "-"
            f.write(f"| {r['label']} | {r['generated']} | {kinds} | {len(r['errors'])} | "
                    f"{'alive' if r['server_exit'] is None else 'exited ' + str(r['server_exit'])} | {r['seconds']} |\n")
        for r in runs:
            if r["exit"] != 0 or r["server_exit"] is not None:
                f.write(f"\n## {r['label']}\n\n```\n{r['server_log_tail']}\n{r['output_tail'][-12000:]}\n```\n")
    print(f"[schemathesis_long] {summary['total_cases']} cases; failed: {summary['failed_runs'] or 'none'}")
    print(f"wrote {args.out}.json and {args.out}.md")
    return 1 if summary["failed_runs"] else 0


if __name__ == "__main__":
    raise SystemExit(main())
