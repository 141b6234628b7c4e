"""The autotune keywords of ptqkit.quantize() mapped onto QuantizeOptions.autotune
(ptqkit/autotune.h): ModelOpt's `autotune=` and `autotune_*` keywords of
modelopt.onnx.quantization.quantize() with the same meanings, plus ptqkit's own (backend, threads,
min_speedup, max_groups). quantize() declares them with the CLI's names and defaults; the C++
library checks the values and refuses, with the reason, those that have no meaning for ptqkit.
"""
from __future__ import annotations

import os

# keyword -> AutotuneOptions field.
KEYWORDS = {
    "autotune_output_dir": "output_dir",
    "autotune_schemes_per_region": "schemes_per_region",
    "autotune_pattern_cache": "pattern_cache_file",
    "autotune_state_file": "state_file",
    "autotune_qdq_baseline": "qdq_baseline",
    "autotune_node_filter_list": "node_filter_list",
    "autotune_verbose": "verbose",
    "autotune_use_trtexec": "use_trtexec",
    "autotune_timing_cache": "timing_cache",
    "autotune_warmup_runs": "warmup_runs",
    "autotune_timing_runs": "timing_runs",
    "autotune_trtexec_args": "trtexec_args",
    "autotune_backend": "backend",
    "autotune_threads": "threads",
    "autotune_min_speedup": "min_speedup",
    "autotune_max_groups": "max_groups",
}

# ModelOpt's Python spellings of two of them (its CLI uses the names above).
MODELOPT_SPELLINGS = {"autotune_num_schemes_per_region": "autotune_schemes_per_region",
                      "autotune_pattern_cache_file": "autotune_pattern_cache"}

_PATHS = {"output_dir", "pattern_cache_file", "state_file", "qdq_baseline", "timing_cache"}


def mode(autotune) -> str:
    """autotune=False/None: off; True: "default"; or one of "quick", "default", "extensive"."""
    if autotune is None or autotune is False:
        return ""
    if autotune is True:
        return "default"
    if isinstance(autotune, str):
        return autotune  # the library names a bad mode
    raise TypeError(f"autotune must be a bool or 'quick', 'default' or 'extensive', not {type(autotune).__name__}")


def apply(options, autotune, keywords: dict, spellings: dict) -> None:
    """Sets options.autotune from `autotune`, the autotune_* keywords and ModelOpt's spellings of
    two of them (`spellings`: any other name there is a TypeError, as for any function)."""
    a = options.autotune
    a.mode = mode(autotune)
    keywords = dict(keywords)
    for key, value in spellings.items():
        if key not in MODELOPT_SPELLINGS:
            raise TypeError(f"quantize() got an unexpected keyword argument '{key}'")
        if value is not None:
            keywords[MODELOPT_SPELLINGS[key]] = value
    for key, value in keywords.items():
        field = KEYWORDS[key]
        if value is None:
            continue
        if field == "node_filter_list":
            # ModelOpt passes the patterns as a list; a path to a file of them is accepted too.
            if isinstance(value, (str, os.PathLike)):
                with open(value, encoding="utf-8") as f:
                    value = [ln.strip() for ln in f if ln.strip() and not ln.strip().startswith("#")]
            value = [str(v) for v in value]
        elif field in _PATHS:
            value = os.fspath(value)
        setattr(a, field, value)
    options.autotune = a
