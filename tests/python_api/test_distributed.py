"""ptqkit.distributed on a local Ray cluster of 2 CPUs (one per module: Ray starts in seconds, not
milliseconds): the scan it runs as Ray tasks returns what ptqkit.sensitivity.score() returns, also
when a worker dies mid-task and Ray retries it. Skipped when Ray is not installed."""
from __future__ import annotations

import os

import numpy as np
import pytest

ray = pytest.importorskip("ray")

import ptqkit.distributed  # noqa: E402
import ptqkit.sensitivity  # noqa: E402


@pytest.fixture(scope="module", autouse=True)
def local_cluster():
    # Workers inherit this process's environment (PYTHONPATH finds the staged package).
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    yield
    ray.shutdown()


def without_timings(result: dict) -> dict:
    return {k: v for k, v in result.items() if k != "timings"}


def test_ray_scan_equals_score(transformer, transformer_npz):
    expected = ptqkit.sensitivity.score(onnx_path=transformer, calibration_data=str(transformer_npz),
                                        granularity="node")
    seen = []
    result = ptqkit.distributed.score(transformer, str(transformer_npz), granularity="node",
                                      num_calibration_shards=2, num_probe_shards=3,
                                      progress=lambda stage, done, total: seen.append((stage, done, total)))
    assert without_timings(result) == without_timings(expected)
    assert ("calibration", 2, 2) in seen and ("probes", 3, 3) in seen


def test_in_memory_data_over_a_shared_path(small_cnn, tmp_path):
    x = np.random.default_rng(3).standard_normal((20, 16, 8, 8)).astype(np.float32)
    expected = ptqkit.sensitivity.score(onnx_path=small_cnn, calibration_data={"cnn_input": x})
    out = tmp_path / "scores.json"
    result = ptqkit.distributed.score(small_cnn, {"cnn_input": x}, transfer="path", progress=False,
                                      output_json=out)
    assert without_timings(result) == without_timings(expected)
    assert out.is_file() and str(small_cnn) in out.read_text()


def test_synthetic_data(small_cnn):
    expected = ptqkit.sensitivity.score(onnx_path=small_cnn, num_calib_samples=12)
    result = ptqkit.distributed.score(small_cnn, num_calib_samples=12, progress=False)
    assert result["calibration_source"] == "synthetic"
    assert without_timings(result) == without_timings(expected)


def test_a_killed_worker_is_retried_with_the_same_result(transformer, transformer_npz, tmp_path):
    marker = tmp_path / "killed_once"

    def die_once(stage, shard):  # a closure: Ray ships it by value to the worker
        if stage == "probes" and shard == 1 and not os.path.exists(marker):
            open(marker, "w").close()
            os._exit(1)  # the worker process dies: a lost task, not an exception

    expected = ptqkit.sensitivity.score(onnx_path=transformer, calibration_data=str(transformer_npz),
                                        granularity="op_type")
    result = ptqkit.distributed.score(transformer, str(transformer_npz), granularity="op_type",
                                      num_probe_shards=2, max_retries=2, progress=False, _task_hook=die_once)
    assert marker.exists(), "the hook never killed a worker"
    assert without_timings(result) == without_timings(expected)


def test_a_given_table_skips_calibration(cli, transformer, transformer_npz, tmp_path):
    table = tmp_path / "table.json"
    cli.ok("calibrate", "--onnx_path", transformer, "--calibration_data_path", transformer_npz,
           "--for_sensitivity", "--granularity", "node", "-o", table)
    stages = set()
    result = ptqkit.distributed.score(transformer, str(transformer_npz), granularity="node", calibration_cache=table,
                                      num_probe_shards=2, progress=lambda stage, done, total: stages.add(stage))
    expected = ptqkit.sensitivity.score(onnx_path=transformer, calibration_data=str(transformer_npz),
                                        granularity="node")
    assert stages == {"probes"}
    assert without_timings(result) == without_timings(expected)


def test_a_failing_shard_names_itself(transformer, transformer_npz):
    with pytest.raises(ptqkit.distributed.ShardFailed, match=r"probes shard 0/1 .*metric"):
        ptqkit.distributed.score(transformer, str(transformer_npz), metric="nonsense", num_probe_shards=1,
                                 progress=False)


def test_an_existing_cluster_by_address(tmp_path):
    """A cluster started elsewhere (here: another process, 1 CPU) reached by address= from a driver
    that has not called ray.init(). Both run as subprocesses: this process already holds a cluster."""
    import subprocess
    import sys

    env = {**os.environ, "RAY_AUTH_MODE": "disabled"}  # a throwaway local cluster: no token
    head = subprocess.Popen([sys.executable, "-c", (
        "import ray, sys, time\n"
        "ray.init(num_cpus=1, include_dashboard=False)\n"
        "print(ray.get_runtime_context().gcs_address, flush=True)\n"
        "sys.stdin.read()\n")], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
        text=True, env=env)
    try:
        address = head.stdout.readline().strip()
        assert address, "the head process did not start a cluster"
        driver = (
            "import json, sys, ptqkit.distributed, ptqkit.sensitivity\n"
            "m, d = sys.argv[1], sys.argv[2]\n"
            "r = ptqkit.distributed.score(m, d, granularity='node', address=sys.argv[3], progress=False)\n"
            "e = ptqkit.sensitivity.score(m, d, granularity='node')\n"
            "r.pop('timings'); e.pop('timings')\n"
            "print('SAME' if r == e else 'DIFFERENT')\n")
        examples = os.path.join(os.path.dirname(__file__), "..", "..", "examples")
        out = subprocess.run([sys.executable, "-c", driver, os.path.join(examples, "resnet_tiny.onnx"),
                              os.path.join(examples, "calib.npy"), address], capture_output=True, text=True,
                             env=env, timeout=300)
        assert out.stdout.strip().endswith("SAME"), out.stderr[-2000:]
    finally:
        head.stdin.close()
        head.wait(timeout=60)
