"""Native TLS: with --tls-cert/--tls-key the server speaks HTTPS only. A
self-signed certificate made here with the openssl CLI is the client's trust
anchor; /health, a completion and a stream go through the openai client, and
plain HTTP on the same port gets no answer. Bad certificate/key files stop the
server at start-up with a message naming them."""
import http.client
import json
import os
import ssl
import subprocess
import time

import httpx2
import openai
import pytest

from stride_server import SMOL, StrideServer, binary

MODEL = os.path.basename(SMOL)


def make_cert(d, name):
    cert, key = d / f"{name}.crt", d / f"{name}.key"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", cert,
                    "-days", "2", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"],
                   check=True, capture_output=True, timeout=60)
    return str(cert), str(key)


def https_get(port, path, ctx, timeout=5):
    conn = http.client.HTTPSConnection("127.0.0.1", port, context=ctx, timeout=timeout)
    try:
        conn.request("GET", path)
        r = conn.getresponse()
        return r.status, r.read()
    finally:
        conn.close()


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    d = tmp_path_factory.mktemp("tls")
    return d, make_cert(d, "a"), make_cert(d, "b")


@pytest.fixture(scope="module")
def tls_server(certs):
    _, (cert, key), _ = certs
    s = StrideServer(SMOL, extra_args=["--tls-cert", cert, "--tls-key", key, "--kv-budget", "32M"], wait=False)
    ctx = ssl.create_default_context(cafile=cert)
    t0 = time.time()
    while True:
        assert s.proc.poll() is None, s.logs()
        try:
            if https_get(s.port, "/ready", ctx)[0] == 200:
                break
        except OSError:
            pass
        assert time.time() - t0 < 120, s.logs()
        time.sleep(0.1)
    yield s, cert, ctx
    s.__exit__(None, None, None)


def test_https_health_and_completions(tls_server):
    s, cert, ctx = tls_server
    status, body = https_get(s.port, "/health", ctx)
    assert status == 200 and json.loads(body) == {"status": "ok"}
    client = openai.OpenAI(base_url=f"https://127.0.0.1:{s.port}/v1", api_key="x", max_retries=0, timeout=120,
                           http_client=httpx2.Client(verify=ssl.create_default_context(cafile=cert)))
    r = client.completions.create(model=MODEL, prompt="The capital of France is", max_tokens=8, temperature=0)
    assert r.usage.completion_tokens > 0
    streamed = "".join(ch.choices[0].text for ch in client.completions.create(
        model=MODEL, prompt="The capital of France is", max_tokens=8, temperature=0, stream=True) if ch.choices)
    assert streamed == r.choices[0].text


def test_untrusted_certificate_is_rejected_by_the_client(tls_server, certs):
    s, _, _ = tls_server
    _, _, (other_cert, _) = certs
    with pytest.raises(ssl.SSLCertVerificationError):
        https_get(s.port, "/health", ssl.create_default_context(cafile=other_cert))


def test_plain_http_gets_no_answer(tls_server):
    s, _, ctx = tls_server
    conn = http.client.HTTPConnection("127.0.0.1", s.port, timeout=10)
    with pytest.raises((http.client.HTTPException, ConnectionError, OSError)):
        conn.request("GET", "/health")
        conn.getresponse()
    conn.close()
    assert https_get(s.port, "/health", ctx)[0] == 200  # the server lives on


@pytest.mark.parametrize("case, needle", [
    ("mismatch", "does not match"),
    ("missing", "cannot load certificate"),
    ("half", "needs both tls_cert_file and tls_key_file"),
])
def test_bad_tls_files_fail_at_startup(certs, case, needle):
    d, (cert_a, key_a), (cert_b, key_b) = certs
    args = {"mismatch": ["--tls-cert", cert_a, "--tls-key", key_b],
            "missing": ["--tls-cert", str(d / "none.crt"), "--tls-key", key_a],
            "half": ["--tls-cert", cert_a]}[case]
    env = {k: v for k, v in os.environ.items() if not k.startswith("STRIDE_")}
    r = subprocess.run([binary(), "serve", "--model", SMOL, "--port", "0", *args], env=env, capture_output=True,
                       text=True, timeout=60)
    assert r.returncode != 0 and needle in r.stdout + r.stderr, r.stdout + r.stderr
