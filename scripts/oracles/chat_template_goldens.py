#!/usr/bin/env python3
"""Writes the Jinja corpus goldens: every real chat template that llama.cpp
tests with (scripts/oracles/fetch_chat_templates), rendered by Jinja2 3.1.6
with transformers' chat-template environment, for a set of conversations.
tests/unit/jinja/corpus_test.cpp renders the same (template, context) pairs with
stride's engine and requires byte-identical output (or an error where Jinja2
raised one).

The environment copies what transformers' _compile_jinja_template sets up:
ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
extensions=[loopcontrols] + a `generation` block tag that renders its body),
a `tojson` filter that is json.dumps(x, ensure_ascii=False, indent=None,
separators=None, sort_keys=False), and the globals raise_exception(msg) and
strftime_now(fmt). strftime_now reads a fixed clock (FIXED_NOW) so that the
goldens do not depend on the day they were made; the C++ test sets the same.

Usage: python3 scripts/oracles/chat_template_goldens.py --templates DIR --out FILE
"""
import argparse
import datetime
import json
import os
import sys

import jinja2
import jinja2.ext
from jinja2.sandbox import ImmutableSandboxedEnvironment

FIXED_NOW = datetime.datetime(2026, 3, 7, 9, 5, 2)  # a Saturday; the C++ test uses the same instant


class GenerationTag(jinja2.ext.Extension):
    """transformers' AssistantTracker, less the tracking: {% generation %} renders its body."""
    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
        return jinja2.nodes.CallBlock(self.call_method("_render", []), [], [], body).set_lineno(lineno)

    def _render(self, caller):
        return caller()


def make_env():
    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    def strftime_now(fmt):
        return FIXED_NOW.strftime(fmt)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[GenerationTag, jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Get the current weather in a city.",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string", "description": "The city, e.g. \"Paris\""},
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
            },
            "required": ["city"],
        },
    },
}
TIME_TOOL = {
    "type": "function",
    "function": {
        "name": "get_time",
        "description": "Current time in a timezone.",
        "parameters": {"type": "object", "properties": {"tz": {"type": "string"}}, "required": ["tz"]},
    },
}

SPECIAL = {"bos_token": "<s>", "eos_token": "</s>"}

CONVERSATIONS = {
    "user_only": {"messages": [{"role": "user", "content": "Hello!"}], "add_generation_prompt": True},
    "system_user": {
        "messages": [
            {"role": "system", "content": "You are a helpful assistant."},
            {"role": "user", "content": "What is the capital of France?"},
        ],
        "add_generation_prompt": True,
    },
    "multi_turn": {
        "messages": [
            {"role": "system", "content": "Answer briefly."},
            {"role": "user", "content": "Hi <|im_start|> there, 2+2?"},
            {"role": "assistant", "content": "  4.\n"},
            {"role": "user", "content": "And in \"words\"? Ünïcødé ✓ 日本"},
        ],
        "add_generation_prompt": True,
    },
    "prefill": {
        "messages": [
            {"role": "user", "content": "Write a haiku."},
            {"role": "assistant", "content": "Autumn moonlight"},
        ],
        "add_generation_prompt": False,
    },
    "no_generation_prompt": {
        "messages": [
            {"role": "user", "content": "Hello"},
            {"role": "assistant", "content": "Hi! How can I help?"},
            {"role": "user", "content": "Tell me a joke."},
        ],
        "add_generation_prompt": False,
    },
    "tools": {
        "messages": [
            {"role": "system", "content": "You can call tools."},
            {"role": "user", "content": "Weather in Paris and the time in Tokyo?"},
            {"role": "assistant", "content": "",
             "tool_calls": [
                 {"id": "call_1", "type": "function",
                  "function": {"name": "get_weather", "arguments": {"city": "Paris", "unit": "celsius"}}},
                 {"id": "call_2", "type": "function",
                  "function": {"name": "get_time", "arguments": {"tz": "Asia/Tokyo"}}},
             ]},
            {"role": "tool", "tool_call_id": "call_1", "name": "get_weather", "content": "{\"temp\": 18}"},
            {"role": "tool", "tool_call_id": "call_2", "name": "get_time", "content": "14:05"},
        ],
        "tools": [WEATHER_TOOL, TIME_TOOL],
        "add_generation_prompt": True,
    },
    "tools_offered": {
        "messages": [{"role": "user", "content": "What's the weather in Oslo?"}],
        "tools": [WEATHER_TOOL],
        "add_generation_prompt": True,
    },
    "kwargs": {
        "messages": [
            {"role": "system", "content": "Be terse."},
            {"role": "user", "content": "Think about 17*3."},
        ],
        "add_generation_prompt": True,
        "enable_thinking": False,
        "reasoning_effort": "low",
    },
}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--templates", required=True)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    env = make_env()
    names = sorted(f for f in os.listdir(args.templates) if f.endswith(".jinja"))
    cases = []
    for name in names:
        with open(os.path.join(args.templates, name), encoding="utf-8") as f:
            source = f.read()
        try:
            template = env.from_string(source)
            parse_error = None
        except Exception as e:  # the engine must refuse it too
            template, parse_error = None, f"{type(e).__name__}: {e}"
        for conv_name, conv in CONVERSATIONS.items():
            context = dict(conv)
            context.update(SPECIAL)
            case = {"template": name, "conversation": conv_name, "context": context}
            if template is None:
                case["error"] = parse_error
            else:
                try:
                    case["output"] = template.render(**context)
                except Exception as e:
                    case["error"] = f"{type(e).__name__}: {e}"
            cases.append(case)
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    doc = {"jinja2": jinja2.__version__, "fixed_now": FIXED_NOW.isoformat(), "cases": cases}
    tmp = args.out + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(doc, f, ensure_ascii=False, indent=1)
    os.replace(tmp, args.out)
    ok = sum(1 for c in cases if "output" in c)
    print(f"[chat_template_goldens] {len(names)} templates, {len(cases)} cases, {ok} rendered, "
          f"{len(cases) - ok} raised", file=sys.stderr)


if __name__ == "__main__":
    main()
