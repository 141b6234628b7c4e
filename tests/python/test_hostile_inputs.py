"""Hostile inputs (issue 10): corrupt and adversarial models, data files, option values, output
paths, scores and blocks files, long command lines. Every case must end in one of two ways:

  - a clean refusal: a non-zero exit that is not a crash, one line "ptqkit: error: ..." naming the
    culprit in ptqkit's words (no "internal error", no ONNX Runtime source paths, no JSON-library
    exception text), nothing written, every input unchanged, and all of it quickly (no hang);
  - or a correct result (exit 0) where the input is in fact valid (e.g. a file named w..bin).

Exit codes: 1 for a refused run, 2 for a command-line usage error (README "Exit codes").
"""
from __future__ import annotations

import json
import os
import re
import shutil
import time
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import hostile

# Every refusal must come within this many seconds: the hangs of issue 10 were infinite.
QUICK = 60


def check_refusal(r, *patterns, elapsed=0.0, codes=(1, 2)):
    assert r.returncode in codes, f"expected exit {codes}, got {r.returncode}:\n{r.stdout}\n{r.stderr}"
    line = r.error_line()
    assert "internal error" not in line, line
    assert "onnxruntime_src" not in line and ".cc:" not in line, line
    assert "json.exception" not in line, line
    assert "std::" not in line and "stoull" not in line and "stoi" not in line, line
    for p in patterns:
        assert re.search(p, line, re.IGNORECASE), f"error line does not match {p!r}: {line}"
    assert elapsed < QUICK, f"took {elapsed:.0f} s"
    return line


def _regular_files(paths):
    """Regular files among `paths` (and inside named folders). Pipes and devices are never read:
    hashing one would block (a FIFO) or never end (/dev/zero)."""
    out = []
    for p in map(Path, paths):
        if p.is_dir():
            out += [f for f in sorted(p.rglob("*")) if f.is_file()]
        elif p.is_file():
            out.append(p)
    return out


def _digests(files):
    import hashlib
    return {str(f): hashlib.sha256(f.read_bytes()).hexdigest() for f in files}


class Run:
    def __init__(self, proc):
        self.returncode, self.stdout, self.stderr = proc.returncode, proc.stdout, proc.stderr

    def error_line(self):
        lines = [ln for ln in self.stderr.splitlines() if ln.startswith("ptqkit: error:")]
        assert lines, f"no 'ptqkit: error:' line on stderr:\n{self.stderr[-3000:]}"
        assert len(lines) == 1, lines
        return lines[0]


def run(cli, *args, also_unchanged=()):
    """Runs ptqkit; every regular file named on the command line (and `also_unchanged`) must be
    unchanged afterwards, outputs included: in these cases an output that is an input is refused."""
    import subprocess
    args = [str(a) for a in args]
    watched = _regular_files([a for a in args if os.path.exists(a)] + [str(p) for p in also_unchanged])
    before = _digests(watched)
    start = time.monotonic()
    proc = subprocess.run([cli.binary, *args], capture_output=True, text=True, timeout=QUICK * 3,
                          stdin=subprocess.DEVNULL)
    elapsed = time.monotonic() - start
    r = Run(proc)
    if r.returncode != 0:
        after = _digests([f for f in watched if f.exists()])
        changed = [f for f in before if after.get(f) != before[f]]
        assert not changed, f"a refused run modified {changed}"
    assert r.returncode not in (-6, -11, 134, 139), f"crashed ({r.returncode}):\n{r.stderr[-3000:]}"
    return r, elapsed


def ok(cli, *args):
    r, _ = run(cli, *args)
    assert r.returncode == 0, f"ptqkit failed ({r.returncode}):\n{r.stderr[-3000:]}"
    return r


def listing(folder: Path):
    return sorted(p.name for p in folder.iterdir())


@pytest.fixture
def w(tmp_path):
    """A folder with model.onnx (the MLP), calib.npy, and an out/ folder."""
    hostile.mlp(tmp_path / "model.onnx")
    hostile.mlp_data(tmp_path / "calib.npy")
    (tmp_path / "out").mkdir()
    return tmp_path


def q_args(w, *extra, model=None, data=None, out=None):
    return ["quantize", "--onnx_path", model or w / "model.onnx", "--calibration_data_path",
            data or w / "calib.npy", "--output_path", out or w / "out" / "q.onnx", *extra]


def refuse(cli, w, args, *patterns, also_unchanged=(), codes=(1, 2)):
    before = listing(w / "out") if (w / "out").is_dir() else None
    top = listing(w)
    r, t = run(cli, *args, also_unchanged=also_unchanged)
    line = check_refusal(r, *patterns, elapsed=t, codes=codes)
    if before is not None:
        assert listing(w / "out") == before, "files left behind in out/"
    assert listing(w) == top, f"files left behind: {set(listing(w)) - set(top)}"
    return line


# ------------------------------------------------------------------------------------------------
# Output paths that are inputs: refused before anything is written, the input unchanged.
# ------------------------------------------------------------------------------------------------
OUTPUT_IS_INPUT = [
    ("--output_path", "model.onnx"),
    ("--output_path", "calib.npy"),
    ("--save_calibration_cache", "model.onnx"),
    ("--save_calibration_cache", "calib.npy"),
    ("--log_file", "model.onnx"),
    ("--log_file", "calib.npy"),
]


@pytest.mark.parametrize("flag,victim", OUTPUT_IS_INPUT)
def test_quantize_output_is_an_input(cli, w, flag, victim):
    args = q_args(w) if flag == "--output_path" else q_args(w, flag, w / victim)
    if flag == "--output_path":
        args[args.index("--output_path") + 1] = w / victim
    refuse(cli, w, args, re.escape(flag), "same file", also_unchanged=[w / victim])


@pytest.mark.parametrize("how", ["symlink", "hardlink", "dotdot", "relative_symlink_dir"])
def test_quantize_output_aliases_the_model(cli, w, how):
    if how == "symlink":
        out = w / "out" / "alias.onnx"
        out.symlink_to(w / "model.onnx")
    elif how == "hardlink":
        out = w / "out" / "alias.onnx"
        os.link(w / "model.onnx", out)
    elif how == "dotdot":
        out = w / "out" / ".." / "model.onnx"
    else:
        (w / "out" / "up").symlink_to(w)
        out = w / "out" / "up" / "model.onnx"
    refuse(cli, w, q_args(w, out=out), "same file", also_unchanged=[w / "model.onnx"])


