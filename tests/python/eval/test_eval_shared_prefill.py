"""`stride eval --order prompt` shares dense's prefill of each prompt with the
top-k runs whose prompt chunks read every page (prefill=dense): each of them
decodes on the prompt's KV and logits instead of prefilling again. The
trials it logs (answers, tokens, pages read and present) are those of the
same sweep with --no-shared-prefill, where every run prefills for itself;
only the times differ. The cost estimate says how many prefills are shared,
and a run whose prompt chunks select pages (sparse_prefill) takes no part."""
import json
import os
import re
import subprocess

import stride_cli

MODEL = os.path.join(stride_cli.ROOT, "models", "SmolLM2-135M-Instruct.Q4_1.gguf")
TOPK = "topk:sparsity=0.9,prefill=dense"
POLICIES = ("sparse_prefill", TOPK, TOPK + ",estimate=oracle", TOPK + ",estimate=rerank")
SWEEP = ("--tasks", "niah_single,vt", "--lengths", 1024, "--depths", 1, "--trials", 2, "--threads", 1,
         "--order", "prompt")


def run(stride, *args):
    return subprocess.run([stride.binary, *map(str, args)], capture_output=True, timeout=900,
                          stdin=subprocess.DEVNULL)


def sweep(stride, log, *extra):
    args = ["eval", "-m", MODEL, *SWEEP, "--resume", log, *extra]
    for p in POLICIES:
        args += ["-a", p]
    return run(stride, *args)


def logged(log):
    """run, prompt and bound -> everything the trial logged but its time."""
    out = {}
    for line in log.read_text().splitlines():
        j = json.loads(line)
        key = (j.pop("run"), j.pop("prompt_sha256"), j.pop("max_new_tokens"))
        j.pop("seconds")
        out[key] = j
    return out


def test_shared_prefill_logs_the_trials_of_unshared_runs(stride, tmp_path):
    shared_log, own_log = tmp_path / "shared.jsonl", tmp_path / "own.jsonl"
    p = sweep(stride, shared_log, "--dry-run")
    err = p.stderr.decode()
    assert p.returncode == 0, err[-2000:]
    m = re.search(r"eval: (\d+) trials decode on a prefill another run shares", err)
    prompts = 3  # niah_single at one depth, vt twice
    # Three prefill=dense runs take dense's prefill of each prompt (1K
    # prompts: no last chunk of a single token, where top-k would select).
    assert m and int(m.group(1)) == 3 * prompts, err

    p = sweep(stride, shared_log)
    assert p.returncode == 0, p.stderr.decode()[-2000:]
    p = sweep(stride, own_log, "--no-shared-prefill")
    err = p.stderr.decode()
    assert p.returncode == 0, err[-2000:]
    assert "decode on a prefill another run shares" not in err, err

    shared, own = logged(shared_log), logged(own_log)
    assert len(own) == (1 + len(POLICIES)) * prompts
    assert shared == own
    # Not a sweep of empty answers: the top-k runs decoded something.
    assert all(t["new_tokens"] > 0 for t in own.values())
