"""The corpus test runs the `ptqkit` binary given by --ptqkit (ctest passes the built target; default
<repo>/build/ptqkit) on the real models fetched by scripts/fetch_corpus."""
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def pytest_addoption(parser):
    parser.addoption("--ptqkit", default=str(REPO / "build" / "ptqkit"),
                     help="path to the ptqkit binary (default: <repo>/build/ptqkit)")
    parser.addoption("--record-digests", action="store_true",
                     help="record this machine's output digests (output_digests.json) instead of comparing")
