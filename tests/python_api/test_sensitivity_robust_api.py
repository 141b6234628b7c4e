"""ptqkit.sensitivity.score(): the activation cache limit keyword, NaN/Inf probes and scans that
score nothing (the CLI side is in tests/python/test_sensitivity_robust.py)."""
from __future__ import annotations

import numpy as np
import pytest

import models
import ptqkit
from ptqkit import sensitivity


def test_whole_model_probes_from_python_match_the_cached_scan(transformer, transformer_npz):
    cached = sensitivity.score(transformer, str(transformer_npz), granularity="node", metric="mse")
    whole = sensitivity.score(transformer, str(transformer_npz), granularity="node", metric="mse",
                              activation_cache_limit_mb=0)
    assert whole["failed"] == [] and set(whole["scores"]) == set(cached["scores"])
    nonzero = [t for t, s in cached["scores"].items() if s > 0]
    assert len(nonzero) > 20
    rel = np.array([abs(whole["scores"][t] - cached["scores"][t]) / cached["scores"][t] for t in nonzero])
    assert np.median(rel) < 1e-3 and rel.max() < 5e-2


def test_negative_cache_limit_is_an_error(transformer, transformer_npz):
    with pytest.raises(ptqkit.Error, match="activation_cache_limit_mb"):
        sensitivity.score(transformer, str(transformer_npz), activation_cache_limit_mb=-1)


def test_scan_that_scores_nothing_raises(transformer, transformer_npz):
    with pytest.raises(ptqkit.Error, match="nothing to score"):
        sensitivity.score(transformer, str(transformer_npz), op_types_scope=["LSTM"])


def test_non_finite_probe_from_python(tmp_path):
    path = tmp_path / "dln.onnx"
    models.make_decomposed_ln_transformer(path)
    data = models.massive_transformer_data(32, models.CALIB_SEED)[0]
    result = sensitivity.score(path, {models.TRANSFORMER_INPUT: data})
    assert result["num_non_finite"] >= 1
    assert "Sqrt" in {e["target"] for e in result["non_finite"]}
    assert result["scores"]["Sqrt"] == 1.7976931348623157e+308
    excluded = sensitivity.suggest_exclusion(result["scores"], coverage=0.0)
    assert "Sqrt" in excluded
    assert sensitivity.summarize_exclusion(result["scores"], excluded)["num_non_finite"] >= 1
