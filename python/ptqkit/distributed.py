"""ptqkit.distributed: a sensitivity scan spread over a Ray cluster, with the result of score().

    import ray, ptqkit.distributed
    ray.init()                                    # or ray.init(address="ray://head:10001")
    result = ptqkit.distributed.score("model.onnx", "calib.npz", granularity="node")

It runs the same shards as the command line (``ptqkit calibrate --shard K/N``, ``calibrate
--merge``, ``ptqkit sensitivity --shard K/N --calibration_cache T``, ``sensitivity --merge``) as
Ray tasks: calibration shards, one merge on the driver, probe shards, one merge on the driver.
Every task runs the C++ command line inside its worker (the extension's parser, as
``python -m ptqkit``), so a task computes exactly what the CLI computes, and the merged result is
the one ``ptqkit.sensitivity.score()`` returns for the same arguments (timings aside).

Files reach the workers in one of two ways (``transfer=``):
  - "object_store" (default): the driver puts the model, the data and the merged table into
    Ray's object store; each task writes them to a local temporary folder, removed when the
    task ends (so once per task: for very large models prefer "path"). Works on any cluster,
    for models that keep their weights inside the .onnx file.
  - "path": tasks read the driver's absolute paths; needs a filesystem every node shares
    (NFS, Lustre, ...), and is the way for models with external data files.

A task whose worker dies (killed, out of memory, node lost) is retried by Ray up to
``max_retries`` times; so is one that fails with an OSError (a flaky disk). A task that fails
because of its input (ptqkit's own error) is not retried: it would fail again the same way.
Ray is an optional dependency: ``pip install 'ptqkit[ray]'``.
"""
from __future__ import annotations

import inspect
import json
import os
import sys
import tempfile
import time

import numpy as np

from ptqkit import _calibration, _option_table, _options, _ptqkit

__all__ = ["score", "ShardFailed"]


class ShardFailed(RuntimeError):
    """A shard's ptqkit command failed; the message carries its stage, shard and ptqkit's error."""


# score()'s options that the driver handles itself rather than passing to every shard: the model,
# the data and the table travel as files (see _FileRef); the outputs are written once, after the
# merge; the workers' logs are captured (quoted when a shard fails), so there is no log_file.
_DRIVER_OPTIONS = {"onnx_path", "calibration_data_path", "calibration_cache", "output_json", "report", "log_file"}
_TABLE = [spec for spec in _option_table.specs("sensitivity") if spec["name"] != "log_file"]
_BY_NAME = _option_table.by_name(_TABLE)
_RAY_DEFAULTS = {"num_calibration_shards": None, "num_probe_shards": None, "num_cpus_per_task": 1,
                 "num_gpus_per_task": 0, "max_retries": 3, "transfer": "object_store", "address": None,
                 "progress": True, "_task_hook": None}


