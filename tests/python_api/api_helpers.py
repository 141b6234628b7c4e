"""Checks on quantized models shared by the tests (a module of its own: tests/python, which is on
sys.path for models.py, has a conftest.py too)."""
from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort


def qdq_count(path) -> int:
    """QuantizeLinear nodes in the model at `path`."""
    return sum(n.op_type == "QuantizeLinear" for n in onnx.load(str(path)).graph.node)


def run_model(path, x: np.ndarray, input_name: str) -> np.ndarray:
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return session.run(None, {input_name: x})[0]


def without_timings(scores: dict) -> dict:
    """A scores-file dict minus what differs between two identical runs (wall-clock timings)."""
    return {k: v for k, v in scores.items() if k != "timings"}