def test_quantize_cache_equals_the_cache_read(cli, w):
    r = ok(cli, *q_args(w, "--save_calibration_cache", w / "cache.json"))
    refuse(cli, w, q_args(w, "--calibration_cache", w / "cache.json", "--save_calibration_cache",
                          w / "cache.json"), "same file", also_unchanged=[w / "cache.json"])
    assert r.returncode == 0


def test_quantize_two_outputs_same_file(cli, w):
    refuse(cli, w, q_args(w, "--save_calibration_cache", w / "out" / "q.onnx"), "same file")


def test_quantize_output_is_a_file_in_the_data_folder(cli, w):
    (w / "data").mkdir()
    hostile.mlp_data(w / "data" / "a.npy")
    refuse(cli, w, q_args(w, data=w / "data", out=w / "data" / "a.npy"), "same file",
           also_unchanged=[w / "data" / "a.npy"])


def test_external_data_output_over_the_models_own_data(cli, tmp_path):
    """--use_external_data_format writes <output>.data: never over the input's external data."""
    m = hostile.mlp(tmp_path / "m.onnx", save=False)
    onnx.save_model(m, tmp_path / "m.onnx", save_as_external_data=True, all_tensors_to_one_file=True,
                    location="q.onnx.data", size_threshold=0)
    hostile.mlp_data(tmp_path / "calib.npy")
    before = (tmp_path / "q.onnx.data").read_bytes()
    r, t = run(cli, "quantize", "--onnx_path", tmp_path / "m.onnx", "--calibration_data_path",
               tmp_path / "calib.npy", "--output_path", tmp_path / "q.onnx", "--use_external_data_format",
               "--dq_only")
    check_refusal(r, "external data", "same file", elapsed=t)
    assert (tmp_path / "q.onnx.data").read_bytes() == before
    assert not (tmp_path / "q.onnx").exists()


@pytest.mark.parametrize("flag,victim", [("--output_json", "model.onnx"), ("--output_json", "calib.npy"),
                                         ("--report", "model.onnx"), ("--report", "calib.npy"),
                                         ("--log_file", "model.onnx")])
def test_sensitivity_output_is_an_input(cli, w, flag, victim):
    args = ["sensitivity", "--onnx_path", w / "model.onnx", "--calibration_data_path", w / "calib.npy", flag,
            w / victim]
    if flag != "--output_json":
        args += ["--output_json", w / "out" / "s.json"]
    refuse(cli, w, args, re.escape(flag), "same file", also_unchanged=[w / victim])


def test_sensitivity_json_and_report_same_file(cli, w):
    refuse(cli, w, ["sensitivity", "--onnx_path", w / "model.onnx", "--calibration_data_path", w / "calib.npy",
                    "--output_json", w / "out" / "s", "--report", w / "out" / "s"], "same file")


@pytest.mark.parametrize("victim", ["scores", "blocks"])
def test_exclude_report_is_an_input(cli, w, victim):
    hostile.scores_file(w / "scores.json", {"/fc1/MatMul": 1.0, "/fc2/MatMul": 0.5})
    (w / "blocks.json").write_text(json.dumps({"fc": ["^/fc"]}))
    target = w / f"{victim}.json"
    refuse(cli, w, ["exclude", "--scores", w / "scores.json", "--blocks", w / "blocks.json", "--report", target],
           "--report", "same file", also_unchanged=[target])


def test_failed_save_leaves_no_calibration_cache(cli, w):
    """The model save fails (its folder is a file): the cache must not be left behind."""
    (w / "blocker").write_text("not a folder")
    refuse(cli, w, q_args(w, "--save_calibration_cache", w / "out" / "cache.json", out=w / "blocker" / "q.onnx"),
           "blocker")
    assert not (w / "out" / "cache.json").exists()


# ------------------------------------------------------------------------------------------------
# Corrupt and adversarial models.
# ------------------------------------------------------------------------------------------------
def _seq_type():
    t = onnx.TypeProto()
    t.sequence_type.elem_type.tensor_type.elem_type = TensorProto.FLOAT
    return t


def _map_type():
    t = onnx.TypeProto()
    t.map_type.key_type = TensorProto.INT64
    t.map_type.value_type.tensor_type.elem_type = TensorProto.FLOAT
    return t


def _no_elem_type():
    t = onnx.TypeProto()
    t.tensor_type.shape.dim.add().dim_value = 1
    return t


MODEL_TYPES = [
    ("no_type", False, r"'x' has no type"),
    ("sequence", _seq_type, r"'x' is a sequence"),
    ("map", _map_type, r"'x' is a map"),
    ("no_elem_type", _no_elem_type, r"'x' is a tensor with no element type"),
]


@pytest.mark.parametrize("name,make_type,pattern", MODEL_TYPES, ids=[c[0] for c in MODEL_TYPES])
def test_model_input_without_tensor_type(cli, w, name, make_type, pattern):
    hostile.mlp(w / "bad.onnx", input_type=make_type() if callable(make_type) else make_type)
    refuse(cli, w, q_args(w, model=w / "bad.onnx"), pattern)


def test_cyclic_graph_names_a_node(cli, w):
    hostile.mlp(w / "cyclic.onnx", cyclic=True)
    line = refuse(cli, w, q_args(w, model=w / "cyclic.onnx"), "cycle")
    assert re.search(r"/fc1/MatMul|/fc2/MatMul|/relu/Relu", line), line


def _random_bytes(path, n, seed=0):
    path.write_bytes(np.random.default_rng(seed).integers(0, 256, n, dtype=np.uint8).tobytes())


CORRUPT_MODELS = [
    ("empty", lambda p: p.write_bytes(b"")),
    ("random_4k", lambda p: _random_bytes(p, 4096)),
    ("random_1", lambda p: _random_bytes(p, 1, 3)),
    ("text", lambda p: p.write_text("this is not an onnx model\n")),
    ("truncated", lambda p: p.write_bytes(hostile.mlp(p, save=False).SerializeToString()[:200])),
    ("json", lambda p: p.write_text('{"graph": {}}')),
    ("npy", lambda p: p.write_bytes(hostile.npy_bytes(data=b"\0" * 512))),
    ("zeros", lambda p: p.write_bytes(b"\0" * 1000)),
]


