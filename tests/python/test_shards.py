"""Sharded calibration and sensitivity scans (issue 13): `ptqkit calibrate --shard K/N` / `--merge`
and `ptqkit sensitivity --shard K/N --calibration_cache T` / `--merge` give exactly what a single
process gives, for N = 1, 2, 3 and any order of the parts, and refuse parts of different runs.
"""
from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest

import models

N_SAMPLES = 24


@pytest.fixture(scope="module")
def dln(gen_dir):
    """A 1-block transformer with decomposed LayerNorms: its node scan has non-finite targets too
    (the order of "failed" across shards is checked in tests/cpp/scan)."""
    path = gen_dir / "shards_dln.onnx"
    models.make_decomposed_ln_transformer(path)
    data = gen_dir / "shards_dln.npy"
    np.save(data, models.massive_transformer_data(N_SAMPLES, models.CALIB_SEED)[0])
    return path, data


def shuffled(paths, seed):
    paths = [str(p) for p in paths]
    random.Random(seed).shuffle(paths)
    return paths


def calibrate_sharded(cli, model, data, n, out_dir, *extra) -> Path:
    parts = []
    for k in range(n):
        parts.append(out_dir / f"calib{n}.part{k}.json")
        cli.ok("calibrate", "--onnx_path", model, "--calibration_data_path", data, "--shard", f"{k}/{n}",
               "-o", parts[-1], *extra)
    merged = out_dir / f"calib{n}.merged.json"
    cli.ok("calibrate", "--merge", *shuffled(parts, n), "-o", merged)
    return merged


def scan_sharded(cli, model, data, n, out_dir, *extra) -> dict:
    parts = []
    for k in range(n):
        parts.append(out_dir / f"scan{n}.part{k}.json")
        cli.ok("sensitivity", "--onnx_path", model, "--calibration_data_path", data, "--shard", f"{k}/{n}",
               "--output_json", parts[-1], *extra)
    merged = out_dir / f"scan{n}.merged.json"
    cli.ok("sensitivity", "--merge", *shuffled(parts, 7 * n), "--output_json", merged)
    return json.loads(merged.read_text())


def without_timings(result: dict) -> dict:
    return {k: v for k, v in result.items() if k != "timings"}


def test_merged_calibration_tables_are_the_single_run_bytes(cli, resnet, calib, tmp_path):
    data = calib("resnet", n=40)
    whole = tmp_path / "whole.json"
    # Batches of 3: 14 batches, the last one short; slices of 14/3 batches.
    cli.ok("calibrate", "--onnx_path", resnet, "--calibration_data_path", data, "--calibration_batch_size", "3",
           "-o", whole)
    table = json.loads(whole.read_text())
    assert table["source"]["model"] and table["source"]["data"]
    for n in (1, 2, 3):
        merged = calibrate_sharded(cli, resnet, data, n, tmp_path, "--calibration_batch_size", "3")
        assert merged.read_bytes() == whole.read_bytes(), f"N = {n}"


def test_more_shards_than_batches_still_merge(cli, resnet, calib, tmp_path):
    data = calib("resnet", n=2)
    whole = tmp_path / "whole.json"
    cli.ok("calibrate", "--onnx_path", resnet, "--calibration_data_path", data, "-o", whole)
    assert calibrate_sharded(cli, resnet, data, 3, tmp_path).read_bytes() == whole.read_bytes()


@pytest.mark.parametrize("mode", [["--quantize_mode", "int8"],
                                  ["--quantize_mode", "fp8", "--target_runtime", "ort_cpu"]])
def test_calibrate_table_serves_quantize(cli, resnet, calib, tmp_path, mode):
    """A table from `ptqkit calibrate` observes what quantize plans (no more: ONNX Runtime fuses
    differently when more tensors are outputs, which moved some amax by an ulp when calibrate
    observed every tensor), so quantizing from the merged table writes the model quantize
    writes when it calibrates itself."""
    data = calib("resnet", n=32)
    table = calibrate_sharded(cli, resnet, data, 2, tmp_path, *mode)
    cli.quantize(resnet, tmp_path / "direct.onnx", "--calibration_data_path", data,
                 "--save_calibration_cache", tmp_path / "saved.json", *mode)
    cli.quantize(resnet, tmp_path / "cached.onnx", "--calibration_cache", table, *mode)
    assert (tmp_path / "direct.onnx").read_bytes() == (tmp_path / "cached.onnx").read_bytes()
    saved, merged = (json.loads(p.read_text()) for p in (tmp_path / "saved.json", table))
    assert saved["CalibrationTable"] == merged["CalibrationTable"]


@pytest.mark.parametrize("granularity,precision", [("node", "int8"), ("op_type", "int8"), ("node", "fp8")])
def test_merged_scans_equal_the_single_process_scan(cli, dln, tmp_path, granularity, precision):
    model, data = dln
    single = tmp_path / "single.json"
    cli.ok("sensitivity", "--onnx_path", model, "--calibration_data_path", data, "--granularity", granularity,
           "--target_precision", precision, "--output_json", single)
    expected = json.loads(single.read_text())
    if granularity == "node" and precision == "int8":
        assert expected["non_finite"], "the model should have non-finite probes"
    for n in (1, 2, 3):
        table = calibrate_sharded(cli, model, data, n, tmp_path, "--for_sensitivity", "--granularity", granularity,
                                  "--quantize_mode", precision)
        merged = scan_sharded(cli, model, data, n, tmp_path, "--granularity", granularity, "--target_precision",
                              precision, "--calibration_cache", table)
        assert without_timings(merged) == without_timings(expected), f"N = {n}"
        assert set(merged["timings"]) >= set(expected["timings"])


