"""Fixtures for the end-to-end tests of the `ptqkit` binary.

The binary is given by `--ptqkit PATH` (ctest passes the built target); it defaults to
<repo>/build/ptqkit. Models and data are generated once per session into a temporary folder by
models.py; tests that write files use their own `tmp_path`.

Every CLI run goes through `cli.run(...)`, which hashes every existing file named on the command
line (and every file inside a named directory) before the run and checks the hashes afterwards:
ptqkit must never modify its inputs. Files named after an output flag are not hashed.
"""
from __future__ import annotations

import hashlib
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

import models

REPO = Path(__file__).resolve().parents[2]

# Flags whose value is a file ptqkit writes (so it may legitimately change).
OUTPUT_FLAGS = {"--output_path", "--save_calibration_cache", "--log_file", "--report_json", "--report_html",
                "--autotune_state_file", "--autotune_output_dir", "--autotune_pattern_cache",
                "--state_file", "--output_dir", "--pattern_cache"}


def pytest_addoption(parser):
    parser.addoption("--ptqkit", default=str(REPO / "build" / "ptqkit"),
                     help="path to the ptqkit binary (default: <repo>/build/ptqkit)")
    parser.addoption("--record-digests", action="store_true",
                     help="test_output_digests.py: record this machine's output digests instead of comparing")


@dataclass
class Result:
    returncode: int
    stdout: str
    stderr: str

    def error_line(self) -> str:
        """The one-line error ptqkit prints on failure ("ptqkit: error: ...")."""
        lines = [ln for ln in self.stderr.splitlines() if ln.startswith("ptqkit: error:")]
        assert lines, f"no 'ptqkit: error:' line on stderr:\n{self.stderr}"
        return lines[-1]


def _hash_paths(paths) -> dict[str, str]:
    hashes = {}
    for p in paths:
        p = Path(p)
        files = sorted(f for f in p.rglob("*") if f.is_file()) if p.is_dir() else [p]
        for f in files:
            hashes[str(f)] = hashlib.sha256(f.read_bytes()).hexdigest()
    return hashes


def sha256(path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


class Cli:
    def __init__(self, binary: str):
        self.binary = binary

    def run(self, *args, also_unchanged=(), timeout=600) -> Result:
        """Runs `ptqkit *args`; asserts that input files (and `also_unchanged`) are not modified."""
        args = [str(a) for a in args]
        assert os.path.isfile(self.binary) and os.access(self.binary, os.X_OK), (
            f"ptqkit binary not found at {self.binary}; build it or pass --ptqkit PATH")
        inputs = [a for i, a in enumerate(args)
                  if os.path.exists(a) and not (i > 0 and args[i - 1] in OUTPUT_FLAGS)]
        inputs += [str(p) for p in also_unchanged]
        before = _hash_paths(inputs)
        proc = subprocess.run([self.binary, *args], capture_output=True, text=True, timeout=timeout,
                              stdin=subprocess.DEVNULL)
        after = _hash_paths([p for p in before])
        changed = [p for p in before if after.get(p) != before[p]]
        assert not changed, f"ptqkit modified its input files: {changed}"
        return Result(proc.returncode, proc.stdout, proc.stderr)

    def ok(self, *args, **kw) -> Result:
        r = self.run(*args, **kw)
        assert r.returncode == 0, f"ptqkit {' '.join(map(str, args))} failed ({r.returncode}):\n{r.stderr}"
        return r

    def quantize(self, model, out, *extra, **kw) -> Result:
        return self.ok("quantize", "--onnx_path", model, "--output_path", out, *extra, **kw)


@pytest.fixture(scope="session")
def cli(request) -> Cli:
    return Cli(str(Path(request.config.getoption("--ptqkit")).resolve()))


# ---- generated models (session-scoped: generating the ResNet takes ~2 s) ----------------------
@pytest.fixture(scope="session")
def gen_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("generated")


@pytest.fixture(scope="session")
def resnet(gen_dir) -> Path:
    path = gen_dir / "resnet.onnx"
    models.make_resnet(path)
    return path


@pytest.fixture(scope="session")
def transformer(gen_dir) -> Path:
    path = gen_dir / "transformer.onnx"
    models.make_transformer_block(path)
    return path


@pytest.fixture(scope="session")
def token_transformer(gen_dir) -> Path:
    path = gen_dir / "transformer_tokens.onnx"
    models.make_transformer_block(path, tokens=True)
    return path


@pytest.fixture(scope="session")
def small_cnn(gen_dir) -> Path:
    path = gen_dir / "small_cnn.onnx"
    models.make_small_cnn(path)
    return path


@pytest.fixture(scope="session")
def two_matmul(gen_dir) -> Path:
    path = gen_dir / "two_matmul.onnx"
    models.make_two_matmul_model(path)
    return path


# ---- calibration and evaluation data ----------------------------------------------------------
def _calib(gen_dir, kind, n=128, fmt="npy") -> Path:
    suffix = {"npy": ".npy", "npz": ".npz", "dir": ""}[fmt]
    path = gen_dir / f"calib_{kind}_{n}_{fmt}{suffix}"
    if not path.exists():
        models.make_calibration(kind, path, n=n, fmt=fmt)
    return path


@pytest.fixture(scope="session")
def calib(gen_dir):
    """calib(kind, n=128, fmt="npy") -> path of calibration data of that model kind (cached)."""
    return lambda kind, n=128, fmt="npy": _calib(gen_dir, kind, n, fmt)


@pytest.fixture(scope="session")
def resnet_eval():
    return models.resnet_data(1000, models.EVAL_SEED)


@pytest.fixture(scope="session")
def transformer_eval():
    return models.transformer_data(1000, models.EVAL_SEED)


@pytest.fixture(scope="session")
def token_eval():
    return models.transformer_data(1000, models.EVAL_SEED, tokens=True)


@pytest.fixture
def small_cnn_calib(calib) -> Path:
    return calib("small_cnn", n=32)


def pytest_configure(config):
    np.set_printoptions(precision=4, suppress=True)


# ---- sensitivity scan and picker (test_sensitivity.py, test_exclude.py) -----------------------
@pytest.fixture(scope="session")
def outlier_mlp(gen_dir) -> Path:
    """MLP whose first Gemm reads an input with one ~2000x outlier feature (models.make_outlier_mlp)."""
    path = gen_dir / "outlier_mlp.onnx"
    models.make_outlier_mlp(path)
    return path


@pytest.fixture(scope="session")
def outlier_calib(gen_dir) -> Path:
    """32 calibration samples of the outlier MLP (CALIB_SEED), as one .npy."""
    path = gen_dir / "calib_outlier_mlp_32.npy"
    np.save(path, models.outlier_mlp_data(32, models.CALIB_SEED)[0])
    return path


@pytest.fixture(scope="session")
def outlier_eval():
    """Held-out (EVAL_SEED) inputs and labels of the outlier MLP: never used for calibration."""
    return models.outlier_mlp_data(256, models.EVAL_SEED)


@pytest.fixture(scope="session")
def grid_input(gen_dir):
    """(model, calibration .npy) where one node's probe is exactly lossless (models.make_grid_input_model)."""
    model, data = gen_dir / "grid_input.onnx", gen_dir / "calib_grid_input_16.npy"
    models.make_grid_input_model(model)
    np.save(data, models.grid_input_data(16, models.CALIB_SEED))
    return model, data
