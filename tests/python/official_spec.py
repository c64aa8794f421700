"""OpenAI's published OpenAPI description (OpenAPI 3.1) as the oracle of the
server's response shapes. scripts/setup unpacks it, sha256-pinned, into
$STRIDE_CACHE/openai-spec (scripts/oracles/fetch_openai_spec); nothing is
fetched here.

  errors("CreateChatCompletionResponse", body)  # [] when body is valid
  assert_valid("Model", body)
  assert_stream_event_valid(event)               # a /v1/responses SSE event, by its type
  assert_completion_chunk_valid(chunk)           # a streamed /v1/completions chunk

Validation is JSON Schema Draft 2020-12 over the document's components, with
every `$ref` resolved inside the same document, OpenAPI 3.0's leftover
`nullable: true` read as "or null", and the one place where OpenAI's API
answers outside its schema widened to the answer (_apply_errata).
"""
import copy
import functools
import json
import os
import pickle

import jsonschema
import pytest
import yaml
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

CACHE = os.environ.get("STRIDE_CACHE", os.path.join(os.path.expanduser("~"), ".cache", "stride"))
SPEC_DIR = os.path.join(CACHE, "openai-spec")
SPEC_PATH = os.path.join(SPEC_DIR, "openapi.yml")
BASE_URI = "urn:openai:openapi"
# The official spec's paths sit under its server URL's /v1.
PATH_PREFIX = "/v1"
# The operations stride serves, by the official spec's method and path.
CLAIMED_OPERATIONS = (("post", "/chat/completions"), ("post", "/completions"), ("post", "/responses"),
                      ("post", "/embeddings"), ("get", "/models"), ("get", "/models/{model}"))


def spec_path():
    if not os.path.isfile(SPEC_PATH):
        pytest.fail(f"{SPEC_PATH} missing: run scripts/setup")
    return SPEC_PATH


def _with_nullable_as_null(node):
    """The spec still marks some members `nullable: true` (OpenAPI 3.0), which JSON Schema 2020-12 ignores;
    OpenAI's SDKs read it as "or null", and so does this: such a schema becomes anyOf [itself, null]."""
    if isinstance(node, list):
        return [_with_nullable_as_null(v) for v in node]
    if not isinstance(node, dict):
        return node
    out = {k: _with_nullable_as_null(v) for k, v in node.items() if not (k == "nullable" and v is True)}
    if node.get("nullable") is True:
        return {"anyOf": [out, {"type": "null"}]}
    return out


def _apply_errata(doc):
    """Where OpenAI's API answers outside its own schema, and clients rely on it: the schema is widened to
    the API's answer, each place named here. A completion that echoes its prompt with log-probs has no
    log-prob for the prompt's first token: OpenAI writes null in token_logprobs and top_logprobs there."""
    choice = doc["components"]["schemas"]["CreateCompletionResponse"]["properties"]["choices"]["items"]
    logprobs = next(a for a in choice["properties"]["logprobs"]["anyOf"] if a.get("type") == "object")
    for name in ("token_logprobs", "top_logprobs"):
        items = logprobs["properties"][name]["items"]
        logprobs["properties"][name]["items"] = {"anyOf": [items, {"type": "null"}]}
    return doc


@functools.lru_cache(maxsize=1)
def document():
    """The parsed spec, `nullable` read as "or null". YAML parsing takes seconds: the result is kept beside
    the file, keyed by its size and mtime."""
    path = spec_path()
    st = os.stat(path)
    parsed = os.path.join(SPEC_DIR, f".parsed-nullable-errata-{st.st_size}-{int(st.st_mtime)}.pickle")
    if os.path.isfile(parsed):
        with open(parsed, "rb") as f:
            return pickle.load(f)
    with open(path) as f:
        doc = _apply_errata(_with_nullable_as_null(yaml.load(f, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))))
    tmp = f"{parsed}.{os.getpid()}"
    try:
        with open(tmp, "wb") as f:
            pickle.dump(doc, f)
        os.replace(tmp, parsed)
    except OSError:
        pass  # a read-only cache only costs the next run the parse
    return doc


def schemas():
    return document()["components"]["schemas"]


