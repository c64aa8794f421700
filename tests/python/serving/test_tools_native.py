"""Tool calling in a chat template's own syntax (docs/serving.md, "Tools"):
the Hermes / Qwen2.5 / Qwen3 format, on SmolLM2 served with such a template
through --chat-template-file.

Rendering: the prompt stride builds for conversations with `tools`,
assistant `tool_calls` and `tool` results is exactly what transformers'
render_jinja_template (the oracle; the dicts as vLLM passes them, arguments
parsed) makes of the same template. Replies: with tool_choice required or a
named function the model's <tool_call> blocks come back as `tool_calls`
whose arguments validate under the tool's schema (jsonschema), through the
official `openai` client, streamed deltas adding up to the same calls.

Run: STRIDE_BIN=build/stride ~/.cache/stride/venv/bin/python -m pytest -q tests/python/serving/test_tools_native.py
"""
import copy
import json
import os
import time

import jsonschema
import openai
import pytest
from transformers.utils.chat_template_utils import render_jinja_template

from stride_server import SMOL, StrideServer
from test_tools import TIME, WEATHER

TEMPLATES = os.path.join(os.path.expanduser("~"), ".cache", "stride", "chat-templates")
HERMES_TEMPLATES = ["Qwen-Qwen2.5-7B-Instruct.jinja", "Qwen-Qwen3-0.6B.jinja",
                    "NousResearch-Hermes-3-Llama-3.1-8B-tool_use.jinja"]
MAX_TOKENS = 200

TOOLS = [WEATHER, TIME]

CONVERSATIONS = {
    "tools_only": [{"role": "user", "content": "What is the weather in Paris?"}],
    "with_system": [{"role": "system", "content": "You are terse."},
                    {"role": "user", "content": "Time in Tokyo?"}],
    "calls_and_results": [
        {"role": "user", "content": "Weather in Paris and the time in CET?"},
        {"role": "assistant", "content": "", "tool_calls": [
            {"id": "call_1", "type": "function",
             "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\", \"unit\": \"celsius\"}"}},
            {"id": "call_2", "type": "function", "function": {"name": "get_time", "arguments": "{\"tz\": \"CET\"}"}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "{\"temperature\": 21}"},
        {"role": "tool", "tool_call_id": "call_2", "content": "14:05"},
        {"role": "assistant", "content": "It is 21 C in Paris and 14:05 CET."},
        {"role": "user", "content": "And in Rome?"}],
    "one_call": [
        {"role": "system", "content": "Use tools when useful."},
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": "", "tool_calls": [
            {"id": "call_7", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}]},
        {"role": "tool", "tool_call_id": "call_7", "content": "18 C, sunny"},
        {"role": "user", "content": "Thanks. And Rome?"}],
}
LLAMA_TEMPLATE = "meta-llama-Llama-3.1-8B-Instruct.jinja"
LLAMA_CONVERSATIONS = ["one_call", "tools_only", "with_system"]  # Llama 3.1 takes one call per message


def read_template(name):
    with open(os.path.join(TEMPLATES, name), encoding="utf-8") as f:
        return f.read()


def oracle_prompt(template, messages, tools):
    """transformers' rendering, with call arguments as dicts (as vLLM hands them to templates)."""
    msgs = copy.deepcopy(messages)
    for m in msgs:
        for c in m.get("tool_calls", []):
            c["function"]["arguments"] = json.loads(c["function"]["arguments"])
    # apply_chat_template passes the tokenizer's special tokens: SmolLM2-Instruct's.
    return render_jinja_template([msgs], tools=tools, chat_template=template, add_generation_prompt=True,
                                 bos_token="<|im_start|>", eos_token="<|im_end|>")[0][0]