@pytest.mark.parametrize("name,make", CORRUPT_MODELS, ids=[c[0] for c in CORRUPT_MODELS])
def test_corrupt_model(cli, w, name, make):
    make(w / "bad.onnx")
    refuse(cli, w, q_args(w, model=w / "bad.onnx"), "bad.onnx")


def _with(model_fn):
    def make(p):
        m = hostile.mlp(p, save=False)
        model_fn(m)
        p.write_bytes(m.SerializeToString())
    return make


def _set_opset(v):
    return _with(lambda m: m.opset_import[0].__setattr__("version", v))


def _no_nodes(m):
    del m.graph.node[:]


def _already_quantized(m):
    m.graph.node.append(helper.make_node("QuantizeLinear", ["x", "s"], ["q"], name="q0"))


def _ir1(m):
    m.ir_version = 1


def _no_default_opset(m):
    m.opset_import[0].domain = "com.example"


ODD_MODELS = [
    ("opset_99", _set_opset(99), "opset 99"),
    ("opset_1", _set_opset(1), "opset 1"),
    ("no_nodes", _with(_no_nodes), "no graph nodes"),
    ("already_quantized", _with(_already_quantized), "already quantized"),
    ("ir_version_1", _with(_ir1), "IR version 1"),
    ("no_default_opset", _with(_no_default_opset), "default ONNX opset"),
]


@pytest.mark.parametrize("name,make,pattern", ODD_MODELS, ids=[c[0] for c in ODD_MODELS])
def test_unsupported_model(cli, w, name, make, pattern):
    make(w / "bad.onnx")
    refuse(cli, w, q_args(w, model=w / "bad.onnx"), pattern)


def no_internal(line):
    assert "internal" not in line.lower(), line
    return line


@pytest.mark.parametrize("opset", [8, 13])
def test_ir3_model_with_initializers_not_inputs_is_read_as_ir4(cli, w, opset):
    """IR 3 wants every initializer listed as a graph input; exporters wrote IR 3 without. The model
    is read as IR 4 (what it means), and the output passes the checker: it used to be refused as
    'internal: ... fails the ONNX checker: w1 in initializer but not in graph input'."""
    m = hostile.mlp(w / "ir3.onnx", save=False)
    m.ir_version, m.opset_import[0].version = 3, opset
    (w / "ir3.onnx").write_bytes(m.SerializeToString())
    r = ok(cli, *q_args(w, model=w / "ir3.onnx"))
    assert "read as IR 4" in r.stderr
    onnx.checker.check_model(onnx.load(w / "out" / "q.onnx"), full_check=True)


@pytest.mark.parametrize("mode", ["int4", "int8"])
@pytest.mark.parametrize("dims,pattern", [
    ((4611686018427387904, 4), r"more elements than any file can hold"),      # product overflows
    ((2 ** 31, 2 ** 31, 8), r"more elements than any file can hold"),
    ((1 << 20, 1 << 20), r"declares dims 1048576x1048576 of float32 .* but holds 4096 bytes"),  # fits, no data
])
def test_weight_dims_that_disagree_with_its_data_name_the_weight(cli, w, mode, dims, pattern):
    """Used to be 'internal error: cannot create std::vector larger than max_size()' (INT4) or an
    'out of memory' that named no tensor."""
    m = hostile.mlp(w / "big.onnx", save=False)
    del m.graph.initializer[0].dims[:]
    m.graph.initializer[0].dims.extend(dims)
    (w / "big.onnx").write_bytes(m.SerializeToString())
    no_internal(refuse(cli, w, q_args(w, "--quantize_mode", mode, model=w / "big.onnx"), r"'w1'", pattern))


@pytest.mark.parametrize("length", [None, "1000"])
def test_external_data_shorter_than_the_tensor_names_the_file(cli, w, length):
    """The data file holds fewer bytes than the tensor's dims need: refused by ptqkit naming the
    file and the tensor, not by ONNX Runtime's 'raw_data size does not match'."""
    model = _external_model(w, "w.bin", "0", length, write_data=False)
    (w / "w.bin").write_bytes(hostile.mlp_weight_bytes()[:1000])
    no_internal(refuse(cli, w, q_args(w, model=model), r"w\.bin' holds 1000 bytes for tensor 'w1'", r"need 4096"))


def test_misspelt_subcommand_is_named(cli, w):
    line = no_internal(refuse(cli, w, ["quantise", "--onnx_path", w / "model.onnx"], codes=(2,)))
    assert "unknown subcommand 'quantise'" in line and "did you mean 'quantize'" in line, line


def test_scope_op_type_absent_from_the_model_is_named(cli, w):
    line = no_internal(refuse(cli, w, ["sensitivity", "--onnx_path", w / "model.onnx", "--calibration_data_path",
                                       w / "calib.npy", "--op_types_scope", "NoSuchOp", "--output_json",
                                       w / "out" / "s.json"], r"'NoSuchOp'", r"no node of that op type",
                              codes=(1,)))
    assert "MatMul" in line, line  # the op types the model does have


@pytest.mark.parametrize("dims", [(1, 1000000000000), (1000000000000, 32), (4611686018427387904, 32)])
def test_huge_declared_dims(cli, w, dims):
    """A model declaring an absurd input shape: synthetic data is refused with a size, no bad_alloc."""
    hostile.mlp(w / "huge.onnx", dims=dims)
    refuse(cli, w, ["quantize", "--onnx_path", w / "huge.onnx", "--output_path", w / "out" / "q.onnx"],
           r"(needs|are) .*(iB|EiB|overflow)|fixed batch size is \d+", codes=(1,))


# ---- external data ------------------------------------------------------------------------------
def _external_model(w, location, offset="0", length="4096", write_data=True, name="model.onnx"):
    hostile.mlp(w / name, external=(location, offset, length))
    if write_data and location and not location.startswith("/") and ".." not in Path(location).parts:
        target = w / location
        if not target.exists() and not target.is_symlink():
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(hostile.mlp_weight_bytes())
    return w / name


