"""Recorded output digests (test_output_digests.py, tests/corpus/test_corpus.py): refactors must not
change what ptqkit writes.

Digests hold for the machine kind that recorded them: ONNX Runtime's float kernels differ by CPU
instruction set (AVX2 / AVX-512 / VNNI), and calibration ranges, hence scales and codes, follow their
last bits. So a digest file is keyed by ONNX Runtime's version and the CPU's vector features; on a
machine whose key is not recorded a test can only check that two runs write the same bytes.
"""
from __future__ import annotations

import hashlib
import json
import platform
from pathlib import Path

import onnxruntime as ort

RECORD_HELP = ("re-record with --record-digests (pytest option) and say in the commit message why the "
               "outputs changed")


def machine_key() -> str:
    flags = ""
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists():
        for line in cpuinfo.read_text().splitlines():
            if line.startswith("flags"):
                have = set(line.split())
                wanted = ("avx2", "avx512f", "avx512_vnni", "avx512bw", "avx_vnni", "amx_int8", "fma")
                flags = ",".join(f for f in wanted if f in have)
                break
    return f"onnxruntime {ort.__version__} {platform.machine()} [{flags}]"


def file_digest(path: Path) -> str:
    """A model file's digest, with its external data file (<name>.data) when it has one."""
    h = hashlib.sha256(Path(path).read_bytes())
    data = Path(path).with_name(Path(path).name + ".data")
    if data.exists():
        h.update(data.read_bytes())
    return h.hexdigest()


class DigestFile:
    """{machine key: {case: digest}} in a JSON file; record() writes through at once, so a recording
    run that stops part-way keeps what it measured."""

    def __init__(self, path: Path):
        self.path = path
        self.data = json.loads(path.read_text()) if path.exists() else {}

    def expected(self, case: str) -> str | None:
        return self.data.get(machine_key(), {}).get(case)

    def record(self, case: str, digest: str) -> None:
        self.data.setdefault(machine_key(), {})[case] = digest
        self.path.write_text(json.dumps(self.data, indent=1, sort_keys=True) + "\n")