@functools.lru_cache(maxsize=1)
def _registry():
    return Registry().with_resource(BASE_URI, Resource.from_contents(document(), default_specification=DRAFT202012))


@functools.lru_cache(maxsize=None)
def validator(schema_name):
    assert schema_name in schemas(), f"the official spec has no schema {schema_name}"
    return jsonschema.Draft202012Validator({"$ref": f"{BASE_URI}#/components/schemas/{schema_name}"},
                                           registry=_registry())


def _describe(err):
    where = "/".join(str(p) for p in err.absolute_path) or "(root)"
    return f"{where}: {err.message[:300]}"


def errors(schema_name, instance):
    """Each violation of the named component schema, as 'path: message' (the most specific first)."""
    errs = sorted(validator(schema_name).iter_errors(instance), key=jsonschema.exceptions.relevance)
    out = []
    for e in errs:
        best = jsonschema.exceptions.best_match([e])
        out.append(_describe(best))
    return out


def assert_valid(schema_name, instance, what=""):
    errs = errors(schema_name, instance)
    assert not errs, f"{what or schema_name} breaks OpenAI's {schema_name}: {errs[:5]}\n{str(instance)[:1500]}"


@functools.lru_cache(maxsize=1)
def _stream_event_schemas():
    """The Responses stream's event `type` -> the component schema of that event."""
    by_type = {}
    for member in schemas()["ResponseStreamEvent"]["anyOf"]:
        name = member["$ref"].rsplit("/", 1)[1]
        for t in schemas()[name]["properties"]["type"].get("enum", []):
            by_type[t] = name
    return by_type


def assert_stream_event_valid(event):
    """A /v1/responses streamed event against the schema its `type` names."""
    name = _stream_event_schemas().get(event.get("type"))
    assert name, f"event type {event.get('type')!r} is not one of the official ResponseStreamEvent types"
    assert_valid(name, event, f"the {event['type']} event")


def assert_completion_chunk_valid(chunk):
    """A streamed /v1/completions chunk. The spec documents no stream for this route; OpenAI streams
    CreateCompletionResponse objects whose finish_reason is null until the last: so a null one is read
    as absent-yet, and everything else must match."""
    settled = copy.deepcopy(chunk)
    for choice in settled.get("choices", []):
        if isinstance(choice, dict) and choice.get("finish_reason", "") is None:
            choice["finish_reason"] = "length"
    assert_valid("CreateCompletionResponse", settled, f"the completion chunk {chunk}")


def operation(method, path):
    return document()["paths"][path][method]


def response_schema_name(method, path, content_type="application/json"):
    """The component schema of an operation's 200 body."""
    ref = operation(method, path)["responses"]["200"]["content"][content_type]["schema"]["$ref"]
    return ref.rsplit("/", 1)[1]


def _event_stream_items(op):
    """The operation with each text/event-stream answer described per event, as OpenAPI 3.2's itemSchema
    says it: its `data` is the JSON of the documented schema (or chat's closing "[DONE]"). Without it a
    3.1 `schema` there would be read as describing the SSE event object itself."""
    op = copy.deepcopy(op)
    for answer in op.get("responses", {}).values():
        media = answer.get("content", {}).get("text/event-stream")
        if media and "schema" in media:
            data = {"anyOf": [{"const": "[DONE]"}, {"type": "string", "contentMediaType": "application/json",
                                                    "contentSchema": media.pop("schema")}]}
            media["itemSchema"] = {"type": "object", "required": ["data"], "properties": {"data": data}}
    return op


def write_claimed_operations(path):
    """The spec reduced to the operations stride claims (what schemathesis runs), `nullable` read as above
    and event streams described per event, as JSON at `path`."""
    doc = dict(document())
    doc["paths"] = {}
    for method, p in CLAIMED_OPERATIONS:
        doc["paths"].setdefault(p, {})[method] = _event_stream_items(operation(method, p))
        params = document()["paths"][p].get("parameters")
        if params:
            doc["paths"][p]["parameters"] = params
    doc.pop("webhooks", None)
    doc.pop("x-oaiMeta", None)
    with open(path, "w") as f:
        json.dump(doc, f, default=str)
    return path
