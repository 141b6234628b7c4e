"""The option table (src/options): the README's table is generated from it, every flag of ModelOpt
0.47's own argument parser is taken with ModelOpt's meaning or refused with a reason, and the
ModelOpt options ptqkit implements do what they say on real runs."""
from __future__ import annotations

import importlib
import json
import os
import re
import struct
import sys
import types
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import models

ROOT = Path(__file__).resolve().parents[2]
CACHE = Path(os.environ.get("PTQKIT_CACHE_DIR", Path.home() / ".cache" / "ptqkit"))
MODELOPT_WHEEL = CACHE / "modelopt" / "nvidia_modelopt-0.47.0-py3-none-any.whl"


def test_readme_table_is_the_generated_one(cli):
    readme = (ROOT / "README.md").read_text()
    begin = readme.index("<!-- options table:")
    begin = readme.index("\n", begin) + 1
    end = readme.index("<!-- end of options table -->")
    assert readme[begin:end] == cli.ok("options").stdout, "README's option table is stale: paste `ptqkit options`"


# ---- ModelOpt's own argument parser -------------------------------------------------------------
@pytest.fixture(scope="module")
def modelopt_parser():
    """ModelOpt 0.47's get_parser(), loaded from its wheel (scripts/setup keeps it in the cache).
    Only the parser module and the two small modules it reads are executed: the package
    __init__ files (which import torch and CUDA) are skipped, and the quantize() function that
    main() would call is replaced, since no test calls main()."""
    assert MODELOPT_WHEEL.is_file(), f"{MODELOPT_WHEEL} missing: run scripts/setup"
    saved = {k: v for k, v in sys.modules.items() if k == "modelopt" or k.startswith("modelopt.")}
    try:
        for name in ("modelopt", "modelopt.onnx", "modelopt.onnx.quantization"):
            package = types.ModuleType(name)
            package.__path__ = [f"{MODELOPT_WHEEL}/{name.replace('.', '/')}"]
            sys.modules[name] = package
        placeholder = types.ModuleType("modelopt.onnx.quantization.quantize")
        placeholder.quantize = lambda *a, **k: pytest.fail("ModelOpt's quantize() must not run")
        sys.modules[placeholder.__name__] = placeholder
        main = importlib.import_module("modelopt.onnx.quantization.__main__")
        yield main.get_parser()
    finally:
        for k in [k for k in sys.modules if k == "modelopt" or k.startswith("modelopt.")]:
            del sys.modules[k]
        sys.modules.update(saved)


def _sample_values(action) -> list[list[str]]:
    """Command-line values to try for one ModelOpt flag: each choice, or one typical value."""
    if action.nargs == 0:
        return [[]]
    if action.choices:
        return [[c] for c in action.choices]
    samples = {"calibration_shapes": ["x:1x3x8x8"], "override_shapes": ["x:1x3x8x8"], "opset": ["17"],
               "calibration_eps": ["cpu"], "use_zero_point": ["True"], "input_shapes_profile": ['[{}]'],
               "op_types_to_quantize": ["Conv", "MatMul"], "mha_accumulation_dtype": ["fp16"]}
    name = action.option_strings[0].lstrip("-")
    if name in samples:
        return [samples[name]]
    if action.type is int:
        return [["3"]]
    return [["value"]] if action.nargs in (None, "?") else [["a", "b"]]