def start(template, tmp_path_factory):
    audit = str(tmp_path_factory.mktemp("audit") / "audit.jsonl")
    s = StrideServer(SMOL, extra_args=["--chat-template-file", os.path.join(TEMPLATES, template),
                                       "--audit-log", audit],
                     env={"STRIDE_AUDIT_LOG_PROMPTS": "true", "STRIDE_MAX_TOKENS_CAP": "1024"})
    s.audit = audit
    s.template = read_template(template)
    s.client = openai.OpenAI(base_url=s.url + "/v1", api_key="unused", max_retries=0, timeout=600)
    s.model = s.client.models.list().data[0].id
    return s


@pytest.fixture(scope="module", params=HERMES_TEMPLATES)
def any_srv(request, tmp_path_factory):
    s = start(request.param, tmp_path_factory)
    yield s
    s.__exit__(None, None, None)


@pytest.fixture(scope="module")
def llama(tmp_path_factory):
    s = start(LLAMA_TEMPLATE, tmp_path_factory)
    yield s
    s.__exit__(None, None, None)


@pytest.fixture(scope="module")
def qwen(tmp_path_factory):
    s = start("Qwen-Qwen2.5-7B-Instruct.jinja", tmp_path_factory)
    yield s
    s.__exit__(None, None, None)


def audited_prompts(srv):
    if not os.path.exists(srv.audit):
        return []
    with open(srv.audit, encoding="utf-8") as f:
        lines = [json.loads(line) for line in f if line.strip()]
    return [r["prompt"] for r in lines if "prompt" in r]


def prompt_of(srv, **kw):
    """The prompt stride rendered for one request, from its audit log (written after the reply)."""
    before = len(audited_prompts(srv))
    srv.client.chat.completions.create(model=srv.model, max_tokens=1, temperature=0, **kw)
    deadline = time.time() + 10
    while len(audited_prompts(srv)) == before and time.time() < deadline:
        time.sleep(0.05)
    return audited_prompts(srv)[-1]


@pytest.mark.parametrize("conv", sorted(CONVERSATIONS))
def test_prompt_matches_transformers(any_srv, conv):
    messages = CONVERSATIONS[conv]
    assert prompt_of(any_srv, messages=messages, tools=TOOLS) == oracle_prompt(any_srv.template, messages, TOOLS)


@pytest.mark.parametrize("conv", LLAMA_CONVERSATIONS)
def test_llama3_prompt_matches_transformers(llama, conv):
    messages = CONVERSATIONS[conv]
    assert prompt_of(llama, messages=messages, tools=TOOLS) == oracle_prompt(llama.template, messages, TOOLS)


def test_llama3_refuses_what_its_template_refuses(llama):
    """Two calls in one message: the template raises under transformers, and stride answers 400."""
    messages = CONVERSATIONS["calls_and_results"]
    with pytest.raises(Exception, match="single tool-calls"):
        oracle_prompt(llama.template, messages, TOOLS)
    with pytest.raises(openai.BadRequestError, match="single tool-calls"):
        llama.client.chat.completions.create(model=llama.model, messages=messages, tools=TOOLS, max_tokens=1)


@pytest.mark.parametrize("choice", ["required", "named", "auto"])
def test_llama3_calls_validate(llama, choice):
    tool_choice = {"type": "function", "function": {"name": "get_time"}} if choice == "named" else choice
    for p in PROMPTS:
        messages = [{"role": "user", "content": p}]
        r = llama.client.chat.completions.create(model=llama.model, messages=messages, tools=TOOLS,
                                                 tool_choice=tool_choice, max_tokens=MAX_TOKENS, temperature=0)
        c = r.choices[0]
        if choice == "auto" and not c.message.tool_calls:
            assert c.message.content and not c.message.content.lstrip().startswith("{")
            continue
        assert len(check_calls(c, only="get_time" if choice == "named" else None)) == 1
        if choice == "required":  # streamed deltas add up to the same call
            with llama.client.chat.completions.stream(model=llama.model, messages=messages, tools=TOOLS,
                                                      tool_choice=tool_choice, max_tokens=MAX_TOKENS,
                                                      temperature=0) as stream:
                got = stream.get_final_completion().choices[0]
            assert check_calls(got, streamed=True) == check_calls(c)


