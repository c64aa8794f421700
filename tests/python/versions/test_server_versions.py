"""Model versions: `stride model publish` records each version's sha256 (checked
here against hashlib), STRIDE_MODEL_VERSION selects one at start-up, and
POST /admin/model {"version": ...} or SIGHUP switches; a version whose file no
longer matches its record is refused with the reason while the serving one
stays, and rolling back gives the first version's output again. The version
that last went live is recorded in <model_dir>/ACTIVE, so that a switch or a
rollback survives a kill -9 and a restart."""
import json
import os
import shutil
import signal
import subprocess
import time

import openai
import pytest

from stride_server import GEMMA, SMOL, StrideServer, binary, sha256

ADMIN = "admin-secret-versions"
AUTH = {"Authorization": f"Bearer {ADMIN}"}
PROMPT = "The capital of France is"


def stride(*args, check=True):
    r = subprocess.run([binary(), *map(str, args)], capture_output=True, text=True, timeout=300)
    if check:
        assert r.returncode == 0, r.stderr
    return r


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("versions")
    stride("model", "publish", "--model-dir", d, "--version", "v1", SMOL)
    stride("model", "publish", "--model-dir", d, "--version", "v2", GEMMA)
    stride("model", "publish", "--model-dir", d, "--version", "v3", SMOL)
    # v3 is damaged after publication: one byte of tensor data flipped.
    v3 = os.path.join(d, "v3", os.path.basename(SMOL))
    with open(v3, "r+b") as f:
        f.seek(os.path.getsize(v3) - 4096)
        b = f.read(1)
        f.seek(-1, 1)
        f.write(bytes([b[0] ^ 0x40]))
    return str(d)


def test_publish_and_list(model_dir):
    listed = json.loads(stride("model", "list", "--model-dir", model_dir, "--json").stdout)
    assert [v["version"] for v in listed] == ["v1", "v2", "v3"]
    assert listed[0]["sha256"] == sha256(SMOL) and listed[1]["sha256"] == sha256(GEMMA)
    assert listed[2]["sha256"] == sha256(SMOL) != sha256(listed[2]["path"])  # the record predates the damage
    assert all(not v["encrypted"] for v in listed)
    assert listed[0]["active"]  # the first version published
    # The record is in sha256sum format.
    check = subprocess.run(["sha256sum", "-c", "SHA256"], cwd=os.path.join(model_dir, "v1"), capture_output=True)
    assert check.returncode == 0, check.stdout
    # Versions are immutable; names are checked; missing files are named.
    r = stride("model", "publish", "--model-dir", model_dir, "--version", "v1", GEMMA, check=False)
    assert r.returncode != 0 and "already exists" in r.stderr
    r = stride("model", "publish", "--model-dir", model_dir, "--version", "../x", SMOL, check=False)
    assert r.returncode != 0 and "bad model version" in r.stderr
    r = stride("model", "publish", "--model-dir", model_dir, "--version", "v9", "/no/such.gguf", check=False)
    assert r.returncode != 0 and "no such model file" in r.stderr
    r = stride("model", "publish", "--model-dir", model_dir, "--version", "active", SMOL, check=False)
    assert r.returncode != 0 and "reserved" in r.stderr
    assert sorted(os.listdir(model_dir)) == ["ACTIVE", "v1", "v2", "v3"]  # no temporary folders left behind


def test_startup_refuses_a_damaged_or_unknown_version(model_dir):
    for version, needle in [("v3", "sha256 mismatch"), ("v7", "not found")]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("STRIDE_")}
        env.update({"STRIDE_MODEL_DIR": model_dir, "STRIDE_MODEL_VERSION": version})
        r = subprocess.run([binary(), "serve", "--port", "0", "--threads", "2"], env=env, capture_output=True,
                           text=True, timeout=120)
        assert r.returncode != 0 and needle in r.stdout + r.stderr, (version, r.stdout + r.stderr)


def test_switch_refuse_and_roll_back(model_dir):
    env = {"STRIDE_MODEL_DIR": model_dir, "STRIDE_MODEL_VERSION": "v1", "STRIDE_ADMIN_KEYS": ADMIN,
           "STRIDE_KV_BUDGET": "32M"}
    with StrideServer(None, env=env) as s:
        c = openai.OpenAI(base_url=s.url + "/v1", api_key="x", max_retries=0, timeout=120)
        m = c.models.list().data[0]
        assert m.id == os.path.basename(SMOL) and m.version == "v1" and m.sha256 == sha256(SMOL)
        first = c.completions.create(model=m.id, prompt=PROMPT, max_tokens=8, temperature=0).choices[0].text

        t0 = time.time()
        status, _, body = s.post("/admin/model", {"version": "v2"}, headers=AUTH)
        wall = time.time() - t0
        assert status == 200, body
        switched = json.loads(body)
        assert switched["version"] == "v2" and switched["sha256"] == sha256(GEMMA)
        assert c.models.list().data[0].id == os.path.basename(GEMMA)
        r = c.completions.create(model=os.path.basename(GEMMA), prompt=PROMPT, max_tokens=4, temperature=0)
        assert r.usage.completion_tokens == 4

        # The damaged version is refused with its reason; v2 keeps serving.
        status, _, body = s.post("/admin/model", {"version": "v3"}, headers=AUTH)
        assert status == 422, body
        e = json.loads(body)["error"]
        assert e["code"] == "model_load_failed" and "still serving 'v2'" in e["message"], e
        assert "sha256 mismatch" in e["message"], e
        status, _, body = s.post("/admin/model", {"version": "v8"}, headers=AUTH)
        assert status == 422 and "not found" in json.loads(body)["error"]["message"]
        assert "published: v1, v2, v3" in json.loads(body)["error"]["message"]
        status, _, body = s.post("/admin/model", {"version": "v2", "model": SMOL}, headers=AUTH)
        assert status == 400
        assert s.post("/admin/model", {"version": "v1"})[0] == 401
        assert c.models.list().data[0].version == "v2"
        assert c.completions.create(model=os.path.basename(GEMMA), prompt=PROMPT, max_tokens=2,
                                    temperature=0).usage.completion_tokens == 2

        # Roll back: v1 again, with v1's greedy output.
        t1 = time.time()
        status, _, body = s.post("/admin/model", {"version": "v1"}, headers=AUTH)
        back_wall = time.time() - t1
        assert status == 200, body
        back = json.loads(body)
        assert back["version"] == "v1"
        again = c.completions.create(model=os.path.basename(SMOL), prompt=PROMPT, max_tokens=8, temperature=0)
        assert again.choices[0].text == first
        print(f"\nswitch v1->v2: {switched['switch_seconds']:.2f}s (client {wall:.2f}s); "
              f"rollback v2->v1: {back['switch_seconds']:.2f}s (client {back_wall:.2f}s)")