EXTERNAL_BAD = [
    ("offset_minus_1", "w.bin", "-1", "4096", r"offset '-1'"),
    ("offset_2_64_minus_1", "w.bin", "18446744073709551615", "4096", r"offset '18446744073709551615'"),
    ("offset_abc", "w.bin", "abc", "4096", r"offset 'abc'"),
    ("offset_empty", "w.bin", "", "4096", r"offset ''"),
    ("offset_float", "w.bin", "1e3", "4096", r"offset '1e3'"),
    ("offset_plus", "w.bin", "+4", "4096", r"offset '\+4'"),
    ("offset_past_end", "w.bin", "8192", "4096", r"too short"),
    ("length_minus_5", "w.bin", "0", "-5", r"length '-5'"),
    ("length_huge", "w.bin", "0", "99999999999999999999", r"length '99999999999999999999'"),
    ("length_past_end", "w.bin", "4", "4096", r"too short"),
    ("length_2_63", "w.bin", "0", "9223372036854775807", r"too short"),
    ("absolute", "/etc/hostname", "0", "4096", r"relative path inside the model folder"),
    ("dotdot", "../w.bin", "0", "4096", r"relative path inside the model folder"),
    ("dotdot_inner", "sub/../../w.bin", "0", "4096", r"relative path inside the model folder"),
    ("missing", "nothere.bin", "0", "4096", r"does not exist"),
    ("no_location", "", "0", "4096", r"without a location"),
]


@pytest.mark.parametrize("name,location,offset,length,pattern", EXTERNAL_BAD, ids=[c[0] for c in EXTERNAL_BAD])
def test_external_data_refused(cli, w, name, location, offset, length, pattern):
    model = _external_model(w, location, offset, length, write_data=name != "missing")
    refuse(cli, w, q_args(w, model=model), pattern)


def test_external_data_symlink_escaping_the_folder(cli, tmp_path):
    outside = tmp_path / "outside.bin"
    outside.write_bytes(hostile.mlp_weight_bytes())
    w = tmp_path / "m"
    w.mkdir()
    (w / "out").mkdir()
    hostile.mlp_data(w / "calib.npy")
    (w / "w.bin").symlink_to(outside)
    model = _external_model(w, "w.bin")
    refuse(cli, w, q_args(w, model=model), "outside the model folder")


def test_external_data_symlinked_folder_escaping(cli, tmp_path):
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "w.bin").write_bytes(hostile.mlp_weight_bytes())
    w = tmp_path / "m"
    w.mkdir()
    (w / "out").mkdir()
    hostile.mlp_data(w / "calib.npy")
    (w / "sub").symlink_to(tmp_path / "elsewhere")
    model = _external_model(w, "sub/w.bin")
    refuse(cli, w, q_args(w, model=model), "outside the model folder")


def test_external_data_symlink_inside_the_folder_is_fine(cli, w):
    (w / "real.bin").write_bytes(hostile.mlp_weight_bytes())
    (w / "w.bin").symlink_to(w / "real.bin")
    model = _external_model(w, "w.bin")
    ok(cli, *q_args(w, model=model))


@pytest.mark.parametrize("location", ["w..bin", "..w.bin", "w.bin..", "sub/a..b/w.bin"])
def test_external_data_double_dot_in_a_name_is_not_traversal(cli, w, location):
    model = _external_model(w, location)
    r = ok(cli, *q_args(w, model=model))
    assert (w / "out" / "q.onnx").exists(), r.stderr


def test_external_data_fifo_refused(cli, w):
    hostile.fifo(w / "w.bin")
    model = _external_model(w, "w.bin")
    refuse(cli, w, q_args(w, model=model), "named pipe")


def test_external_data_directory_refused(cli, w):
    (w / "w.bin").mkdir()
    model = _external_model(w, "w.bin")
    refuse(cli, w, q_args(w, model=model), "directory")


# ------------------------------------------------------------------------------------------------
# Named pipes and devices as inputs: refused at once, never opened for a blocking read.
# ------------------------------------------------------------------------------------------------
SPECIAL = ["fifo", "dev_zero", "dev_null", "fifo_symlink"]


def _special(w, kind, name):
    if kind == "fifo":
        return hostile.fifo(w / name)
    if kind == "fifo_symlink":
        hostile.fifo(w / ("real_" + name))
        (w / name).symlink_to(w / ("real_" + name))
        return w / name
    return Path("/dev/zero" if kind == "dev_zero" else "/dev/null")


@pytest.mark.parametrize("kind", SPECIAL)
def test_special_file_as_model(cli, w, kind):
    p = _special(w, kind, "pipe.onnx")
    refuse(cli, w, q_args(w, model=p), "(named pipe|character device)")


@pytest.mark.parametrize("kind", SPECIAL)
@pytest.mark.parametrize("suffix", [".npy", ".npz"])
def test_special_file_as_data(cli, w, kind, suffix):
    if kind in ("dev_zero", "dev_null"):
        link = w / f"dev{suffix}"
        link.symlink_to("/dev/zero" if kind == "dev_zero" else "/dev/null")
        p = link
    else:
        p = _special(w, kind, "pipe" + suffix)
    refuse(cli, w, q_args(w, data=p), "(named pipe|character device)")


@pytest.mark.parametrize("kind", SPECIAL)
def test_special_file_to_inspect(cli, w, kind):
    p = _special(w, kind, "pipe.onnx")
    refuse(cli, w, ["inspect", p], "(named pipe|character device)")


@pytest.mark.parametrize("kind", ["fifo", "dev_zero"])
@pytest.mark.parametrize("flag", ["--scores", "--blocks"])
def test_special_file_to_exclude(cli, w, kind, flag):
    hostile.scores_file(w / "scores.json", {"a": 1.0})
    p = _special(w, kind, "pipe.json")
    args = ["exclude", "--scores", w / "scores.json"]
    args = ["exclude", "--scores", p] if flag == "--scores" else args + ["--blocks", p]
    refuse(cli, w, args, "(named pipe|character device)")


def test_special_file_as_calibration_cache(cli, w):
    p = hostile.fifo(w / "cache.json")
    refuse(cli, w, q_args(w, "--calibration_cache", p), "named pipe")


def test_fifo_in_a_data_folder_is_skipped(cli, w):
    (w / "data").mkdir()
    hostile.mlp_data(w / "data" / "a.npy")
    hostile.fifo(w / "data" / "b.npy")
    ok(cli, *q_args(w, data=w / "data"))


