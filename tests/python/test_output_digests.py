"""Golden outputs: every quantize mode writes the same bytes as the commit that recorded them.

Refactors (one Quantize() pipeline, the op-traits table, the quant/ sub-folders) must not change
what ptqkit writes. This test quantizes the built-in models in every mode and compares each output
file's SHA-256 with output_digests.json (keyed by machine kind: golden_digests.py). A change that is
meant to alter outputs re-records them:

    cd tests/python && ../../.deps/venv/bin/python -m pytest -q test_output_digests.py --record-digests

and says in its commit message why the outputs changed.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from golden_digests import RECORD_HELP, DigestFile, file_digest, machine_key

DIGESTS = Path(__file__).with_name("output_digests.json")

# name -> (model fixture, calibration kind or None, flags). One row per mode and per option that
# chooses a different code path in the pipeline.
MODES = {
    "int8_cnn_mse": ("resnet", "resnet", []),
    "int8_cnn_entropy_ort_cpu": ("resnet", "resnet", ["--calibration_method", "entropy", "--target_runtime", "ort_cpu"]),
    "int8_cnn_openvino": ("resnet", "resnet", ["--target_runtime", "openvino"]),
    "int8_cnn_gptq_fp16": ("resnet", "resnet", ["--weight_rounding", "gptq", "--high_precision_dtype", "fp16"]),
    "int8_cnn_dq_only_reduce_range": ("resnet", "resnet", ["--dq_only", "--reduce_range"]),
    "int8_cnn_no_canonicalize_max": ("resnet", "resnet", ["--canonicalize", "false", "--calibration_method", "max"]),
    "fp8_cnn": ("resnet", "resnet", ["--quantize_mode", "fp8"]),
    "int8_transformer": ("transformer", "transformer", []),
    "int8_transformer_dynamic": ("transformer", "transformer", ["--target_runtime", "ort_cpu_dynamic"]),
    "int8_transformer_budget": ("transformer", "transformer", ["--accuracy_budget", "0.0005"]),
    "int8_tokens": ("token_transformer", "tokens", []),
    "fp8_transformer": ("transformer", "transformer", ["--quantize_mode", "fp8"]),
    "int4_awq_clip": ("transformer", "transformer", ["--quantize_mode", "int4", "--block_size", "32"]),
    "int4_awq_lite_zp": ("transformer", "transformer", ["--quantize_mode", "int4", "--block_size", "32",
                                                        "--calibration_method", "awq_lite", "--use_zero_point"]),
    "int4_rtn_no_data": ("transformer", None, ["--quantize_mode", "int4", "--calibration_method", "rtn"]),
    "int4_int8_mixed": ("transformer", "transformer", ["--quantize_mode", "int4", "--block_size", "32",
                                                       "--mixed_precision", "int4,int8", "--accuracy_budget", "0.0005"]),
    "nvfp4": ("transformer", "transformer", ["--quantize_mode", "nvfp4"]),
    "nvfp4_ort_cpu": ("transformer", "transformer", ["--quantize_mode", "nvfp4", "--target_runtime", "ort_cpu"]),
    "mxfp8_activations": ("transformer", "transformer", ["--quantize_mode", "mxfp8", "--quantize_activations"]),
    "mxfp4": ("transformer", "transformer", ["--quantize_mode", "mxfp4"]),
}


@pytest.fixture(scope="module")
def recorded():
    return DigestFile(DIGESTS)


@pytest.mark.parametrize("mode", sorted(MODES))
def test_output_matches_recorded_digest(mode, request, cli, calib, recorded, tmp_path):
    fixture, calib_kind, flags = MODES[mode]
    model = request.getfixturevalue(fixture)
    data = ["--calibration_data_path", calib(calib_kind, n=64)] if calib_kind else []
    out = tmp_path / f"{mode}.onnx"
    cli.quantize(model, out, *data, *flags, "--calibration_batch_size", "8")
    digest = file_digest(out)
    if request.config.getoption("--record-digests"):
        recorded.record(mode, digest)
        return
    expected = recorded.expected(mode)
    if expected is None:
        again = tmp_path / f"{mode}.again.onnx"
        cli.quantize(model, again, *data, *flags, "--calibration_batch_size", "8")
        assert file_digest(again) == digest, f"{mode}: two runs wrote different files"
        print(f"{mode}: no digest recorded for '{machine_key()}'; checked only that two runs agree")
        return
    assert digest == expected, f"{mode}: the output differs from the recorded one (flags {flags}); {RECORD_HELP}"
