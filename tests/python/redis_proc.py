"""Debian's redis-server on a free loopback port for the shared KV tier tests
and benchmark, with a minimal binary-safe RESP client (no PyPI package).

  with RedisProc() as r:
      r.url                     # redis://127.0.0.1:PORT
      r.call("SET", b"k", b"v")
      r.stop(); r.start()       # same port, empty data
"""
import shutil
import socket
import subprocess
import tempfile
import time

from stride_server import free_port


class RespError(Exception):
    pass


def _read_reply(f):
    line = f.readline()
    if not line:
        raise ConnectionError("redis closed the connection")
    kind, rest = line[:1], line[1:-2]
    if kind == b"+":
        return rest.decode()
    if kind == b"-":
        raise RespError(rest.decode())
    if kind == b":":
        return int(rest)
    if kind == b"$":
        n = int(rest)
        if n < 0:
            return None
        data = f.read(n + 2)
        return data[:-2]
    if kind == b"*":
        n = int(rest)
        return None if n < 0 else [_read_reply(f) for _ in range(n)]
    raise RespError(f"unexpected reply {line!r}")


class RedisProc:
    def __init__(self, maxmemory="1gb"):
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}"
        self.dir = tempfile.mkdtemp(prefix="stride-redis-")
        self.maxmemory = maxmemory
        self.proc = None
        self.start()

    def start(self):
        args = ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                "--dir", self.dir, "--maxmemory", self.maxmemory, "--maxmemory-policy", "allkeys-lru",
                "--enable-debug-command", "local"]
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                     stdin=subprocess.DEVNULL)
        t0 = time.time()
        while time.time() - t0 < 20:
            try:
                if self.call("PING") == "PONG":
                    return
            except OSError:
                time.sleep(0.05)
        raise AssertionError("redis-server did not start")

    def call(self, *args, timeout=10):
        with socket.create_connection(("127.0.0.1", self.port), timeout=timeout) as s:
            out = b"*%d\r\n" % len(args)
            for a in args:
                a = a if isinstance(a, bytes) else str(a).encode()
                out += b"$%d\r\n%s\r\n" % (len(a), a)
            s.sendall(out)
            with s.makefile("rb") as f:
                return _read_reply(f)

    def keys(self, pattern="*"):
        return sorted(k.decode() for k in self.call("KEYS", pattern))

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)


class SilentServer:
    """Accepts TCP connections and never answers: a Redis that hangs."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]
        self.url = f"redis://127.0.0.1:{self.port}"

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.sock.close()


