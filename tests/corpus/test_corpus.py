"""End-to-end accuracy on the real-model corpus (scripts/fetch_corpus): each model is quantized by the
ptqkit CLI with its default calibration (mse since issue 9; the thresholds were measured with max, which
mse matches or beats on this corpus); the output must pass onnx.checker, load and run in ONNX
Runtime at ORT_ENABLE_BASIC and at the default level, contain QuantizeLinear/DequantizeLinear (inside
the If branches for the VAD, whose whole network lives there), and keep its task metric vs FP32 on
held-out inputs above the thresholds below, at both optimization levels.

A missing model FAILS (run scripts/fetch_corpus); nothing here is skipped.

Every model is quantized two ways: int8 and fp8 (one file serves TensorRT and ONNX Runtime; FP8 Q/DQ carry
no zero point, issue 23). Besides the task metric vs FP32, test_default_level_matches_basic runs each output
at ONNX Runtime's default level against its own basic-level (fake-quant) output (issue 9 item 3).

Thresholds: set slightly below what `max` achieves on main at 12c6fba at ORT_ENABLE_BASIC (fake-quant;
measured with bench/corpus_accuracy.py, table in bench/README.md); the default level must reach the
same bound. Where `max`
failed on main (model refused), the threshold is what max achieves on the model converted to opset 13
by onnx.version_converter, i.e. what the fixed ptqkit must reach on the original model.
"""
from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import onnx
import pytest

import corpus
from corpus import ort_int8_kernels_saturate
from golden_digests import RECORD_HELP, DigestFile, file_digest, machine_key  # noqa: E402

# model -> mode -> {metric: (min or max, bound)}; "min": metric >= bound, "max": metric <= bound
THRESHOLDS = {
    # measured with max on main 12c6fba (ORT basic / ORT default), 8-64 held-out samples:
    # det int8 IoU 0.855/0.856, fp8 0.902/0.684
    "ocr_det": {"int8": {"mask_iou": ("min", 0.80)}, "fp8": {"mask_iou": ("min", 0.85)}},
    # rec int8 line 0.542/0.542 char 0.960/0.960; fp8 line 0.417/0.104 char 0.965/0.821 - on lines squeezed
    # into 48x320 and compared with their spaces. Since 2026-12-07 the lines are fed as PaddleOCR feeds them
    # (aspect ratio kept, padded to the widest) and compared as PaddleOCR's RecMetric does (spaces ignored):
    # default int8 line 1.000 / char 1.000, fp8 0.990 / 0.999, both levels, on 192 lines (bench/README.md).
    "ocr_rec": {"int8": {"line_agree": ("min", 0.95), "char_agree": ("min", 0.995)},
                "fp8": {"line_agree": ("min", 0.93), "char_agree": ("min", 0.99)}},
    # cls int8 top-1 1.000/1.000; fp8 1.000/0.500 (default level: coin flip, issue 9 item 3)
    "ocr_cls": {"int8": {"top1_agree": ("min", 0.95)}, "fp8": {"top1_agree": ("min", 0.95)}},
    # PP-LCNet (depthwise) int8 top-1 0.578/0.578; fp8 0.813/0.781. Since every depthwise input not capped by
    # its activation is equalized (2026-12-06, 256 crops): int8 0.969/0.969 (0.750 without equalization).
    "orientation": {"int8": {"top1_agree": ("min", 0.88)}, "fp8": {"top1_agree": ("min", 0.75)}},
    # ResNet-50 int8 top-1 1.000/1.000 (max prob diff 0.002); fp8 1.000/1.000 (0.004/0.025)
    "nsfw_resnet50": {"int8": {"top1_agree": ("min", 0.95)}, "fp8": {"top1_agree": ("min", 0.95)}},
    # EfficientNet-Lite0 (ImageNet; depthwise, ReLU6 as Clip, Pad), 128 held-out crops of 6 photos that no
    # calibration crop comes from; measured at 46c06e4 (ORT basic / default level; 24 calibration samples,
    # 8 held out for the loss report): int8 max 0.953/0.938, mse (default) 0.945/0.938; fp8 mse 0.766 (trt,
    # basic only) and 0.781/0.773 (ort_cpu, on main 29752a6). Issue 9 asks >= 0.95 for default INT8: not met yet. 36% of these
    # crops have an FP32 top probability < 0.3 and the flips are such near-ties; the largest single loss is
    # the first depthwise conv (BN-folded channel gains up to 17.7 on the stem's ReLU6 output): keeping
    # blocks.0 in float halves the KL. FP8 loses far more (E4M3 on that same input); see bench/README.md.
    # Since bias correction (the mean shift of each quantized Conv's rounded weights subtracted from its
    # bias): default int8 0.977/0.977 (KL 0.016 -> 0.005), fp8 0.781 (basic). Issue 9's target: >= 0.95.
    "efficientnet_lite0": {"int8": {"top1_agree": ("min", 0.95)}, "fp8": {"top1_agree": ("min", 0.72)}},
    # MiniLM int8 max cos 0.9826 nn 0.875 on 12c6fba (both levels); fp8 cos 0.9976 nn 0.984. Since the
    # smoothing of the GELU outputs (--smoothquant_alpha 0.7) the default (mse) keeps cos 0.991 (max 0.9915);
    # since every outlier MatMul input is smoothed (inserted Muls, issue 41) 0.9963 (256 held-out sentences,
    # nn 0.97). Issue 41's target: cos >= 0.995.
    "minilm": {"int8": {"mean_cos": ("min", 0.995), "nn_agree": ("min", 0.93)},
               "fp8": {"mean_cos": ("min", 0.99), "nn_agree": ("min", 0.93)}},
    # VAD (network inside If branches, quantized there since issue 8), mse, ORT basic: int8 speech
    # probability mean abs diff 0.029 (max 0.25 on one chunk), fp8 0.005 (max 0.057). The int8 loss
    # on this 300 k-parameter model is open accuracy work (issue 9).
    "silero_vad": {"int8": {"mean_abs_diff": ("max", 0.04)}, "fp8": {"mean_abs_diff": ("max", 0.01)}},
    # PP-PicoDet layout detector (issue 24), 24 rendered pages, strict box matching vs FP32 boxes: before the
    # BatchNormalization fold and depthwise equalization default int8 kept recall 0.475 (precision 0.80), fp8
    # 0.938; with them (2026-12-05) int8 0.950/0.950 (basic/default; precision 0.934/0.931), fp8 0.949/0.952
    # (precision 0.959/0.939). Issue 24 asks int8 recall >= 0.90 and fp8 >= 0.95 at the basic level. With every
    # uncapped depthwise input equalized (2026-12-06, 96 pages): int8 0.968, fp8 0.958 (basic).
    "layout_det": {"int8": {"box_recall": ("min", 0.90), "box_precision": ("min", 0.88)},
                   "fp8": {"box_recall": ("min", 0.93), "box_precision": ("min", 0.90)}},
}

