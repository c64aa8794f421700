#!/usr/bin/env python3
"""Writes the seed corpora under fuzz/corpus/<target>/ (small, deterministic).

GGUF seeds are written byte by byte (no gguf package needed) and include the
first 4 KiB of the real vocabulary fixtures; the tokenizer seeds are the
fixtures' test strings. Run from the repository root:
    python3 fuzz/make_seeds.py [--vocab-dir DIR]
"""
import argparse
import json
import os
import struct
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORPUS = os.path.join(ROOT, "fuzz", "corpus")
sys.path.insert(0, os.path.join(ROOT, "scripts", "oracles"))
from byte_map import bytes_to_unicode  # noqa: E402


def put(target, name, data):
    d = os.path.join(CORPUS, target)
    os.makedirs(d, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


# --- GGUF -------------------------------------------------------------------
def s(x):
    b = x.encode() if isinstance(x, str) else x
    return struct.pack("<Q", len(b)) + b


def kv(key, typ, payload):
    return s(key) + struct.pack("<I", typ) + payload


def kv_u32(k, v): return kv(k, 4, struct.pack("<I", v))
def kv_i32(k, v): return kv(k, 5, struct.pack("<i", v))
def kv_f32(k, v): return kv(k, 6, struct.pack("<f", v))
def kv_bool(k, v): return kv(k, 7, struct.pack("<B", v))
def kv_str(k, v): return kv(k, 8, s(v))


def kv_arr(k, et, items):
    body = b""
    for it in items:
        if et == 8:
            body += s(it)
        elif et == 6:
            body += struct.pack("<f", it)
        elif et == 5:
            body += struct.pack("<i", it)
        elif et == 7:
            body += struct.pack("<B", it)
    return kv(k, 9, struct.pack("<IQ", et, len(items)) + body)


def gguf(kvs, tensors=(), version=3, align=32):
    """tensors: (name, ne, ggml type, data bytes)."""
    out = b"GGUF" + struct.pack("<IQQ", version, len(tensors), len(kvs)) + b"".join(kvs)
    offset = 0
    infos = b""
    for name, ne, typ, data in tensors:
        infos += s(name) + struct.pack("<I", len(ne)) + b"".join(struct.pack("<Q", n) for n in ne)
        infos += struct.pack("<IQ", typ, offset)
        offset += (len(data) + align - 1) // align * align
    out += infos
    out += b"\0" * ((-len(out)) % align)
    for _, _, _, data in tensors:
        out += data + b"\0" * ((-len(data)) % align)
    return out


def read_gguf_strings(path):
    """The string metadata of a GGUF file (arrays skipped), for real seeds."""
    sizes = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}
    out = {}
    with open(path, "rb") as f:
        _, _, _, n_kv = struct.unpack("<4sIQQ", f.read(24))

        def rstr():
            (n,) = struct.unpack("<Q", f.read(8))
            return f.read(n)

        for _ in range(n_kv):
            key = rstr().decode()
            (typ,) = struct.unpack("<I", f.read(4))
            if typ == 8:
                out[key] = rstr()
            elif typ == 9:
                et, cnt = struct.unpack("<IQ", f.read(12))
                for _ in range(cnt):
                    rstr() if et == 8 else f.read(sizes[et])
            else:
                f.read(sizes[typ])
    return out


def model_paths():
    d = os.path.join(ROOT, "models")
    return sorted(os.path.join(d, n) for n in os.listdir(d) if n.endswith(".gguf")) if os.path.isdir(d) else []


