"""Weights at rest: an AES-256-GCM encrypted SmolLM2 serves exactly the plain
file's greedy completion; decrypt restores the original bytes (checked with
hashlib); a wrong or missing key and a tampered file are refused with a reason
naming the problem; rotate-key makes the old key fail and the new one work."""
import os
import subprocess

import openai
import pytest

from stride_server import SMOL, StrideServer, binary, sha256

PROMPT = "The capital of France is"


def stride(*args, check=True, env=None):
    r = subprocess.run([binary(), *map(str, args)], capture_output=True, text=True, timeout=300, env=env)
    if check:
        assert r.returncode == 0, r.stderr
    return r


def greedy(url, n=12):
    c = openai.OpenAI(base_url=url + "/v1", api_key="x", max_retries=0, timeout=120)
    model = c.models.list().data[0].id  # the served file's name
    return c.completions.create(model=model, prompt=PROMPT, max_tokens=n, temperature=0).choices[0].text


def serve_fails(args, env=None):
    full = {k: v for k, v in os.environ.items() if not k.startswith("STRIDE_")}
    full.update(env or {})
    r = subprocess.run([binary(), "serve", "--port", "0", "--threads", "2", *map(str, args)], env=full,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode != 0
    return r.stdout + r.stderr


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("enc")
    k1, k2 = d / "k1.key", d / "k2.key"
    stride("model", "genkey", k1)
    k2.write_text(os.urandom(32).hex() + "\n")  # a key file written by other tools works too
    assert oct(os.stat(k1).st_mode & 0o777) == "0o600"
    enc = d / "smol.enc.gguf"
    stride("model", "encrypt", "--key-file", k1, SMOL, enc)
    return d, k1, k2, enc


def test_encrypt_decrypt_round_trip(files):
    d, k1, k2, enc = files
    with open(enc, "rb") as f:
        head = f.read(10)
    assert head == b"STRIDEENC1"
    assert os.path.getsize(enc) > os.path.getsize(SMOL)
    back = d / "back.gguf"
    stride("model", "decrypt", "--key-file", k1, enc, back)
    assert sha256(back) == sha256(SMOL)
    r = stride("model", "decrypt", "--key-file", k2, enc, d / "nope.gguf", check=False)
    assert r.returncode != 0 and "wrong key" in r.stderr
    assert not os.path.exists(d / "nope.gguf")
    r = stride("model", "encrypt", "--key-file", k1, enc, d / "twice", check=False)
    assert r.returncode != 0 and "already encrypted" in r.stderr


def test_tampered_file_is_refused(files):
    d, k1, _, enc = files
    bad = d / "tampered.gguf"
    data = bytearray(enc.read_bytes())
    data[len(data) // 2] ^= 0x01
    bad.write_bytes(bytes(data))
    r = stride("model", "decrypt", "--key-file", k1, bad, d / "x", check=False)
    assert r.returncode != 0 and "failed authentication" in r.stderr and "chunk" in r.stderr
    out = serve_fails(["--model", bad, "--model-key-file", k1])
    assert "failed authentication" in out
    cut = d / "cut.gguf"
    cut.write_bytes(bytes(data[: len(data) - 1000]))
    r = stride("model", "decrypt", "--key-file", k1, cut, d / "x", check=False)
    assert r.returncode != 0 and "truncated" in r.stderr


@pytest.fixture(scope="module")
def plain():
    """The plain file's greedy completion (one server at a time: the machine may have few cores)."""
    with StrideServer(SMOL, extra_args=["--kv-budget", "32M"]) as s:
        return greedy(s.url)


def test_encrypted_model_serves_the_same_greedy_completion(files, plain):
    d, k1, k2, enc = files
    with StrideServer(str(enc), extra_args=["--kv-budget", "32M", "--model-key-file", k1]) as s:
        assert greedy(s.url) == plain
        assert "encrypted" in s.logs()
    assert "wrong key" in serve_fails(["--model", enc, "--model-key-file", k2])
    assert "is encrypted: give a key" in serve_fails(["--model", enc])


def test_rotate_key(files, plain):
    d, k1, k2, enc = files
    rotated = d / "rotated.gguf"
    rotated.write_bytes(enc.read_bytes())
    stride("model", "rotate-key", "--old-key-file", k1, "--new-key-file", k2, rotated)
    r = stride("model", "rotate-key", "--old-key-file", k1, "--new-key-file", k2, rotated, check=False)
    assert r.returncode != 0 and "wrong key" in r.stderr  # k1 no longer opens it
    assert sorted(p.name for p in d.iterdir() if p.name.startswith("rotated")) == ["rotated.gguf"]
    assert "wrong key" in serve_fails(["--model", rotated, "--model-key-file", k1])
    # The new key, from the environment as hex.
    with StrideServer(str(rotated), extra_args=["--kv-budget", "32M"],
                      env={"STRIDE_MODEL_KEY": k2.read_text().strip()}) as s:
        assert greedy(s.url) == plain


def test_tokenize_reads_encrypted_model(files):
    """`stride tokenize` decrypts with the key from the environment and gives
    llama.cpp's token ids; without the key it refuses with a reason."""
    import llama_cpp
    d, k1, k2, enc = files
    text = "Encrypted weights, plain tokens: naïve café 1234."
    env = {k: v for k, v in os.environ.items() if not k.startswith("STRIDE_")}
    r = stride("tokenize", "-m", enc, "-p", text, env={**env, "STRIDE_MODEL_KEY_FILE": str(k1)})
    ids = [int(t) for t in r.stdout.split()]
    ref = llama_cpp.Llama(model_path=SMOL, vocab_only=True, verbose=False)
    assert ids == ref.tokenize(text.encode(), add_bos=False, special=True)
    r = stride("tokenize", "-m", enc, "-p", text, check=False, env=env)
    assert r.returncode != 0 and "key" in r.stderr.lower(), r.stderr
