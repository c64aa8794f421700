"""`stride eval` end to end on SmolLM2 at 1K tokens (kept short: the 4K-32K
figures are benchmark runs): dense finds the needles, a 64-token window loses
the one at depth 0, the JSON holds every trial and the plot is a PNG; a bad
task or a missing text file is a one-line error. `--reference` reuses the
dense run of an earlier report for the same prompts and model, and refuses
one made from other prompts, settings or model."""
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
            "stdout": p.stdout.decode(), "json": out / "e.json", "dir": out}


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


def eval_with_reference(stride, reference, out, *extra):
    return run(stride, "eval", "-m", MODEL, "-a", "window:size=128", "--tasks", ",".join(TASKS), "--lengths", 1024,
               "--depths", len(DEPTHS), "--reference", reference, "--json", out, "--threads", 2, *extra)


def test_reference_reuses_the_recorded_dense_run(stride, result):
    out = result["dir"] / "ref.json"
    p = eval_with_reference(stride, result["json"], out)
    err = p.stderr.decode()
    assert p.returncode == 0, err[-2000:]
    assert "dense: 6 trials from" in err and "not re-run" in err, err
    first, second = result["report"], json.loads(out.read_text())
    assert second["reference"] == str(result["json"]) and second["model_sha256"] == first["model_sha256"]
    assert len(first["model_sha256"]) == 64
    key = lambda t: (t["task"], t["depth"])
    dense1 = {key(t): t for t in first["trials"] if t["policy"] == "dense"}
    dense2 = {key(t): t for t in second["trials"] if t["policy"] == "dense"}
    assert dense1.keys() == dense2.keys() and len(dense1) == len(TASKS) * len(DEPTHS)
    for k, t in dense2.items():
        for field in ("answer", "score", "prompt_sha256", "max_new_tokens", "expected", "tokens"):
            assert t[field] == dense1[k][field], (k, field)
    # The new policy ran on the very prompts dense answered.
    for t in second["trials"]:
        if t["policy"] != "dense":
            assert t["prompt_sha256"] == dense1[key(t)]["prompt_sha256"]
    # Distinct prompts have distinct fingerprints.
    assert len({t["prompt_sha256"] for t in dense1.values()}) == len(dense1)
    pol = {x["policy"]: x for x in second["policies"]}
    assert pol["dense"]["pages_read_share"] == pytest.approx(1.0) and "window:size=128" in pol


def test_reference_from_other_prompts_or_settings_is_refused(stride, result, tmp_path):
    out = tmp_path / "x.json"
    p = eval_with_reference(stride, result["json"], out, "--seed", 2)
    err = p.stderr.decode()
    assert p.returncode != 0 and "no dense trial for the prompt of niah_single at 1024" in err, err
    assert err.count("\n") == 1 and not out.exists(), err
    p = eval_with_reference(stride, result["json"], out, "--chunk", 128)
    err = p.stderr.decode()
    assert p.returncode != 0 and "another --chunk" in err and err.count("\n") == 1, err

    report = json.loads(result["json"].read_text())
    other = dict(report, model_sha256="0" * 64)
    (tmp_path / "other.json").write_text(json.dumps(other))
    p = eval_with_reference(stride, tmp_path / "other.json", out)
    err = p.stderr.decode()
    assert p.returncode != 0 and "different model file" in err and err.count("\n") == 1, err

    stripped = dict(report, trials=[{k: v for k, v in t.items() if k != "prompt_sha256"} for t in report["trials"]])
    (tmp_path / "old.json").write_text(json.dumps(stripped))
    p = eval_with_reference(stride, tmp_path / "old.json", out)
    err = p.stderr.decode()
    assert p.returncode != 0 and "lacks prompt_sha256" in err and err.count("\n") == 1, err

    for bad in ('{"trials": ', "[1, 2]", '{"chunk": "256", "page_size": 32}'):
        (tmp_path / "bad.json").write_text(bad)
        p = eval_with_reference(stride, tmp_path / "bad.json", out)
        err = p.stderr.decode()
        assert p.returncode != 0 and "reference" in err and err.count("\n") == 1, (bad, err)
    p = eval_with_reference(stride, tmp_path / "missing.json", out)
    err = p.stderr.decode()
    assert p.returncode != 0 and "cannot read" in err and err.count("\n") == 1, err


