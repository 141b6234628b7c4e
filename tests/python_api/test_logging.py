"""Library messages reach Python's `logging` (logger "ptqkit"); `python -m ptqkit` keeps the CLI's
stderr format."""
from __future__ import annotations

import logging
import os
import subprocess
import sys

import ptqkit


def test_library_warnings_go_to_the_ptqkit_logger(small_cnn, tmp_path, caplog):
    with caplog.at_level(logging.WARNING, logger="ptqkit"):
        ptqkit.quantize(onnx_path=str(small_cnn), output_path=str(tmp_path / "q.onnx"))  # no data: warns
    messages = [r.getMessage() for r in caplog.records if r.name == "ptqkit" and r.levelno == logging.WARNING]
    assert any("synthetic" in m for m in messages), messages


def test_module_cli_keeps_the_cli_stderr_format(small_cnn, tmp_path):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    r = subprocess.run([sys.executable, "-m", "ptqkit", "--onnx_path", str(small_cnn), "--output_path",
                        str(tmp_path / "q.onnx")], capture_output=True, text=True, env=env, timeout=600)
    assert r.returncode == 0, r.stderr
    assert "[ptqkit warning]" in r.stderr and "synthetic" in r.stderr
