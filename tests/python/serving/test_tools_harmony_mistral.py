"""Tool calling and reasoning in gpt-oss's harmony format and Mistral's
[TOOL_CALLS] formats (docs/serving.md, "Tools"), on SmolLM2 served with the
official templates through --chat-template-file.

Rendering: the prompt stride builds (tools, assistant tool_calls and
`reasoning_content`, tool results, `reasoning_effort`) is exactly what
transformers' render_jinja_template (the oracle) makes of the same template.
Replies: with tool_choice required or a named function the grammar makes the
model write the format's own call syntax, which comes back as `tool_calls`
whose arguments validate under the tool's schema (jsonschema), through the
official `openai` client, streamed deltas adding up to the same calls.
Harmony channels: a reply forced by a `grammar` to be analysis then final
comes back with the analysis in `reasoning_content` (never in `content`),
whole and as `delta.reasoning_content`.

Run: STRIDE_BIN=build/stride ~/.cache/stride/venv/bin/python -m pytest -q tests/python/serving/test_tools_harmony_mistral.py
"""
import copy
import json

import openai
import pytest

from test_tools_native import TOOLS, check_calls, prompt_of, start, PROMPTS
from transformers.utils.chat_template_utils import render_jinja_template

GPT_OSS = "openai-gpt-oss-120b.jinja"
MISTRAL_JSON = "mistralai-Mistral-Nemo-Instruct-2407.jinja"   # [TOOL_CALLS][{...}]
MISTRAL_ARGS = "Mistral-Small-3.2-24B-Instruct-2506.jinja"    # [TOOL_CALLS]name[CALL_ID]id[ARGS]{...}
MAX_TOKENS = 200
# A small model repeats calls until the 8 that `required` allows: room for all of them.
MISTRAL_MAX_TOKENS = 600


def oracle_prompt(template, messages, tools, **kwargs):
    """transformers' rendering, arguments as dicts and reasoning as `thinking` (as vLLM passes them)."""
    msgs = copy.deepcopy(messages)
    for m in msgs:
        for c in m.get("tool_calls", []):
            c["function"]["arguments"] = json.loads(c["function"]["arguments"])
        if "reasoning_content" in m:
            m["thinking"] = m["reasoning_content"]
    return render_jinja_template([msgs], tools=tools, chat_template=template, add_generation_prompt=True,
                                 bos_token="<|im_start|>", eos_token="<|im_end|>", **kwargs)[0][0]


