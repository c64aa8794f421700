"""Three stride replicas behind Debian's nginx (deploy/nginx), 16 streams:
the short run of bench/replicas.py (`--quick`), with its properties asserted.

- kill -9 of one replica: only requests in flight on it fail, and requests sent
  after the kill all succeed (nginx retries the refused connects elsewhere);
- a rolling switch v1 -> v2 by drain + SIGTERM + restart, and a rolling
  rollback through POST /admin/model: zero failed requests, every replica on
  the target version;
- consistent hashing on X-Session-Id gives a higher prefix-cache hit rate than
  round robin for sessions that share a per-session prefix;
- a client that hangs up mid-stream through nginx cancels its request on the
  replica, which frees its pages.
"""
import os
import shutil
import sys

import pytest

from stride_server import ROOT

sys.path.insert(0, os.path.join(ROOT, "bench"))
import replicas  # noqa: E402


@pytest.fixture(scope="module")
def run():
    assert shutil.which("nginx") or os.path.exists("/usr/sbin/nginx"), \
        "nginx missing: scripts/setup installs Debian's 'nginx' package"
    # JSON and PNG beside the benchmark's, for a look after a failure.
    return replicas.run_all(quick=True, out=os.path.join(replicas.OUT_DIR, "replicas_test"),
                            log=lambda s: print(s, flush=True))


def test_kill9_fails_only_requests_in_flight_on_the_victim(run):
    k = run["kill"]
    failed = k["failures"]
    assert all(f["upstream"] == k["victim"] for f in failed), failed
    # Requests sent to the victim that had not ended when it died bound the
    # failures of the requests sent before it was gone.
    assert len(failed) - k["new_requests_failed"] <= k["in_flight_on_victim"] <= run["streams"]
    assert k["requests"] - len(failed) > 0


def test_kill9_new_requests_succeed_at_once(run):
    k = run["kill"]
    assert k["new_requests_after_kill"] > 0
    # Every new request succeeds, except at most a couple that nginx wrote into a
    # kept-alive connection to the victim in the instant before it saw the
    # connection close (a sent POST is never retried).
    assert k["new_requests_failed"] == k["new_requests_failed_on_stale_keepalive"] <= 2, k["failures"]
    assert k["first_new_request_ok_after_s"] is not None and k["first_new_request_ok_after_s"] < 10


def test_rolling_switch_by_restart_loses_no_request(run):
    r = run["rolling_restart"]
    assert r["requests"] > 0
    assert r["failed"] == 0, r["failures"]
    assert r["versions"] == ["v2", "v2", "v2"]
    assert all(s["sigterm_exit_code"] == 0 for s in r["steps"])


def test_rolling_rollback_by_admin_api_loses_no_request(run):
    r = run["rolling_admin"]
    assert r["requests"] > 0
    assert r["failed"] == 0, r["failures"]
    assert r["versions"] == ["v1", "v1", "v1"]


def test_session_hashing_beats_round_robin_on_prefix_hits(run):
    a = run["affinity"]
    assert a["session"]["load"]["failed"] == 0 and a["roundrobin"]["load"]["failed"] == 0
    # Hashing keeps each session on one replica; round robin spreads it.
    assert a["session"]["mean_replicas_per_session"] == 1.0
    assert a["roundrobin"]["mean_replicas_per_session"] > 1.5
    assert a["session"]["hit_rate"] > a["roundrobin"]["hit_rate"] + 0.1


def test_client_disconnect_through_nginx_cancels_on_the_replica(run):
    d = run["disconnect"]
    assert d["cancelled"] == d["streams"] == 16
    assert d["idle_after_close_s"] is not None and d["idle_after_close_s"] < 10
    # Each stream stopped after a couple of its 256 tokens (give or take a step or two in flight).
    assert d["tokens_generated"] < d["streams"] * d["max_tokens"] / 4
