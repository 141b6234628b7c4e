"""ptqkit.quantize()'s keywords come from the option table: ModelOpt's Python-only
calibration_data_reader, refusals and type errors as the CLI gives them."""
from __future__ import annotations

import numpy as np
import pytest

import models
import ptqkit


class _Reader:
    """The shape of onnxruntime.quantization.CalibrationDataReader: get_next() until None."""

    def __init__(self, x, batch):
        self._batches = iter([{models.SMALL_CNN_INPUT: x[i:i + batch]} for i in range(0, len(x), batch)])

    def get_next(self):
        return next(self._batches, None)


def test_calibration_data_reader_gives_the_same_model_as_the_arrays(tmp_path, small_cnn):
    x = models.small_cnn_data(32, 0)
    ptqkit.quantize(small_cnn, calibration_data=x, output_path=tmp_path / "a.onnx")
    ptqkit.quantize(small_cnn, calibration_data_reader=_Reader(x, 5), output_path=tmp_path / "b.onnx")
    assert (tmp_path / "a.onnx").read_bytes() == (tmp_path / "b.onnx").read_bytes()


def test_refused_modelopt_keyword_says_why(tmp_path, small_cnn):
    with pytest.raises(ptqkit.Error, match="--target_dla is not taken by ptqkit: ptqkit does not target DLA"):
        ptqkit.quantize(small_cnn, target_dla=True, output_path=tmp_path / "o.onnx")
    assert not (tmp_path / "o.onnx").exists()


@pytest.mark.parametrize("kwargs, message", [
    ({"percentile": "high"}, "percentile: expected a number"),
    ({"eval_samples": 1.5}, "eval_samples: expected a whole number"),
    ({"dq_only": "maybe"}, "--dq_only: expected true or false"),
    ({"nodes_to_exclude": [1, 2]}, "nodes_to_exclude: expected a string"),
])
def test_bad_keyword_values(tmp_path, small_cnn, kwargs, message):
    with pytest.raises((TypeError, ptqkit.Error), match=message):
        ptqkit.quantize(small_cnn, output_path=tmp_path / "o.onnx", **kwargs)


def test_modelopt_python_spellings(tmp_path, small_cnn):
    x = models.small_cnn_data(32, 0)
    r = ptqkit.quantize(small_cnn, "int8", x, output_path=tmp_path / "o.onnx", calibration_method="max",
                        use_zero_point=False, passes=["concat_elimination"], log_level="warning",
                        calibration_shapes={models.SMALL_CNN_INPUT: [4] + list(x.shape[1:])}, opset=18)
    assert r["output_opset"] == 18 and r["batch_size"] == 4