# Where onnxruntime's INT8 kernels saturate (x86 without VNNI: its u8s8 kernels add pairs of u8*s8
# products in 16 bits), its default level computes the INT8 TensorRT-form files wrongly (EfficientNet-Lite0
# top-1 agreement 0.48, MiniLM default-vs-basic cosine 0.995 on an AVX2 AMD EPYC). What a user of such
# a CPU deploys is the same quantization with 7-bit weights (--reduce_range): on those machines the INT8
# default-level cases check that file (the basic-level cases keep the 8-bit one). 7-bit weights cost
# MiniLM a little (cos 0.9898 at both levels, 2026-12-04), so its bound there is 0.985.
SATURATING_INT8 = ort_int8_kernels_saturate()
REDUCE_RANGE_THRESHOLDS = {"minilm": {"mean_cos": ("min", 0.985), "nn_agree": ("min", 0.90)}}


def _deployed_extra(mode, basic):
    """Extra quantize options of the file checked at this level (see SATURATING_INT8)."""
    return ("--reduce_range",) if mode == "int8" and not basic and SATURATING_INT8 else ()


# (mode, target runtime) pairs every model is quantized in. `--target_runtime ort_cpu` writes the same
# file as the default "trt" since FP8 Q/DQ lost their zero points (a Python test checks the bytes).
OUTPUTS = [("int8", "trt"), ("fp8", "trt")]

CASES = []
for _m in corpus.MODELS:
    for _mode, _target in OUTPUTS:
        for _basic in (True, False):
            CASES.append(pytest.param(_m.name, _mode, _target, _basic,
                                      id=f"{_m.name}-{_mode}-{_target}-{'basic' if _basic else 'default'}"))

