"""--calibration_eps: providers this ONNX Runtime build cannot load are reported and skipped.
Calibration keeps ModelOpt's fallback (its default list is "cpu cuda:0 trt"): the scales do not
depend on the provider, only the speed does; the warning names what was not found.

The ONNX Runtime shipped by scripts/setup (npm onnxruntime-node) lists CUDA among its providers
but has no provider libraries, so on any machine `cuda:0` and `trt` must fall back to the CPU
with a warning naming each, and the result must equal a CPU-only run (the CPU computes both).
"""
from __future__ import annotations


def test_unavailable_providers_are_skipped_with_a_warning(cli, resnet, calib, tmp_path):
    data = calib("resnet", n=16)
    cpu = tmp_path / "cpu.onnx"
    mixed = tmp_path / "mixed.onnx"
    cli.quantize(resnet, cpu, "--calibration_data_path", data, "--calibration_eps", "cpu")
    r = cli.quantize(resnet, mixed, "--calibration_data_path", data, "--calibration_eps", "cuda:0", "trt", "cpu",
                     "--trt_plugins", str(tmp_path / "no_such_plugin.so"))
    assert "--calibration_eps cuda:0: no GPU / CUDA found" in r.stderr
    assert "--calibration_eps trt: no GPU / TensorRT found" in r.stderr
    assert "scripts/setup --gpu" in r.stderr
    # Once per provider, however many sessions the run opens.
    assert r.stderr.count("--calibration_eps trt:") == 1
    assert "on cpu" in r.stdout
    assert cpu.read_bytes() == mixed.read_bytes()


def test_unknown_provider_is_an_error(cli, resnet, tmp_path):
    out = tmp_path / "out.onnx"
    r = cli.run("quantize", "--onnx_path", resnet, "--output_path", str(out), "--calibration_eps", "npu")
    assert r.returncode != 0
    assert "npu" in r.error_line()
    assert not out.exists()
