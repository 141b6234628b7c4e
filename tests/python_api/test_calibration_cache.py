"""score(calibration_cache=T) with a table from `ptqkit calibrate --for_sensitivity` gives the scores
score() computes when it calibrates itself (the table observes exactly the scan's tensors)."""
from __future__ import annotations

import ptqkit.sensitivity


def test_score_from_a_calibrate_table_equals_score(cli, transformer, transformer_npz, tmp_path):
    table = tmp_path / "table.json"
    cli.ok("calibrate", "--onnx_path", transformer, "--calibration_data_path", transformer_npz,
           "--for_sensitivity", "--granularity", "node", "-o", table)
    fresh = ptqkit.sensitivity.score(onnx_path=transformer, calibration_data=str(transformer_npz),
                                     granularity="node")
    cached = ptqkit.sensitivity.score(onnx_path=transformer, calibration_data=str(transformer_npz),
                                      granularity="node", calibration_cache=table)
    assert cached["scores"] == fresh["scores"] and cached["failed"] == fresh["failed"]
