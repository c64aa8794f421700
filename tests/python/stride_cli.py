"""Thin wrappers over the `stride` CLI for the tests and the benchmark.

Usage:
  cli = StrideCli.from_env()          # STRIDE_BIN or <repo>/build/stride
  logits = cli.score(model, ids)      # np.float32 [n_tokens, n_vocab]
  res = cli.run(model, prompt_ids=ids, max_tokens=8)   # the --json summary dict
  ids = cli.tokenize(model, "text")
"""
import json
import os
import subprocess
import tempfile

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
THREADS = 2


class StrideError(AssertionError):
    pass


class StrideCli:
    def __init__(self, binary: str):
        self.binary = binary

    @classmethod
    def from_env(cls) -> "StrideCli":
        binary = os.environ.get("STRIDE_BIN", os.path.join(ROOT, "build", "stride"))
        if not (os.path.isfile(binary) and os.access(binary, os.X_OK)):
            raise StrideError(f"stride binary not found at {binary} (build it: scripts/setup)")
        return cls(binary)

    def _call(self, args, timeout=600) -> str:
        cmd = [self.binary] + [str(a) for a in args]
        p = subprocess.run(cmd, capture_output=True, timeout=timeout, stdin=subprocess.DEVNULL)
        if p.returncode != 0:
            raise StrideError(f"{' '.join(cmd)[:300]}\nexit {p.returncode}\n"
                              f"stderr: {p.stderr.decode('utf-8', 'replace')[-2000:]}")
        return p.stdout.decode("utf-8", "replace")

    @staticmethod
    def _last_json(stdout: str) -> dict:
        lines = [ln for ln in stdout.strip().splitlines() if ln.strip()]
        if not lines:
            raise StrideError("no output")
        try:
            return json.loads(lines[-1])
        except json.JSONDecodeError as e:
            raise StrideError(f"last stdout line is not JSON: {lines[-1][:200]!r}") from e

    def info(self, model) -> dict:
        """`stride info --json` of a model."""
        return json.loads(self._call(["info", "--model", model, "--json"]))

    def score(self, model, ids, attention=None, chunk=None, threads=THREADS,
              extra=()) -> np.ndarray:
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "logits.f32")
            args = ["score", "--model", model, "--ids", " ".join(map(str, ids)),
                    "--out", out, "--threads", threads]
            if attention:
                args += ["--attention", attention]
            if chunk:
                args += ["--chunk", chunk]
            args += list(extra)
            info = self._last_json(self._call(args))
            n, v = int(info["n_tokens"]), int(info["n_vocab"])
            data = np.fromfile(out, dtype="<f4")
        if n != len(ids) or data.size != n * v:
            raise StrideError(f"score: {n} tokens x {v} vocab, file has {data.size} floats")
        return data.reshape(n, v)

    def run(self, model, prompt_ids, max_tokens, attention=None, threads=THREADS,
            extra=()) -> dict:
        args = ["run", "--model", model, "--prompt-ids", " ".join(map(str, prompt_ids)),
                "--max-tokens", max_tokens, "--temperature", 0, "--seed", 0,
                "--ignore-eos", "--json", "--threads", threads, *extra]
        if attention:
            args += ["--attention", attention]
        return self._last_json(self._call(args))

    def tokenize(self, model, text: str, bos=False) -> list:
        with tempfile.NamedTemporaryFile("wb", suffix=".txt", delete=False) as f:
            f.write(text.encode("utf-8"))
            path = f.name
        try:
            out = self._call(["tokenize", "--model", model, "--file", path] + (["--bos"] if bos else []))
        finally:
            os.unlink(path)
        return [int(t) for t in out.split()]
