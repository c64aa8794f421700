#!/usr/bin/env python3
"""The top-level fields of OpenAI's request schemas and whether each allows
null, read from the official spec (scripts/setup unpacks it into
$STRIDE_CACHE/openai-spec/openapi.yml): the table in src/http/openai_fields.cpp.

  openai_request_fields.py            # prints the table as C++
  openai_request_fields.py --check    # exits 1 when the committed table differs

A field allows null when each schema that defines it (allOf parts included)
says `nullable: true`, has type null, or is an anyOf/oneOf with a member that
does (following $refs).
"""
import os
import re
import sys

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CACHE = os.environ.get("STRIDE_CACHE", os.path.join(os.path.expanduser("~"), ".cache", "stride"))
SPEC = os.path.join(CACHE, "openai-spec", "openapi.yml")
TABLE = os.path.join(ROOT, "src", "http", "openai_fields.cpp")
ENDPOINTS = {"kChatOpenAI": "CreateChatCompletionRequest", "kCompletionsOpenAI": "CreateCompletionRequest",
             "kResponsesOpenAI": "CreateResponse", "kEmbeddingsOpenAI": "CreateEmbeddingRequest"}


def load(path=SPEC):
    with open(path) as f:
        return yaml.load(f, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))["components"]["schemas"]


def _resolve(schemas, node):
    while "$ref" in node:
        node = schemas[node["$ref"].rsplit("/", 1)[1]]
    return node


def properties(schemas, node):
    """Top-level properties of a request schema, through allOf and $refs: each name with every schema that
    constrains it (an allOf part and the schema itself may both define it, and a value must meet all)."""
    node = _resolve(schemas, node)
    out = {}
    for part in node.get("allOf", []):
        for name, defs in properties(schemas, part).items():
            out.setdefault(name, []).extend(defs)
    for name, schema in node.get("properties", {}).items():
        out.setdefault(name, []).append(schema)
    return out


def allows_null(schemas, node, depth=0):
    if depth > 32:
        return False
    node = _resolve(schemas, node)
    t = node.get("type")
    if node.get("nullable") is True or t == "null" or (isinstance(t, list) and "null" in t):
        return True
    if any(allows_null(schemas, m, depth + 1) for k in ("anyOf", "oneOf") for m in node.get(k, [])):
        return True
    parts = node.get("allOf", [])
    return bool(parts) and all(allows_null(schemas, m, depth + 1) for m in parts)


def table(schemas):
    """{C++ array name: {field: allows null}}."""
    return {array: {name: all(allows_null(schemas, d) for d in defs)
                    for name, defs in properties(schemas, {"$ref": f"#/components/schemas/{schema}"}).items()}
            for array, schema in ENDPOINTS.items()}


def committed(path=TABLE):
    with open(path) as f:
        text = f.read()
    out = {}
    for array in ENDPOINTS:
        body = re.search(r"OpenAIField " + array + r"\[\] = \{(.*?)\};", text, re.S).group(1)
        out[array] = {n: v == "true" for n, v in re.findall(r'\{"(\w+)", (true|false)\}', body)}
    return out


def as_cpp(t):
    lines = []
    for array, fields in t.items():
        items = ", ".join(f'{{"{n}", {"true" if v else "false"}}}' for n, v in sorted(fields.items()))
        lines.append(f"constexpr OpenAIField {array}[] = {{{items}}};")
    return "\n".join(lines)


def main():
    want = table(load())
    if "--check" in sys.argv[1:]:
        have = committed()
        if have != want:
            for array in ENDPOINTS:
                for name in sorted(set(want[array]) | set(have[array])):
                    if want[array].get(name) != have[array].get(name):
                        print(f"{array}.{name}: spec {want[array].get(name)}, table {have[array].get(name)}")
            return 1
        print("src/http/openai_fields.cpp matches the official spec")
        return 0
    print(as_cpp(want))
    return 0


if __name__ == "__main__":
    sys.exit(main())
