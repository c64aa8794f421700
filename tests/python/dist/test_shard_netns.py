"""A shard set whose ranks are separate hosts: each rank runs in a network
namespace of its own (`ip netns`), its only link a veth pair to a bridge in a
namespace that stands for the switch, with an address of 10.231.0.0/24. The
ranks reach each other over those links with Gloo's TCP transport (each
namespace's loopback is its own), and must give what the loopback tests give:
the one-host logits bit for bit where shards fall on the kernel's segments,
and the one host's greedy tokens and log-probabilities in generation, run
as one command or served (`stride serve`, 4 ranks, the official openai client
in rank 0's namespace).

Needs root (CAP_NET_ADMIN); the namespaces are removed in every path."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from shard_ranks import (N_NEW, SEGMENT, finish, one_host_logits, one_host_run, prompt_ids, run_sharded_score,
                         start_ranks)
from stride_server import SMOL, binary

SUBNET = "10.231.0"
SERVED_TOKENS = 8
# Run in rank 0's namespace (its HTTP server's loopback is its own): waits for the set to connect, then
# completes argv[2]'s prompt ids greedily with log-probabilities; prints the text, log-probs and metrics.
SERVE_CLIENT = """
import json, sys, time, urllib.request
import openai
url, ids, n = sys.argv[1], json.loads(sys.argv[2]), int(sys.argv[3])
def metrics():
    text = urllib.request.urlopen(url + "/metrics", timeout=5).read().decode()
    return {l.rsplit(" ", 1)[0]: float(l.rsplit(" ", 1)[1]) for l in text.splitlines() if l and not l.startswith("#")}
deadline = time.monotonic() + 120
while True:
    try:
        if metrics().get("stride_shard_set_connected") == 1:
            break
    except OSError:
        pass
    if time.monotonic() > deadline:
        sys.exit("the shard set did not connect")
    time.sleep(0.2)
c = openai.OpenAI(base_url=url + "/v1", api_key="none", max_retries=0, timeout=300)
model = c.models.list().data[0].id
r = c.completions.create(model=model, prompt=ids, max_tokens=n, temperature=0, logprobs=0,
                         extra_body={"ignore_eos": True})
print(json.dumps({"text": r.choices[0].text, "logprobs": r.choices[0].logprobs.token_logprobs,
                  "completion_tokens": r.usage.completion_tokens, "metrics": metrics()}))
"""


def ip(*args):
    r = subprocess.run(["ip", *args], capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, f"ip {' '.join(args)}: {r.stderr}"


class Hosts:
    """world namespaces stride-<pid>-<r> on a bridge in stride-<pid>-sw; rank r at SUBNET.(r + 1)."""

    def __init__(self, world):
        self.tag = f"stride-{os.getpid()}"
        self.names = [f"{self.tag}-{r}" for r in range(world)]
        self.switch = f"{self.tag}-sw"

    def address(self, rank):
        return f"{SUBNET}.{rank + 1}"

    def __enter__(self):
        try:
            ip("netns", "add", self.switch)
            ip("-n", self.switch, "link", "add", "br0", "type", "bridge")
            ip("-n", self.switch, "link", "set", "br0", "up")
            for r, ns in enumerate(self.names):
                ip("netns", "add", ns)
                ip("-n", ns, "link", "set", "lo", "up")
                ip("-n", ns, "link", "add", "eth0", "type", "veth", "peer", "name", f"port{r}", "netns", self.switch)
                ip("-n", self.switch, "link", "set", f"port{r}", "master", "br0")
                ip("-n", self.switch, "link", "set", f"port{r}", "up")
                ip("-n", ns, "addr", "add", f"{self.address(r)}/24", "dev", "eth0")
                ip("-n", ns, "link", "set", "eth0", "up")
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc):
        for ns in self.names + [self.switch]:  # a namespace takes its veth ends with it
            subprocess.run(["ip", "netns", "del", ns], capture_output=True, timeout=30)

    def wrap(self, rank, cmd):
        return ["ip", "netns", "exec", self.names[rank]] + cmd

    def host_option(self, rank):
        return ["--shard-host", self.address(rank)]


@pytest.fixture
def hosts_of():
    made = []

    def make(world):
        h = Hosts(world).__enter__()
        made.append(h)
        return h

    yield make
    for h in made:
        h.__exit__()


def test_namespaces_are_separate_hosts(hosts_of):
    """A rank namespace reaches another's address through the bridge, but not at its own loopback."""
    h = hosts_of(2)
    listen = ("import socket; s = socket.socket(); s.bind(('0.0.0.0', 5555)); s.listen(); s.settimeout(30); "
              "c, _ = s.accept(); c.sendall(b'ok')")
    server = subprocess.Popen(h.wrap(1, [sys.executable, "-c", listen]))
    try:
        connect = ("import socket, sys, time\n"
                   "for _ in range(100):\n"
                   "    try:\n"
                   "        c = socket.create_connection((sys.argv[1], 5555), timeout=5); break\n"
                   "    except ConnectionRefusedError:\n"
                   "        time.sleep(0.1)\n"
                   "print(c.recv(2).decode())")
        peer = subprocess.run(h.wrap(0, [sys.executable, "-c", connect, h.address(1)]), capture_output=True,
                              text=True, timeout=60)
        assert peer.stdout.strip() == "ok", peer.stderr
        own = subprocess.run(h.wrap(0, [sys.executable, "-c", "import socket; socket.create_connection(('127.0.0.1', 5555))"]),
                             capture_output=True, text=True, timeout=60)
        assert "ConnectionRefusedError" in own.stderr, own.stdout + own.stderr
    finally:
        server.kill()
        server.wait()


