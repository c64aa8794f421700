#!/usr/bin/env python3
"""nginx in front of stride replicas: render the config, start and reload
nginx in a prefix directory, and keep the upstream membership in step with
each replica's /ready.

Open-source nginx has no active health checks, so membership is driven from
outside: `watch` polls every replica's GET /ready and renders the ones that
do not answer 200 (loading, draining after SIGTERM, or gone) as `down`, then
reloads nginx. `drain`/`undrain` take a replica out by hand before it is
stopped or switched, and put it back. Between polls nginx's passive checks
(max_fails/fail_timeout, retry on a refused connect) cover a replica that dies.

  stride_nginx.py init --prefix /run/stride-lb --listen 127.0.0.1:8000 \\
      --replica 127.0.0.1:8081 --replica 127.0.0.1:8082 --replica 127.0.0.1:8083 [--balance session]
  stride_nginx.py start   --prefix /run/stride-lb        # nginx -p PREFIX (as the current user)
  stride_nginx.py watch   --prefix /run/stride-lb [--interval 1]
  stride_nginx.py drain   --prefix /run/stride-lb 127.0.0.1:8082   # out of rotation, reload, wait
  stride_nginx.py undrain --prefix /run/stride-lb 127.0.0.1:8082
  stride_nginx.py stop    --prefix /run/stride-lb

Only the Python standard library; nginx is Debian's (`apt-get install nginx`).
"""
import argparse
import contextlib
import fcntl
import http.client
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TEMPLATE = os.path.join(HERE, "stride.conf.in")
BALANCES = {
    "roundrobin": "# round robin (nginx's default)",
    "session": "hash $stride_session_key consistent;",
}


def nginx_binary():
    found = shutil.which("nginx") or ("/usr/sbin/nginx" if os.path.exists("/usr/sbin/nginx") else None)
    if not found:
        raise RuntimeError("nginx not found: apt-get install nginx")
    return found


class UnixHTTPConnection(http.client.HTTPConnection):
    def __init__(self, path, timeout=2):
        super().__init__("localhost", timeout=timeout)
        self.path = path

    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(self.timeout)
        self.sock.connect(self.path)