# How closely the default level's output must follow the basic level's (fake-quant) output of the
# same quantized file, in the model's own metric (reference = basic-level output). Measured on this
# machine (AVX-512 VNNI), on these sets: int8 det IoU 0.9987, rec lines 1.0 (0.992 and 0.958 in the
# first measurement, on older outputs), cls/orientation/resnet top-1 1.0, MiniLM cos 0.9997, VAD exact;
# fp8 (no zero points, depthwise Convs in float, 2026-12-06) det 0.984, rec lines 0.833 / chars 0.992, EfficientNet
# top-1 0.969, layout recall 0.980 / precision 0.995, MiniLM cos 0.99999, VAD exact, cls/orientation/resnet top-1 1.0
# (with depthwise Convs quantized: det 0.977, rec lines 0.938, EfficientNet 0.992). What is left
# are float reassociations moving values across a rounding boundary, not a different computation: for FP8,
# NchwcTransformer's blocked float Convs (the extended level matches the basic one exactly; bench/README.md).
# (ONNX Runtime 1.32, the tests' Python package; the 1.30 library ptqkit bundles builds QLinearConv on FP8 at
# its default level.)
AGREEMENT = {
    # fp8 on the bench's 32 maps (2026-12-07): 0.958 with the FP8 mse floor, 0.955 before it, max 0.973; one map
    # moves by 0.23 IoU between the levels.
    "ocr_det": {"mask_iou": ("min", 0.95)},
    # fp8 with its depthwise Convs in float (2026-12-06): lines 0.833 / chars 0.992 (more float Convs for
    # NchwcTransformer to reorder; the task metric vs FP32 is 0.745 at default vs 0.740 at basic on 4x the set).
    # The Relu-dropping rewrite this guards against gave lines 0.06.
    # Since the PaddleOCR-style inputs and metric (2026-12-07) both levels score the same on 192 lines.
    "ocr_rec": {"line_agree": ("min", 0.93), "char_agree": ("min", 0.99)},
    "ocr_cls": {"top1_agree": ("min", 0.98)},
    # fp8: 0.953-0.969 with an FP8 zero point (2026-12-05/06), 1.0 without (the default level then scores as
    # the basic level on 256 crops: 0.910 both, bench/README.md).
    "orientation": {"top1_agree": ("min", 0.95)},
    "nsfw_resnet50": {"top1_agree": ("min", 0.98)},
    # its held-out crops include many FP32 near-ties (see THRESHOLDS): int8 mse 0.984 (max prob diff 0.026),
    # max 0.961; fp8 0.969 (1 point in 128 is 0.008: 4 near-ties)
    "efficientnet_lite0": {"top1_agree": ("min", 0.94)},
    "minilm": {"mean_cos": ("min", 0.999), "nn_agree": ("min", 0.95)},
    "silero_vad": {"mean_abs_diff": ("max", 0.005)},
    "layout_det": {"box_recall": ("min", 0.93), "box_precision": ("min", 0.93)},
}
AGREEMENT_CASES = [
    pytest.param(_m.name, _mode, _target, id=f"{_m.name}-{_mode}-{_target}")
    for _m in corpus.MODELS for _mode, _target in OUTPUTS]

_QUANTIZED = {}  # (name, mode, target) -> quantized model path: each is quantized once for all tests
_OUTPUTS = {}  # (model path, basic) -> its output on the model's test inputs: each run once


def _run(name, path, basic):
    if (str(path), basic) not in _OUTPUTS:
        m = corpus.BY_NAME[name]
        _OUTPUTS[str(path), basic] = corpus.run(path, m.build(m.n_test, seed=2), basic=basic)
    return _OUTPUTS[str(path), basic]


@pytest.fixture(scope="session")
def ptqkit(request):
    return request.config.getoption("--ptqkit")