@pytest.mark.parametrize("world", [2, 4])
def test_scoring_across_namespaces_gives_the_one_host_bytes(world, hosts_of, tmp_path):
    h = hosts_of(world)
    ids = prompt_ids(world * SEGMENT)
    want = one_host_logits(ids, tmp_path)
    got, metas = run_sharded_score(ids, world, tmp_path, extra=h.host_option, wrap=h.wrap)
    assert [(m["pos_begin"], m["pos_end"]) for m in metas] == [(r * SEGMENT, (r + 1) * SEGMENT) for r in range(world)]
    assert np.array_equal(got, want)


def test_generation_across_namespaces_gives_the_one_host_tokens(hosts_of, tmp_path):
    h = hosts_of(2)
    ids = prompt_ids(2 * SEGMENT)
    want = one_host_run(ids, N_NEW)
    args = ["run", "-m", SMOL, "--prompt-ids", " ".join(ids), "-n", str(N_NEW), "--temperature", "0", "--ignore-eos",
            "--threads", "1", "--json"]
    results = finish(start_ranks(lambda r: args + h.host_option(r), 2, tmp_path / "rendezvous", wrap=h.wrap))
    for rank, (rc, out, err) in enumerate(results):
        assert rc == 0, f"rank {rank} exit {rc}: {err[-2000:]}"
        m = json.loads(out.strip().splitlines()[-1])
        assert m["generated_ids"] == want["generated_ids"] and m["logprobs"] == want["logprobs"]


def test_serving_across_four_namespaces_gives_the_one_host_tokens(hosts_of, tmp_path):
    """`stride serve` as a set of 4 hosts: rank 0's HTTP server sends a 4 x 256-token prompt to the set
    (--shard-min-tokens) and the workers answer over the bridge only."""
    world = 4
    h = hosts_of(world)
    ids = prompt_ids(world * SEGMENT)
    want = one_host_run(ids, SERVED_TOKENS)
    meet = tmp_path / "rendezvous"
    meet.mkdir()
    logs = [tmp_path / f"rank{r}.log" for r in range(world)]
    procs = []
    try:
        for r in range(world):
            cmd = [binary(), "serve", "-m", SMOL, "--threads", "1", "--port", "8080", "--shard-min-tokens",
                   str(world * SEGMENT), "--shard-world", str(world), "--shard-rank", str(r), "--rendezvous",
                   f"file:{meet}", "--shard-prefix", "netns-serve", "--shard-timeout-ms", "60000"] + h.host_option(r)
            with open(logs[r], "wb") as log:
                procs.append(subprocess.Popen(h.wrap(r, cmd), stdout=log, stderr=subprocess.STDOUT,
                                              stdin=subprocess.DEVNULL))
        client = subprocess.run(h.wrap(0, [sys.executable, "-c", SERVE_CLIENT, "http://127.0.0.1:8080",
                                           json.dumps([int(i) for i in ids]), str(SERVED_TOKENS)]),
                                capture_output=True, text=True, timeout=600)
        ranks_said = "".join(f"\n--- rank {r}:\n" + logs[r].read_text()[-1500:] for r in range(world))
        assert client.returncode == 0, client.stderr[-2000:] + ranks_said
        got = json.loads(client.stdout.strip().splitlines()[-1])
    finally:
        for p in procs:
            p.kill()
            p.wait()
    assert got["text"] == want["text"]
    assert got["logprobs"] == want["logprobs"]  # exact: both round-trip a float
    assert got["completion_tokens"] == SERVED_TOKENS
    assert got["metrics"]["stride_sharded_requests_total"] == 1
    assert got["metrics"]["stride_sharded_request_failures_total"] == 0


def test_a_rank_listening_on_its_own_loopback_is_not_reached(hosts_of, tmp_path):
    """What makes the tests above cross the links: a rank that publishes 127.0.0.1 from its own
    namespace cannot be reached by the other, and both give up at the connect deadline."""
    h = hosts_of(2)
    ids = prompt_ids(2 * SEGMENT)
    procs = start_ranks(lambda r: ["score", "-m", SMOL, "--ids", " ".join(ids), "--threads", "1", "-o",
                                   str(tmp_path / "x.f32")] + ["--shard-host", "127.0.0.1"],
                        2, tmp_path / "rendezvous", timeout_ms=5000, wrap=h.wrap)
    for rc, _, err in finish(procs, timeout=120):
        assert rc != 0 and "connected" not in err, err[-2000:]