class Balancer:
    """One nginx prefix directory: state.json (replicas, balance, drained), the
    rendered nginx.conf, pid, logs and temp folders."""

    def __init__(self, prefix):
        self.prefix = os.path.abspath(prefix)
        self.state_path = os.path.join(self.prefix, "state.json")
        self.conf_path = os.path.join(self.prefix, "nginx.conf")

    # ---- state -------------------------------------------------------------
    def init(self, listen, replicas, balance="roundrobin", workers=1, max_fails=1, fail_timeout_s=5,
             upstream_header=False):
        if balance not in BALANCES:
            raise ValueError(f"balance must be one of {sorted(BALANCES)}")
        os.makedirs(self.prefix, exist_ok=True)
        # nginx started as root runs its workers as nobody: they must reach the prefix.
        os.chmod(self.prefix, 0o755)
        state = {"listen": listen, "replicas": list(replicas), "balance": balance, "workers": workers,
                 "max_fails": max_fails, "fail_timeout_s": fail_timeout_s, "upstream_header": upstream_header,
                 "drained": [], "not_ready": [], "generation": 0}
        self._save(state)
        self.render()
        return state

    @contextlib.contextmanager
    def locked(self):
        """Serialises read-modify-write of the state between `watch` and `drain`."""
        with open(os.path.join(self.prefix, "state.lock"), "w") as f:
            fcntl.flock(f, fcntl.LOCK_EX)
            yield

    def state(self):
        with open(self.state_path) as f:
            return json.load(f)

    def _save(self, state):
        tmp = self.state_path + ".tmp"
        with open(tmp, "w") as f:
            json.dump(state, f, indent=1)
        os.replace(tmp, self.state_path)

    def render(self):
        """Writes nginx.conf from the state with the next generation number; returns it."""
        st = self.state()
        st["generation"] += 1
        out_of_rotation = set(st["drained"]) | set(st["not_ready"])
        servers = []
        for r in st["replicas"]:
            line = f"    server {r} max_fails={st['max_fails']} fail_timeout={st['fail_timeout_s']}s"
            servers.append(line + (" down;" if r in out_of_rotation else ";"))
        if len(out_of_rotation) >= len(st["replicas"]):
            # nginx needs one usable server; with all of them out, clients get 502 from the
            # last one rather than a config nginx refuses to load.
            servers[-1] = servers[-1].replace(" down;", ";")
        with open(TEMPLATE) as f:
            text = f.read()
        fields = {
            "WORKERS": str(st["workers"]),
            "PREFIX": self.prefix,
            "LISTEN": st["listen"],
            "BALANCE_LINE": BALANCES[st["balance"]],
            "SERVERS": "\n".join(servers),
            "GENERATION": str(st["generation"]),
            "EXTRA_LOCATION": ("      add_header X-Stride-Upstream $upstream_addr always;   # which replica answered"
                               if st["upstream_header"] else ""),
        }
        for k, v in fields.items():
            text = text.replace(f"@{k}@", v)
        tmp = self.conf_path + ".tmp"
        with open(tmp, "w") as f:
            f.write(text)
        os.replace(tmp, self.conf_path)
        self._save(st)
        return st["generation"]

    # ---- nginx -------------------------------------------------------------
    def _nginx(self, *args):
        return subprocess.run([nginx_binary(), "-p", self.prefix, "-c", self.conf_path, "-e",
                               os.path.join(self.prefix, "error.log"), *args],
                              capture_output=True, text=True, timeout=30)

    def check(self):
        p = self._nginx("-t")
        if p.returncode != 0:
            raise RuntimeError(f"nginx -t failed:\n{p.stderr}")

    def start(self, timeout=10):
        self.check()
        sock = os.path.join(self.prefix, "control.sock")
        if os.path.exists(sock) and not self.running():
            os.unlink(sock)  # left by an nginx that did not exit cleanly
        p = self._nginx()
        if p.returncode != 0:
            raise RuntimeError(f"nginx failed to start:\n{p.stderr}")
        self.wait_generation(self.state()["generation"], timeout)

    def pid(self):
        try:
            with open(os.path.join(self.prefix, "nginx.pid")) as f:
                return int(f.read().strip())
        except (OSError, ValueError):
            return None

    def running(self):
        pid = self.pid()
        if pid is None:
            return False
        try:
            os.kill(pid, 0)
            return True
        except ProcessLookupError:
            return False

    def stop(self, timeout=10):
        pid = self.pid()
        if pid is None:
            return
        try:
            os.kill(pid, signal.SIGQUIT)  # graceful: workers finish their requests
        except ProcessLookupError:
            return
        t0 = time.time()
        while time.time() - t0 < timeout:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                return
            time.sleep(0.1)
        os.kill(pid, signal.SIGTERM)

    def workers(self):
        """{pid: title} of the master's worker processes."""
        master, out = self.pid(), {}
        for d in os.listdir("/proc"):
            if not d.isdigit():
                continue
            try:
                with open(f"/proc/{d}/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
                if ppid == master:
                    with open(f"/proc/{d}/cmdline", "rb") as f:
                        out[int(d)] = f.read().replace(b"\0", b" ").decode(errors="replace").strip()
            except (OSError, ValueError, IndexError):
                continue
        return out

    def reload(self, timeout=10):
        """Renders, checks and reloads; returns once every new connection gets the
        new config: the new workers answer and the old ones stopped accepting
        ("worker process is shutting down"). Old workers finish the requests
        (streams too) they already carry."""
        gen = self.render()
        self.check()
        old = self.workers()
        os.kill(self.pid(), signal.SIGHUP)
        self.wait_generation(gen, timeout)
        t0 = time.time()
        while time.time() - t0 < timeout:
            now = self.workers()
            if all(pid not in now or "shutting down" in now[pid] for pid in old):
                return gen
            time.sleep(0.02)
        raise RuntimeError(f"old nginx workers still accepting {timeout}s after a reload")

    def generation(self):
        """The generation the running workers serve, asked on the control socket."""
        c = UnixHTTPConnection(os.path.join(self.prefix, "control.sock"))
        try:
            c.request("GET", "/lb/generation")
            r = c.getresponse()
            return int(r.read().decode().strip()) if r.status == 200 else None
        finally:
            c.close()

    def wait_generation(self, gen, timeout):
        t0 = time.time()
        while time.time() - t0 < timeout:
            try:
                if self.generation() == gen:
                    return
            except (OSError, ValueError):
                pass
            time.sleep(0.05)
        raise RuntimeError(f"nginx did not serve generation {gen} within {timeout}s (see {self.prefix}/error.log)")

    # ---- membership --------------------------------------------------------
    def set_drained(self, replica, drained, timeout=10):
        with self.locked():
            st = self.state()
            if replica not in st["replicas"]:
                raise ValueError(f"{replica} is not a replica of this balancer")
            st["drained"] = sorted((set(st["drained"]) | {replica}) if drained else (set(st["drained"]) - {replica}))
            self._save(st)
            return self.reload(timeout)

    def set_not_ready(self, not_ready):
        """Records which replicas failed /ready; reloads when that changed. Returns True on a reload."""
        with self.locked():
            st = self.state()
            if sorted(not_ready) == sorted(st["not_ready"]):
                return False
            st["not_ready"] = sorted(not_ready)
            self._save(st)
            self.reload()
            return True


def probe_ready(replica, timeout=2.0):
    """GET /ready: "ready" (200), "not_ready" (any other answer, e.g. 503 while
    loading or draining), "refused" (nothing listens) or "timeout"."""
    host, port = replica.rsplit(":", 1)
    c = http.client.HTTPConnection(host, int(port), timeout=timeout)
    try:
        c.request("GET", "/ready")
        r = c.getresponse()
        r.read()
        return "ready" if r.status == 200 else "not_ready"
    except ConnectionRefusedError:
        return "refused"
    except OSError:
        return "timeout"
    finally:
        c.close()


class Watcher:
    """Membership from /ready. A replica that answers "not ready" or refuses the
    connection leaves at once; one that only times out (busy on a small
    machine) leaves after `timeouts_to_fail` polls in a row, so load alone does
    not move sessions between replicas."""

    def __init__(self, lb, timeouts_to_fail=3, timeout_s=2.0):
        self.lb, self.timeouts_to_fail, self.timeout_s = lb, timeouts_to_fail, timeout_s
        self.timeouts = {}

    def poll(self):
        """One poll of every replica; reloads nginx when membership changed (returns True then)."""
        st = self.lb.state()
        not_ready = []
        for r in st["replicas"]:
            answer = probe_ready(r, self.timeout_s)
            self.timeouts[r] = self.timeouts.get(r, 0) + 1 if answer == "timeout" else 0
            if answer in ("not_ready", "refused") or self.timeouts[r] >= self.timeouts_to_fail or \
                    (answer == "timeout" and r in st["not_ready"]):
                not_ready.append(r)
        return self.lb.set_not_ready(not_ready)


def watch(lb, interval):
    w = Watcher(lb)
    while True:
        try:
            if w.poll():
                st = lb.state()
                print(f"[stride_nginx] generation {st['generation']}: not ready {st['not_ready'] or 'none'}",
                      flush=True)
        except Exception as e:  # noqa: BLE001 - a failed poll or reload is retried next round
            print(f"[stride_nginx] {e}", file=sys.stderr, flush=True)
        time.sleep(interval)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("command", choices=["init", "render", "start", "stop", "reload", "watch", "drain", "undrain"])
    ap.add_argument("replica_arg", nargs="?", help="HOST:PORT for drain/undrain")
    ap.add_argument("--prefix", required=True)
    ap.add_argument("--listen", default="127.0.0.1:8000")
    ap.add_argument("--replica", action="append", default=[])
    ap.add_argument("--balance", choices=sorted(BALANCES), default="roundrobin")
    ap.add_argument("--workers", default="auto")
    ap.add_argument("--max-fails", type=int, default=1)
    ap.add_argument("--fail-timeout", type=int, default=5)
    ap.add_argument("--upstream-header", action="store_true", help="add X-Stride-Upstream to responses")
    ap.add_argument("--interval", type=float, default=1.0)
    a = ap.parse_intermixed_args(argv)
    lb = Balancer(a.prefix)
    if a.command == "init":
        if not a.replica:
            ap.error("init needs --replica HOST:PORT (one per replica)")
        lb.init(a.listen, a.replica, a.balance, a.workers, a.max_fails, a.fail_timeout, a.upstream_header)
        print(lb.conf_path)
    elif a.command == "render":
        lb.render()
    elif a.command == "start":
        lb.start()
    elif a.command == "stop":
        lb.stop()
    elif a.command == "reload":
        lb.reload()
    elif a.command == "watch":
        watch(lb, a.interval)
    else:
        if not a.replica_arg:
            ap.error(f"{a.command} needs HOST:PORT")
        lb.set_drained(a.replica_arg, a.command == "drain")
    return 0


if __name__ == "__main__":
    sys.exit(main())