def test_sighup_rereads_the_config(model_dir, tmp_path):
    cfg = tmp_path / "serve.yaml"
    cfg.write_text(f"model_dir: {model_dir}\nmodel_version: v1\nkv_budget: 32M\n")
    with StrideServer(None, config=str(cfg)) as s:
        def version():
            return json.loads(s.get("/v1/models")[2])["data"][0]["version"]

        assert version() == "v1"
        cfg.write_text(f"model_dir: {model_dir}\nmodel_version: v2\nkv_budget: 32M\n")
        s.proc.send_signal(signal.SIGHUP)
        t0 = time.time()
        while version() != "v2" and time.time() - t0 < 120:
            time.sleep(0.1)
        assert version() == "v2"

        cfg.write_text(f"model_dir: {model_dir}\nmodel_version: v3\nkv_budget: 32M\n")
        s.proc.send_signal(signal.SIGHUP)
        t0 = time.time()
        while "model switch failed" not in s.logs() and time.time() - t0 < 120:
            time.sleep(0.1)
        assert "sha256 mismatch" in s.logs()
        assert version() == "v2" and s.get("/ready")[0] == 200

        cfg.write_text(f"model_dir: {model_dir}\nmodel_version: v1\nbogus_key: 1\n")
        s.proc.send_signal(signal.SIGHUP)
        t0 = time.time()
        while "config rejected" not in s.logs() and time.time() - t0 < 60:
            time.sleep(0.1)
        assert "unknown key 'bogus_key'" in s.logs()
        assert version() == "v2"


def serve_dir(directory, version=None):
    env = {"STRIDE_MODEL_DIR": directory, "STRIDE_ADMIN_KEYS": ADMIN, "STRIDE_KV_BUDGET": "32M"}
    if version:
        env["STRIDE_MODEL_VERSION"] = version
    return StrideServer(None, env=env)


def active_of(directory):
    with open(os.path.join(directory, "ACTIVE")) as f:
        return f.read().strip()


def test_the_active_version_survives_kill_and_restart(tmp_path):
    d = str(tmp_path / "active")
    stride("model", "publish", "--model-dir", d, "--version", "v1", SMOL)
    stride("model", "publish", "--model-dir", d, "--version", "v2", GEMMA)
    assert active_of(d) == "v1"

    # Without a recorded version, a server that follows ACTIVE refuses to guess.
    os.remove(os.path.join(d, "ACTIVE"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("STRIDE_")}
    env["STRIDE_MODEL_DIR"] = d
    r = subprocess.run([binary(), "serve", "--port", "0", "--threads", "2"], env=env, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode != 0 and "no active version recorded" in r.stdout + r.stderr, r.stdout + r.stderr
    r = stride("model", "activate", "--model-dir", d, "v9", check=False)
    assert r.returncode != 0 and "not found" in r.stderr
    stride("model", "activate", "--model-dir", d, "v1")
    listed = json.loads(stride("model", "list", "--model-dir", d, "--json").stdout)
    assert [v["active"] for v in listed] == [True, False]

    # A switch is recorded once the new version serves, and a kill -9 keeps it.
    with serve_dir(d) as s:
        assert json.loads(s.get("/v1/models")[2])["data"][0]["version"] == "v1"
        status, _, body = s.post("/admin/model", {"version": "v2"}, headers=AUTH)
        assert status == 200 and json.loads(body)["recorded_active"] is True, body
        assert active_of(d) == "v2"
        # A refused switch records nothing.
        assert s.post("/admin/model", {"version": "v8"}, headers=AUTH)[0] == 422
        assert active_of(d) == "v2"
        s.stop(signal.SIGKILL)
    with serve_dir(d) as s:
        assert json.loads(s.get("/v1/models")[2])["data"][0]["version"] == "v2"
        # Roll back, kill again: the rollback holds.
        status, _, body = s.post("/admin/model", {"version": "v1"}, headers=AUTH)
        assert status == 200, body
        s.stop(signal.SIGKILL)
    with serve_dir(d) as s:
        assert json.loads(s.get("/v1/models")[2])["data"][0]["version"] == "v1"
        # A model file that is not a version of the directory serves but is not recorded.
        status, _, body = s.post("/admin/model", {"model": GEMMA}, headers=AUTH)
        assert status == 200 and json.loads(body)["recorded_active"] is False, body
        assert active_of(d) == "v1"

    # A pinned version wins, says so, and becomes the recorded one.
    with serve_dir(d, "v2") as s:
        assert json.loads(s.get("/v1/models")[2])["data"][0]["version"] == "v2"
        assert "pins a version other than the active one" in s.logs()
    assert active_of(d) == "v2"