def test_a_stopped_sweep_resumes_from_its_trial_log(stride, result, tmp_path):
    """Trials in the log are not run again and give the same report; a line
    cut short by a stop is run again; --dry-run prints the cost and runs
    nothing."""
    log = tmp_path / "trials.jsonl"
    args = ("-a", WINDOW, "--tasks", ",".join(TASKS), "--lengths", 1024, "--depths", len(DEPTHS), "--threads", 2,
            "--resume", log)
    p = run(stride, "eval", "-m", MODEL, *args, "--json", tmp_path / "first.json")
    assert p.returncode == 0, p.stderr.decode()[-2000:]
    lines = log.read_text().splitlines()
    assert len(lines) == 2 * len(TASKS) * len(DEPTHS)
    # The logged run answers as the module's run without a log did.
    fresh = {(t["task"], t["depth"], t["policy"]): t["answer"] for t in result["report"]["trials"]}
    first = json.loads((tmp_path / "first.json").read_text())
    assert {(t["task"], t["depth"], t["policy"]): t["answer"] for t in first["trials"]} == fresh

    # Cut the last trial short, as a stop mid-write would.
    log.write_text("\n".join(lines[:-1]) + "\n" + lines[-1][: len(lines[-1]) // 2])
    p = run(stride, "eval", "-m", MODEL, *args, "--dry-run")
    err = p.stderr.decode()
    assert p.returncode == 0 and "1 trials to run" in err and "a line cut short skipped" in err, err
    assert "at dense's speed" in err, err
    p = run(stride, "eval", "-m", MODEL, *args, "--json", tmp_path / "second.json")
    err = p.stderr.decode()
    assert p.returncode == 0, err[-2000:]
    assert f"dense: {len(TASKS) * len(DEPTHS)} trials" in err and f"({len(TASKS) * len(DEPTHS)} from the trial log)" in err, err
    assert f"({len(TASKS) * len(DEPTHS) - 1} from the trial log)" in err, err
    second = json.loads((tmp_path / "second.json").read_text())
    assert {(t["task"], t["depth"], t["policy"]): t["answer"] for t in second["trials"]} == fresh
    assert sum(t["recalled"] for t in second["trials"]) == 2 * len(TASKS) * len(DEPTHS) - 1
    # Every cell carries its Wilson interval around its accuracy.
    for s in second["summary"]:
        lo, hi = s["ci95"]
        assert 0 <= lo <= s["accuracy"] <= hi <= 1 and s["trials"] == len(DEPTHS), s


def test_a_prompt_by_prompt_sweep_leaves_paired_trials(stride, result, tmp_path):
    """--order prompt runs each prompt through dense and the policy before the
    next prompt, answering as the policy-by-policy run did; a sweep stopped
    half way reports, with --logged-only, exactly the prompts both runs hold."""
    log = tmp_path / "trials.jsonl"
    args = ("-a", WINDOW, "--tasks", ",".join(TASKS), "--lengths", 1024, "--depths", len(DEPTHS), "--threads", 2,
            "--resume", log)
    p = run(stride, "eval", "-m", MODEL, *args, "--order", "prompt", "--json", tmp_path / "paired.json")
    assert p.returncode == 0, p.stderr.decode()[-2000:]
    runs = [json.loads(line)["run"] for line in log.read_text().splitlines()]
    n = len(TASKS) * len(DEPTHS)
    assert len(runs) == 2 * n
    assert runs[0::2] == [runs[0]] * n and runs[1::2] == [runs[1]] * n and runs[0] != runs[1], runs
    fresh = {(t["task"], t["depth"], t["policy"]): t["answer"] for t in result["report"]["trials"]}
    paired = json.loads((tmp_path / "paired.json").read_text())
    assert {(t["task"], t["depth"], t["policy"]): t["answer"] for t in paired["trials"]} == fresh

    # As if stopped after three prompts and a half: the half-done prompt is not reported.
    log.write_text("\n".join(log.read_text().splitlines()[:7]) + "\n")
    p = run(stride, "eval", "-m", MODEL, *args, "--logged-only", "--json", tmp_path / "part.json")
    err = p.stderr.decode()
    assert p.returncode == 0 and "3 prompts have every run in the trial log" in err, err[-2000:]
    part = json.loads((tmp_path / "part.json").read_text())
    assert len(part["trials"]) == 2 * 3 and all(t["recalled"] for t in part["trials"])
    assert {(t["task"], t["depth"], t["policy"]): t["answer"] for t in part["trials"]}.items() <= fresh.items()
    p = run(stride, "eval", "-m", MODEL, "-a", WINDOW, "--order", "prompt")
    assert p.returncode != 0 and b"need --resume" in p.stderr


def test_only_trials_keeps_those_depth_indices(stride, result, tmp_path):
    """--only-trials keeps the prompts of the given trial (depth) indices of
    every task, and answers them as the full run did; an index no task has is
    a one-line error."""
    p = run(stride, "eval", "-m", MODEL, "-a", WINDOW, "--tasks", ",".join(TASKS), "--lengths", 1024,
            "--depths", len(DEPTHS), "--threads", 2, "--only-trials", "2", "--json", tmp_path / "last.json")
    assert p.returncode == 0, p.stderr.decode()[-2000:]
    trials = json.loads((tmp_path / "last.json").read_text())["trials"]
    assert sorted((t["task"], t["policy"], t["depth"]) for t in trials) == sorted(
        (task, pol, DEPTHS[2]) for task in TASKS for pol in ("dense", WINDOW))
    full = {(t["task"], t["depth"], t["policy"]): t["answer"] for t in result["report"]["trials"]}
    for t in trials:
        assert t["answer"] == full[(t["task"], t["depth"], t["policy"])], t
    p = run(stride, "eval", "-m", MODEL, "--tasks", ",".join(TASKS), "--lengths", 1024, "--depths", len(DEPTHS),
            "--only-trials", "7", "--dry-run")
    err = p.stderr.decode()
    assert p.returncode != 0 and "--only-trials" in err and err.count("\n") == 1, err
