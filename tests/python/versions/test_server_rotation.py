"""Key rotation keeps published versions working: after `stride model
rotate-key` on an encrypted version, its SHA256 record matches the new
ciphertext (checked with hashlib and `sha256sum -c`), the server starts on the
rotated version (the record is verified before loading) and serves the same
greedy completion as the plain copy of the same weights, and POST
/admin/model switches to an older version and back to the rotated one."""
import json
import os
import subprocess

import openai
import pytest

from stride_server import SMOL, StrideServer, binary, sha256

ADMIN = "admin-secret-rotation"
AUTH = {"Authorization": f"Bearer {ADMIN}"}
PROMPT = "The capital of France is"


def stride(*args, check=True):
    env = {k: v for k, v in os.environ.items() if not k.startswith("STRIDE_")}
    r = subprocess.run([binary(), *map(str, args)], capture_output=True, text=True, timeout=300, env=env)
    if check:
        assert r.returncode == 0, r.stderr
    return r


@pytest.fixture(scope="module")
def rotated(tmp_path_factory):
    d = tmp_path_factory.mktemp("rotation")
    k1, k2 = d / "k1.key", d / "k2.key"
    stride("model", "genkey", k1)
    stride("model", "genkey", k2)
    r = stride("model", "genkey", k1, check=False)  # a key file is never overwritten
    assert r.returncode != 0 and "exists already" in r.stderr
    enc = d / "smol.enc.gguf"
    stride("model", "encrypt", "--key-file", k1, SMOL, enc)
    models = d / "models"
    stride("model", "publish", "--model-dir", models, "--version", "v1", SMOL)
    stride("model", "publish", "--model-dir", models, "--version", "v2", enc)
    v2_file = models / "v2" / enc.name
    before = sha256(v2_file)
    stride("model", "rotate-key", "--old-key-file", k1, "--new-key-file", k2, v2_file)
    return d, models, k1, k2, v2_file, before


def test_rotation_updates_the_version_record(rotated):
    d, models, k1, k2, v2_file, before = rotated
    after = sha256(v2_file)
    assert after != before  # re-encrypted under a fresh nonce
    listed = {v["version"]: v for v in json.loads(stride("model", "list", "--model-dir", models, "--json").stdout)}
    assert listed["v2"]["sha256"] == after and listed["v2"]["encrypted"]
    assert listed["v1"]["sha256"] == sha256(SMOL)
    check = subprocess.run(["sha256sum", "-c", "SHA256"], cwd=models / "v2", capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr
    assert sorted(os.listdir(models / "v2")) == ["SHA256", v2_file.name]  # no temporary files left
    # The old key no longer opens it; the new one restores the original bytes.
    r = stride("model", "decrypt", "--key-file", k1, v2_file, d / "x.gguf", check=False)
    assert r.returncode != 0 and "wrong key" in r.stderr
    stride("model", "decrypt", "--key-file", k2, v2_file, d / "back.gguf")
    assert sha256(d / "back.gguf") == sha256(SMOL)
    assert oct(os.stat(d / "back.gguf").st_mode & 0o777) == "0o600"  # plaintext weights: owner only


def test_serve_the_rotated_version_and_switch_back_and_forth(rotated):
    d, models, k1, k2, v2_file, _ = rotated
    env = {"STRIDE_MODEL_DIR": str(models), "STRIDE_MODEL_VERSION": "v2", "STRIDE_ADMIN_KEYS": ADMIN,
           "STRIDE_KV_BUDGET": "32M", "STRIDE_MODEL_KEY_FILE": str(k2)}
    with StrideServer(None, env=env) as s:
        c = openai.OpenAI(base_url=s.url + "/v1", api_key="x", max_retries=0, timeout=120)
        m = c.models.list().data[0]
        assert m.version == "v2" and m.sha256 == sha256(v2_file)
        on_rotated = c.completions.create(model=m.id, prompt=PROMPT, max_tokens=8, temperature=0).choices[0].text

        status, _, body = s.post("/admin/model", {"version": "v1"}, headers=AUTH)
        assert status == 200, body
        assert json.loads(body)["version"] == "v1"
        m1 = c.models.list().data[0]
        on_plain = c.completions.create(model=m1.id, prompt=PROMPT, max_tokens=8, temperature=0).choices[0].text
        assert on_plain == on_rotated  # same weights: the plain copy and the rotated ciphertext

        status, _, body = s.post("/admin/model", {"version": "v2"}, headers=AUTH)
        assert status == 200, body
        assert json.loads(body)["version"] == "v2"
        again = c.completions.create(model=m.id, prompt=PROMPT, max_tokens=8, temperature=0).choices[0].text
        assert again == on_rotated