def _quantize(name, mode, target, ptqkit, tmp_path_factory, extra=()):
    key = (name, mode, target, *extra)
    if key in _QUANTIZED:
        return _QUANTIZED[key]
    m = corpus.BY_NAME[name]
    src = corpus.path(m.rel)  # FileNotFoundError naming scripts/fetch_corpus when missing
    work = tmp_path_factory.mktemp("-".join(key).replace("--", ""))
    calib = work / "calib.npz"
    corpus.save_calib(m.build(m.n_calib, seed=1), calib)
    out = work / "q.onnx"
    r = subprocess.run([ptqkit, "quantize", "--onnx_path", str(src), "--output_path", str(out),
                        "--quantize_mode", mode, "--calibration_data_path", str(calib),
                        "--target_runtime", target, *extra],
                       capture_output=True, text=True)
    assert r.returncode == 0, f"ptqkit refused {name} ({mode}):\n{r.stderr[-3000:]}"
    onnx.checker.check_model(str(out), full_check=True)
    n = corpus.count_qdq(out)
    assert n["top"] + n["sub"] > 0, f"{name}: no QuantizeLinear/DequantizeLinear in the output"
    if name == "silero_vad":
        assert n["sub"] > 0, "silero_vad: no Q/DQ inside the If branches, where its network lives"
    if mode == "fp8":  # no zero points: what keeps ONNX Runtime's Relu/Clip + Q rewrites off FP8
        qdq = [n for n in _all_nodes(onnx.load(str(out))) if n.op_type in ("QuantizeLinear", "DequantizeLinear")]
        with_zero_point = [n.name for n in qdq if len(n.input) > 2]
        assert not with_zero_point, f"{name}: FP8 Q/DQ with a zero point: {with_zero_point[:3]}"
    _QUANTIZED[key] = out
    return out


def _all_nodes(model):
    stack, nodes = [model.graph], []
    while stack:
        g = stack.pop()
        for n in g.node:
            nodes.append(n)
            stack += [a.g for a in n.attribute if a.type == onnx.AttributeProto.GRAPH]
    return nodes


def _check(got, bounds, what):
    for key, (kind, bound) in bounds.items():
        ok = got[key] >= bound if kind == "min" else got[key] <= bound
        assert ok, f"{what}: {key}={got[key]:.4f}, needs {kind} {bound} ({got})"


@pytest.mark.parametrize("name,mode,target,basic", CASES)
def test_corpus_model(name, mode, target, basic, ptqkit, tmp_path_factory):
    m = corpus.BY_NAME[name]
    extra = _deployed_extra(mode, basic)
    out = _quantize(name, mode, target, ptqkit, tmp_path_factory, extra)
    test = m.build(m.n_test, seed=2)
    ref = _run(name, corpus.path(m.rel), True)
    level = "ORT_ENABLE_BASIC" if basic else "ORT default level"
    q = _run(name, out, basic)
    qs, refs = (q, ref) if isinstance(q, list) else ([q], [ref])  # the layout detector has 8 outputs
    assert len(qs) == len(refs) and all(a.shape == b.shape and np.isfinite(a).all() for a, b in zip(qs, refs)), \
        f"{name} {mode} {level}: bad output"
    bounds = REDUCE_RANGE_THRESHOLDS.get(name, THRESHOLDS[name][mode]) if extra else THRESHOLDS[name][mode]
    _check(m.metric(ref, q, test), bounds, f"{name} {mode} {target} {' '.join(extra)} at {level}")


@pytest.mark.parametrize("name,mode,target", AGREEMENT_CASES)
def test_default_level_matches_basic(name, mode, target, ptqkit, tmp_path_factory):
    """ONNX Runtime at its default level (fusions, integer kernels) computes what the Q/DQ graph says
    (ORT_ENABLE_BASIC runs it as fake-quant)."""
    m = corpus.BY_NAME[name]
    out = _quantize(name, mode, target, ptqkit, tmp_path_factory, _deployed_extra(mode, False))
    test = m.build(m.n_test, seed=2)
    basic = _run(name, out, True)
    default = _run(name, out, False)
    _check(m.metric(basic, default, test), AGREEMENT[name], f"{name} {mode} {target}: default vs basic level")


DIGESTS = DigestFile(Path(__file__).with_name("output_digests.json"))


@pytest.mark.parametrize("name,mode,target", AGREEMENT_CASES)
def test_output_matches_recorded_digest(name, mode, target, ptqkit, tmp_path_factory, request):
    """Refactors write the same bytes (golden_digests.py says when and how digests are re-recorded)."""
    out = _quantize(name, mode, target, ptqkit, tmp_path_factory, _deployed_extra(mode, False))
    case = f"{name}-{mode}-{target}"
    if request.config.getoption("--record-digests"):
        DIGESTS.record(case, file_digest(out))
        return
    expected = DIGESTS.expected(case)
    if expected is None:
        print(f"{case}: no digest recorded for '{machine_key()}' (test_determinism covers reruns)")
        return
    assert file_digest(out) == expected, f"{case}: the output differs from the recorded one; {RECORD_HELP}"