# ------------------------------------------------------------------------------------------------
# Data files with lying headers.
# ------------------------------------------------------------------------------------------------
NPY_BAD = [
    ("empty", b"", "calib"),
    ("magic_only", b"\x93NUMPY", "calib"),
    ("bad_magic", b"\x93NUMPZ\x01\x00" + b"\0" * 100, "calib"),
    ("version_9", b"\x93NUMPY\x09\x00" + b"\0" * 100, "calib"),
    ("header_len_huge", b"\x93NUMPY\x01\x00\xff\xff" + b"{}", "calib"),
    ("header_len_huge_v2", b"\x93NUMPY\x02\x00\xff\xff\xff\x7f" + b"{}", "calib"),
    ("claims_4gib", hostile.npy_bytes(shape=(1 << 30, 32), data=b"\0" * 128), "truncated"),
    ("claims_overflow", hostile.npy_bytes(shape=(1 << 62, 1 << 62), data=b"\0" * 128), "calib"),
    ("negative_dim", hostile.npy_bytes(shape=(-4, 32)), "calib"),
    ("fortran", hostile.npy_bytes(fortran=True, data=b"\0" * 512), "fortran|order"),
    ("object", hostile.npy_bytes(descr="|O", data=b"\0" * 64), "calib"),
    ("big_endian", hostile.npy_bytes(descr=">f4", data=b"\0" * 512), "calib"),
    ("complex", hostile.npy_bytes(descr="<c8", data=b"\0" * 1024), "calib"),
    ("string", hostile.npy_bytes(descr="<U8", data=b"\0" * 1024), "calib"),
    ("garbage_dict", b"\x93NUMPY\x01\x00\x10\x00" + b"{'descr': 'x'}\n ", "calib"),
    ("not_a_dict", b"\x93NUMPY\x01\x00\x10\x00" + b"[1, 2, 3, 4,]\n  ", "calib"),
    ("wrong_rank", hostile.npy_bytes(shape=(4, 8, 4), data=b"\0" * 512), "rank|shape|dim"),
    ("wrong_width", hostile.npy_bytes(shape=(4, 31), data=b"\0" * 496), "31|32|dim"),
    ("zero_samples", hostile.npy_bytes(shape=(0, 32)), "sample|0|empty"),
    ("random", bytes(np.random.default_rng(5).integers(0, 256, 2000, dtype=np.uint8)), "calib"),
]


@pytest.mark.parametrize("name,content,pattern", NPY_BAD, ids=[c[0] for c in NPY_BAD])
def test_bad_npy(cli, w, name, content, pattern):
    (w / "calib_bad.npy").write_bytes(content)
    refuse(cli, w, q_args(w, data=w / "calib_bad.npy"), pattern)


def _npy(arr):
    import io
    b = io.BytesIO()
    np.save(b, arr)
    return b.getvalue()


X8 = np.random.default_rng(1).standard_normal((8, 32)).astype(np.float32)

NPZ_BAD = [
    ("not_zip", lambda p: p.write_bytes(b"PK this is not a zip"), "zip"),
    ("empty_zip", lambda p: hostile.npz(p, {}), "no arrays"),
    ("non_npy_member", lambda p: hostile.npz(p, {"x.txt": b"hello"}), "not an .npy"),
    ("wrong_key", lambda p: hostile.npz(p, {"y.npy": _npy(X8)}), "'x'|'y'"),
    ("extra_key", lambda p: hostile.npz(p, {"x.npy": _npy(X8), "z.npy": _npy(X8)}), "'z'"),
    ("member_corrupt", lambda p: hostile.npz(p, {"x.npy": b"\x93NUMPY garbage"}), "x"),
    ("deflated_corrupt", lambda p: hostile.npz(p, {"x.npy": b"\x93NUMPY\x01\x00" + b"\xff" * 300}, deflate=True), "x"),
    ("stored_truncated", lambda p: hostile.npz(p, {"x.npy": _npy(X8)[:-100]}), "truncated|holds"),
    ("deflated_truncated", lambda p: hostile.npz(p, {"x.npy": _npy(X8)[:-100]}, deflate=True), "holds|truncated"),
    ("claims_4gib", lambda p: hostile.npz_lying_size(p, (1 << 32) - 1), "1032:1|zip bomb|claims"),
    ("claims_100mib", lambda p: hostile.npz_lying_size(p, 100 << 20), "1032:1|zip bomb|claims"),
    ("claims_small", lambda p: hostile.npz_lying_size(p, 200), "x"),
    ("object_member", lambda p: hostile.npz(p, {"x.npy": hostile.npy_bytes(descr="|O", data=b"\0" * 64)}), "x"),
]


@pytest.mark.parametrize("name,make,pattern", NPZ_BAD, ids=[c[0] for c in NPZ_BAD])
def test_bad_npz(cli, w, name, make, pattern):
    make(w / "calib_bad.npz")
    refuse(cli, w, q_args(w, data=w / "calib_bad.npz"), pattern)


def test_zip_bomb_under_an_unused_key_is_never_inflated(cli, w):
    """1 GiB of zeros (about 1 MB deflated) under a key the model does not take: the key list is
    checked first, so the run is refused in well under a second of inflation."""
    hostile.npz_bomb(w / "bomb.npz", X8)
    assert (w / "bomb.npz").stat().st_size < 4 << 20
    start = time.monotonic()
    refuse(cli, w, q_args(w, data=w / "bomb.npz"), "unused")
    assert time.monotonic() - start < 20


def test_deflated_npz_still_works(cli, w):
    hostile.npz(w / "ok.npz", {"x.npy": _npy(X8)}, deflate=True)
    ok(cli, *q_args(w, data=w / "ok.npz"))


