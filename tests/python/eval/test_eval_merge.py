"""bench/eval_merge.py, which turns a sweep's reports into the tables and plot
of docs/long-context.md: its Wilson intervals match Newcombe (1998) Table II
(score method, no continuity correction), and a merged sweep's table gives
each cell its accuracy and interval."""
import importlib.util
import json
import os

import pytest

import stride_cli

spec = importlib.util.spec_from_file_location("eval_merge", os.path.join(stride_cli.ROOT, "bench", "eval_merge.py"))
eval_merge = importlib.util.module_from_spec(spec)
spec.loader.exec_module(eval_merge)


@pytest.mark.parametrize("x,n,lo,hi", [(81, 263, 0.2553, 0.3662), (15, 148, 0.0624, 0.1605),
                                       (0, 20, 0.0, 0.1611), (1, 29, 0.0061, 0.1718)])
def test_wilson_matches_newcombe(x, n, lo, hi):
    a, b = eval_merge.wilson(x / n, n)
    assert a == pytest.approx(lo, abs=5e-5) and b == pytest.approx(hi, abs=5e-5)


def report(policy, accuracy, trials):
    dense_trials = [{"policy": "dense", "prompt_sha256": f"p{i}", "answer": "42"} for i in range(trials)]
    own = [] if policy == "dense" else [{"policy": policy, "prompt_sha256": f"p{i}", "answer": "x"}
                                        for i in range(trials)]
    summary = [{"task": "niah_single", "length": 8192, "policy": "dense", "accuracy": 1.0, "trials": trials}]
    if policy != "dense":
        summary.append({"task": "niah_single", "length": 8192, "policy": policy, "accuracy": accuracy,
                        "trials": trials})
    pols = [{"policy": "dense", "pages_read_share": 1.0, "seconds": 10.0}]
    if policy != "dense":
        pols.append({"policy": policy, "pages_read_share": 0.2, "seconds": 3.0})
    return {"model": "m.gguf", "model_sha256": "abc", "summary": summary, "policies": pols,
            "trials": dense_trials + own}


def test_merged_table_has_accuracy_and_interval(tmp_path):
    paths = []
    for i, r in enumerate([report("dense", 1.0, 20), report("topk:sparsity=0.9", 0.75, 20)]):
        p = tmp_path / f"r{i}.json"
        p.write_text(json.dumps(r))
        paths.append(str(p))
    m = eval_merge.merge([eval_merge.load(p) for p in paths], paths)
    md = eval_merge.table(m)
    lo, hi = eval_merge.wilson(0.75, 20)
    assert f"75 [{100 * lo:.0f}–{100 * hi:.0f}]" in md, md
    assert "100 [84–100]" in md, md  # 20/20: Wilson's lower bound 0.8389
    assert "20 trials per policy" in md and "(-25.0)" in md, md
    eval_merge.plot(m, str(tmp_path / "p.png"))
    assert (tmp_path / "p.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