def gguf_seeds(vocab_dir):
    put("gguf", "empty_v3.gguf", gguf([]))
    put("gguf", "empty_v2.gguf", gguf([], version=2))
    every = [kv_u32("general.alignment", 32), kv_str("general.architecture", "llama"),
             kv_i32("a.i32", -7), kv_f32("a.f32", 1.5), kv_bool("a.bool", 1),
             kv("a.u8", 0, b"\x05"), kv("a.i8", 1, b"\xfb"), kv("a.u16", 2, b"\x01\x02"),
             kv("a.i16", 3, b"\xff\xff"), kv("a.u64", 10, struct.pack("<Q", 2**40)),
             kv("a.i64", 11, struct.pack("<q", -2**40)), kv("a.f64", 12, struct.pack("<d", 0.25)),
             kv_arr("a.strs", 8, ["x", "yz", ""]), kv_arr("a.floats", 6, [0.5, -1.0]),
             kv_arr("a.ints", 5, [1, 2, 3]), kv_arr("a.bools", 7, [1, 0])]
    f32 = struct.pack("<8f", *range(8))
    q8 = struct.pack("<e", 0.5) + bytes(range(32))
    put("gguf", "every_type.gguf", gguf(every, [("t.f32", [4, 2], 0, f32), ("t.q8_0", [32], 8, q8),
                                               ("t.f16", [2], 1, b"\0<\0<")]))
    # A tiny llama model header: the fields config_from_gguf reads.
    cfg = [kv_str("general.architecture", "llama"), kv_u32("llama.block_count", 2),
           kv_u32("llama.embedding_length", 64), kv_u32("llama.feed_forward_length", 128),
           kv_u32("llama.attention.head_count", 4), kv_u32("llama.attention.head_count_kv", 2),
           kv_u32("llama.context_length", 256), kv_f32("llama.attention.layer_norm_rms_epsilon", 1e-5),
           kv_f32("llama.rope.freq_base", 10000.0), kv_u32("llama.attention.sliding_window", 16)]
    put("gguf", "llama_config.gguf", gguf(cfg))
    g3 = [kv_str("general.architecture", "gemma3"), kv_u32("gemma3.block_count", 6),
          kv_u32("gemma3.embedding_length", 64), kv_u32("gemma3.feed_forward_length", 128),
          kv_u32("gemma3.attention.head_count", 4), kv_u32("gemma3.attention.head_count_kv", 1),
          kv_u32("gemma3.attention.key_length", 16), kv_u32("gemma3.attention.value_length", 16),
          kv_u32("gemma3.attention.sliding_window", 32), kv_u32("gemma3.context_length", 512)]
    put("gguf", "gemma3_config.gguf", gguf(g3))
    # Byte-level BPE: 256 byte tokens, one merge, control tokens.
    m = bytes_to_unicode()
    toks = [m[b] for b in range(256)] + ["ĠĠ", "<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    types = [1] * 257 + [3, 3, 3]
    bpe = [kv_str("tokenizer.ggml.model", "gpt2"), kv_str("tokenizer.ggml.pre", "smollm"),
           kv_arr("tokenizer.ggml.tokens", 8, toks), kv_arr("tokenizer.ggml.token_type", 5, types),
           kv_arr("tokenizer.ggml.merges", 8, ["Ġ Ġ"]), kv_u32("tokenizer.ggml.bos_token_id", 257),
           kv_u32("tokenizer.ggml.eos_token_id", 259), kv_bool("tokenizer.ggml.add_bos_token", 0),
           kv_str("tokenizer.chat_template", "{% for m in messages %}<|im_start|>{{m.role}}<|im_end|>{% endfor %}")]
    put("gguf", "tiny_bpe.gguf", gguf(bpe))
    # SentencePiece: <unk> <s> </s>, 256 byte tokens, a few scored pieces.
    pieces = ["<unk>", "<s>", "</s>"] + ["<0x%02X>" % b for b in range(256)] + ["▁", "▁a", "b", "▁ab", "c"]
    ptypes = [2, 3, 3] + [6] * 256 + [1] * 5
    scores = [0.0] * 259 + [-1.0, -2.0, -3.0, -0.5, -4.0]
    spm = [kv_str("tokenizer.ggml.model", "llama"), kv_arr("tokenizer.ggml.tokens", 8, pieces),
           kv_arr("tokenizer.ggml.scores", 6, scores), kv_arr("tokenizer.ggml.token_type", 5, ptypes),
           kv_u32("tokenizer.ggml.unknown_token_id", 0), kv_u32("tokenizer.ggml.bos_token_id", 1),
           kv_u32("tokenizer.ggml.eos_token_id", 2), kv_bool("tokenizer.ggml.add_space_prefix", 1)]
    put("gguf", "tiny_spm.gguf", gguf(spm))
    paths = [os.path.join(vocab_dir, n) for n in ("ggml-vocab-llama-spm.gguf", "ggml-vocab-gpt-2.gguf")]
    for path in paths + model_paths():
        if os.path.exists(path):
            with open(path, "rb") as f:
                put("gguf", "head4k_" + os.path.basename(path), f.read(4096))


# --- safetensors --------------------------------------------------------------
def safetensors(header, data):
    h = json.dumps(header, separators=(",", ":")).encode()
    return struct.pack("<Q", len(h)) + h + data


def safetensors_seeds():
    put("safetensors", "f32.safetensors", safetensors(
        {"w": {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 16]}}, struct.pack("<4f", 1, 2, 3, 4)))
    put("safetensors", "mixed.safetensors", safetensors(
        {"__metadata__": {"format": "pt"},
         "model.embed_tokens.weight": {"dtype": "BF16", "shape": [4, 2], "data_offsets": [0, 16]},
         "model.norm.weight": {"dtype": "F16", "shape": [2], "data_offsets": [16, 20]},
         "scalar": {"dtype": "F32", "shape": [], "data_offsets": [20, 24]}}, bytes(24)))
    put("safetensors", "bad_dtype.safetensors", safetensors(
        {"x": {"dtype": "I64", "shape": [1], "data_offsets": [0, 8]}}, bytes(8)))
    put("safetensors", "empty.safetensors", safetensors({}, b""))