def test_tool_choice_none_offers_no_tools(qwen):
    messages = CONVERSATIONS["tools_only"]
    got = prompt_of(qwen, messages=messages, tools=TOOLS, tool_choice="none")
    assert got == oracle_prompt(qwen.template, messages, None)


def schema_of(name):
    return next(t["function"]["parameters"] for t in TOOLS if t["function"]["name"] == name)


def check_calls(choice, only=None, streamed=False):
    assert choice.finish_reason == "tool_calls", choice
    # The stream helper starts content at "" (the first delta carries the role).
    assert (choice.message.content or None) is None if streamed else choice.message.content is None
    calls = choice.message.tool_calls
    assert calls
    for c in calls:
        assert c.type == "function" and c.id.startswith("call_")
        assert c.function.name in ({only} if only else {"get_weather", "get_time"})
        jsonschema.Draft202012Validator(schema_of(c.function.name)).validate(json.loads(c.function.arguments))
    return [(c.function.name, c.function.arguments) for c in calls]


PROMPTS = ["What is the weather in Paris?", "What time is it in Tokyo?", "Weather in Oslo and the time in UTC."]


@pytest.mark.parametrize("prompt", PROMPTS)
def test_required_calls_validate(qwen, prompt):
    r = qwen.client.chat.completions.create(model=qwen.model, messages=[{"role": "user", "content": prompt}],
                                            tools=TOOLS, tool_choice="required", max_tokens=MAX_TOKENS,
                                            temperature=0)
    check_calls(r.choices[0])
    # The model really wrote Hermes blocks: the raw reply is not what the client sees.
    assert "<tool_call>" not in json.dumps(r.model_dump())


def test_named_and_single_call(qwen):
    named = {"type": "function", "function": {"name": "get_time"}}
    r = qwen.client.chat.completions.create(model=qwen.model, messages=[{"role": "user", "content": PROMPTS[0]}],
                                            tools=TOOLS, tool_choice=named, max_tokens=MAX_TOKENS, temperature=0)
    assert len(check_calls(r.choices[0], only="get_time")) == 1
    r = qwen.client.chat.completions.create(model=qwen.model, messages=[{"role": "user", "content": PROMPTS[2]}],
                                            tools=TOOLS, tool_choice="required", parallel_tool_calls=False,
                                            max_tokens=MAX_TOKENS, temperature=0)
    assert len(check_calls(r.choices[0])) == 1


@pytest.mark.parametrize("choice", ["required", "named"])
def test_streamed_deltas_add_up_to_the_same_calls(qwen, choice):
    tool_choice = {"type": "function", "function": {"name": "get_weather"}} if choice == "named" else choice
    for p in PROMPTS:
        messages = [{"role": "user", "content": p}]
        whole = qwen.client.chat.completions.create(model=qwen.model, messages=messages, tools=TOOLS,
                                                    tool_choice=tool_choice, max_tokens=MAX_TOKENS,
                                                    temperature=0).choices[0]
        with qwen.client.chat.completions.stream(model=qwen.model, messages=messages, tools=TOOLS,
                                                 tool_choice=tool_choice, max_tokens=MAX_TOKENS,
                                                 temperature=0) as stream:
            events = [e.type for e in stream]
            got = stream.get_final_completion().choices[0]
        assert "tool_calls.function.arguments.delta" in events
        assert check_calls(got, streamed=True) == check_calls(whole), p


def test_auto_gives_text_or_valid_calls(qwen):
    for p in PROMPTS + ["Say hello."]:
        r = qwen.client.chat.completions.create(model=qwen.model, messages=[{"role": "user", "content": p}],
                                                tools=TOOLS, max_tokens=MAX_TOKENS, temperature=0)
        c = r.choices[0]
        if c.message.tool_calls:
            for call in c.message.tool_calls:  # auto is not constrained: names and JSON are checked by the reader
                assert call.function.name and isinstance(json.loads(call.function.arguments), dict)
        else:
            assert c.message.content is not None and c.finish_reason in ("stop", "length")
