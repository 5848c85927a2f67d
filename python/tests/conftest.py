"""Fixtures for the genc package tests: plans compiled once per session
from the bundled tiny-gpt2 (with and without its tokenizer). ctest runs
this suite with PYTHONPATH set to the build's staged package."""
import os
import subprocess
import tempfile

import numpy as np
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


def reference_logprobs(ids, workdir):
    """log_softmax of the logits genc's reference interpreter computes for
    `ids` from the ONNX file (genc eval, not the runtime), in float64."""
    genc_bin = os.path.join(os.environ.get("GENC_BUILD_DIR", ""), "tools", "genc")
    if not os.access(genc_bin, os.X_OK):
        pytest.skip("GENC_BUILD_DIR/tools/genc not found")
    d = os.path.join(workdir, "echo-eval")
    os.makedirs(d, exist_ok=True)
    np.save(os.path.join(d, "ids.npy"), np.array([ids], dtype=np.int64))
    np.save(os.path.join(d, "mask.npy"), np.ones((1, len(ids)), dtype=np.int64))
    subprocess.run([genc_bin, "eval", os.path.join(TINY, "model.onnx"), "--input", "input_ids=" + d + "/ids.npy",
                    "--input", "attention_mask=" + d + "/mask.npy", "--output-dir", d], check=True)
    x = np.load(os.path.join(d, "logits.npy"))[0].astype(np.float64)
    x -= x.max(axis=-1, keepdims=True)
    return x - np.log(np.exp(x).sum(axis=-1, keepdims=True))
