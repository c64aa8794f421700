"""bench/long_context_speed.py's pure parts: reading llama-bench's JSON (rows as llama.cpp's and
ik_llama.cpp's llama-bench print them), the fits above a cap against numpy's polyfit and exact
polynomials, and the resumable output (finished rows are skipped, another configuration refused)."""
import importlib.util
import json
import os
import sys

import numpy as np
import pytest

import stride_cli

BENCH = os.path.join(stride_cli.ROOT, "bench")
sys.path.insert(0, BENCH)


def load(name):
    spec = importlib.util.spec_from_file_location(name, os.path.join(BENCH, f"{name}.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


lcs = load("long_context_speed")
report = load("long_context_report")

# The test fields of `llama-bench -o json` rows, as printed by mainline llama.cpp (0.3.36's vendored
# source: -p 64 -n 0, and -p 0 -n 4 -d 64) and by ik_llama.cpp (0.1.5: -p 64 -n 0 -gp 64,4), after
# the log lines a build may print first.
MAINLINE_PP = 'load_backend: loaded CPU\n[\n  {"build_commit": "0c1e570", "n_prompt": 64, "n_gen": 0, "n_depth": 0, ' \
              '"flash_attn": 1, "avg_ns": 5233503711, "avg_ts": 12.228901, "samples_ts": [ 12.228901 ]}\n]\n'
MAINLINE_TG = '[\n  {"build_commit": "0c1e570", "n_prompt": 0, "n_gen": 4, "n_depth": 64, "flash_attn": 1, ' \
              '"avg_ns": 8818199659, "avg_ts": 0.453607}\n]\n'
IK_PP_GP = '[\n  {"build_commit": "ik_llama_cpp_python-0.1.5", "n_prompt": 64, "n_gen": 0, "flash_attn": true, ' \
           '"avg_ts": 33.338824, "test": "pp64"},\n  {"build_commit": "ik_llama_cpp_python-0.1.5", ' \
           '"n_prompt": 64, "n_gen": 4, "flash_attn": true, "avg_ts": 0.312238, "test": "tg4@pp64"}\n]\n'


def test_llama_bench_rows_give_each_units_figures():
    assert lcs.parse_anchor("llama.cpp prefill", MAINLINE_PP, 64, 4) == \
        {"build_commit": "0c1e570", "prefill_tok_s": 12.228901}
    assert lcs.parse_anchor("llama.cpp decode", MAINLINE_TG, 64, 4) == \
        {"build_commit": "0c1e570", "decode_tok_s": 0.453607}
    assert lcs.parse_anchor("ik_llama.cpp", IK_PP_GP, 64, 4) == \
        {"build_commit": "ik_llama_cpp_python-0.1.5", "prefill_tok_s": 33.338824, "decode_tok_s": 0.312238}


def test_a_missing_test_in_llama_bench_output_is_an_error():
    with pytest.raises(KeyError):
        lcs.parse_anchor("llama.cpp decode", MAINLINE_TG, 128, 4)


def test_anchor_commands_measure_what_each_unit_reports():
    pp = lcs.anchor_command("llama.cpp prefill", "lb", "m.gguf", 8192, 2, 32)
    tg = lcs.anchor_command("llama.cpp decode", "lb", "m.gguf", 8192, 2, 32)
    ik = lcs.anchor_command("ik_llama.cpp", "ik", "m.gguf", 8192, 2, 32)
    args = lambda cmd, flag: cmd[cmd.index(flag) + 1]  # noqa: E731
    assert [args(pp, f) for f in ("-p", "-n", "-fa", "-t")] == [8192, 0, "1", 2] and "--no-warmup" in pp
    assert [args(tg, f) for f in ("-p", "-n", "-d", "-fa")] == [0, 32, 8192, "1"]
    assert [args(ik, f) for f in ("-p", "-n", "-gp", "-rtr", "-fa")] == [8192, 0, "8192,32", "1", "1"]


def test_prefill_fit_is_least_squares_quadratic():
    rng = np.random.default_rng(3)
    L = np.array([2048, 4096, 8192, 16384], dtype=float)
    t = 1.5 + 3e-3 * L + 2e-7 * L * L + rng.normal(0, 0.5, L.size)
    fit = report.prefill_fit(list(zip(L, t)))
    want = np.polyval(np.polyfit(L, t, 2), 65536)
    assert fit(65536) == pytest.approx(want, rel=1e-9)


def test_two_point_fits_pass_through_an_exact_polynomial():
    quad = lambda x: 3e-3 * x + 2e-7 * x * x  # noqa: E731
    fit = report.prefill_fit([(4096, quad(4096)), (8192, quad(8192))])
    assert fit(131072) == pytest.approx(quad(131072), rel=1e-9)
    line = lambda x: 0.04 + 3e-6 * x  # noqa: E731
    dfit = report.decode_fit([(4096, line(4096)), (8192, line(8192))])
    assert dfit(32768) == pytest.approx(line(32768), rel=1e-9)
    assert report.prefill_fit([(4096, 1.0)]) is None and report.decode_fit([(4096, 1.0)]) is None


def doc_with(rows, lengths):
    return {"config": {"gen": 32, "threads": 2, "model": "m.gguf"}, "lengths": lengths, "rows": rows,
            "weight_bytes_per_token": 4e8, "kv_bytes_per_token": 12288, "summary_bytes_per_page": 1024,
            "triad_gbs": 20.0}


def test_a_capped_anchor_is_extrapolated_and_so_are_the_ratios_against_it():
    t = lambda L: 1.0 + 2e-3 * L + 1e-7 * L * L  # noqa: E731
    rows = [{"unit": "llama.cpp prefill", "series": "llama.cpp", "length": L, "rep": 0, "prefill_tok_s": L / t(L)}
            for L in (2048, 4096, 8192)]
    rows += [{"unit": "stride dense", "series": "stride dense", "length": L, "rep": 0, "prefill_tok_s": 100.0}
             for L in (8192, 16384)]
    s = report.summarize(doc_with(rows, [2048, 4096, 8192, 16384]))
    assert s["llama.cpp"]["16384"]["prefill_tok_s_how"] == "extrapolated"
    assert s["llama.cpp"]["16384"]["prefill_tok_s"] == pytest.approx(16384 / t(16384), rel=1e-6)
    assert s["stride dense"]["16384"]["prefill_ratio_llama.cpp"] == pytest.approx(100 * t(16384) / 16384, rel=1e-6)
    assert s["stride dense"]["16384"]["prefill_ratio_llama.cpp_how"] == "extrapolated"
    assert s["stride dense"]["8192"]["prefill_ratio_llama.cpp_how"] == "measured"


def test_decode_bytes_count_pages_read_and_top_k_summaries():
    rows = [{"unit": f"stride {p}", "series": f"stride {p}", "length": 8192, "rep": 0, "decode_tok_s": 10.0,
             "decode_pages_read": 32 * 100, "decode_pages_present": 32 * 1000, "page_bytes": 16384}
            for p in ("sparse_prefill", "topk:sparsity=0.9")]
    s = report.summarize(doc_with(rows, [8192]))
    plain, topk = s["stride sparse_prefill"]["8192"], s["stride topk:sparsity=0.9"]["8192"]
    assert plain["decode_bytes_per_token"] == 4e8 + 100 * 16384
    assert topk["decode_bytes_per_token"] == 4e8 + 100 * 16384 + 1000 * 1024
    assert topk["decode_gbs"] == pytest.approx(topk["decode_bytes_per_token"] * 10 / 1e9)
    assert topk["decode_read_share"] == pytest.approx(0.1)


def test_caps_name_anchors_and_policies_with_their_own_keys():
    caps = lcs.parse_caps(["llama.cpp=32768", "topk:sparsity=0.9,prefill=dense=16384"])
    assert caps == {"llama.cpp": 32768, "topk:sparsity=0.9,prefill=dense": 16384}
    assert lcs.capped("llama.cpp decode", 65536, caps) and not lcs.capped("llama.cpp prefill", 32768, caps)
    assert lcs.capped("stride topk:sparsity=0.9,prefill=dense", 32768, caps)
    assert not lcs.capped("stride topk:sparsity=0.9,prefill=dense,estimate=rerank", 32768, caps)
    assert not lcs.capped("ik_llama.cpp", 131072, caps)


def test_output_resumes_and_refuses_another_configuration(tmp_path):
    path = tmp_path / "out.json"
    config = {"model": "m.gguf", "threads": 2, "gen": 32}
    units = ["llama.cpp prefill", "stride dense"]
    runs = lcs.Runs(path, config)
    runs.add({"unit": "stride dense", "length": 2048, "rep": 0, "prefill_tok_s": 1.0})
    again = lcs.Runs(path, config)
    assert again.done("stride dense", 2048, 0) and not again.done("stride dense", 2048, 1)
    assert json.loads(path.read_text())["rows"][0]["prefill_tok_s"] == 1.0

    class Args:
        reps = 2
    todo = lcs.plan(Args, units, [2048, 4096], {"llama.cpp": 2048}, again)
    assert ("stride dense", 2048, 0) not in [(u, L, r) for L, r, u in todo]
    assert [(L, r, u) for L, r, u in todo if u.startswith("llama.cpp")] == \
        [(2048, 0, "llama.cpp prefill"), (2048, 1, "llama.cpp prefill")]
    assert len(todo) == 5  # 2048: both units of both reps but the finished row; 4096: stride twice
    with pytest.raises(SystemExit):
        lcs.Runs(path, {**config, "threads": 1})
