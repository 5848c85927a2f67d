"""Fixtures for the genc package tests: plans compiled once per session
from the bundled tiny-gpt2 (with and without its tokenizer). ctest runs
this suite with PYTHONPATH set to the build's staged package."""
import os
import tempfile

import pytest

import genc

SRC = os.environ.get("GENC_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
TINY = os.path.join(SRC, "models", "tiny-gpt2")


@pytest.fixture(scope="session")
def workdir():
    base = os.environ.get("GENC_TEST_TMP")
    if base:
        os.makedirs(base, exist_ok=True)
    return tempfile.mkdtemp(prefix="genc-pytest-", dir=base)


@pytest.fixture(scope="session")
def plan(workdir):
    return genc.compile(TINY, os.path.join(workdir, "tiny.plan"), max_batch=4, max_beams=4, max_length=64,
                        progress=False)


@pytest.fixture(scope="session")
def ids_plan(workdir):
    return genc.compile(os.path.join(TINY, "model.onnx"), os.path.join(workdir, "ids.plan"), max_batch=2,
                        max_beams=2, max_length=32, tokenizer=False, progress=False)


@pytest.fixture(scope="session")
def gen(plan):
    g = genc.Generator(plan, device="cpu")
    yield g
    g.close()


@pytest.fixture(scope="session")
def genrun():
    """The build's genrun (ctest sets GENC_BUILD_DIR), to compare with."""
    path = os.path.join(os.environ.get("GENC_BUILD_DIR", ""), "tools", "genrun")
    if not os.access(path, os.X_OK):
        pytest.skip("GENC_BUILD_DIR/tools/genrun not found")
    return path
