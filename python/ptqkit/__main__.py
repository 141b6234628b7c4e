"""python -m ptqkit [quantize options]  (= `ptqkit quantize`; `python -m ptqkit exclude ...` etc.
run the other subcommands)."""
import sys

from ptqkit._cli import main

if __name__ == "__main__":
    sys.exit(main("quantize", "python -m ptqkit"))
