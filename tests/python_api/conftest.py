"""Fixtures for the tests of the Python package `ptqkit` (python/ptqkit).

`import ptqkit` must find the package: ctest puts <build>/python (the staged package) on
PYTHONPATH; a pip-installed ptqkit works too. The `ptqkit` binary, for the Python-vs-CLI
comparisons, is given by --ptqkit-cli PATH (ctest passes the target built next to the extension).

Models and data come from tests/python/models.py (imported, not copied): small_cnn (one input
cnn_input [N,16,8,8]) and a two-block transformer (hidden_states [N,16,64], nodes named
/blocks.N/...), plus 32 calibration samples of each as .npy and .npz.
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "python"))
import models  # noqa: E402  (tests/python/models.py)


def pytest_addoption(parser):
    parser.addoption("--ptqkit-cli", default=str(REPO / "build" / "ptqkit"),
                     help="the ptqkit binary to compare with (default: <repo>/build/ptqkit)")


class Cli:
    """Runs the ptqkit binary; ok() asserts exit code 0."""

    def __init__(self, binary: str):
        self.binary = binary

    def run(self, *args) -> subprocess.CompletedProcess:
        assert Path(self.binary).is_file(), f"no ptqkit binary at {self.binary}; pass --ptqkit-cli PATH"
        return subprocess.run([self.binary, *map(str, args)], capture_output=True, text=True,
                              stdin=subprocess.DEVNULL, timeout=600)

    def ok(self, *args) -> subprocess.CompletedProcess:
        r = self.run(*args)
        assert r.returncode == 0, f"ptqkit {args} failed ({r.returncode}):\n{r.stderr}"
        return r


@pytest.fixture(scope="session")
def cli(request) -> Cli:
    return Cli(str(Path(request.config.getoption("--ptqkit-cli")).resolve()))


@pytest.fixture(scope="session")
def gen(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("generated")


@pytest.fixture(scope="session")
def small_cnn(gen) -> Path:
    path = gen / "small_cnn.onnx"
    models.make_small_cnn(path)
    return path


@pytest.fixture(scope="session")
def small_cnn_npy(gen) -> Path:
    path = gen / "small_cnn_calib.npy"
    models.make_calibration("small_cnn", path, n=32, fmt="npy")
    return path


@pytest.fixture(scope="session")
def small_cnn_npz(gen) -> Path:
    path = gen / "small_cnn_calib.npz"
    models.make_calibration("small_cnn", path, n=32, fmt="npz")
    return path


@pytest.fixture(scope="session")
def transformer(gen) -> Path:
    path = gen / "transformer.onnx"
    models.make_transformer_block(path)
    return path


@pytest.fixture(scope="session")
def transformer_npz(gen) -> Path:
    path = gen / "transformer_calib.npz"
    models.make_calibration("transformer", path, n=32, fmt="npz")
    return path


@pytest.fixture(scope="session")
def node_scores(transformer, transformer_npz) -> dict:
    """Per-node scores of the transformer (the input of the picker examples)."""
    import ptqkit.sensitivity
    return ptqkit.sensitivity.score(onnx_path=transformer, calibration_data=str(transformer_npz),
                                    granularity="node")["scores"]

