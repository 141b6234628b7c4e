"""ptqkit.quantize(autotune=...): ModelOpt's keyword and its autotune_* keywords fill the C++
AutotuneOptions; the report carries the "autotune" part that --report_json writes."""
from __future__ import annotations

import json

import ptqkit
import pytest

FAST = dict(autotune_warmup_runs=1, autotune_timing_runs=5)


@pytest.mark.parametrize("value,mode", [(True, "default"), ("quick", "quick")])
def test_autotune_keyword(small_cnn, small_cnn_npy, tmp_path, value, mode):
    rep = tmp_path / "r.json"
    report = ptqkit.quantize(onnx_path=small_cnn, calibration_data=str(small_cnn_npy), output_path=tmp_path / "q.onnx",
                             report_json=rep, log_level="ERROR", autotune=value,
                             autotune_state_file=tmp_path / "state.json", **FAST)
    a = report["autotune"]
    assert a == json.loads(rep.read_text())["autotune"]
    assert a["used"] and a["mode"] == mode and a["timing_runs"] == 5 and a["warmup_runs"] == 1
    assert a["candidates_timed"] >= 2
    assert a["autotuned"]["median_ms"] <= a["default_placement"]["median_ms"]
    assert a["state_file"] == str(tmp_path / "state.json")


def test_modelopt_keyword_names_and_filter_list(small_cnn, small_cnn_npy, tmp_path):
    report = ptqkit.quantize(onnx_path=small_cnn, calibration_data=str(small_cnn_npy), output_path=tmp_path / "q.onnx",
                             log_level="ERROR", autotune="quick", autotune_num_schemes_per_region=2, autotune_pattern_cache_file=None,
                             autotune_node_filter_list=["no_such_node*"], **FAST)
    a = report["autotune"]
    assert a["groups"] == [] and a["nodes_in_float"] == []  # no region matched the filter


def test_autotune_off_by_default(small_cnn, small_cnn_npy, tmp_path):
    report = ptqkit.quantize(onnx_path=small_cnn, calibration_data=str(small_cnn_npy), output_path=tmp_path / "q.onnx",
                             log_level="ERROR")
    assert report["autotune"] == {"used": False}


def test_unknown_and_refused_keywords(small_cnn, small_cnn_npy, tmp_path):
    with pytest.raises(TypeError, match="autotune_speed"):
        ptqkit.quantize(onnx_path=small_cnn, output_path=tmp_path / "q.onnx", autotune=True, autotune_speed=2)
    with pytest.raises(ptqkit.Error, match="--autotune_trtexec_args applies only"):
        ptqkit.quantize(onnx_path=small_cnn, calibration_data=str(small_cnn_npy), output_path=tmp_path / "q.onnx",
                        autotune="quick", autotune_trtexec_args="--fp16", log_level="ERROR")
    assert not (tmp_path / "q.onnx").exists()