def conversation(call_id_1, call_id_2):
    return [
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": "", "reasoning_content": "The weather tool answers that.",
         "tool_calls": [{"id": call_id_1, "type": "function",
                         "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}]},
        {"role": "tool", "tool_call_id": call_id_1, "content": "{\"temperature\": 21}"},
        {"role": "assistant", "content": "21 C in Paris."},
        {"role": "user", "content": "And the time in CET?"},
        {"role": "assistant", "content": "", "tool_calls": [
            {"id": call_id_2, "type": "function", "function": {"name": "get_time", "arguments": "{\"tz\": \"CET\"}"}}]},
        {"role": "tool", "tool_call_id": call_id_2, "content": "14:05"},
        {"role": "assistant", "content": "It is 14:05 CET."},
        {"role": "user", "content": "Thanks. And in Rome?"}]


@pytest.fixture(scope="module")
def harmony(tmp_path_factory):
    s = start(GPT_OSS, tmp_path_factory)
    yield s
    s.__exit__(None, None, None)


@pytest.fixture(scope="module", params=[MISTRAL_JSON, MISTRAL_ARGS])
def mistral(request, tmp_path_factory):
    s = start(request.param, tmp_path_factory)
    yield s
    s.__exit__(None, None, None)


# --- harmony -----------------------------------------------------------------

@pytest.mark.parametrize("effort", [None, "low", "high"])
def test_harmony_prompt_matches_transformers(harmony, effort):
    messages = conversation("call_1", "call_2")
    extra = {"extra_body": {"reasoning_effort": effort}} if effort else {}
    got = prompt_of(harmony, messages=messages, tools=TOOLS, **extra)
    want = oracle_prompt(harmony.template, messages, TOOLS, **({"reasoning_effort": effort} if effort else {}))
    assert got == want
    assert ("Reasoning: " + (effort or "medium")) in got


def test_harmony_reasoning_effort_is_checked(harmony):
    with pytest.raises(openai.BadRequestError, match="reasoning_effort"):
        harmony.client.chat.completions.create(model=harmony.model, messages=[{"role": "user", "content": "x"}],
                                               max_tokens=1, extra_body={"reasoning_effort": "extreme"})


@pytest.mark.parametrize("choice", ["required", "named"])
def test_harmony_calls_validate_whole_and_streamed(harmony, choice):
    tool_choice = {"type": "function", "function": {"name": "get_time"}} if choice == "named" else choice
    for p in PROMPTS:
        messages = [{"role": "user", "content": p}]
        r = harmony.client.chat.completions.create(model=harmony.model, messages=messages, tools=TOOLS,
                                                   tool_choice=tool_choice, max_tokens=MAX_TOKENS, temperature=0)
        whole = check_calls(r.choices[0], only="get_time" if choice == "named" else None)
        assert len(whole) == 1  # one call per harmony turn
        assert "<|channel|>" not in json.dumps(r.model_dump())
        with harmony.client.chat.completions.stream(model=harmony.model, messages=messages, tools=TOOLS,
                                                    tool_choice=tool_choice, max_tokens=MAX_TOKENS,
                                                    temperature=0) as stream:
            events = [e.type for e in stream]
            got = stream.get_final_completion().choices[0]
        assert "tool_calls.function.arguments.delta" in events
        assert check_calls(got, streamed=True) == whole, p


# A reply in channels, as gpt-oss writes one: the grammar makes SmolLM2 write it.
ANALYSIS, FINAL = "Two and two make four.", "The answer is 4."
CHANNELS = ('root ::= "<|channel|>analysis<|message|>' + ANALYSIS + '<|end|><|start|>assistant<|channel|>final'
            '<|message|>' + FINAL + '"')


def test_harmony_reasoning_is_kept_out_of_content(harmony):
    kw = dict(model=harmony.model, messages=[{"role": "user", "content": "2+2?"}], max_tokens=MAX_TOKENS,
              temperature=0, extra_body={"grammar": CHANNELS})
    m = harmony.client.chat.completions.create(**kw).choices[0].message
    assert m.content == FINAL
    assert m.model_extra["reasoning_content"] == ANALYSIS
    reasoning, content = "", ""
    for chunk in harmony.client.chat.completions.create(stream=True, **kw):
        if not chunk.choices:
            continue
        d = chunk.choices[0].delta
        reasoning += (d.model_extra or {}).get("reasoning_content") or ""
        content += d.content or ""
    assert (reasoning, content) == (ANALYSIS, FINAL)


def test_harmony_plain_reply_is_content(harmony):
    m = harmony.client.chat.completions.create(model=harmony.model, messages=[{"role": "user", "content": "Hi"}],
                                               max_tokens=8, temperature=0,
                                               extra_body={"grammar": 'root ::= "Hello there"'}).choices[0].message
    assert m.content == "Hello there"
    assert "reasoning_content" not in (m.model_extra or {})


# --- Mistral -----------------------------------------------------------------

def test_mistral_prompt_matches_transformers(mistral):
    # The templates take 9-character ids only.
    messages = conversation("abcDEF123", "xyz789QRS")
    assert prompt_of(mistral, messages=messages, tools=TOOLS) == oracle_prompt(mistral.template, messages, TOOLS)
    # OpenAI-style ids are accepted: each becomes one 9-character id, the same in the call and its result.
    mapped = prompt_of(mistral, messages=conversation("call_1", "call_2"), tools=TOOLS)
    assert "call_1" not in mapped and "call_2" not in mapped


@pytest.mark.parametrize("choice", ["required", "named", "single"])
def test_mistral_calls_validate_whole_and_streamed(mistral, choice):
    tool_choice = {"type": "function", "function": {"name": "get_time"}} if choice == "named" else "required"
    for p in PROMPTS:
        kw = dict(model=mistral.model, messages=[{"role": "user", "content": p}], tools=TOOLS,
                  tool_choice=tool_choice, max_tokens=MISTRAL_MAX_TOKENS, temperature=0)
        if choice == "single":
            kw["parallel_tool_calls"] = False
        r = mistral.client.chat.completions.create(**kw)
        whole = check_calls(r.choices[0], only="get_time" if choice == "named" else None)
        if choice != "required":
            assert len(whole) == 1
        assert "[TOOL_CALLS]" not in json.dumps(r.model_dump())
        with mistral.client.chat.completions.stream(**kw) as stream:
            events = [e.type for e in stream]
            got = stream.get_final_completion().choices[0]
        assert "tool_calls.function.arguments.delta" in events
        assert check_calls(got, streamed=True) == whole, p


def test_mistral_auto_gives_text_or_valid_calls(mistral):
    for p in PROMPTS + ["Say hello."]:
        c = mistral.client.chat.completions.create(model=mistral.model, messages=[{"role": "user", "content": p}],
                                                   tools=TOOLS, max_tokens=64, temperature=0).choices[0]
        if c.message.tool_calls:
            for call in c.message.tool_calls:
                assert call.function.name and isinstance(json.loads(call.function.arguments), dict)
        else:
            assert c.message.content is not None and c.finish_reason in ("stop", "length")
