"""Shared fixtures for the end-to-end suite (run: scripts/test, or
~/.cache/stride/venv/bin/python -m pytest -q tests/python).

The suite drives the `stride` binary (STRIDE_BIN, default build/stride) and
compares it with oracles that scripts/setup generates into tests/data/generated.
A missing binary or missing oracle data is a failure, never a skip.

The tests sit in area folders (server, serving, kv, versions, models, kernels,
cli, eval, deploy, grpc, bench, dist); the helpers they import (stride_server, stride_cli,
stride_grpc, redis_proc, structured_schemas) stay here, on sys.path through
this file, so bench/ and scripts/ find them at the same place.
"""
import json
import os
import sys

import pytest

# Test modules in the area folders import the helpers beside this file.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import stride_cli  # noqa: E402

ROOT = stride_cli.ROOT
GEN = os.path.join(ROOT, "tests", "data", "generated")


def load_generated(*parts):
    """A JSON file under tests/data/generated; its absence fails the test."""
    path = os.path.join(GEN, *parts)
    if not os.path.exists(path):
        pytest.fail(f"{path} missing: run scripts/setup")
    with open(path) as f:
        return json.load(f)


@pytest.fixture(scope="session")
def stride():
    """A StrideCli bound to the built binary; fails the test when it is absent."""
    return stride_cli.StrideCli.from_env()


@pytest.fixture(scope="session")
def tiny_manifest():
    return load_generated("tiny", "manifest.json")


@pytest.fixture(scope="session")
def goldens():
    return load_generated("llamacpp_goldens.json")
