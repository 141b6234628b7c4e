"""The large-model test runs the `ptqkit` binary given by --ptqkit (ctest passes the built target; default
<repo>/build/ptqkit) on a decoder LLM over 2 GiB that build_decoder.py writes."""
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def pytest_addoption(parser):
    parser.addoption("--ptqkit", default=str(REPO / "build" / "ptqkit"),
                     help="path to the ptqkit binary (default: <repo>/build/ptqkit)")
