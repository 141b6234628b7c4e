"""Builders for the hostile-input suite (test_hostile_inputs.py): tiny models with a chosen defect,
data files with lying headers, zip bombs, named pipes. Kept apart from models.py, whose models are
well-formed by design.
"""
from __future__ import annotations

import json
import os
import struct
import zipfile
import zlib
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17


def mlp(path, names=("/fc1/MatMul", "/fc2/MatMul"), input_type=None, dims=(1, 32), save=True,
        external=None, cyclic=False) -> onnx.ModelProto:
    """x[dims] -> MatMul(32x32) -> Relu -> MatMul(32x32) -> y. Quantizable by default rules.

    names: the two MatMul node names. input_type: a TypeProto to declare for x instead of float
    tensor `dims`. external: (location, offset, length) strings for the first weight's external data
    (raw bytes are then written by the caller). cyclic: the first MatMul reads the second's output.
    """
    rng = np.random.default_rng(0)
    w1 = (rng.standard_normal((32, 32)) * 0.2).astype(np.float32)
    w2 = (rng.standard_normal((32, 32)) * 0.2).astype(np.float32)
    first_input = "y" if cyclic else "x"
    nodes = [
        helper.make_node("MatMul", [first_input, "w1"], ["h"], name=names[0]),
        helper.make_node("Relu", ["h"], ["r"], name="/relu/Relu"),
        helper.make_node("MatMul", ["r", "w2"], ["y"], name=names[1]),
    ]
    inits = [numpy_helper.from_array(w1, "w1"), numpy_helper.from_array(w2, "w2")]
    if external is not None:
        t = inits[0]
        t.ClearField("raw_data")
        t.data_location = TensorProto.EXTERNAL
        location, offset, length = external
        for key, value in (("location", location), ("offset", offset), ("length", length)):
            if value is not None:
                entry = t.external_data.add()
                entry.key, entry.value = key, value
    if input_type is None:
        x = helper.make_tensor_value_info("x", TensorProto.FLOAT, list(dims))
    else:
        x = onnx.ValueInfoProto(name="x")
        if input_type is not False:
            x.type.CopyFrom(input_type)
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [dims[0], 32])
    g = helper.make_graph(nodes, "mlp", [x], [y], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", OPSET)])
    m.ir_version = 8
    if save:
        Path(path).write_bytes(m.SerializeToString())
    return m


def mlp_weight_bytes() -> bytes:
    rng = np.random.default_rng(0)
    return (rng.standard_normal((32, 32)) * 0.2).astype(np.float32).tobytes()


def mlp_data(path, n=8):
    np.save(path, np.random.default_rng(1).standard_normal((n, 32)).astype(np.float32))


def npy_bytes(descr="<f4", shape=(4, 32), fortran=False, data=b"", version=1) -> bytes:
    header = f"{{'descr': '{descr}', 'fortran_order': {fortran}, 'shape': {tuple(shape)}, }}"
    pad = 64 - (10 + len(header) + 1) % 64
    header = header + " " * pad + "\n"
    if version == 1:
        return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode() + data
    return b"\x93NUMPY\x02\x00" + struct.pack("<I", len(header)) + header.encode() + data


def npz(path, members: dict[str, bytes], deflate=False):
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED if deflate else zipfile.ZIP_STORED) as z:
        for name, data in members.items():
            z.writestr(name, data)


def npz_lying_size(path, claimed: int):
    """A deflated member whose zip directory entries claim `claimed` uncompressed bytes."""
    data = npy_bytes(shape=(8, 32), data=b"\0" * (8 * 32 * 4))
    npz(path, {"x.npy": data}, deflate=True)
    raw = bytearray(Path(path).read_bytes())
    real = struct.pack("<I", len(data))
    fake = struct.pack("<I", claimed & 0xFFFFFFFF)
    # Local header (offset 22) and central directory (offset 24) both hold the uncompressed size.
    local = raw.find(b"PK\x03\x04")
    central = raw.find(b"PK\x01\x02")
    assert raw[local + 22:local + 26] == real and raw[central + 24:central + 28] == real
    raw[local + 22:local + 26] = fake
    raw[central + 24:central + 28] = fake
    Path(path).write_bytes(bytes(raw))


def npz_bomb(path, used: np.ndarray, bomb_bytes: int = 1 << 30):
    """`x` holds `used`; `unused` is a deflated member of `bomb_bytes` zeros (about 1 MB on disk)."""
    import io
    buf = io.BytesIO()
    np.save(buf, used)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("x.npy", buf.getvalue())
        header = npy_bytes(descr="|u1", shape=(bomb_bytes,))
        with z.open("unused.npy", "w", force_zip64=True) as member:
            member.write(header)
            chunk = b"\0" * (1 << 24)
            for _ in range(bomb_bytes // len(chunk)):
                member.write(chunk)


def fifo(path) -> Path:
    os.mkfifo(path)
    return Path(path)


def scores_file(path, scores: dict, granularity="node", raw: str | None = None):
    doc = {
        "onnx_path": "m.onnx", "scores": scores, "failed": [], "non_finite": [], "num_non_finite": 0,
        "calibration_source": "real", "num_calibration_samples": 8, "metric": "kl_div",
        "granularity": granularity, "target_precision": "int8", "timings": {}, "ptqkit_version": "0.1.0",
    }
    Path(path).write_text(raw if raw is not None else json.dumps(doc))
    return Path(path)
