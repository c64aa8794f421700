"""The KV offload file at start-up: an existing file or a symlink at
kv_offload_file is refused with a message naming it (and left untouched), and
a file whose space cannot be reserved (RLIMIT_FSIZE standing in for a full
disk) is a clean error naming the size and the path; each time stride serve
exits non-zero instead of crashing. A usable path serves and leaves no file."""
import os
import resource
import signal
import subprocess

import openai

from stride_server import SMOL, StrideServer, binary


def serve(env, preexec_fn=None):
    full = {k: v for k, v in os.environ.items() if not k.startswith("STRIDE_")}
    full.update({"STRIDE_KV_BUDGET": "32M", **env})
    return subprocess.run([binary(), "serve", "--model", SMOL, "--port", "0", "--threads", "2"], env=full,
                          capture_output=True, text=True, timeout=120, preexec_fn=preexec_fn)


def test_existing_file_and_symlink_are_refused(tmp_path):
    existing = tmp_path / "tier"
    existing.write_text("precious")
    r = serve({"STRIDE_KV_OFFLOAD_BYTES": "8M", "STRIDE_KV_OFFLOAD_FILE": str(existing)})
    out = r.stdout + r.stderr
    assert r.returncode not in (0, -signal.SIGSEGV, -signal.SIGBUS, -signal.SIGABRT), out
    assert "exists already" in out and str(existing) in out, out
    assert existing.read_text() == "precious"

    target = tmp_path / "target"
    target.write_text("x")
    link = tmp_path / "link"
    link.symlink_to(target)
    r = serve({"STRIDE_KV_OFFLOAD_BYTES": "8M", "STRIDE_KV_OFFLOAD_FILE": str(link)})
    out = r.stdout + r.stderr
    assert r.returncode > 0, out
    assert "symbolic link" in out, out
    assert target.read_text() == "x" and link.is_symlink()


def test_space_shortage_is_an_error_at_start(tmp_path):
    path = tmp_path / "tier"

    def small_files():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # stays ignored across exec: write/fallocate get EFBIG
        resource.setrlimit(resource.RLIMIT_FSIZE, (1 << 20, 1 << 20))

    r = serve({"STRIDE_KV_OFFLOAD_BYTES": "64M", "STRIDE_KV_OFFLOAD_FILE": str(path)}, preexec_fn=small_files)
    out = r.stdout + r.stderr
    assert r.returncode > 0, out  # an exit status, not a signal
    assert "cannot reserve" in out and "for the KV offload file " + str(path) in out, out
    assert "File too large" in out, out
    assert not path.exists()


def test_a_new_path_serves_and_leaves_nothing(tmp_path):
    path = tmp_path / "tier"
    with StrideServer(SMOL, env={"STRIDE_KV_BUDGET": "32M", "STRIDE_KV_OFFLOAD_BYTES": "8M",
                                 "STRIDE_KV_OFFLOAD_FILE": str(path)}) as s:
        assert not path.exists()  # unlinked once created: nothing left after a crash either
        c = openai.OpenAI(base_url=s.url + "/v1", api_key="x", max_retries=0, timeout=120)
        r = c.completions.create(model=c.models.list().data[0].id, prompt="Hello", max_tokens=2)
        assert r.usage.completion_tokens == 2
    assert not path.exists()
