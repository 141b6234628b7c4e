"""`python -m ptqkit` and `python -m ptqkit.sensitivity`: the `ptqkit` binary's command line,
run by the extension (same CLI11 parser, flags, help text, output and exit codes)."""
from __future__ import annotations

import sys

from ptqkit import _ptqkit

SUBCOMMANDS = ("quantize", "calibrate", "sensitivity", "exclude", "inspect", "options")


def main(subcommand: str, prog: str, argv=None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    # `python -m ptqkit exclude ...` etc. reach the other subcommands; anything else is quantize.
    if subcommand == "quantize" and args and args[0] in SUBCOMMANDS:
        subcommand = args.pop(0)
    sys.stdout.flush()
    sys.stderr.flush()
    return _ptqkit.run_cli([prog, subcommand, *args])


def console() -> int:
    """The `ptqkit` command a wheel installs: the binary's whole command line (`ptqkit quantize ...`,
    `ptqkit --version`, every subcommand), run by the extension."""
    sys.stdout.flush()
    sys.stderr.flush()
    return _ptqkit.run_cli(["ptqkit", *sys.argv[1:]])