# ------------------------------------------------------------------------------------------------
# Option values.
# ------------------------------------------------------------------------------------------------
OPTIONS_BAD = [
    ("batch_size_0", ["--calibration_batch_size", "0"], "calibration_batch_size", 2),
    ("batch_size_neg", ["--calibration_batch_size", "-1"], "calibration_batch_size", 2),
    ("batch_size_abc", ["--calibration_batch_size", "abc"], "calibration_batch_size", 2),
    ("batch_size_huge", ["--calibration_batch_size", "99999999999999999999"], "calibration_batch_size", 2),
    ("threads_neg", ["--intra_op_num_threads", "-1"], "intra_op_num_threads", 2),
    ("threads_abc", ["--intra_op_num_threads", "x"], "intra_op_num_threads", 2),
    ("threads_huge", ["--intra_op_num_threads", "99999999999"], "intra_op_num_threads", 2),
    ("cuda_huge", ["--calibration_eps", "cuda:99999999999999999999"], "cuda:99999999999999999999", 1),
    ("cuda_neg", ["--calibration_eps", "cuda:-1"], "cuda:-1", 1),
    ("cuda_abc", ["--calibration_eps", "cuda:abc"], "cuda:abc", 1),
    ("cuda_empty", ["--calibration_eps", "cuda:"], "cuda:", 1),
    ("ep_gpu", ["--calibration_eps", "gpu"], "gpu", 1),
    ("ep_empty", ["--calibration_eps", ""], "execution provider", 1),
    ("percentile_0", ["--percentile", "0"], "percentile", 1),
    ("percentile_101", ["--percentile", "101"], "percentile", 1),
    ("percentile_nan", ["--percentile", "nan"], "percentile", 1),
    ("mode", ["--quantize_mode", "int3"], "int3", 1),
    ("method", ["--calibration_method", "magic"], "magic", 1),
    ("method_int4_for_int8", ["--calibration_method", "awq_clip"], "awq_clip", 1),
    ("hp_dtype", ["--high_precision_dtype", "fp64"], "fp64", 1),
    ("log_level", ["--log_level", "LOUD"], "LOUD", 1),
    ("block_size_0", ["--quantize_mode", "int4", "--block_size", "0"], "block_size", 1),
    ("alpha_min_0", ["--quantize_mode", "int4", "--awqclip_alpha_min", "0"], "awqclip_alpha_min", 1),
    ("shapes_garbage", ["--calibration_shapes", "x:abc"], "calibration_shapes", 1),
    ("shapes_unknown_input", ["--calibration_shapes", "nope:8x32"], "nope", 1),
    ("shapes_negative", ["--calibration_shapes", "x:-1x32"], "calibration_shapes", 1),
    ("shapes_empty_dims", ["--calibration_shapes", "x:"], "calibration_shapes", 1),
    ("batch_axis_garbage", ["--calibration_batch_axis", "x:abc"], "calibration_batch_axis", 1),
    ("batch_axis_huge", ["--calibration_batch_axis", "x:99999999999999999999"], "calibration_batch_axis", 1),
    ("unknown_option", ["--frobnicate"], "frobnicate", 2),
    ("missing_value", ["--percentile"], "percentile", 2),
    ("selector_bad_regex", ["--nodes_to_exclude", "("], r"'\('.*regular expression", 1),
    ("selector_backreference", ["--nodes_to_exclude", r"(a)\1"], "regular expression", 1),
    ("selector_lookahead", ["--nodes_to_quantize", "(?=x)"], "regular expression", 1),
    ("response_file_missing", ["@/nonexistent/args.txt"], "response file", 1),
    ("list_file_missing", ["--nodes_to_exclude_file", "/nonexistent/names.txt"], "nodes_to_exclude_file", 1),
]


@pytest.mark.parametrize("name,extra,pattern,code", OPTIONS_BAD, ids=[c[0] for c in OPTIONS_BAD])
def test_bad_option_value(cli, w, name, extra, pattern, code):
    refuse(cli, w, q_args(w, *extra), pattern, codes=(code,))


SYNTHETIC_BAD = [
    ("samples_4e12", ["--num_synthetic_samples", "4000000000000"], r"4000000000000 samples.*(TiB|PiB|EiB)"),
    ("samples_0", ["--num_synthetic_samples", "0"], "num_synthetic_samples"),
    ("samples_neg", ["--num_synthetic_samples", "-3"], "num_synthetic_samples"),
    ("samples_overflow", ["--num_synthetic_samples", "9223372036854775807"], "samples"),
]


@pytest.mark.parametrize("name,extra,pattern", SYNTHETIC_BAD, ids=[c[0] for c in SYNTHETIC_BAD])
def test_bad_synthetic_option(cli, w, name, extra, pattern):
    refuse(cli, w, ["quantize", "--onnx_path", w / "model.onnx", "--output_path", w / "out" / "q.onnx", *extra],
           pattern)


@pytest.mark.parametrize("shape", ["x:1x1000000000000", "x:2x500000000000", "x:1x4611686018427387904",
                                   "x:4611686018427387904x4611686018427387904"])
def test_huge_calibration_shapes(cli, w, shape):
    hostile.mlp(w / "dyn.onnx", dims=("N", "D"))
    refuse(cli, w, ["quantize", "--onnx_path", w / "dyn.onnx", "--output_path", w / "out" / "q.onnx",
                    "--calibration_shapes", shape], r"(needs|are) .*(iB|overflow)")


@pytest.mark.parametrize("shape", ["x:1000000000000x32", "x:4611686018427387904x32"])
def test_huge_batch_in_calibration_shapes_is_one_batch(cli, w, shape):
    """A batch larger than the data is one batch of all samples: a correct run."""
    hostile.mlp(w / "dyn.onnx", dims=("N", "D"))
    ok(cli, "quantize", "--onnx_path", w / "dyn.onnx", "--output_path", w / "out" / "q.onnx",
       "--calibration_shapes", shape)


SENSITIVITY_BAD = [
    ("batch_size_0", ["--calibration_batch_size", "0"], "calibration_batch_size", 2),
    ("threads_neg", ["--intra_op_num_threads", "-1"], "intra_op_num_threads", 2),
    ("samples_0", ["--num_calib_samples", "0"], "num_calib_samples", 2),
    ("granularity", ["--granularity", "layer"], "layer", 1),
    ("metric", ["--metric", "l7"], "l7", 1),
    ("cuda_huge", ["--calibration_eps", "cuda:99999999999999999999"], "cuda:9999", 1),
    # A count below its minimum is a usage error like the other counts (the option table's rule).
    ("cache_limit_neg", ["--activation_cache_limit_mb", "-5"], "activation_cache_limit_mb", 2),
]


@pytest.mark.parametrize("name,extra,pattern,code", SENSITIVITY_BAD, ids=[c[0] for c in SENSITIVITY_BAD])
def test_bad_sensitivity_option(cli, w, name, extra, pattern, code):
    refuse(cli, w, ["sensitivity", "--onnx_path", w / "model.onnx", "--calibration_data_path", w / "calib.npy",
                    "--output_json", w / "out" / "s.json", *extra], pattern, codes=(code,))


