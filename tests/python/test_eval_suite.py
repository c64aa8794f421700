"""`stride eval` end to end on SmolLM2 at 1K tokens (kept short: the 4K-32K
figures are benchmark runs): dense finds the needles, a 64-token window loses
the one at depth 0, the JSON holds every trial and the plot is a PNG; a bad
task or a missing text file is a one-line error."""
import json
import os
import subprocess

import pytest

import stride_cli

MODEL = os.path.join(stride_cli.ROOT, "models", "SmolLM2-135M-Instruct.Q4_1.gguf")
WINDOW = "window:size=64"
TASKS = ("niah_single", "passkey")
DEPTHS = (0.0, 0.5, 1.0)


def run(stride, *args):
    return subprocess.run([stride.binary, *map(str, args)], capture_output=True, timeout=600,
                          stdin=subprocess.DEVNULL)


@pytest.fixture(scope="module")
def result(stride, tmp_path_factory):
    out = tmp_path_factory.mktemp("eval")
    p = run(stride, "eval", "-m", MODEL, "-a", WINDOW, "--tasks", ",".join(TASKS), "--lengths", 1024,
            "--depths", len(DEPTHS), "--json", out / "e.json", "--plot", out / "e.png", "--threads", 2)
    assert p.returncode == 0, p.stderr.decode()[-2000:]
    return {"report": json.loads((out / "e.json").read_text()), "png": out / "e.png",
            "stdout": p.stdout.decode()}


def test_every_trial_is_in_the_json(result):
    trials = result["report"]["trials"]
    got = sorted((t["task"], t["policy"], t["depth"]) for t in trials)
    want = sorted((task, pol, d) for task in TASKS for pol in ("dense", WINDOW) for d in DEPTHS)
    assert got == want
    for t in trials:
        assert t["length"] == 1024 and abs(t["tokens"] - 1024) <= 0.05 * 1024, t
        assert t["expected"] and isinstance(t["answer"], str)
        found = sum(e.lower() in t["answer"].lower() for e in t["expected"])
        assert t["score"] == found / len(t["expected"]), t
    # The same prompts for both policies: same sizes, same expected answers.
    by = {(t["task"], t["depth"], t["policy"]): t for t in trials}
    for task in TASKS:
        for d in DEPTHS:
            assert by[(task, d, "dense")]["expected"] == by[(task, d, WINDOW)]["expected"]
            assert by[(task, d, "dense")]["tokens"] == by[(task, d, WINDOW)]["tokens"]


def test_dense_finds_the_needles_and_a_short_window_loses_the_first(result):
    report = result["report"]
    acc = {(s["task"], s["policy"]): s for s in report["summary"]}
    for task in TASKS:
        assert acc[(task, "dense")]["accuracy"] >= 2 / 3, acc[(task, "dense")]
        w = acc[(task, WINDOW)]
        assert w["vs_dense_points"] == pytest.approx(100 * (w["accuracy"] - acc[(task, "dense")]["accuracy"]))
    for t in report["trials"]:
        if t["policy"] == WINDOW and t["depth"] == 0.0:
            assert t["score"] == 0, t  # 960 tokens back: out of the window
    pages = {p["policy"]: p["pages_read_share"] for p in report["policies"]}
    # Dense reads every held page a query may see (causal count): exactly 1.
    assert pages["dense"] == pytest.approx(1.0) and 0 < pages[WINDOW] < 0.75
    assert "vs dense" in result["stdout"] and WINDOW in result["stdout"]


def test_plot_is_a_png(result):
    data = result["png"].read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 1000


def test_errors_are_one_clear_line(stride, tmp_path):
    p = run(stride, "eval", "-m", MODEL, "--tasks", "niah_single,haystack", "--lengths", 1024)
    err = p.stderr.decode()
    assert p.returncode != 0 and "unknown task 'haystack'" in err and err.count("\n") == 1, err
    p = run(stride, "eval", "-m", MODEL, "--text", tmp_path / "missing.txt", "--lengths", 1024)
    err = p.stderr.decode()
    assert p.returncode != 0 and "cannot read" in err and err.count("\n") == 1, err
    p = run(stride, "eval", "-m", MODEL, "--tasks", "cwe", "--lengths", 40, "--threads", 2)
    err = p.stderr.decode()
    assert p.returncode != 0 and "cwe at length 40" in err and err.count("\n") == 1, err