def _modelopt_value(value) -> str:
    """A ModelOpt namespace value written as ptqkit's `options --parse` writes values."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return " ".join(json.dumps(v) if isinstance(v, dict) else str(v) for v in value)
    return str(value)


def test_every_modelopt_flag_is_taken_or_refused_with_a_reason(modelopt_parser, cli, tmp_path):
    table = {o["name"]: o for o in json.loads(cli.ok("options", "--format", "json").stdout)}
    aliases = {a: o for o in table.values() for a in o["aliases"]}
    defaults = json.loads(cli.ok("options", "--parse", "--", "--onnx_path", "m.onnx").stdout)
    checked = 0
    for action in modelopt_parser._actions:
        if not action.option_strings or action.option_strings[0] in ("-h", "--help"):
            continue
        flag = action.option_strings[0]
        name = flag.lstrip("-")
        spec = table.get(name) or aliases.get(name)
        assert spec is not None, f"ModelOpt's {flag} is not in ptqkit's option table"
        assert spec["quantize"] and spec["cli"], flag
        for values in _sample_values(action):
            args = ["--onnx_path", "m.onnx"] if name != "onnx_path" else []
            r = cli.run("options", "--parse", "--", *args, flag, *values)
            assert "not expected" not in r.stderr and "was not expected" not in r.stderr, (flag, r.stderr)
            if spec["refusal"]:
                assert r.returncode == 1 and f"{flag} is not taken by ptqkit: " in r.stderr, (flag, r.stderr)
                assert len(spec["refusal"]) > 40, f"{flag}: say why and what to use instead"
                continue
            if r.returncode != 0:
                # A value ptqkit refuses must say why in its own words, not as a bare parse error.
                message = r.stderr.strip().splitlines()[-1]
                assert r.returncode == 1 and flag in message and len(message) > 60, (flag, values, r.stderr)
                continue
            ours = json.loads(r.stdout)[spec["name"]]
            theirs = _modelopt_value(getattr(modelopt_parser.parse_args(["--onnx_path", "m.onnx", flag, *values]),
                                             action.dest))
            if name == "log_level":
                theirs, ours = theirs.upper(), ours.upper()
            if ours != theirs:
                assert spec["modelopt_difference"], (
                    f"{flag} {values}: ModelOpt reads {theirs!r}, ptqkit {ours!r}, and the table declares no "
                    "difference")
            checked += 1
        # Defaults: the same, or the difference is declared.
        if not spec["refusal"] and action.default not in (None, False, argparse_suppress()):
            theirs = _modelopt_value(action.default)
            ours = defaults[spec["name"]]
            if theirs != ours and not spec["modelopt_difference"]:
                pytest.fail(f"{flag}: ModelOpt's default {theirs!r}, ptqkit's {ours!r}, no difference declared")
    assert checked > 40  # the parser really was walked


def argparse_suppress():
    import argparse

    return argparse.SUPPRESS


# ---- the ModelOpt options on real runs ----------------------------------------------------------
def _q_scales(model: onnx.ModelProto) -> dict[str, float]:
    """{quantized tensor: scale} of the activation QuantizeLinear nodes."""
    inits = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
    return {n.input[0]: float(inits[n.input[1]].reshape(-1)[0]) for n in model.graph.node
            if n.op_type == "QuantizeLinear" and n.input[0] not in inits and inits[n.input[1]].size == 1}


def test_trt_calibration_cache_round_trip(cli, small_cnn, small_cnn_calib, tmp_path):
    cache = tmp_path / "model.cache"
    cli.quantize(small_cnn, tmp_path / "a.onnx", "--calibration_data_path", small_cnn_calib,
                 "--save_calibration_cache_path", cache)
    lines = cache.read_text().splitlines()
    assert lines[0].startswith("TRT-") and all(re.fullmatch(r".+: [0-9a-f]{8}", line) for line in lines[1:])
    written = _q_scales(onnx.load(tmp_path / "a.onnx"))
    assert len(lines) - 1 == len(written) > 0
    for line in lines[1:]:
        name, hexa = line.rsplit(": ", 1)
        assert struct.unpack("!f", bytes.fromhex(hexa))[0] == pytest.approx(written[name], rel=1e-6)

    # Read back (no data: every planned tensor is in the cache, so nothing is calibrated).
    r = cli.quantize(small_cnn, tmp_path / "b.onnx", "--calibration_cache_path", cache)
    assert "ranges read from" in r.stdout
    read = _q_scales(onnx.load(tmp_path / "b.onnx"))
    assert read.keys() == written.keys()
    for k in read:
        assert read[k] == pytest.approx(written[k], rel=1e-6)


def test_trt_calibration_cache_scales_are_used_as_written(cli, small_cnn, small_cnn_calib, tmp_path):
    cli.quantize(small_cnn, tmp_path / "a.onnx", "--calibration_data_path", small_cnn_calib)
    first = _q_scales(onnx.load(tmp_path / "a.onnx"))
    tensor = sorted(first)[0]
    cache = tmp_path / "one.cache"  # ModelOpt's example form: one tensor, TensorRT 8.5's header
    cache.write_text(f"TRT-8501-EntropyCalibration2\n{tensor}: {struct.pack('!f', 0.125).hex()}\n")
    r = cli.quantize(small_cnn, tmp_path / "b.onnx", "--calibration_data_path", small_cnn_calib,
                     "--calibration_cache_path", cache)
    assert "have no scale in" in r.stderr  # the others are calibrated, and it says so
    scales = _q_scales(onnx.load(tmp_path / "b.onnx"))
    assert scales[tensor] == pytest.approx(0.125, rel=1e-6)
    assert all(scales[k] == first[k] for k in first if k != tensor)


@pytest.mark.parametrize("text, message", [
    ("", "empty"),
    ("nonsense\nx: 3e000000\n", "not a TensorRT calibration cache"),
    ("TRT-8501-EntropyCalibration2\nx 3e000000\n", "expected '<tensor name>: <hex scale>'"),
    ("TRT-8501-EntropyCalibration2\nx: 7fc00000\n", "not a positive finite number"),
    ("TRT-8501-EntropyCalibration2\nx: zz\n", "expected 8 hex digits"),
])
def test_bad_trt_calibration_cache(cli, small_cnn, tmp_path, text, message):
    cache = tmp_path / "bad.cache"
    cache.write_text(text)
    r = cli.run("quantize", "--onnx_path", small_cnn, "--output_path", tmp_path / "o.onnx",
                "--calibration_cache_path", cache)
    assert r.returncode == 1 and message in r.error_line() and not (tmp_path / "o.onnx").exists()


def test_opset_and_override_shapes(cli, small_cnn, small_cnn_calib, tmp_path):
    out = tmp_path / "o.onnx"
    sample = list(np.load(small_cnn_calib).shape[1:])
    cli.quantize(small_cnn, out, "--calibration_data_path", small_cnn_calib, "--opset", "18",
                 "--override_shapes", f"{models.SMALL_CNN_INPUT}:{'x'.join(map(str, [4] + sample))}")
    m = onnx.load(out)
    assert {o.domain: o.version for o in m.opset_import}[""] == 18
    dims = [d.dim_value for d in m.graph.input[0].type.tensor_type.shape.dim]
    assert dims == [4] + sample
    onnx.checker.check_model(m, full_check=True)

    r = cli.quantize(small_cnn, tmp_path / "low.onnx", "--calibration_data_path", small_cnn_calib, "--opset", "11")
    assert "--opset 11 is below" in r.stderr
    assert {o.domain: o.version for o in onnx.load(tmp_path / "low.onnx").opset_import}[""] == models.OPSET

    bad = cli.run("quantize", "--onnx_path", small_cnn, "--output_path", tmp_path / "x.onnx",
                  "--override_shapes", "nope:1x2")
    assert bad.returncode == 1 and "'nope' is not a tensor input" in bad.error_line()


def _model_with_constant_subgraph(path):
    """x -> MatMul(W) -> Add(b) where W = Reshape(Mul(w0, 2), Concat(Shape(w0)...)) and b = Add(b0, b1):
    nodes that only compute constants, plus a dead branch."""
    rng = np.random.default_rng(0)
    w0 = rng.standard_normal((32, 32)).astype(np.float32)
    inits = [numpy_helper.from_array(w0, "w0"), numpy_helper.from_array(np.float32(2.0), "two"),
             numpy_helper.from_array(rng.standard_normal(32).astype(np.float32), "b0"),
             numpy_helper.from_array(rng.standard_normal(32).astype(np.float32), "b1")]
    nodes = [helper.make_node("Mul", ["w0", "two"], ["w2"], name="scale_w"),
             helper.make_node("Shape", ["w0"], ["w_shape"], name="w_shape"),
             helper.make_node("Reshape", ["w2", "w_shape"], ["w"], name="reshape_w"),
             helper.make_node("Add", ["b0", "b1"], ["b"], name="add_b"),
             helper.make_node("MatMul", ["x", "w"], ["h"], name="matmul"),
             helper.make_node("Add", ["h", "b"], ["y"], name="bias"),
             helper.make_node("Relu", ["h"], ["unused"], name="dead_relu")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 32])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", 32])], inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), path)


def test_simplify_folds_constants_and_removes_dead_nodes(cli, tmp_path):
    model = tmp_path / "m.onnx"
    _model_with_constant_subgraph(model)
    x = np.random.default_rng(1).standard_normal((64, 32)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    plain, simple = tmp_path / "plain.onnx", tmp_path / "simple.onnx"
    cli.quantize(model, plain, "--calibration_data_path", tmp_path / "x.npy")
    r = cli.quantize(model, simple, "--calibration_data_path", tmp_path / "x.npy", "--simplify")
    assert "folded 4 node(s)" in r.stderr and "removed 1 dead node(s)" in r.stderr
    ops = [n.op_type for n in onnx.load(simple).graph.node if n.op_type not in ("QuantizeLinear", "DequantizeLinear")]
    assert sorted(ops) == ["Add", "MatMul"]
    # The folded weight is an initializer now, quantized per channel like any weight.
    weights = [n for n in onnx.load(simple).graph.node if n.op_type == "QuantizeLinear" and n.input[0] == "w"]
    assert len(weights) == 1
    run = lambda p: ort.InferenceSession(str(p), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    reference = run(model)
    cos = np.sum(run(simple) * reference, 1) / np.linalg.norm(run(simple), axis=1) / np.linalg.norm(reference, axis=1)
    assert cos.min() > 0.999


@pytest.mark.parametrize("args, message", [
    (["--target_dla"], "--target_dla is not taken by ptqkit: ptqkit does not target DLA"),
    (["--model_id", "bert-base"], "--model_id is not taken by ptqkit"),
    (["--calibrate_per_node"], "--calibrate_per_node is not taken by ptqkit: ptqkit's calibration already keeps"),
    (["--direct_io_types"], "--direct_io_types changes the graph inputs/outputs"),
    (["--mha_accumulation_dtype", "fp32"], "--mha_accumulation_dtype fp32: ptqkit keeps the attention core"),
    (["--trt_rtx_backend", "abi"], "no TensorRT-RTX provider"),
    (["--input_shapes_profile", '[{"a": "b"}]'], "is for the cpu provider, which takes no shape profile"),
    (["--input_shapes_profile", "[1]"], "an entry is not an object"),
])
def test_modelopt_flags_refused_with_a_reason(cli, small_cnn, small_cnn_calib, tmp_path, args, message):
    out = tmp_path / "o.onnx"
    r = cli.run("quantize", "--onnx_path", small_cnn, "--output_path", out, "--calibration_data_path",
                small_cnn_calib, *args)
    assert r.returncode == 1 and message in r.error_line(), r.stderr
    assert not out.exists()


def test_modelopt_spellings(cli, small_cnn, small_cnn_calib, tmp_path):
    """`--use_zero_point True/False`, lower-case log levels, `--passes concat_elimination`,
    `--keep_intermediate_files`, `--trust_calibration_data` and `--disable_mha_qdq` are taken."""
    parsed = lambda *a: json.loads(cli.ok("options", "--parse", "--", "--onnx_path", "m", *a).stdout)
    assert parsed("--use_zero_point")["use_zero_point"] == "true"
    assert parsed("--use_zero_point", "True")["use_zero_point"] == "true"
    assert parsed("--use_zero_point", "False")["use_zero_point"] == "false"
    assert parsed("--calibration_method", "rtn_dq")["calibration_method"] == "rtn"
    r = cli.quantize(small_cnn, tmp_path / "o.onnx", "--calibration_data_path", small_cnn_calib, "--log_level",
                     "info", "--passes", "concat_elimination", "--keep_intermediate_files",
                     "--trust_calibration_data", "--disable_mha_qdq")
    assert "ptqkit writes no intermediate files" in r.stderr and "never unpickles" in r.stderr


def test_disable_mha_qdq_keeps_attention_matmuls_float_under_selectors(cli, transformer, calib, tmp_path):
    data = calib("transformer", n=16)
    on, off = tmp_path / "on.onnx", tmp_path / "off.onnx"
    cli.quantize(transformer, off, "--calibration_data_path", data, "--op_types_to_quantize", "MatMul")
    r = cli.quantize(transformer, on, "--calibration_data_path", data, "--op_types_to_quantize", "MatMul",
                     "--disable_mha_qdq")
    assert "attention core MatMul (--disable_mha_qdq)" in r.stdout
    def quantized(path):
        graph = onnx.load(path).graph
        dq = {o for n in graph.node if n.op_type == "DequantizeLinear" for o in n.output}
        return {n.name for n in graph.node if n.op_type != "QuantizeLinear" and any(i in dq for i in n.input)}

    attention = quantized(off) - quantized(on)
    assert attention and all("attn/MatMul" in n for n in attention), attention


def test_trt_plugins_put_the_trt_provider_first(cli, small_cnn, small_cnn_calib, tmp_path):
    plugin = tmp_path / "plugin.so"
    plugin.write_bytes(b"")
    r = cli.quantize(small_cnn, tmp_path / "o.onnx", "--calibration_data_path", small_cnn_calib,
                     "--trt_plugins", plugin)
    assert "adding the trt provider" in r.stderr


def test_calibrate_takes_the_model_options(cli, tmp_path):
    """`ptqkit calibrate --simplify` observes the model `quantize --simplify` plans on, so a table
    calibrated alone quantizes to the same bytes."""
    model = tmp_path / "m.onnx"
    _model_with_constant_subgraph(model)
    np.save(tmp_path / "x.npy", np.random.default_rng(2).standard_normal((32, 32)).astype(np.float32))
    common = ["--calibration_data_path", tmp_path / "x.npy", "--simplify", "--opset", "18", "--eval_samples", "0"]
    cli.ok("calibrate", "--onnx_path", model, *common, "-o", tmp_path / "table.json")
    cli.quantize(model, tmp_path / "a.onnx", *common, "--save_calibration_cache", tmp_path / "saved.json")
    cli.quantize(model, tmp_path / "b.onnx", "--calibration_cache", tmp_path / "table.json", "--simplify",
                 "--opset", "18")
    assert (tmp_path / "a.onnx").read_bytes() == (tmp_path / "b.onnx").read_bytes()
