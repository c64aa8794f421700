"""Three (or N) `stride serve` replicas on fixed loopback ports, one model
directory with versions v1 and v2, Debian's nginx in front (deploy/nginx) and
a thread that drives nginx's membership from every replica's /ready, as
`stride_nginx.py watch` does in production. Used by bench/replicas.py."""
import http.client
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "deploy", "nginx"))
from serving_common import SMOL, binary, free_port  # noqa: E402
from stride_nginx import Balancer, Watcher, nginx_binary  # noqa: E402

ADMIN_KEY = "replicas-bench-admin"


class Replica:
    """One `stride serve` on a fixed loopback port, restartable in place."""

    def __init__(self, name, args, threads=1):
        self.name = name
        self.port = free_port()
        self.addr = f"127.0.0.1:{self.port}"
        self.args = list(args)
        self.threads = threads
        self.proc = None
        self.log_path = None
        self.starts = 0

    def start(self, args=None):
        if args is not None:
            self.args = list(args)
        self.starts += 1
        fd, self.log_path = tempfile.mkstemp(prefix=f"stride-{self.name}-{self.starts}-", suffix=".log")
        env = {k: v for k, v in os.environ.items() if not k.startswith("STRIDE_")}
        env["STRIDE_ADMIN_KEYS"] = ADMIN_KEY
        self.proc = subprocess.Popen([binary(), "serve", "--port", str(self.port), "--threads", str(self.threads)]
                                     + self.args, stdout=fd, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                     env=env)
        os.close(fd)

    def logs(self):
        with open(self.log_path, errors="replace") as f:
            return f.read()

    def wait_ready(self, timeout=120):
        t0 = time.time()
        while time.time() - t0 < timeout:
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.name} exited {self.proc.returncode}:\n{self.logs()[-3000:]}")
            if http_status(self.port, "GET", "/ready") == 200:
                return time.time() - t0
            time.sleep(0.05)
        raise RuntimeError(f"{self.name} not ready after {timeout}s")

    def kill9(self):
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()

    def sigterm(self, timeout=120):
        """SIGTERM: the replica drains its running requests and exits; returns its exit code."""
        self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout)

    def version(self):
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        c.request("GET", "/v1/models")
        body = json.loads(c.getresponse().read())
        c.close()
        return body["data"][0].get("version")

    def admin_switch(self, version):
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=120)
        c.request("POST", "/admin/model", body=json.dumps({"version": version}),
                  headers={"Authorization": f"Bearer {ADMIN_KEY}", "Content-Type": "application/json"})
        r = c.getresponse()
        body = r.read()
        c.close()
        if r.status != 200:
            raise RuntimeError(f"{self.name}: admin switch to {version}: {r.status} {body[:300]!r}")
        return json.loads(body)

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def http_status(port, method, path, timeout=2):
    try:
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
        c.request(method, path)
        r = c.getresponse()
        r.read()
        c.close()
        return r.status
    except OSError:
        return None


class Cluster:
    """N replicas serving one model directory (v1 and v2), nginx in front, a /ready watcher."""

    def __init__(self, n=3, threads=1, model=SMOL, v2_model=None, workers=1):
        self.root = tempfile.mkdtemp(prefix="stride-replicas-")
        os.chmod(self.root, 0o755)  # nginx workers may run as another user
        self.model_dir = os.path.join(self.root, "models")
        for version, path in (("v1", model), ("v2", v2_model or model)):
            subprocess.run([binary(), "model", "publish", "--model-dir", self.model_dir, "--version", version, path],
                           check=True, capture_output=True, timeout=300)
        base = ["--model-dir", self.model_dir, "--max-batch", "16", "--kv-budget", "256M"]
        self.base_args = base
        self.replicas = [Replica(f"r{i}", base + ["--model-version", "v1"], threads) for i in range(n)]
        self.lb = Balancer(os.path.join(self.root, "lb"))
        self.lb_port = free_port()
        self.events = []  # (time, text)
        self._watch_stop = threading.Event()
        self._watcher = None
        self.workers = workers

    def start(self, balance="roundrobin"):
        for r in self.replicas:
            r.start()
        for r in self.replicas:
            r.wait_ready()
        self.lb.init(f"127.0.0.1:{self.lb_port}", [r.addr for r in self.replicas], balance,
                     workers=self.workers, upstream_header=True)
        self.lb.start()
        self._watcher = threading.Thread(target=self._watch, daemon=True)
        self._watcher.start()

    def _watch(self):
        watcher = Watcher(self.lb)
        while not self._watch_stop.is_set():
            try:
                if watcher.poll():
                    self.event(f"nginx membership: not ready {self.lb.state()['not_ready'] or 'none'}")
            except Exception as e:  # noqa: BLE001 - retried on the next poll
                self.event(f"watch error: {e}")
            self._watch_stop.wait(0.25)

    def event(self, text):
        self.events.append((time.time(), text))

    def set_balance(self, balance):
        with self.lb.locked():
            st = self.lb.state()
            st["balance"] = balance
            self.lb._save(st)
            self.lb.reload()

    def replica(self, addr):
        return next((r for r in self.replicas if r.addr == addr), None)

    def close(self):
        self._watch_stop.set()
        if self._watcher:
            self._watcher.join(5)
        self.lb.stop()
        for r in self.replicas:
            r.stop()

    def cleanup(self):
        shutil.rmtree(self.root, ignore_errors=True)
        for r in self.replicas:
            if r.log_path and os.path.exists(r.log_path):
                os.unlink(r.log_path)


def nginx_version():
    """`nginx -v`, or None without nginx."""
    try:
        return subprocess.run([nginx_binary(), "-v"], capture_output=True, text=True).stderr.strip()
    except Exception:  # noqa: BLE001
        return None
