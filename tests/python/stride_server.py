"""Runs `stride serve` on a free loopback port for the server tests and the load sweep.

  with StrideServer(model, extra_args=[...], env={...}) as srv:
      srv.url            # http://127.0.0.1:PORT
      srv.get("/health") # (status, headers, body bytes)
"""
import hashlib
import http.client
import json
import os
import signal
import socket
import subprocess
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SMOL = os.path.join(ROOT, "models", "SmolLM2-135M-Instruct.Q4_1.gguf")
GEMMA = os.path.join(ROOT, "models", "gemma-3-270m-q4_k_m.gguf")
# The names a server serves these models under by default (the file's name): what requests pass as `model`.
SMOL_NAME = os.path.basename(SMOL)
GEMMA_NAME = os.path.basename(GEMMA)


def sha256(path):
    """Hex sha256 of a file, read in 1 MiB blocks."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def binary():
    b = os.environ.get("STRIDE_BIN", os.path.join(ROOT, "build", "stride"))
    assert os.path.isfile(b) and os.access(b, os.X_OK), f"stride binary not found at {b}"
    return b


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class StrideServer:
    def __init__(self, model=SMOL, extra_args=(), env=None, config=None, threads=2, wait=True):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = tempfile.NamedTemporaryFile(prefix="stride-serve-", suffix=".log", delete=False)
        args = [binary(), "serve"] + (["--model", model] if model else []) + \
            ["--port", str(self.port), "--threads", str(threads)]
        if config:
            args += ["--config", config]
        args += [str(a) for a in extra_args]
        # The name requests pass as `model` (OpenAI requires it): the first --served-model-name (a list may be
        # comma-separated), else the server's default, the model file's name.
        names = [str(a) for a in extra_args]
        self.model_name = (names[names.index("--served-model-name") + 1].split(",")[0]
                           if "--served-model-name" in names[:-1]
                           else os.path.basename(os.path.normpath(model)) if model else "")
        full_env = {k: v for k, v in os.environ.items() if not k.startswith("STRIDE_") or k == "STRIDE_BIN"}
        full_env.update(env or {})
        self.proc = subprocess.Popen(args, stdout=self.log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                     env=full_env)
        if wait:
            self.wait_ready()

    def logs(self):
        with open(self.log.name, "rb") as f:
            return f.read().decode("utf-8", "replace")

    def wait_ready(self, timeout=120):
        t0 = time.time()
        while time.time() - t0 < timeout:
            if self.proc.poll() is not None:
                raise AssertionError(f"stride serve exited {self.proc.returncode}:\n{self.logs()[-3000:]}")
            try:
                status, _, _ = self.request("GET", "/ready", timeout=2)
                if status == 200:
                    return
            except OSError:
                pass
            time.sleep(0.1)
        raise AssertionError(f"server not ready after {timeout}s:\n{self.logs()[-3000:]}")

    def request(self, method, path, body=None, headers=None, timeout=120):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        try:
            data = body if isinstance(body, (bytes, str)) or body is None else json.dumps(body)
            h = {"Content-Type": "application/json"}
            h.update(headers or {})
            conn.request(method, path, body=data, headers=h)
            r = conn.getresponse()
            return r.status, dict(r.getheaders()), r.read()
        finally:
            conn.close()

    def get(self, path, **kw):
        return self.request("GET", path, **kw)

    def post(self, path, body, **kw):
        return self.request("POST", path, body, **kw)

    def metrics(self):
        status, _, body = self.get("/metrics")
        assert status == 200
        out = {}
        for line in body.decode().splitlines():
            if line.startswith("#") or not line.strip():
                continue
            name, value = line.rsplit(" ", 1)
            out[name] = float(value)
        return out

    def stop(self, sig=signal.SIGTERM, timeout=60):
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()
        os.unlink(self.log.name)
