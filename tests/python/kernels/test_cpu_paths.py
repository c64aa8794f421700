"""Kernel paths chosen at run time: what `stride info` detects agrees with the
kernel's own view of the CPU (/proc/cpuinfo flags), STRIDE_CPU forces each
supported path and refuses anything else with one clear line, /metrics names
the path a server runs, and greedy generation is the same on every path."""
import json
import os
import subprocess

from stride_server import SMOL, StrideServer, binary

# What each path needs, as /proc/cpuinfo names the flags.
NEEDS = {"avx2": {"avx2", "fma", "f16c"},
         "avx512": {"avx2", "fma", "f16c", "avx512f", "avx512vl", "avx512bw", "avx512dq", "avx512_vnni"}}
# Linux lists the AMX flags only when it supports tile state (and then grants it).
NEEDS["amx"] = NEEDS["avx512"] | {"amx_tile", "amx_int8"}


def cpuinfo_flags():
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("flags"):
                return set(line.split(":", 1)[1].split())
    raise AssertionError("no flags line in /proc/cpuinfo")


def stride(*args, cpu=None):
    env = {k: v for k, v in os.environ.items() if k != "STRIDE_CPU"}
    if cpu is not None:
        env["STRIDE_CPU"] = cpu
    return subprocess.run([binary(), *args], capture_output=True, text=True, env=env, timeout=600)


def info(cpu=None):
    res = stride("info", "--json", cpu=cpu)
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout)["cpu"]


def test_detected_paths_match_proc_cpuinfo():
    flags = cpuinfo_flags()
    want = [p for p in ("avx2", "avx512", "amx") if NEEDS[p] <= flags]
    got = info()
    assert got["supported_paths"] == want
    assert got["path"] == want[-1], "the best supported path runs by default"


def test_stride_cpu_forces_each_supported_path():
    for path in info()["supported_paths"]:
        assert info(cpu=path)["path"] == path


def test_unknown_or_unsupported_stride_cpu_is_one_clear_line():
    res = stride("info", cpu="sse2")
    assert res.returncode == 1
    lines = [l for l in res.stderr.splitlines() if l.strip()]
    assert len(lines) == 1 and "STRIDE_CPU=sse2" in lines[0] and "avx2, avx512 or amx" in lines[0], res.stderr
    for path in ("avx512", "amx"):
        if path not in info()["supported_paths"]:
            res = stride("info", cpu=path)
            lines = [l for l in res.stderr.splitlines() if l.strip()]
            assert res.returncode == 1 and len(lines) == 1 and "cannot run" in lines[0], res.stderr


def test_metrics_name_the_path_the_server_runs():
    for path in info()["supported_paths"]:
        with StrideServer(SMOL, extra_args=["--kv-budget", "32M"], env={"STRIDE_CPU": path}) as s:
            m = s.metrics()
        assert m[f'stride_cpu_path_info{{cpu_path="{path}"}}'] == 1


def test_greedy_tokens_equal_on_every_path():
    ids = " ".join(str(100 + (i * 37) % 5000) for i in range(300))
    outs = {}
    for path in info()["supported_paths"]:
        res = stride("run", "-m", SMOL, "--prompt-ids", ids, "-n", "24", "--json", "--ignore-eos",
                     "--threads", "2", cpu=path)
        assert res.returncode == 0, res.stderr
        outs[path] = json.loads(res.stdout.strip().splitlines()[-1])["generated_ids"]
    first = next(iter(outs.values()))
    assert len(first) == 24
    for path, got in outs.items():
        assert got == first, f"{path} generated other tokens"