# --- config.json ----------------------------------------------------------------
def hf_config_seeds():
    base = {"hidden_size": 64, "intermediate_size": 128, "num_attention_heads": 4,
            "num_key_value_heads": 2, "num_hidden_layers": 2, "vocab_size": 300,
            "max_position_embeddings": 512, "rms_norm_eps": 1e-5, "rope_theta": 10000.0,
            "hidden_act": "silu", "tie_word_embeddings": True}
    cfgs = {
        "llama": dict(base, architectures=["LlamaForCausalLM"], model_type="llama",
                      rope_scaling={"rope_type": "linear", "factor": 2.0}),
        "mistral": dict(base, architectures=["MistralForCausalLM"], model_type="mistral", sliding_window=32),
        "qwen2": dict(base, architectures=["Qwen2ForCausalLM"], model_type="qwen2", use_sliding_window=True,
                      sliding_window=64, max_window_layers=1),
        "gemma3": {"architectures": ["Gemma3ForConditionalGeneration"], "model_type": "gemma3",
                   "text_config": dict(base, model_type="gemma3_text", head_dim=16, sliding_window=32,
                                       hidden_activation="gelu_pytorch_tanh", query_pre_attn_scalar=16,
                                       rope_local_base_freq=10000.0, num_hidden_layers=6,
                                       layer_types=["sliding_attention"] * 5 + ["full_attention"])},
        "qwen3": dict(base, architectures=["Qwen3ForCausalLM"], model_type="qwen3", head_dim=32,
                      rope_scaling={"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 128,
                                    "beta_fast": 32, "beta_slow": 1, "truncate": False}),
        "llama3": dict(base, architectures=["LlamaForCausalLM"], model_type="llama",
                       rope_parameters={"rope_type": "llama3", "rope_theta": 500000.0, "factor": 8.0,
                                        "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                                        "original_max_position_embeddings": 64}),
        "longrope": dict(base, architectures=["LlamaForCausalLM"], model_type="llama",
                         original_max_position_embeddings=128,
                         rope_scaling={"type": "longrope", "short_factor": [1.0] * 8,
                                       "long_factor": [2.0, 4.0] * 4, "attention_factor": 1.1}),
    }
    for i, (name, c) in enumerate(cfgs.items()):
        put("hf_config", name + ".json", bytes([i & 1]) + json.dumps(c, indent=1).encode())


# --- tokenizers ---------------------------------------------------------------------
def tokenizer_seeds(vocab_dir):
    for target, name in (("tokenizer_spm", "ggml-vocab-llama-spm.gguf"), ("tokenizer_bpe", "ggml-vocab-gpt-2.gguf")):
        path = os.path.join(vocab_dir, name + ".inp")
        texts = ["", "Hello world", " <s> </s> <unk>", "<|endoftext|>x", "caf\u00e9 \u2581 \U0001F600 \u4e2d\u6587"]
        if os.path.exists(path):
            with open(path, encoding="utf-8") as f:
                texts += f.read().split("\n__ggml_vocab_test__\n")
        for i, t in enumerate(texts):
            if len(t.encode()) <= 2048:
                put(target, "t%02d" % i, t)
        put(target, "invalid_utf8", b"\xff\xfe\xc3(\xed\xa0\x80 a\x00b")


# --- OpenAI requests -------------------------------------------------------------------
def openai_seeds():
    bodies = [
        (0, {"prompt": "Hello", "max_tokens": 8, "temperature": 0.7, "top_p": 0.9, "stop": ["\n", "."],
             "seed": 42, "logprobs": 2}),
        (0, {"prompt": [[1, 2, 3]], "stream": True, "stream_options": {"include_usage": True}}),
        (1, {"messages": [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi <|im_end|>"}],
             "max_completion_tokens": 16, "logprobs": True, "top_logprobs": 3, "model": "fuzz-model"}),
        (1 | 4 * 1, {"messages": [{"role": "user", "content": [{"type": "text", "text": "a"}]}],
                     "top_k": 40, "min_p": 0.1, "repetition_penalty": 1.1}),
        (1 | 4 * 4, {"messages": [{"role": "user", "content": "x"}, {"role": "assistant", "content": "y"},
                                  {"role": "user", "content": "z"}], "presence_penalty": 0.5}),
        (2, {"prompt": "x", "attention": "rswa:sinks=4,window=60", "ignore_eos": True, "n": 1}),
        (1 | 4 * 6, {"messages": [{"role": "user", "content": "no template"}]}),
        (1, {"messages": [{"role": "user", "content": "weather?"},
                          {"role": "assistant", "content": None, "tool_calls": [
                              {"id": "call_1", "type": "function",
                               "function": {"name": "get_weather", "arguments": "{\"city\": \"Oslo\"}"}}]},
                          {"role": "tool", "tool_call_id": "call_1", "content": "18 C"}],
             "tools": [{"type": "function", "function": {
                 "name": "get_weather", "description": "Weather.", "parameters": {
                     "type": "object", "properties": {"city": {"type": "string", "maxLength": 20},
                                                      "unit": {"enum": ["c", "f"]}},
                     "required": ["city"], "additionalProperties": False}}}],
             "tool_choice": "required", "parallel_tool_calls": False}),
        (1 | 4 * 2, {"messages": [{"role": "user", "content": "t"}],
                     "tools": [{"type": "function", "function": {"name": "a"}},
                               {"type": "function", "function": {"name": "b", "strict": True,
                                                                "parameters": {"type": "object"}}}],
                     "tool_choice": {"type": "function", "function": {"name": "b"}}}),
    ]
    for i, (flags, b) in enumerate(bodies):
        put("openai_request", "req%02d" % i, bytes([flags]) + json.dumps(b).encode())


def chat_template_seeds():
    cases = [
        ("{{ '<|im_start|>system\nYou are a helpful AI.<|im_end|>\n' }}<|im_start|>", "llama"),
        ("<|start_header_id|>", "llama"), ("<start_of_turn>", "gemma3"), ("", "gemma3"),
        ("<|assistant|><|end|>", "phi3"), ("[INST] <<SYS>>", "llama"), ("[INST]", "llama"),
    ]
    for path in model_paths():  # the real models' templates
        meta = read_gguf_strings(path)
        if b"tokenizer.chat_template" in [k.encode() for k in meta]:
            cases.append((meta["tokenizer.chat_template"].decode(), meta.get("general.architecture", b"").decode()))
    for i, (t, arch) in enumerate(cases):
        msgs = b"\x00" + b"sys text" + b"\x00" + b"\x01" + b"hello" + b"\x00" + b"\x02" + b"hi" + b"\x00" + b"\x01" + b"again"
        put("chat_template", "c%02d" % i, t.encode() + b"\x00" + arch.encode() + b"\x00" + msgs)


def http_seeds():
    reqs = [
        "GET /health HTTP/1.1\r\nHost: x\r\n\r\n",
        "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 15\r\n\r\n{\"prompt\":\"hi\"}",
        "POST /x HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
        "GET /a HTTP/1.1\r\nHost: x\r\nX-Echo: v\r\n\r\nGET /missing HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
        "GET / HTTP/1.0\r\n\r\n",
        "POST /big HTTP/1.1\r\nContent-Length: 99999999\r\n\r\nabc",
        "PUT /u HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 3\r\n\r\nabc",
    ]
    for i, r in enumerate(reqs):
        put("http", "r%02d" % i, r)


def tool_reply_seeds():
    """Byte 0 picks the format (0 generic, 1 hermes, 2 llama3, 3 mistral, 4 mistral-args, 5 harmony)."""
    replies = [
        (0, '{"tool_calls": [{"name": "get_weather", "arguments": {"city": "Paris"}}]}'),
        (1, 'Sure.\n<tool_call>\n{"name": "f", "arguments": {"a": 1}}\n</tool_call>'),
        (2, '<|python_tag|>{"name": "f", "parameters": {"a": [1, 2]}}'),
        (3, 'Ok [TOOL_CALLS][{"name": "f", "arguments": {"a": "b"}}, {"name": "g", "arguments": {}}]'),
        (4, '[TOOL_CALLS]f[CALL_ID]a1b2c3d4e[ARGS]{"a": 1}[TOOL_CALLS]g[ARGS]{}'),
        (5, '<|channel|>analysis<|message|>think<|end|><|start|>assistant<|channel|>final<|message|>answer'),
        (5, '<|channel|>commentary to=functions.f <|constrain|>json<|message|>{"a": "\u00e9"}<|call|>'),
        (5, '<|start|>assistant to=functions.g<|channel|>commentary json<|message|>{}'),
    ]
    for i, (fmt, r) in enumerate(replies):
        put("tool_reply", "r%02d" % i, bytes([fmt]) + r.encode())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--vocab-dir", default=os.path.join(ROOT, "..", "shared", "fixtures", "vocab"))
    a = ap.parse_args()
    gguf_seeds(a.vocab_dir)
    safetensors_seeds()
    hf_config_seeds()
    tokenizer_seeds(a.vocab_dir)
    openai_seeds()
    chat_template_seeds()
    http_seeds()
    tool_reply_seeds()


if __name__ == "__main__":
    main()
