"""End-to-end accuracy on the real-model corpus (scripts/fetch_corpus): each model is quantized by the
ptqkit CLI with its default calibration (mse since issue 9; the thresholds were measured with max, which
mse matches or beats on this corpus); the output must pass onnx.checker, load and run in ONNX
Runtime at ORT_ENABLE_BASIC and at the default level, contain QuantizeLinear/DequantizeLinear (inside
the If branches for the VAD, whose whole network lives there), and keep its task metric vs FP32 on
held-out inputs above the thresholds below, at both optimization levels.

A missing model FAILS (run scripts/fetch_corpus); nothing here is skipped.

Thresholds: set slightly below what `max` achieves on main at 12c6fba at ORT_ENABLE_BASIC (fake-quant;
measured with bench/corpus_accuracy.py, table in bench/README.md); the default level must reach the
same bound (issue 9: outputs ONNX Runtime runs as accurately as fake-quant), so FP8 cases whose default
level collapses today (ocr_cls, ocr_det, ocr_rec) fail by design. Where `max` failed on main (model refused), the
threshold is what max achieves on the model converted to opset 13 by onnx.version_converter, i.e.
what the fixed ptqkit must reach on the original model.
"""
from __future__ import annotations

import subprocess

import numpy as np
import onnx
import pytest

import corpus

# model -> mode -> {metric: (min or max, bound)}; "min": metric >= bound, "max": metric <= bound
THRESHOLDS = {
    # measured with max on main 12c6fba (ORT basic / ORT default), 8-64 held-out samples:
    # det int8 IoU 0.855/0.856, fp8 0.902/0.684
    "ocr_det": {"int8": {"mask_iou": ("min", 0.80)}, "fp8": {"mask_iou": ("min", 0.85)}},
    # rec int8 line 0.542/0.542 char 0.960/0.960; fp8 line 0.417/0.104 char 0.965/0.821
    "ocr_rec": {"int8": {"line_agree": ("min", 0.45), "char_agree": ("min", 0.93)},
                "fp8": {"line_agree": ("min", 0.35), "char_agree": ("min", 0.93)}},
    # cls int8 top-1 1.000/1.000; fp8 1.000/0.500 (default level: coin flip, issue 9 item 3)
    "ocr_cls": {"int8": {"top1_agree": ("min", 0.95)}, "fp8": {"top1_agree": ("min", 0.95)}},
    # PP-LCNet (depthwise) int8 top-1 0.578/0.578; fp8 0.813/0.781
    "orientation": {"int8": {"top1_agree": ("min", 0.52)}, "fp8": {"top1_agree": ("min", 0.75)}},
    # ResNet-50 int8 top-1 1.000/1.000 (max prob diff 0.002); fp8 1.000/1.000 (0.004/0.025)
    "nsfw_resnet50": {"int8": {"top1_agree": ("min", 0.95)}, "fp8": {"top1_agree": ("min", 0.95)}},
    # MiniLM int8 cos 0.9826 nn 0.875 (both levels); fp8 cos 0.9976 nn 0.984
    "minilm": {"int8": {"mean_cos": ("min", 0.975), "nn_agree": ("min", 0.80)},
               "fp8": {"mean_cos": ("min", 0.99), "nn_agree": ("min", 0.93)}},
    # VAD (network inside If branches, quantized there since issue 8), mse, ORT basic: int8 speech
    # probability mean abs diff 0.029 (max 0.25 on one chunk), fp8 0.005 (max 0.057). The int8 loss
    # on this 300 k-parameter model is open accuracy work (issue 9).
    "silero_vad": {"int8": {"mean_abs_diff": ("max", 0.04)}, "fp8": {"mean_abs_diff": ("max", 0.01)}},
}

# FP8 outputs that ONNX Runtime's default optimization level computes wrongly today (issue 9 item 3:
# the same files are right at ORT_ENABLE_BASIC). Strict: when ORT or ptqkit's FP8 pattern is fixed,
# these flip to XPASS and fail, so the list must shrink with the fix.
DEFAULT_LEVEL_BROKEN = {("ocr_det", "fp8"), ("ocr_rec", "fp8"), ("ocr_cls", "fp8"), ("silero_vad", "fp8")}

CASES = []
for _m in corpus.MODELS:
    for _mode in ("int8", "fp8"):
        for _basic in (True, False):
            marks = []
            if not _basic and (_m.name, _mode) in DEFAULT_LEVEL_BROKEN:
                marks = [pytest.mark.xfail(strict=True, reason="issue 9 item 3: ORT default-level FP8 fusions")]
            CASES.append(pytest.param(_m.name, _mode, _basic, marks=marks,
                                      id=f"{_m.name}-{_mode}-{'basic' if _basic else 'default'}"))

_QUANTIZED = {}  # (name, mode) -> quantized model path: each model is quantized once for both levels


@pytest.fixture(scope="session")
def ptqkit(request):
    return request.config.getoption("--ptqkit")


def _quantize(name, mode, ptqkit, tmp_path_factory):
    if (name, mode) in _QUANTIZED:
        return _QUANTIZED[name, mode]
    m = corpus.BY_NAME[name]
    src = corpus.path(m.rel)  # FileNotFoundError naming scripts/fetch_corpus when missing
    work = tmp_path_factory.mktemp(f"{name}-{mode}")
    calib = work / "calib.npz"
    corpus.save_calib(m.build(m.n_calib, seed=1), calib)
    out = work / "q.onnx"
    r = subprocess.run([ptqkit, "quantize", "--onnx_path", str(src), "--output_path", str(out),
                        "--quantize_mode", mode, "--calibration_data_path", str(calib)],
                       capture_output=True, text=True)
    assert r.returncode == 0, f"ptqkit refused {name} ({mode}):\n{r.stderr[-3000:]}"
    onnx.checker.check_model(str(out), full_check=True)
    n = corpus.count_qdq(out)
    assert n["top"] + n["sub"] > 0, f"{name}: no QuantizeLinear/DequantizeLinear in the output"
    if name == "silero_vad":
        assert n["sub"] > 0, "silero_vad: no Q/DQ inside the If branches, where its network lives"
    _QUANTIZED[name, mode] = out
    return out


@pytest.mark.parametrize("name,mode,basic", CASES)
def test_corpus_model(name, mode, basic, ptqkit, tmp_path_factory):
    m = corpus.BY_NAME[name]
    out = _quantize(name, mode, ptqkit, tmp_path_factory)
    test = m.build(m.n_test, seed=2)
    ref = corpus.run(corpus.path(m.rel), test, basic=True)
    level = "ORT_ENABLE_BASIC" if basic else "ORT default level"
    q = corpus.run(out, test, basic=basic)
    assert q.shape == ref.shape and np.isfinite(q).all(), f"{name} {mode} {level}: bad output"
    got = m.metric(ref, q, test)
    for key, (kind, bound) in THRESHOLDS[name][mode].items():
        ok = got[key] >= bound if kind == "min" else got[key] <= bound
        assert ok, f"{name} {mode} at {level}: {key}={got[key]:.4f}, needs {kind} {bound} ({got})"
