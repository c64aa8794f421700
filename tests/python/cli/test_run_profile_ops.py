"""`stride run --profile-ops --json`: the decode steps' op profile counts every
weight byte a decode step reads, as gguf-py (llama.cpp's reader) sizes the
file's tensors, once per step, and names each projection with its tensor types."""
import collections
import json
import pathlib
import subprocess

import gguf

ROOT = pathlib.Path(__file__).resolve().parents[3]
STRIDE = ROOT / "build" / "stride"
QWEN = ROOT / "models" / "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"  # Q4_K/Q5_0/Q6_K/Q8_0, untied head
MAX_TOKENS = 6
# The repacked copy a decode step reads holds a K-quant's 6-bit scales and mins
# as bytes (src/kernels/packed_format.h): per row and 256 elements, Q4_K 148
# bytes against the file's 144, Q5_K 180 against 176; other types keep theirs.
PACKED_PER_FILE_BYTE = {"Q4_K": 148 / 144, "Q5_K": 180 / 176}


def profile():
    res = subprocess.run([str(STRIDE), "run", "-m", str(QWEN), "--prompt-ids", "9707 11 1879 0 358 1079", "-n",
                          str(MAX_TOKENS), "--temperature", "0", "--ignore-eos", "--json", "--profile-ops",
                          "--threads", "2"],
                         capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout.strip().splitlines()[-1])["op_profile"]


def file_weights():
    """Per role ("attn_q", "ffn_down", "output", ...): [(type name, bytes read)] of the 2-D tensors."""
    roles = collections.defaultdict(list)
    for t in gguf.GGUFReader(str(QWEN)).tensors:
        if len(t.shape) == 2:
            name = t.tensor_type.name
            roles[t.name.split(".")[-2]].append((name, round(int(t.n_bytes) * PACKED_PER_FILE_BYTE.get(name, 1))))
    return roles


def test_a_decode_step_reads_every_weight_byte_of_the_file_once():
    p = profile()
    roles = file_weights()
    assert p["steps"] == MAX_TOKENS - 1  # the first token comes from the prefill
    # The head is output.weight; only one row of token_embd is read per token.
    want = sum(b for role, ts in roles.items() if role != "token_embd" for _, b in ts)
    got = sum(op["weight_bytes"] for op in p["ops"])
    assert got == want * p["steps"]


def test_each_projection_runs_once_per_layer_and_step_under_its_tensor_types():
    p = profile()
    roles = file_weights()
    n_layer = len(roles["attn_q"])
    calls = collections.Counter()
    bytes_by_op = collections.Counter()
    for op in p["ops"]:
        kind = op["op"].split(" ")[0]
        calls[kind] += op["calls"]
        bytes_by_op[op["op"]] += op["weight_bytes"]
    for kind in ("attn_qkv", "attn_out", "ffn_gate_up", "ffn_down", "attention", "ffn_act"):
        assert calls[kind] == n_layer * p["steps"], kind
    assert calls["output_head"] == p["steps"]
    # ffn_down's entries, one per type, hold exactly that type's tensors' bytes.
    down = collections.Counter()
    for type_name, b in roles["ffn_down"]:
        down["ffn_down " + type_name] += b * p["steps"]
    assert {k: v for k, v in bytes_by_op.items() if k.startswith("ffn_down")} == dict(down)
    head_type, head_bytes = roles["output"][0]
    assert bytes_by_op["output_head " + head_type] == head_bytes * p["steps"]


def test_op_times_fit_in_the_steps():
    p = profile()
    total = sum(op["seconds"] for op in p["ops"])
    assert 0 < total <= p["step_seconds"]
    assert all(op["seconds"] >= 0 and op["cpu_seconds"] >= 0 for op in p["ops"])