# ---- regular expressions: linear time, no recursion ----------------------------------------------
def test_catastrophic_selector_finishes(cli, w):
    """'(a+)+$' against a 31-character name ran forever with std::regex."""
    hostile.mlp(w / "aaa.onnx", names=("a" * 30 + "!", "/fc2/MatMul"))
    start = time.monotonic()
    ok(cli, *q_args(w, "--nodes_to_exclude", "(a+)+$", model=w / "aaa.onnx"))
    assert time.monotonic() - start < QUICK


def test_selector_on_a_50000_character_name(cli, w):
    long_name = "b" * 49999 + "c"
    hostile.mlp(w / "long.onnx", names=(long_name, "/fc2/MatMul"))
    r = ok(cli, *q_args(w, "--nodes_to_exclude", ".*c", model=w / "long.onnx"))
    assert "c " in r.stdout or long_name[-10:] in r.stdout


# ------------------------------------------------------------------------------------------------
# Scores and blocks files.
# ------------------------------------------------------------------------------------------------
SCORES_BAD = [
    ("huge_sum", '{"scores": {"a": 1.7e308, "b": 1.7e308, "c": 1.7e308}}', r"sum to more than the largest double"),
    # The target whose score does not fit is named.
    ("1e999", '{"scores": {"/b/MatMul": 0.5, "a": 1e999}}', r"outside the range of a double at 'a'"),
    ("minus_1e999", '{"scores": {"a": -1e999}}', r"outside the range of a double at 'a'"),
    ("huge_integer", '{"scores": {"a": ' + "9" * 400 + "}}", r"outside the range of a double at 'a'"),
    ("nan_literal", '{"scores": {"a": NaN}}', r"not valid JSON"),
    ("infinity_literal", '{"scores": {"a": Infinity}}', r"not valid JSON"),
    ("not_json", "this is not json", r"not valid JSON"),
    ("empty", "", r"not valid JSON"),
    ("truncated", '{"scores": {"a": 1.0', r"not valid JSON"),
    ("array", "[1, 2, 3]", r"object"),
    ("scores_array", '{"scores": [1, 2]}', r"scores"),
    ("score_string", '{"scores": {"a": "high"}}', r"scores\.a"),
    ("score_null", '{"scores": {"a": null}}', r"scores\.a"),
    ("no_scores", '{"failed": []}', r"scores"),
    ("deep_nesting", "[" * 100000 + "]" * 100000, r"not valid JSON|object|depth"),
    ("binary", "\x00\x01\x02\xff", r"not valid JSON"),
]


def _scores_doc(raw: str) -> str:
    """Merges `raw` (a JSON text, possibly invalid) into an otherwise valid scores document."""
    try:
        doc = json.loads(raw)
    except (ValueError, RecursionError):
        return raw
    if not isinstance(doc, dict):
        return raw
    base = {"onnx_path": "m.onnx", "failed": [], "non_finite": [], "num_non_finite": 0,
            "calibration_source": "real", "num_calibration_samples": 8, "metric": "kl_div",
            "granularity": "node", "target_precision": "int8", "timings": {}, "ptqkit_version": "0.1.0"}
    base.update(doc)
    if "scores" not in doc:
        base.pop("scores", None)
    return json.dumps(base)


# Number literals no JSON writer produces: spliced into an otherwise valid document as text.
LITERAL_SCORES = {"1e999", "minus_1e999", "huge_integer", "nan_literal", "infinity_literal"}


@pytest.mark.parametrize("name,raw,pattern", SCORES_BAD, ids=[c[0] for c in SCORES_BAD])
def test_bad_scores_file(cli, w, name, raw, pattern):
    if name in LITERAL_SCORES:
        text = _scores_doc('{"scores": {"z": 0.0}}').replace('{"z": 0.0}', raw[len('{"scores": '):-1])
    else:
        text = _scores_doc(raw)
    (w / "s.json").write_text(text, encoding="latin-1")
    refuse(cli, w, ["exclude", "--scores", w / "s.json", "--coverage", "0.5"], pattern)


def test_coverage_never_nan(cli, w):
    """Large but summable scores: a finite coverage_pct, the top one excluded."""
    hostile.scores_file(w / "s.json", {"a": 1e307, "b": 1e307, "c": 1e300})
    r = ok(cli, "exclude", "--scores", w / "s.json", "--coverage", "0.5", "--format", "json")
    doc = json.loads(r.stdout)
    assert "nan" not in r.stdout.lower() and "nan" not in r.stderr.lower()
    assert doc["excluded"] == ["a"] if "excluded" in doc else True


BLOCKS_BAD = [
    ("invalid_regex", {"g": ["("]}, r"group 'g'.*regular expression"),
    ("backreference", {"g": [r"(a)\1"]}, r"group 'g'.*regular expression"),
    ("number", {"g": 5}, r"group 'g'"),
    ("number_in_list", {"g": ["a", 5]}, r"group 'g'"),
    ("not_object", ["a", "b"], r"object"),
    ("null_group", {"g": None}, r"group 'g'"),
]


@pytest.mark.parametrize("name,blocks,pattern", BLOCKS_BAD, ids=[c[0] for c in BLOCKS_BAD])
def test_bad_blocks_file(cli, w, name, blocks, pattern):
    hostile.scores_file(w / "s.json", {"/a/MatMul": 1.0, "/b/MatMul": 0.5})
    (w / "b.json").write_text(json.dumps(blocks))
    refuse(cli, w, ["exclude", "--scores", w / "s.json", "--blocks", w / "b.json"], pattern)


@pytest.mark.parametrize("pattern", ["(a+)+$", "(a|aa)+$", "(.*)*c", "^(a*)*b$"])
def test_blocks_catastrophic_patterns_finish(cli, w, pattern):
    hostile.scores_file(w / "s.json", {"a" * 40: 1.0, "a" * 30 + "!": 2.0, "x": 0.5})
    (w / "b.json").write_text(json.dumps({"g": [pattern]}))
    start = time.monotonic()
    ok(cli, "exclude", "--scores", w / "s.json", "--blocks", w / "b.json")
    assert time.monotonic() - start < QUICK


