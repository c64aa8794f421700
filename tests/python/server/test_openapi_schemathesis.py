"""Property tests of `stride serve` against docs/openapi.yaml with schemathesis: a
short, seeded run over every operation (examples, coverage and fuzzing phases,
valid and invalid inputs). Any 5xx, an undocumented status code, a wrong
content type, a body or header that does not match the schema fails the test;
so does a server that stops answering /health afterwards.

The long run is scripts/schemathesis_long.
"""
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile

import pytest

from stride_server import ROOT, SMOL, StrideServer, binary

SPEC = os.path.join(ROOT, "docs", "openapi.yaml")
ADMIN_KEY = "schemathesis-admin-key"
CHECKS = ("not_a_server_error,status_code_conformance,content_type_conformance,"
          "response_schema_conformance,response_headers_conformance")
# The shared helpers (schemathesis.toml, schemathesis_hooks.py) sit at the suite's root, beside stride_server.py.
HELPERS = os.path.join(ROOT, "tests", "python")
CONFIG = os.path.join(HELPERS, "schemathesis.toml")
OPERATIONS = {"POST /v1/completions", "POST /v1/chat/completions", "POST /v1/responses", "GET /v1/models",
              "GET /v1/models/{model}", "POST /tokenize",
              "POST /detokenize", "GET /health", "GET /ready", "GET /metrics", "POST /admin/model",
              "POST /v1/embeddings", "POST /infill", "GET /v1/sessions", "POST /v1/sessions/{name}",
              "GET /v1/sessions/{name}",
              "DELETE /v1/sessions/{name}"}


def schemathesis_cmd(url, report_dir, max_examples, seed, extra=()):
    return [sys.executable, "-m", "schemathesis.cli", "--config-file", CONFIG, "run", SPEC, "--url", url,
            "--checks", CHECKS, "--max-examples", str(max_examples), "--seed", str(seed),
            "--phases", "examples,coverage,fuzzing", "--workers", "1", "--mode", "all",
            "--generation-database", "none", "--request-timeout", "60",
            "--header", f"Authorization: Bearer {ADMIN_KEY}",
            "--suppress-health-check", "too_slow,filter_too_much",
            "--report", "json,junit", "--report-dir", report_dir, "--output-sanitize", "false",
            "--no-color", *extra]


def schemathesis_env():
    env = dict(os.environ)
    env["PYTHONPATH"] = HELPERS + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env["SCHEMATHESIS_HOOKS"] = "schemathesis_hooks"
    env.setdefault("STRIDE_ST_MAX_TOKENS", "4")
    return env


@pytest.fixture(scope="module")
def model_dir():
    """A model directory with SmolLM2 published as v1, so /admin/model {"version": "v1"} can succeed."""
    d = tempfile.mkdtemp(prefix="stride-st-models-")
    subprocess.run([binary(), "model", "publish", "--model-dir", d, "--version", "v1", SMOL], check=True,
                   capture_output=True, timeout=120)
    yield d
    shutil.rmtree(d, ignore_errors=True)


def test_schemathesis_short_run(model_dir, tmp_path):
    with StrideServer(None, extra_args=["--kv-budget", "64M"],
                      env={"STRIDE_MODEL_DIR": model_dir, "STRIDE_MODEL_VERSION": "v1",
                           "STRIDE_ADMIN_KEYS": ADMIN_KEY, "STRIDE_MAX_PROMPT_TOKENS": "2048",
                           "STRIDE_MAX_CONTEXT_LENGTH": "8192", "STRIDE_MAX_BATCH": "8",
                           "STRIDE_SESSION_DIR": str(tmp_path / "sessions")}) as srv:
        report_dir = str(tmp_path / "report")
        proc = subprocess.run(schemathesis_cmd(srv.url, report_dir, 25, 20261201), env=schemathesis_env(),
                              capture_output=True, timeout=600, cwd=str(tmp_path))
        out = proc.stdout.decode("utf-8", "replace") + proc.stderr.decode("utf-8", "replace")
        print(out[-6000:])
        reports = glob.glob(os.path.join(report_dir, "json-*.json"))
        assert reports, f"schemathesis wrote no report (exit {proc.returncode}):\n{out[-6000:]}"
        with open(reports[0]) as f:
            rep = json.load(f)

        # The server survived the run and still answers.
        assert srv.proc.poll() is None, f"stride serve died during the run:\n{srv.logs()[-3000:]}"
        status, _, body = srv.get("/health", timeout=10)
        assert status == 200 and json.loads(body) == {"status": "ok"}
        status, _, _ = srv.post("/v1/completions", {"model": srv.model_name, "prompt": "Hello", "max_tokens": 2, "temperature": 0})
        assert status == 200

    failures = [(f["title"], f["operations"]) for f in rep["failures"]]
    assert proc.returncode == 0 and not failures and not rep["errors"], \
        f"schemathesis found failures {failures} errors {rep['errors']}:\n{out[-8000:]}"
    # A run that tested nothing cannot pass.
    assert rep["operations"]["tested"] == len(OPERATIONS), rep["operations"]
    assert set(rep["valid_rates"]) >= {"POST /v1/completions", "POST /v1/chat/completions"}, rep["valid_rates"]
    assert rep["test_cases"]["generated"] >= 200, rep["test_cases"]
