"""bench/context_parallel.py's prompt source: a fixed text (its sha256 as coreutils' sha256sum gives
it), refused when missing, and --combine telling reports from before it ("docs prompt") from reports of
another prompt, which it will not join."""
import importlib
import json
import os
import subprocess
import sys

import pytest

import stride_cli

sys.path.insert(0, os.path.join(stride_cli.ROOT, "bench"))
cp = importlib.import_module("context_parallel")


def report(prompt=None, ranks=1):
    run = {"ranks": ranks, "tokens": 64, "prefill_cpu_seconds": [2.0] * ranks,
           "decode_cpu_seconds_per_token": [0.01] * ranks, "prefill_bytes_sent": [0] * ranks,
           "generated_ids": [1, 2]}
    r = {"model": "m.gguf", "attention": "dense", "kv_type": "f16", "rtt_us_assumed": 100.0, "n_layer": 2,
         "tokens": 64, "runs": [run]}
    if prompt is not None:
        r["prompt"] = prompt
    return r


def test_the_prompt_source_is_the_texts_path_and_sha256(tmp_path):
    text = tmp_path / "long.txt"
    text.write_text("a fixed long text\n" * 100)
    digest = subprocess.run(["sha256sum", str(text)], capture_output=True, text=True, check=True).stdout.split()[0]
    assert cp.prompt_source(str(text)) == {"path": str(text), "sha256": digest}


@pytest.mark.parametrize("content", [None, ""])
def test_a_missing_or_empty_text_is_refused(tmp_path, content):
    text = tmp_path / "long.txt"
    if content is not None:
        text.write_text(content)
    with pytest.raises(SystemExit, match="long.txt is missing or empty"):
        cp.prompt_source(str(text))


def test_the_prompt_record_gives_the_ends_of_the_ids():
    ids = [str(i) for i in range(100)]
    rec = cp.prompt_record({"path": "t", "sha256": "x"}, ids, 40)
    assert rec["first_ids"] == list(range(8)) and rec["last_ids"] == list(range(92, 100))
    assert rec["text_tokens"] == 40


def test_combine_says_docs_prompt_for_reports_from_before_the_text(tmp_path):
    old = tmp_path / "old.json"
    old.write_text(json.dumps(report()))
    line = tmp_path / "r2.txt"
    line.write_text("log line\n" + json.dumps(dict(report()["runs"][0], ranks=2, prefill_cpu_seconds=[1.0, 1.5],
                                                   decode_cpu_seconds_per_token=[0.01, 0.02],
                                                   prefill_bytes_sent=[5, 0])) + "\n")
    cp.combine([str(old), str(line)], "unused", 100.0, str(tmp_path / "out"), "_j")
    joined = json.loads((tmp_path / "out" / "context_parallel_64_j.json").read_text())
    assert joined["prompt"] == "docs prompt"
    assert [r["ranks"] for r in joined["runs"]] == [1, 2]
    assert joined["runs"][1]["projected_prefill_speedup"] == pytest.approx(2.0 / 1.5)


def test_combine_refuses_reports_of_different_prompts(tmp_path):
    old = tmp_path / "old.json"
    old.write_text(json.dumps(report()))
    new = tmp_path / "new.json"
    new.write_text(json.dumps(report({"path": "t", "sha256": "x"}, ranks=2)))
    with pytest.raises(SystemExit, match="different prompts"):
        cp.combine([str(old), str(new)], "unused", 100.0, str(tmp_path / "out"), "")
