"""deploy/nginx against small Python upstreams (no model needed): the CLI
renders a config Debian's nginx accepts, round robin alternates, consistent
hashing keeps a session on one replica, drain/undrain move traffic, Server-Sent
Events pass through unbuffered, a refused connect is retried on another replica
while a POST that reached a replica is never sent twice, and /ready drives
membership through the watcher."""
import http.client
import http.server
import os
import socket
import subprocess
import sys
import threading
import time

import pytest

from stride_server import ROOT, free_port

NGINX_DIR = os.path.join(ROOT, "deploy", "nginx")
sys.path.insert(0, NGINX_DIR)
import stride_nginx  # noqa: E402


class Upstream:
    """A replica stand-in: answers its own name, streams SSE on /sse, and
    counts the POSTs it received; /ready answers `ready_status`."""

    def __init__(self, name):
        self.name, self.posts, self.ready_status = name, 0, 200
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def _send(self, status, body):
                self.send_response(status)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self):
                if self.path == "/ready":
                    return self._send(outer.ready_status, b"ready")
                if self.path == "/sse":
                    self.send_response(200)
                    self.send_header("Content-Type", "text/event-stream")
                    self.send_header("Connection", "close")
                    self.end_headers()
                    for i in range(2):
                        self.wfile.write(f"data: {i} {time.time()}\n\n".encode())
                        self.wfile.flush()
                        time.sleep(1.0)
                    self.close_connection = True
                    return None
                return self._send(200, outer.name.encode())

            def do_POST(self):
                self.rfile.read(int(self.headers.get("Content-Length", 0)))
                outer.posts += 1
                if self.path == "/reset":  # dies after reading the request, as a killed replica does
                    self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\1\0\0\0\0\0\0\0")
                    self.connection.close()
                    self.close_connection = True
                    return None
                return self._send(200, outer.name.encode())

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.addr = f"127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def lb(tmp_path):
    ups = [Upstream("a"), Upstream("b")]
    dead = f"127.0.0.1:{free_port()}"  # nothing listens there
    prefix = tmp_path / "lb"
    port = free_port()
    cli = [sys.executable, os.path.join(NGINX_DIR, "stride_nginx.py")]
    subprocess.run(cli + ["init", "--prefix", str(prefix), "--listen", f"127.0.0.1:{port}", "--workers", "1",
                          "--upstream-header", "--replica", ups[0].addr, "--replica", ups[1].addr],
                   check=True, capture_output=True, timeout=30)
    os.chmod(tmp_path, 0o755)
    subprocess.run(cli + ["start", "--prefix", str(prefix)], check=True, capture_output=True, timeout=30)
    balancer = stride_nginx.Balancer(str(prefix))
    yield {"port": port, "ups": ups, "dead": dead, "cli": cli, "prefix": str(prefix), "lb": balancer}
    balancer.stop()
    for u in ups:
        u.close()


def get(port, path="/", headers=None, method="GET"):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        c.request(method, path, body=b"{}" if method == "POST" else None, headers=headers or {})
        r = c.getresponse()
        return r.status, r.read().decode(errors="replace"), r.getheader("X-Stride-Upstream")
    finally:
        c.close()


def set_replicas(lb, replicas, balance="roundrobin"):
    with lb["lb"].locked():
        st = lb["lb"].state()
        st["replicas"], st["balance"] = replicas, balance
        lb["lb"]._save(st)
        lb["lb"].reload()


def test_rendered_configs_pass_nginx_t(lb):
    for balance in ("roundrobin", "session"):
        set_replicas(lb, [u.addr for u in lb["ups"]], balance)
        lb["lb"].check()
        with open(os.path.join(lb["prefix"], "nginx.conf")) as f:
            text = f.read()
        assert ("hash $stride_session_key consistent;" in text) == (balance == "session")
        assert "proxy_buffering off;" in text and "proxy_next_upstream error timeout;" in text
        assert not any("non_idempotent" in line.split("#")[0] for line in text.splitlines())


def test_round_robin_alternates_and_drain_moves_traffic(lb):
    names = [get(lb["port"])[1] for _ in range(6)]
    assert names.count("a") == 3 and names.count("b") == 3
    subprocess.run(lb["cli"] + ["drain", "--prefix", lb["prefix"], lb["ups"][0].addr], check=True, timeout=30)
    assert {get(lb["port"])[1] for _ in range(6)} == {"b"}
    subprocess.run(lb["cli"] + ["undrain", "--prefix", lb["prefix"], lb["ups"][0].addr], check=True, timeout=30)
    assert {get(lb["port"])[1] for _ in range(6)} == {"a", "b"}


def test_session_hashing_keeps_a_session_on_one_replica(lb):
    set_replicas(lb, [u.addr for u in lb["ups"]], "session")
    per_session = {s: {get(lb["port"], headers={"X-Session-Id": f"s{s}"})[1] for _ in range(5)} for s in range(12)}
    assert all(len(v) == 1 for v in per_session.values()), per_session
    assert {next(iter(v)) for v in per_session.values()} == {"a", "b"}
    # Without the header, requests spread instead of all hashing the empty key.
    assert len({get(lb["port"])[1] for _ in range(20)}) == 2


def test_sse_events_arrive_as_they_are_written(lb):
    # HTTP/1.0 to nginx, so the body comes as written (no chunk framing) until close.
    with socket.create_connection(("127.0.0.1", lb["port"]), timeout=30) as s:
        s.sendall(b"GET /sse HTTP/1.0\r\nHost: lb\r\n\r\n")
        data = b""
        while b"data: 0" not in data or not data.split(b"data: 0", 1)[1].split(b"\n", 1)[1:]:
            chunk = s.recv(4096)
            assert chunk, data
            data += chunk
        got_first = time.time()
        while chunk:
            chunk = s.recv(4096)
            data += chunk
    sent_first = float(data.split(b"data: 0 ", 1)[1].split(b"\n", 1)[0])
    # The first event is through nginx well before the upstream writes the second (1 s later).
    assert got_first - sent_first < 0.5, data
    assert b"data: 1" in data


def test_refused_connect_is_retried_but_a_sent_post_is_not(lb):
    set_replicas(lb, [lb["dead"], lb["ups"][0].addr])
    status, name, upstream = get(lb["port"], "/v1/completions", method="POST")
    assert status == 200 and name == "a"
    # Every request succeeds: the dead one is skipped after its refused connect.
    assert all(get(lb["port"], "/v1/completions", method="POST")[0] == 200 for _ in range(6))
    set_replicas(lb, [u.addr for u in lb["ups"]])
    before = sum(u.posts for u in lb["ups"])
    status, _, upstream = get(lb["port"], "/reset", method="POST")
    assert status == 502
    assert sum(u.posts for u in lb["ups"]) == before + 1, "a POST that reached a replica was sent again"
    assert "," not in upstream


def test_ready_drives_membership(lb):
    w = stride_nginx.Watcher(lb["lb"])
    assert w.poll() is False  # both ready: nothing to change
    lb["ups"][1].ready_status = 503  # loading or draining
    assert w.poll() is True
    assert {get(lb["port"])[1] for _ in range(6)} == {"a"}
    lb["ups"][1].ready_status = 200
    assert w.poll() is True
    assert {get(lb["port"])[1] for _ in range(6)} == {"a", "b"}
