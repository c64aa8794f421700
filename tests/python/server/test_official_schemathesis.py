"""schemathesis with OpenAI's published spec (tests/python/official_spec.py)
against `stride serve`, over the operations stride claims (chat completions,
completions, responses, embeddings, the model list and retrieval): a short,
seeded run of examples, coverage and fuzzing. Any 5xx, any 2xx body or
streamed event that breaks the official schema, or any 4xx that is not
OpenAI's error object fails; so does a server that stops answering.

The official spec documents only the 200 answers, so status codes are not
checked against it (docs/openapi.yaml's run, test_openapi_schemathesis.py,
checks them).
"""
import glob
import json
import os
import subprocess
import sys

import official_spec
from stride_server import ROOT, SMOL, StrideServer

HELPERS = os.path.join(ROOT, "tests", "python")
CONFIG = os.path.join(HELPERS, "schemathesis.toml")
MODEL = "smol"
API_KEY = "official-spec-key"  # the spec requires bearer auth: a request without it must get a 401
# The spec's own example names, served too, so its examples reach the model.
ALIASES = [MODEL, "gpt-4o-mini", "gpt-4o"]
# negative_data_rejection: a request the official spec forbids (a missing `model`, null where the schema has no
# null, a bound or enum broken) gets no 2xx.
CHECKS = ("not_a_server_error,response_schema_conformance,content_type_conformance,negative_data_rejection,"
          "openai_error_shape")
OPERATIONS = {f"{m.upper()} {p}" for m, p in official_spec.CLAIMED_OPERATIONS}


def test_official_spec_schemathesis_run(tmp_path):
    spec_file = official_spec.write_claimed_operations(str(tmp_path / "openai.json"))
    with StrideServer(SMOL, extra_args=["--kv-budget", "64M", "--served-model-name", *ALIASES],
                      env={"STRIDE_MAX_BATCH": "8", "STRIDE_API_KEYS": API_KEY,
                           "STRIDE_MAX_TOKENS_CAP": "256", "STRIDE_MAX_PROMPT_TOKENS": "2048"}) as srv:
        report_dir = str(tmp_path / "report")
        # One worker: hypothesis describing strategies from two threads at once trips CPython 3.11's
        # "AST constructor recursion depth mismatch" (its ast.parse is not thread-safe there).
        cmd = [sys.executable, "-m", "schemathesis.cli", "--config-file", CONFIG, "run", spec_file,
               "--url", srv.url + official_spec.PATH_PREFIX, "--checks", CHECKS,
               "--max-examples", "8", "--seed", "20261206", "--phases", "examples,coverage,fuzzing",
               "--workers", "1", "--mode", "all", "--generation-database", "none", "--request-timeout", "60",
               "--suppress-health-check", "too_slow,filter_too_much,large_base_example",
               "--header", f"Authorization: Bearer {API_KEY}",
               "--report", "json", "--report-dir", report_dir, "--output-sanitize", "false", "--no-color"]
        env = dict(os.environ, SCHEMATHESIS_HOOKS="schemathesis_official_hooks", STRIDE_ST_MODEL=MODEL,
                   PYTHONPATH=HELPERS + (os.pathsep + os.environ["PYTHONPATH"] if os.environ.get("PYTHONPATH") else ""))
        proc = subprocess.run(cmd, env=env, capture_output=True, timeout=600, cwd=str(tmp_path))
        out = proc.stdout.decode("utf-8", "replace") + proc.stderr.decode("utf-8", "replace")
        print(out[-6000:])
        reports = glob.glob(os.path.join(report_dir, "json-*.json"))
        assert reports, f"schemathesis wrote no report (exit {proc.returncode}):\n{out[-6000:]}"
        with open(reports[0]) as f:
            rep = json.load(f)
        assert srv.proc.poll() is None, f"stride serve died during the run:\n{srv.logs()[-3000:]}"
        assert srv.get("/health", timeout=10)[0] == 200

    failures = [(f["title"], f["operations"]) for f in rep["failures"]]
    assert proc.returncode == 0 and not failures and not rep["errors"], \
        f"schemathesis found failures {failures} errors {rep['errors']}:\n{out[-8000:]}"
    # A run that tested nothing cannot pass.
    assert rep["operations"]["tested"] == len(OPERATIONS), rep["operations"]
    assert rep["test_cases"]["generated"] >= 100, rep["test_cases"]