def test_blocks_on_a_200000_character_target(cli, w):
    long_name = "x" * 199999 + "c"
    hostile.scores_file(w / "s.json", {long_name: 1.0, "short": 0.1})
    (w / "b.json").write_text(json.dumps({"g": [".*c"]}))
    r = ok(cli, "exclude", "--scores", w / "s.json", "--blocks", w / "b.json", "--coverage", "0.95")
    assert long_name in r.stdout


# ------------------------------------------------------------------------------------------------
# Long argument lists: any length works, and any node name round-trips.
# ------------------------------------------------------------------------------------------------
def _names(n):
    return [f"/model/layers.{i}/self_attn/q_proj/MatMul" for i in range(n)]


@pytest.mark.parametrize("n", [1000, 3000])
def test_long_command_line_does_not_crash(cli, w, n):
    """~29 KB of arguments crashed in ONNX Runtime's telemetry (a recursive regex over
    /proc/self/cmdline); 3000 names are ~90 KB."""
    r, _ = run(cli, *q_args(w, "--log_level", "ERROR", "--nodes_to_exclude", *_names(n), "/fc1/MatMul"))
    assert r.returncode == 0, r.stderr[-2000:]


def test_response_file(cli, w):
    args = w / "args.txt"
    args.write_text("\n".join(["--nodes_to_exclude", *_names(5000), "/fc1/MatMul", ""]))
    r = ok(cli, *q_args(w, "--log_level", "ERROR", f"@{args}"))
    assert "/fc1/MatMul" in r.stdout and "--nodes_to_exclude" in r.stdout


def test_nodes_to_exclude_file(cli, w):
    (w / "names.txt").write_text("\n".join([*_names(5000), "/fc1/MatMul"]) + "\n")
    r = ok(cli, *q_args(w, "--log_level", "ERROR", "--nodes_to_exclude_file", w / "names.txt"))
    assert re.search(r"/fc1/MatMul\s+excluded by user \(--nodes_to_exclude /fc1/MatMul\)", r.stdout), r.stdout


def test_response_file_fifo_refused(cli, w):
    p = hostile.fifo(w / "args.txt")
    refuse(cli, w, q_args(w, f"@{p}"), "named pipe")


ODD_NAMES = [
    "/has space/MatMul",
    "/brackets[0]/MatMul",
    "/quote'd/MatMul",
    '/double"quote/MatMul',
    "-leading-dash",
    "@at-sign",
    "/glob*/MatMul?",
    "/dollar$HOME/MatMul",
    "/back\\slash/MatMul",
    "/tab\there/MatMul",
]


@pytest.mark.parametrize("odd", ODD_NAMES)
def test_exclude_args_round_trip(cli, w, odd):
    """exclude --format args > f; quantize @f excludes exactly that node, whatever its name."""
    hostile.mlp(w / "odd.onnx", names=(odd, "/fc2/MatMul"))
    hostile.scores_file(w / "s.json", {odd: 1.0, "/fc2/MatMul": 0.01})
    r = ok(cli, "exclude", "--scores", w / "s.json", "--coverage", "0.995", "--format", "args")
    (w / "ex.args").write_text(r.stdout)
    q = ok(cli, *q_args(w, f"@{w / 'ex.args'}", model=w / "odd.onnx"))
    assert f"excluded by user (--nodes_to_exclude {odd})" in q.stdout, q.stdout
    out = onnx.load(w / "out" / "q.onnx")
    node = next(n for n in out.graph.node if n.name == odd)
    producers = {o: n for n in out.graph.node for o in n.output}
    assert all(producers.get(i) is None or producers[i].op_type != "DequantizeLinear" for i in node.input), q.stdout
    # Without the exclusion the node is quantized: the round trip is what kept it in float.
    base = ok(cli, *q_args(w, model=w / "odd.onnx", out=w / "out" / "base.onnx"))
    assert "excluded by user" not in base.stdout


@pytest.mark.parametrize("odd", ["/has space/MatMul", "/brackets[0]/MatMul", "/quote'd/MatMul", "-dash", "@at"])
def test_exclude_cli_refuses_names_the_shell_would_mangle(cli, w, odd):
    hostile.scores_file(w / "s.json", {odd: 1.0, "/fc2/MatMul": 0.01})
    refuse(cli, w, ["exclude", "--scores", w / "s.json", "--coverage", "0.995", "--format", "cli"],
           "--format args")


def test_exclude_list_round_trips_through_a_names_file(cli, w):
    odd = "/has space[0]/'MatMul'"
    hostile.mlp(w / "odd.onnx", names=(odd, "/fc2/MatMul"))
    hostile.scores_file(w / "s.json", {odd: 1.0, "/fc2/MatMul": 0.01})
    r = ok(cli, "exclude", "--scores", w / "s.json", "--coverage", "0.995", "--format", "list")
    (w / "names.txt").write_text(r.stdout)
    q = ok(cli, *q_args(w, "--nodes_to_exclude_file", w / "names.txt", model=w / "odd.onnx"))
    assert odd in q.stdout


# ------------------------------------------------------------------------------------------------
# inspect
# ------------------------------------------------------------------------------------------------
def _write(path, data):
    path.write_bytes(data)
    return path


INSPECT_BAD = [
    ("missing", lambda w: w / "nope.onnx", "does not exist"),
    ("directory", lambda w: w / "out", "directory"),
    ("garbage", lambda w: _write(w / "g.onnx", b"\x08\x01garbage" * 50), "not a valid ONNX"),
    ("empty", lambda w: _write(w / "e.onnx", b""), "not a valid ONNX"),
]


@pytest.mark.parametrize("name,make,pattern", INSPECT_BAD, ids=[c[0] for c in INSPECT_BAD])
def test_inspect_bad(cli, w, name, make, pattern):
    refuse(cli, w, ["inspect", make(w)], pattern)


def test_inspect_model_with_external_data_escape(cli, tmp_path):
    (tmp_path / "secret").write_bytes(hostile.mlp_weight_bytes())
    w = tmp_path / "m"
    w.mkdir()
    (w / "w.bin").symlink_to(tmp_path / "secret")
    model = _external_model(w, "w.bin")
    r, t = run(cli, "inspect", model)
    check_refusal(r, "outside the model folder", elapsed=t)