def test_merge_writes_the_report_and_ranking(cli, transformer, calib, tmp_path):
    data = calib("transformer", n=16)
    parts = []
    for k in range(2):
        parts.append(tmp_path / f"p{k}.json")
        cli.ok("sensitivity", "--onnx_path", transformer, "--calibration_data_path", data, "--shard", f"{k}/2",
               "--output_json", parts[-1])
    r = cli.ok("sensitivity", "--merge", *parts, "--output_json", tmp_path / "m.json", "--report", tmp_path / "m.html")
    assert (tmp_path / "m.html").read_text().startswith("<!DOCTYPE html>") or "<html" in (tmp_path / "m.html").read_text()
    assert "Wrote" in r.stdout and str(tmp_path / "m.json") in r.stdout


def test_shards_that_calibrate_themselves_merge_too(cli, transformer, calib, tmp_path):
    data = calib("transformer", n=16)
    single = tmp_path / "single.json"
    cli.ok("sensitivity", "--onnx_path", transformer, "--calibration_data_path", data, "--granularity", "node",
           "--output_json", single)
    merged = scan_sharded(cli, transformer, data, 2, tmp_path, "--granularity", "node")
    assert without_timings(merged) == without_timings(json.loads(single.read_text()))


def test_mismatched_sensitivity_parts_are_refused(cli, transformer, calib, tmp_path):
    data = calib("transformer", n=16)
    other_data = tmp_path / "other.npy"
    np.save(other_data, np.load(data)[::-1].copy())

    def part(k, n, name, *extra, model=transformer, data=data):
        path = tmp_path / name
        cli.ok("sensitivity", "--onnx_path", model, "--calibration_data_path", data, "--shard", f"{k}/{n}",
               "--output_json", path, *extra)
        return path

    p0 = part(0, 2, "p0.json")
    cases = {
        "metric differs": part(1, 2, "metric.json", "--metric", "mse"),
        "data differs": part(1, 2, "data.json", data=other_data),
        "granularity differs": part(1, 2, "gran.json", "--granularity", "node"),
    }
    for expected, other in cases.items():
        r = cli.run("sensitivity", "--merge", p0, other, "--output_json", tmp_path / "m.json")
        assert r.returncode == 1 and expected in r.error_line(), (expected, r.stderr)
        assert not (tmp_path / "m.json").exists()
    r = cli.run("sensitivity", "--merge", p0, "--output_json", tmp_path / "m.json")
    assert "shard 1/2 is missing" in r.error_line()
    r = cli.run("sensitivity", "--merge", p0, p0, "--output_json", tmp_path / "m.json")
    assert "given twice" in r.error_line()
    # A part whose ptqkit version differs (edited here: there is only one ptqkit to run).
    p1 = part(1, 2, "p1.json")
    old = json.loads(p1.read_text())
    old["fingerprint"]["ptqkit_version"] = "0.0.9"
    p1.write_text(json.dumps(old))
    r = cli.run("sensitivity", "--merge", p0, p1, "--output_json", tmp_path / "m.json")
    assert "ptqkit_version differs (" in r.error_line() and "vs '0.0.9')" in r.error_line()


def test_mismatched_calibration_parts_and_tables_are_refused(cli, transformer, resnet, calib, tmp_path):
    t_data, r_data = calib("transformer", n=16), calib("resnet", n=16)
    a = tmp_path / "a.json"
    cli.ok("calibrate", "--onnx_path", transformer, "--calibration_data_path", t_data, "--shard", "0/2", "-o", a)
    b = tmp_path / "b.json"
    cli.ok("calibrate", "--onnx_path", transformer, "--calibration_data_path", t_data, "--shard", "1/2",
           "--calibration_method", "max", "-o", b)
    r = cli.run("calibrate", "--merge", a, b, "-o", tmp_path / "m.json")
    assert r.returncode == 1 and "histograms differs" in r.error_line()
    c = tmp_path / "c.json"
    cli.ok("calibrate", "--onnx_path", resnet, "--calibration_data_path", r_data, "--shard", "1/2", "-o", c)
    r = cli.run("calibrate", "--merge", a, c, "-o", tmp_path / "m.json")
    assert "data differs" in r.error_line() or "model differs" in r.error_line()
    # A table calibrated on another model is refused as --calibration_cache of a scan.
    table = tmp_path / "resnet_table.json"
    cli.ok("calibrate", "--onnx_path", resnet, "--calibration_data_path", r_data, "-o", table)
    r = cli.run("sensitivity", "--onnx_path", transformer, "--calibration_data_path", t_data,
                "--calibration_cache", table, "--output_json", tmp_path / "s.json")
    assert r.returncode == 1 and "calibrated on another model" in r.error_line()


def test_bad_shard_options(cli, transformer, tmp_path):
    r = cli.run("calibrate", "--onnx_path", transformer, "--shard", "2/2", "-o", tmp_path / "x.json")
    assert r.returncode == 1 and "expected K/N" in r.error_line()
    r = cli.run("sensitivity", "--merge", tmp_path / "x.json", "--onnx_path", transformer)
    assert r.returncode == 1 and "only part files" in r.error_line()