def score(onnx_path, calibration_data=None, *args, num_calibration_shards=None, num_probe_shards=None,
          num_cpus_per_task: float = 1, num_gpus_per_task: float = 0, max_retries: int = 3,
          transfer: str = "object_store", address=None, progress=True, _task_hook=None, **options) -> dict:
    """ptqkit.sensitivity.score() on a Ray cluster; score()'s arguments (but log_file: the
    workers' logs are captured, and quoted when a shard fails) and its result (but timings).

    calibration_cache: a table from `ptqkit calibrate --for_sensitivity` (or an earlier run);
    then no calibration shards run.

    num_calibration_shards / num_probe_shards: how many Ray tasks each stage splits into
    (default: the cluster's CPUs / num_cpus_per_task). Each probe shard computes the FP32
    reference itself, so more shards than workers only pays off for balance.
    num_cpus_per_task: Ray CPUs per task; ONNX Runtime in the task uses that many threads unless
    intra_op_num_threads says otherwise. num_gpus_per_task > 0 puts tasks on GPUs, and then the
    providers default to TensorRT, CUDA, CPU (each used when the worker's ONNX Runtime has it).
    max_retries: retries of a task whose worker died or that raised OSError.
    transfer: "object_store" or "path" (see the module doc). address: passed to ray.init() when
    Ray is not initialised yet (None starts a local cluster). progress: True draws a status line
    on stderr, False nothing, or a callable(stage, done, total).

    Returns the scores file's content as a dict, as score() does; raises ShardFailed naming the
    stage and shard when a task fails for good, ImportError when Ray is not installed.
    """
    if transfer not in ("object_store", "path"):
        raise ValueError(f"transfer must be 'object_store' or 'path', not {transfer!r}")
    _option_table.take_scan_positional(args, options)  # granularity, metric, ... (ModelOpt's order)
    if options.get("log_level") is None:
        options["log_level"] = "WARNING"  # the workers' logs are captured anyway
    if options.get("calibration_eps") is None:
        options["calibration_eps"] = ("trt", "cuda:0", "cpu") if num_gpus_per_task else ("cpu",)
    if options.get("intra_op_num_threads") is None:
        options["intra_op_num_threads"] = max(1, int(num_cpus_per_task))
    given = _option_table.given_text("score", _BY_NAME, options)  # a bad value fails here, before Ray starts
    ray = _import_ray()
    if not ray.is_initialized():
        ray.init(address=address, log_to_driver=False)
    report_progress = _progress_reporter(progress)
    workers = max(1, int(ray.cluster_resources().get("CPU", 1) // max(num_cpus_per_task, 1e-9)))
    n_calib = int(num_calibration_shards or workers)
    n_probe = int(num_probe_shards or workers)
    log_level = given["log_level"][0]

    user_path = _options.path(onnx_path)
    with tempfile.TemporaryDirectory(prefix="ptqkit-distributed-") as scratch:
        model = _FileRef.of(os.path.abspath(user_path), transfer, ray)
        data = _data_ref(calibration_data, options.get("calibration_data_path"), user_path,
                         _option_table.batch_axes(given), scratch, transfer, ray)
        remote = ray.remote(_run_task).options(
            num_cpus=num_cpus_per_task, num_gpus=num_gpus_per_task, max_retries=int(max_retries),
            retry_exceptions=[OSError])

        # 1. calibration shards -> one table, merged on the driver. --for_sensitivity: the table
        # observes exactly the scan's tensors (see pipeline/calibrate.h), at the scan's precision
        # and synthetic sample count (calibrate's names for them).
        calib_args = ["calibrate", "--for_sensitivity", *_flags(given, "calibrate")]
        calib_args += ["--quantize_mode", given.get("target_precision", [_BY_NAME["target_precision"]["default"]])[0],
                       "--num_synthetic_samples",
                       given.get("num_calib_samples", [_BY_NAME["num_calib_samples"]["default"]])[0]]
        if "calibration_cache" not in given:
            parts = _run_stage(ray, remote, "calibration", n_calib, model, data, None, calib_args, "-o",
                               report_progress, _task_hook)
            table_path = os.path.join(scratch, "table.json")
            _merge(["calibrate", "--merge", *_write_parts(parts, scratch, "calibration"), "-o", table_path,
                    "--log_level", log_level], "calibration")
        else:
            table_path = os.path.abspath(given["calibration_cache"][0])
        table = _FileRef.of(table_path, transfer, ray)

        # 2. probe shards, each with the merged table and its own FP32 reference.
        probe_args = ["sensitivity", *_flags(given, "sensitivity")]
        parts = _run_stage(ray, remote, "probes", n_probe, model, data, table, probe_args, "--output_json",
                           report_progress, _task_hook)
        merged_path = os.path.join(scratch, "merged.json")
        merge_args = ["sensitivity", "--merge", *_write_parts(parts, scratch, "probes"),
                      "--output_json", merged_path, "--log_level", log_level]
        if "report" in given:
            merge_args += ["--report", given["report"][0]]
        _merge(merge_args, "probes")
        with open(merged_path, encoding="utf-8") as f:
            text = f.read()

    # Tasks saw the model under another path (a worker's copy, or the absolute path): the result
    # names it as the caller did, as score() does.
    worker_path = json.loads(text)["onnx_path"]
    text = text.replace('"onnx_path": ' + json.dumps(worker_path, ensure_ascii=False),
                        '"onnx_path": ' + json.dumps(user_path, ensure_ascii=False), 1)
    if "output_json" in given:
        with open(given["output_json"][0], "w", encoding="utf-8") as f:
            f.write(text)
    return json.loads(text)


def _signature() -> inspect.Signature:
    # Three defaults of its own (see score()); the Ray parameters last.
    params = _option_table.keywords(_TABLE, _option_table.scan_parameters(_BY_NAME),
                                    skip=("calibration_eps", "intra_op_num_threads", "log_level"))
    params += [inspect.Parameter("calibration_eps", inspect.Parameter.KEYWORD_ONLY, default=None),
               inspect.Parameter("intra_op_num_threads", inspect.Parameter.KEYWORD_ONLY, default=None),
               inspect.Parameter("log_level", inspect.Parameter.KEYWORD_ONLY, default="WARNING")]
    params += [inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default)
               for name, default in _RAY_DEFAULTS.items()]
    return inspect.Signature(params, return_annotation=dict)


score.__signature__ = _signature()


# --- driver side ----------------------------------------------------------------------------------

def _import_ray():
    try:
        import ray
    except ImportError as e:
        raise ImportError("ptqkit.distributed needs Ray: pip install 'ptqkit[ray]' (or pip install ray)") from e
    return ray


class _FileRef:
    """A file (or a folder of .npy/.npz files) as tasks receive it: a path, or its bytes in the
    object store."""

    def __init__(self, name: str, path: str | None = None, ref=None, is_dir: bool = False):
        self.name, self.path, self.ref, self.is_dir = name, path, ref, is_dir

    @staticmethod
    def of(path: str, transfer: str, ray) -> "_FileRef":
        name = os.path.basename(path.rstrip(os.sep)) or "data"
        if transfer == "path":
            return _FileRef(name, path=path)
        if os.path.isdir(path):
            files = {f: _read(os.path.join(path, f)) for f in sorted(os.listdir(path))
                     if f.endswith((".npy", ".npz"))}
            return _FileRef(name, ref=ray.put(files), is_dir=True)
        return _FileRef(name, ref=ray.put(_read(path)))


def _read(path: str) -> bytes:
    with open(path, "rb") as f:
        return f.read()


def _data_ref(calibration_data, calibration_data_path, onnx_path, batch_axis, scratch, transfer, ray):
    data = _calibration.resolve(calibration_data, calibration_data_path, onnx_path, batch_axis)
    if data.path:
        return _FileRef.of(os.path.abspath(data.path), transfer, ray)
    if data.arrays is None:
        return None  # synthetic: every task generates the same seeded samples
    # In-memory arrays: written once as .npz, which the library reads to the same values.
    path = os.path.join(scratch, "calibration.npz")
    arrays = dict(data.arrays)
    if list(arrays) == [""]:  # a bare array for a single-input model: .npy binds it the same way
        path = os.path.join(scratch, "calibration.npy")
        np.save(path, arrays[""])
    else:
        np.savez(path, **arrays)
    return _FileRef.of(path, transfer, ray)


def _flags(given: dict[str, list[str]], command: str) -> list[str]:
    """The given options that `ptqkit <command>` takes, as its flags (the driver's own left out)."""
    args = []
    for name, values in given.items():
        spec = _BY_NAME[name]
        if spec[command] and name not in _DRIVER_OPTIONS:
            args += [f"--{name}", *values]
    return args


def _run_stage(ray, remote, stage, n, model, data, table, args, output_flag, report_progress, hook) -> list[bytes]:
    pending = {remote.remote(stage, k, n, model, data, table, args, output_flag, hook): k for k in range(n)}
    results: dict[int, bytes] = {}
    report_progress(stage, 0, n)
    while pending:
        done, _ = ray.wait(list(pending), num_returns=1)
        for ref in done:
            k = pending.pop(ref)
            results[k] = ray.get(ref)  # raises the task's ShardFailed once retries are spent
            report_progress(stage, len(results), n)
    return [results[k] for k in range(n)]


def _write_parts(parts: list[bytes], scratch: str, stage: str) -> list[str]:
    paths = []
    for k, content in enumerate(parts):
        path = os.path.join(scratch, f"{stage}.part{k}.json")
        with open(path, "wb") as f:
            f.write(content)
        paths.append(path)
    return paths


def _merge(args: list[str], stage: str) -> None:
    code, log = _run_cli_captured(args)
    if code != 0:
        raise ShardFailed(f"merging the {stage} parts failed (exit code {code}): {_last_error(log)}")


def _progress_reporter(progress):
    if callable(progress):
        return progress
    if not progress:
        return lambda stage, done, total: None
    start = time.monotonic()

    def draw(stage, done, total):
        end = "\n" if done == total else ""
        sys.stderr.write(f"\rptqkit.distributed: {stage} {done}/{total} shard(s) "
                         f"[{time.monotonic() - start:.1f} s]{end}")
        sys.stderr.flush()
    return draw


# --- worker side ----------------------------------------------------------------------------------

def _run_task(stage, k, n, model, data, table, args, output_flag, hook) -> bytes:
    """One shard, in a Ray worker: materialise the inputs, run the ptqkit command, return the part."""
    if hook is not None:
        hook(stage, k)  # tests use it to kill a worker
    with tempfile.TemporaryDirectory(prefix="ptqkit-task-") as work:
        cmd = [*args, "--onnx_path", _materialise(model, work), "--shard", f"{k}/{n}"]
        if data is not None:
            cmd += ["--calibration_data_path", _materialise(data, work)]
        if table is not None:
            cmd += ["--calibration_cache", _materialise(table, work)]
        out = os.path.join(work, "part.json")
        code, log = _run_cli_captured([*cmd, output_flag, out])
        if code != 0:
            raise ShardFailed(f"{stage} shard {k}/{n} failed (exit code {code}): {_last_error(log)}")
        return _read(out)


def _materialise(ref: _FileRef, work: str) -> str:
    if ref.path is not None:
        return ref.path
    import ray

    content = ray.get(ref.ref)
    target = os.path.join(work, ref.name)
    if ref.is_dir:
        os.makedirs(target)
        for name, blob in content.items():
            with open(os.path.join(target, name), "wb") as f:
                f.write(blob)
    else:
        with open(target, "wb") as f:
            f.write(content)
    return target


def _run_cli_captured(args: list[str]) -> tuple[int, str]:
    """Runs `ptqkit <args>` in this process with its stdout/stderr (C++ writes straight to the
    file descriptors) captured, so worker logs stay quiet and a failure can quote ptqkit."""
    with tempfile.TemporaryFile(mode="w+b") as log:
        sys.stdout.flush()
        sys.stderr.flush()
        saved = [os.dup(1), os.dup(2)]
        try:
            os.dup2(log.fileno(), 1)
            os.dup2(log.fileno(), 2)
            code = _ptqkit.run_cli(["ptqkit", *args])
        finally:
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            for fd in saved:
                os.close(fd)
        log.seek(0)
        return code, log.read().decode("utf-8", "replace")


def _last_error(log: str) -> str:
    lines = [line for line in log.splitlines() if line.strip()]
    errors = [line for line in lines if "error" in line]
    return (errors or lines or ["(no output)"])[-1]
