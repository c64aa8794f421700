"""Model switching and rollback: POST /admin/model loads and warms a version
beside the serving one; new requests go to it while running ones finish on the
old; a corrupt file or a wrong sha256 leaves the old version serving."""
import json
import os
import tempfile
import threading
import time

import openai

from stride_server import GEMMA, SMOL, StrideServer, sha256

ADMIN = "admin-secret-1"


def test_switch_and_rollback():
    with StrideServer(SMOL, env={"STRIDE_ADMIN_KEYS": ADMIN, "STRIDE_KV_BUDGET": "32M"}) as s:
        auth = {"Authorization": f"Bearer {ADMIN}"}
        c = openai.OpenAI(base_url=s.url + "/v1", api_key="x", max_retries=0, timeout=120)
        assert c.models.list().data[0].id == os.path.basename(SMOL)

        # Refusals: no admin key, a corrupt file, a wrong checksum. The old version keeps serving.
        assert s.post("/admin/model", {"model": GEMMA})[0] == 401
        with tempfile.NamedTemporaryFile(suffix=".gguf", delete=False) as bad:
            with open(SMOL, "rb") as f:
                bad.write(f.read(1 << 20))  # truncated: tensor data missing
        status, _, body = s.post("/admin/model", {"model": bad.name}, headers=auth)
        os.unlink(bad.name)
        assert status == 422, body
        e = json.loads(body)["error"]
        assert e["code"] == "model_load_failed" and "still serving" in e["message"]
        status, _, body = s.post("/admin/model", {"model": GEMMA, "sha256": "0" * 64}, headers=auth)
        assert status == 422 and "sha256 mismatch" in json.loads(body)["error"]["message"]
        assert c.completions.create(model=os.path.basename(SMOL), prompt="Hi", max_tokens=2).usage.total_tokens > 0

        # A stream running on the old version finishes there while the switch happens.
        result = {}

        def long_stream():
            out = c.completions.create(model=os.path.basename(SMOL), prompt="Once upon a time", max_tokens=40,
                                       temperature=0, stream=True, extra_body={"ignore_eos": True})
            result["chunks"] = [ch for ch in out]

        t = threading.Thread(target=long_stream)
        t.start()
        time.sleep(0.3)
        status, _, body = s.post("/admin/model", {"model": GEMMA, "sha256": sha256(GEMMA)}, headers=auth)
        assert status == 200, body
        switched = json.loads(body)
        assert switched["model"] == os.path.basename(GEMMA) and switched["switch_seconds"] < 60
        t.join(120)
        assert result["chunks"][-1].choices[0].finish_reason == "length"
        assert c.models.list().data[0].id == os.path.basename(GEMMA)
        r = c.completions.create(model=os.path.basename(GEMMA), prompt="The capital of France is", max_tokens=4,
                                 temperature=0)
        assert r.usage.completion_tokens == 4

        # Roll back.
        status, _, body = s.post("/admin/model", {"model": SMOL}, headers=auth)
        assert status == 200, body
        assert json.loads(body)["switch_seconds"] < 60
        assert c.models.list().data[0].id == os.path.basename(SMOL)
        print("switch seconds:", switched["switch_seconds"], json.loads(body)["switch_seconds"])
