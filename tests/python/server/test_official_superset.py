"""docs/openapi.yaml (stride's own spec, with its extensions) covers every
operation of OpenAI's published spec that stride serves: the same methods and
paths, each request property the official spec requires, and, in each 200
body (JSON, and the data of each streamed chunk), each property the official
spec requires, at every level where both sides describe a plain object.

Run: ~/.cache/stride/venv/bin/python -m pytest -q tests/python/server/test_official_superset.py
"""
import os

import pytest
import yaml

import official_spec as spec
from stride_server import ROOT

OURS_PATH = os.path.join(ROOT, "docs", "openapi.yaml")


@pytest.fixture(scope="module")
def ours():
    with open(OURS_PATH) as f:
        return yaml.safe_load(f)


def resolve(doc, schema):
    """A schema with its $ref followed and its allOf parts merged into one object schema."""
    while isinstance(schema, dict) and "$ref" in schema:
        node = doc
        for part in schema["$ref"].lstrip("#/").split("/"):
            node = node[part]
        schema = node
    if not isinstance(schema, dict):
        return {}
    if "allOf" in schema:
        merged = {"properties": {}, "required": []}
        for part in schema["allOf"] + [{k: v for k, v in schema.items() if k != "allOf"}]:
            p = resolve(doc, part)
            merged["properties"].update(p.get("properties", {}))
            merged["required"] += p.get("required", [])
        return merged
    return schema


def single(doc, schema):
    """The one non-null alternative of a nullable union (anyOf [X, null]), else the schema itself."""
    s = resolve(doc, schema)
    alts = s.get("anyOf") or s.get("oneOf")
    if alts:
        non_null = [a for a in alts if resolve(doc, a).get("type") != "null"]
        if len(non_null) == 1:
            return single(doc, non_null[0])
    return s


def type_tag(doc, schema):
    """The one value of an object schema's `type` member (an output item's or content part's kind)."""
    values = resolve(doc, schema).get("properties", {}).get("type", {}).get("enum", [])
    return values[0] if len(values) == 1 else None


def matching_alternative(official, our, ours_doc):
    """Of an official union, the member of the same kind (`type` value) as our object schema."""
    tag = type_tag(ours_doc, our)
    alts = official.get("anyOf") or official.get("oneOf") or []
    same = [a for a in alts if tag and type_tag(spec.document(), a) == tag]
    return single(spec.document(), same[0]) if len(same) == 1 else official


def missing_required(official, ours_doc, ours, where, depth=0):
    """Where a property the official schema requires is not in ours (object schemas, recursively)."""
    our = single(ours_doc, ours)
    off = matching_alternative(single(spec.document(), official), our, ours_doc)
    if off.get("type") == "array" and our.get("type") == "array":
        return missing_required(off.get("items", {}), ours_doc, our.get("items", {}), where + "[]", depth + 1)
    if "properties" not in off or "properties" not in our or depth > 8:
        return []
    gaps = []
    for name in off.get("required", []):
        if name not in our["properties"]:
            gaps.append(f"{where}.{name}")
            continue
        gaps += missing_required(off["properties"].get(name, {}), ours_doc, our["properties"][name],
                                 f"{where}.{name}", depth + 1)
    return gaps


def our_operation(ours, method, path):
    op = ours["paths"].get(spec.PATH_PREFIX + path, {}).get(method)
    assert op, f"docs/openapi.yaml has no {method.upper()} {spec.PATH_PREFIX}{path}"
    return op


@pytest.mark.parametrize("method,path", spec.CLAIMED_OPERATIONS)
def test_official_operation_is_in_ours(ours, method, path):
    our_operation(ours, method, path)
    official = spec.operation(method, path)
    ours_params = {p["name"] for p in our_operation(ours, method, path).get("parameters", [])}
    ours_params |= {p["name"] for p in ours["paths"][spec.PATH_PREFIX + path].get("parameters", [])}
    for p in official.get("parameters", []):
        assert p["name"] in ours_params, f"{method.upper()} {path}: parameter {p['name']} missing"


@pytest.mark.parametrize("method,path", [op for op in spec.CLAIMED_OPERATIONS if op[0] == "post"])
def test_official_required_request_properties_are_in_ours(ours, method, path):
    official = spec.operation(method, path)["requestBody"]["content"]["application/json"]["schema"]
    mine = our_operation(ours, method, path)["requestBody"]["content"]["application/json"]["schema"]
    off, our = resolve(spec.document(), official), resolve(ours, mine)
    gaps = [n for n in off.get("required", []) if n not in our.get("properties", {})]
    assert not gaps, f"{method.upper()} {path}: the request lacks {gaps}"


@pytest.mark.parametrize("method,path", spec.CLAIMED_OPERATIONS)
def test_official_required_response_properties_are_in_ours(ours, method, path):
    official = spec.operation(method, path)["responses"]["200"]["content"]
    mine = our_operation(ours, method, path)["responses"]["200"]["content"]
    for ctype, media in official.items():
        assert ctype in mine, f"{method.upper()} {path}: no {ctype} answer in docs/openapi.yaml"
        # Ours describes an event stream's data in x-stride-event-data; the official spec, as the schema.
        our_schema = mine[ctype].get("x-stride-event-data", mine[ctype]["schema"])
        gaps = missing_required(media["schema"], ours, our_schema, f"{method.upper()} {path} {ctype}")
        assert not gaps, f"docs/openapi.yaml lacks properties the official spec requires: {gaps}"
