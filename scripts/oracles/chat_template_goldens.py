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
import random
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
    "single_tool_call": {
        "messages": [
            {"role": "user", "content": "Weather in Paris?"},
            {"role": "assistant", "content": None,
             "tool_calls": [{"id": "abcDEF123", "type": "function",
                             "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}]},
            {"role": "tool", "tool_call_id": "abcDEF123", "name": "get_weather", "content": "sunny, 21 C"},
            {"role": "assistant", "content": "It is sunny and 21 C in Paris."},
            {"role": "user", "content": "Thanks!"},
        ],
        "tools": [WEATHER_TOOL],
        "add_generation_prompt": True,
    },
    "string_arguments": {
        "messages": [
            {"role": "user", "content": "Time in Tokyo?"},
            {"role": "assistant", "content": "Let me check.",
             "tool_calls": [{"id": "xyz987QWE", "type": "function",
                             "function": {"name": "get_time", "arguments": "{\"tz\": \"Asia/Tokyo\"}"}}]},
            {"role": "tool", "tool_call_id": "xyz987QWE", "content": "14:05"},
        ],
        "tools": [TIME_TOOL],
        "add_generation_prompt": True,
    },
    "reasoning": {
        "messages": [
            {"role": "user", "content": "What is 6*7?"},
            {"role": "assistant", "reasoning_content": "6 times 7 is 42.", "content": "42"},
            {"role": "user", "content": "And 6*8?"},
        ],
        "add_generation_prompt": True,
        "enable_thinking": True,
    },
    "content_parts": {
        "messages": [
            {"role": "system", "content": [{"type": "text", "text": "You describe things."}]},
            {"role": "user", "content": [{"type": "text", "text": "Describe "}, {"type": "text", "text": "a cat."}]},
        ],
        "add_generation_prompt": True,
    },
    "special_text": {
        "messages": [
            {"role": "user", "content": "Quote \"x\" and 'y', back\\slash, tab\there,\r\nCRLF, {{ not_a_tag }} {% raw %} </s> <s>\u0001 \U0001F600"},
            {"role": "assistant", "content": "\n\n  padded answer  \n\n"},
            {"role": "user", "content": ""},
        ],
        "add_generation_prompt": True,
    },
    "system_only": {"messages": [{"role": "system", "content": "Only a system prompt."}], "add_generation_prompt": True},
    "long": {
        "messages": [{"role": "system", "content": "Count."}] + [
            {"role": "user" if i % 2 == 0 else "assistant", "content": f"turn {i}"} for i in range(9)
        ],
        "add_generation_prompt": True,
    },
}


def random_conversations(count, seed=13):
    """Seeded mixes of roles, tool calls, reasoning and awkward text."""
    rng = random.Random(seed)
    texts = ["Hi", "", "  spaced  ", "multi\nline\n", "<|im_end|> inject", "{{ x }}", "\u00fcn\u00ef \u2713",
             "a\"b'c\\d", "tab\there", "</think>reasoning?", "<think>x</think>answer"]
    out = {}
    for k in range(count):
        msgs = []
        if rng.random() < 0.5:
            msgs.append({"role": "system", "content": rng.choice(texts)})
        for _ in range(rng.randint(1, 5)):
            role = rng.choice(["user", "assistant", "user", "tool", "assistant"])
            m = {"role": role, "content": rng.choice(texts)}
            if role == "assistant" and rng.random() < 0.3:
                m["tool_calls"] = [{"id": "abcDEF123", "type": "function", "function": {
                    "name": "get_weather", "arguments": rng.choice([{"city": "Paris"}, "{\"city\": \"Rome\"}"])}}]
                if rng.random() < 0.5:
                    m["content"] = None
            if role == "assistant" and rng.random() < 0.2:
                m["reasoning_content"] = "thinking..."
            if role == "tool":
                m["tool_call_id"] = "abcDEF123"
            msgs.append(m)
        conv = {"messages": msgs, "add_generation_prompt": rng.random() < 0.7}
        if rng.random() < 0.4:
            conv["tools"] = [WEATHER_TOOL]
        if rng.random() < 0.3:
            conv["enable_thinking"] = rng.random() < 0.5
        out[f"random_{k}"] = conv
    return out


CONVERSATIONS.update(random_conversations(12))

# Language features, one snippet each, rendered with the same environment
# (tests/unit/jinja/features_test.cpp). Context: FEATURE_CONTEXT.
FEATURE_CONTEXT = {
    "messages": [
        {"role": "system", "content": "  Be brief.  "},
        {"role": "user", "content": "Hello, World"},
        {"role": "assistant", "content": "Hi", "tool_calls": [{"function": {"name": "f", "arguments": {"b": 2, "a": [1, "x"]}}}]},
    ],
    "n": 7, "f": 2.5, "s": "a,b,,c", "empty": "", "items": [3, 1, 2], "nested": {"k": {"j": [10, 20]}},
    "flag": True, "nothing": None, "words": ["b", "A", "a", "c"],
}
FEATURES = [
    ("output_types", "{{ 1 }}|{{ 1.0 }}|{{ 2.5e-7 }}|{{ 1e20 }}|{{ true }}|{{ none }}|{{ 'x' }}|{{ undefined_thing }}|{{ [1, 'a', none] }}|{{ {'a': 1} }}|{{ (1,) }}"),
    ("arith", "{{ 7 // 2 }} {{ -7 // 2 }} {{ 7 % 3 }} {{ -7 % 3 }} {{ 7 / 2 }} {{ 2 ** 10 }} {{ 2 ** -1 }} {{ 1 + 2 * 3 - 4 }} {{ f * 2 }} {{ 10 / 4 * 2 }}"),
    ("compare", "{{ 1 < 2 < 3 }} {{ 3 > 2 > 2 }} {{ 'a' < 'b' }} {{ 1 == 1.0 }} {{ true == 1 }} {{ 'a' != 'a' }} {{ [1,2] == [1,2] }} {{ none == none }}"),
    ("logic", "{{ true and 'x' }}|{{ false or 'y' }}|{{ not empty }}|{{ '' or none }}|{{ n and 0 }}|{{ not (1 in items) }}"),
    ("in_ops", "{{ 'b' in s }} {{ 5 in items }} {{ 'role' in messages[0] }} {{ 'zz' not in s }} {{ 'k' in nested }}"),
    ("concat", "{{ 'a' ~ 1 ~ none ~ true }}|{{ 'x' + 'y' }}|{{ items + [4] }}|{{ 'ab' * 3 }}"),
    ("cond_expr", "{{ 'yes' if flag else 'no' }}|{{ 'yes' if nothing else 'no' }}|{{ 'only' if false }}|"),
    ("slices", "{{ items[::-1] }} {{ s[1:3] }} {{ s[::-1] }} {{ items[-1] }} {{ items[1:] }} {{ s[:-2] }} {{ items[::2] }} {{ 'héllo'[1:3] }} {{ items[5:] }} {{ s[-100:2] }}"),
    ("attr_item", "{{ messages[1].role }} {{ messages[1]['content'] }} {{ nested.k.j[1] }} {{ nested['k']['j'].0 }} {{ messages[0].missing is defined }} {{ nothing.x is defined }}"),
    ("literals", "{{ [1, [2, 3]] }} {{ {'a': [1], 'b': {'c': none}} }} {{ ('x', 'y') }} {{ 'it''s' }} {{ \"dq\" }} {{ 'esc\\n' }}"),
    ("for_loop", "{% for m in messages %}{{ loop.index }}/{{ loop.index0 }}/{{ loop.revindex }}/{{ loop.first }}/{{ loop.last }}/{{ loop.length }}:{{ m.role }};{% endfor %}"),
    ("for_prev_next", "{% for x in items %}[{{ loop.previtem }}<{{ x }}>{{ loop.nextitem }}]{% endfor %}"),
    ("for_else", "{% for x in [] %}no{% else %}empty{% endfor %}|{% for x in items if x > 1 %}{{ x }}{{ loop.length }}{% else %}none{% endfor %}"),
    ("for_unpack", "{% for k, v in {'a': 1, 'b': 2}.items() %}{{ k }}={{ v }};{% endfor %}{% for k in nested %}{{ k }}{% endfor %}"),
    ("for_string", "{% for c in 'héy' %}[{{ c }}]{% endfor %}"),
    ("loop_controls", "{% for x in range(10) %}{% if x == 2 %}{% continue %}{% endif %}{% if x > 4 %}{% break %}{% endif %}{{ x }}{% endfor %}"),
    ("loop_cycle", "{% for x in items %}{{ loop.cycle('odd', 'even') }} {% endfor %}"),
    ("nested_loops", "{% for a in [1, 2] %}{% for b in 'xy' %}{{ loop.index }}{{ a }}{{ b }} {% endfor %}{{ loop.index }}|{% endfor %}"),
    ("if_elif", "{% for x in [1, 2, 3] %}{% if x == 1 %}one{% elif x == 2 %}two{% else %}many{% endif %} {% endfor %}"),
    ("set_scope", "{% set x = 1 %}{% for i in items %}{% set x = i %}{% endfor %}{{ x }}{% if true %}{% set y = 5 %}{% endif %}{{ y }}"),
    ("namespace", "{% set ns = namespace(total=0, last=none) %}{% for i in items %}{% set ns.total = ns.total + i %}{% set ns.last = i %}{% endfor %}{{ ns.total }} {{ ns.last }}"),
    ("set_block", "{% set block %}  A {{ n }}  {% endset %}[{{ block }}]{% set t | upper %}inner{% endset %}{{ t }}"),
    ("set_tuple", "{% set a, b = [1, 2] %}{{ a }}{{ b }}{% set c = 1, 2 %}{{ c }}"),
    ("macro", "{% macro greet(name, punct='!') %}Hello {{ name }}{{ punct }}{% endmacro %}{{ greet('Bob') }} {{ greet('Al', punct='?') }} {{ greet(name='Cy') }}"),
    ("macro_recursion", "{% macro fact(k) %}{% if k <= 1 %}1{% else %}{{ k * fact(k - 1) | int }}{% endif %}{% endmacro %}{{ fact(5) }}"),
    ("call_block", "{% macro wrap(tag) %}<{{ tag }}>{{ caller() }}</{{ tag }}>{% endmacro %}{% call wrap('b') %}bold {{ n }}{% endcall %}"),
    ("filter_block", "{% filter upper %}shout {{ n }}{% endfilter %}"),
    ("whitespace_dash", "a  {{- ' b ' -}}  c\n  {%- if true -%}  d  {%- endif -%}  e"),
    ("trim_lstrip", "x\n    {% if true %}\n    y\n    {% endif %}\n  z {# comment #}\n  {# c2 #}\nw\n"),
    ("lstrip_plus", "x\n    {%+ if true %}y{% endif %}\n  {{ 'v' }}\n"),
    ("comments", "a{# hidden {{ x }} #}b{#- trim -#}  c"),
    ("tests", "{{ n is number }} {{ f is float }} {{ n is integer }} {{ s is string }} {{ nested is mapping }} {{ items is iterable }} {{ items is sequence }} {{ nothing is none }} {{ flag is true }} {{ flag is false }} {{ n is odd }} {{ n is even }} {{ 9 is divisibleby 3 }} {{ n is eq 7 }} {{ 'a' is in 'cat' }} {{ x is undefined }} {{ flag is boolean }} {{ 'abc' is lower }}"),
    ("tests_negated", "{{ n is not string }} {{ nothing is not none }} {{ messages[0].tool_calls is not defined }}"),
    ("str_methods", "{{ messages[0].content.strip() }}|{{ '  x  '.lstrip() }}|{{ '  x  '.rstrip() }}|{{ 'xxhixx'.strip('x') }}|{{ s.split(',') }}|{{ 'a b  c'.split() }}|{{ s.split(',', 1) }}|{{ 'Hi'.upper() }}{{ 'Hi'.lower() }}|{{ s.replace(',', ';') }}|{{ 'hello world'.title() }}|{{ 'abc'.startswith('ab') }}{{ 'abc'.endswith(('x', 'c')) }}|{{ 'hello'.capitalize() }}|{{ '{} and {name}'.format(1, name='two') }}|{{ 'abcb'.find('b') }}{{ 'abcb'.count('b') }}|{{ '-'.join(['a', 'b']) }}"),
    ("rsplit_splitlines", "{{ 'a.b.c'.rsplit('.', 1) }} {{ 'l1\nl2\n'.splitlines() }}"),
    ("dict_methods", "{{ nested.get('k') }} {{ nested.get('zz') }} {{ nested.get('zz', 5) }} {{ {'a': 1, 'b': 2}.keys() | list }} {{ {'a': 1}.values() | list }} {{ {'a': 1}.items() | list }}"),
    ("filters_basic", "{{ items | length }} {{ s | count }} {{ messages | first | attr('role') }} {{ items | last }} {{ items | join('-') }} {{ x | default('dflt') }} {{ empty | default('e', true) }} {{ 'aBc' | lower }}{{ 'aBc' | upper }} {{ 'hello' | capitalize }} {{ 'a-b' | replace('-', '+') }}"),
    ("filters_more", "{{ '  t  ' | trim }}|{{ 'xtx' | trim('x') }}|{{ items | list }}|{{ 'ab' | list }}|{{ nested | items | list }}|{{ {'b': 1, 'A': 2} | dictsort }}|{{ items | sort }}|{{ words | sort }}|{{ words | unique | list }}|{{ items | reverse | list }}|{{ items | min }}{{ items | max }}{{ items | sum }}"),
    ("filters_map_select", "{{ messages | map(attribute='role') | join(',') }}|{{ messages | selectattr('role', 'equalto', 'user') | list | length }}|{{ messages | rejectattr('role', 'equalto', 'user') | map(attribute='role') | list }}|{{ items | select('odd') | list }}|{{ items | reject('odd') | list }}|{{ messages | selectattr('tool_calls', 'defined') | list | length }}|{{ ['a', 'b'] | map('upper') | list }}"),
    ("filters_numbers", "{{ '42' | int }} {{ 'x' | int }} {{ '4.5' | float }} {{ 3.7 | int }} {{ -3 | abs }} {{ 2.567 | round(2) }} {{ 2.5 | round }} {{ 7 | string }} {{ 3 | float }} {{ '12' | int + 1 }}"),
    ("filter_indent", "{{ 'a\nb\n\nc' | indent(2) }}|{{ 'a\nb' | indent(4, true) }}|{{ 'a\n\nb' | indent(2, blank=true) }}"),
    ("filter_escape", "{{ '<a href=\"x\">&\\'</a>' | e }}|{{ '<b>' | safe }}|{{ '<i>' | escape | escape }}"),
    ("tojson", "{{ messages[2].tool_calls | tojson }}|{{ {'a': [1, 2.5, none, true], 'ü': 'ç\n\"'} | tojson }}|{{ 'x' | tojson }}|{{ [] | tojson }}|{{ {} | tojson(indent=2) }}"),
    ("tojson_indent", "{{ nested | tojson(indent=2) }}|{{ messages[2] | tojson(indent=4) }}|{{ {'b': 1, 'a': 2} | tojson(sort_keys=true) }}|{{ [1, 2] | tojson(separators=(',', ':')) }}"),
    ("range_dict", "{{ range(3) | list }} {{ range(1, 10, 3) | list }} {{ range(5, 0, -2) | list }} {{ dict(a=1, b='x') }} {{ dict(a=1).a }}"),
    ("raise", "{% if n > 5 %}{{ raise_exception('n is too big: ' ~ n) }}{% endif %}"),
    ("strftime", "{{ strftime_now('%Y-%m-%d %H:%M:%S') }} {{ strftime_now('%d %b %Y') }} {{ strftime_now('%A %B %j') }}"),
    ("string_format_op", "{{ '%s is %d' % ('x', 3) }} {{ 'v=%s' % n }}"),
    ("undefined_ops", "{{ missing | length }}|{{ missing | default('d') }}|{{ missing ~ 'x' }}|{% for x in missing %}no{% endfor %}|{{ missing is defined }}|{% if missing %}no{% else %}falsy{% endif %}"),
    ("generation_tag", "{% generation %}gen {{ n }}{% endgeneration %}"),
    ("unicode", "{{ 'héllo wörld' | length }} {{ 'ÉCOLE' | lower }} {{ '日本語'[1] }} {{ 'ß' | upper }}"),
    ("repr_strings", "{{ ['it\\'s', 'a\"b', 'x\ny', 'both\\'\"'] }}"),
    ("numbers_repr", "{{ 0.1 + 0.2 }} {{ 1 / 3 }} {{ 1e16 }} {{ 123456789.0 }} {{ 1e-5 }} {{ 0.0001 }} {{ -0.0 }} {{ 10 ** 15 * 1.0 }} {{ 3 * 1.1 }}"),
    ("raw_block", "a {% raw %}{{ x }} {% if %}{% endraw %} b\n  {% raw -%}  keep {{ y }}  {%- endraw %}\n"),
    ("printf", "{{ '%5s|%-5s|%.2f|%03d|%x' % ('a', 'b', 3.14159, 7, 255) }} {{ '%s%%' % 50 }}"),
    ("center_varargs", "{{ 'abc'.center(9) }}|{{ 'abc' | center(8) }}|{% macro m() %}{{ varargs }}{{ kwargs }}{% endmacro %}{{ m(1, 2, a=3) }}"),
    ("int_parsing", "{{ 1.5 | int }}{{ '3.9' | int }}{{ '0x1A' | int }}{{ ' 7 ' | int }}{{ '-4' | int }}{{ 'inf' | float }}"),
    ("loop_scoping", "{% for i in [1, 2] %}{% if i == 2 %}[{{ x }}]{% endif %}{% set x = i %}{% endfor %}|{% set x = 5 %}{% for i in [1, 2] %}[{{ x }}]{% set x = i %}{% endfor %}{{ x }}"),
    ("operators_precedence", "{{ -n ** 2 }} {{ (-n) ** 2 }} {{ 2 ** 3 ** 2 }} {{ not n == 7 }} {{ 1 if n > 8 else 2 if n > 6 else 3 }} {{ 7 // 2.0 }} {{ 7.5 % 2 }}"),
    ("split_maxsplit", "{{ 'aXbXc'.split('X', -1) }}{{ '  a  b '.split(None, 1) }}{{ ' a b '.rsplit(None, 1) }}{{ 'a b '.split(None, 5) }}{{ '  a b '.split(None, 0) }}"),
    ("format_specs", "{{ '{:>5}|{:<4}|{:^7}|{:*^5}'.format('a', 'b', 'c', 'd') }}{{ '{}'.format([1, 'a']) }}{{ '{!r}'.format('a') }}{{ '{0}{0}'.format(1) }}"),
    ("replace_empty", "{{ 'abc'.replace('', '-') }}{{ 'abc'.replace('', '-', 2) }}{{ 'aaa'.replace('a', 'b', 2) }}"),
    ("tuple_equality", "{{ (1, 2) == (1, 2) }}{{ [1, 2] == (1, 2) }}{{ 1 == true }}{{ 2 == true }}"),
    ("error_undefined_attr", "{{ missing.attr }}"),
    ("error_bad_add", "{{ 'a' + 1 }}"),
    ("error_unknown_filter", "{{ 1 | nosuchfilter }}"),
    ("error_list_append", "{% set l = [] %}{{ l.append(1) }}"),
]


def render_features(env):
    out = []
    for name, source in FEATURES:
        case = {"name": name, "template": source}
        try:
            case["output"] = env.from_string(source).render(**FEATURE_CONTEXT)
        except Exception as e:
            case["error"] = f"{type(e).__name__}: {e}"
        out.append(case)
    return out


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
    doc = {"jinja2": jinja2.__version__, "fixed_now": FIXED_NOW.isoformat(), "cases": cases,
           "feature_context": FEATURE_CONTEXT, "features": render_features(env)}
    tmp = args.out + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(doc, f, ensure_ascii=False, indent=1)
    os.replace(tmp, args.out)
    ok = sum(1 for c in cases if "output" in c)
    print(f"[chat_template_goldens] {len(names)} templates, {len(cases)} cases, {ok} rendered, "
          f"{len(cases) - ok} raised", file=sys.stderr)


if __name__ == "__main__":
    main()
