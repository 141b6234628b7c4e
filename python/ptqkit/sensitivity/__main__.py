"""python -m ptqkit.sensitivity [options]  (= `ptqkit sensitivity`)."""
import sys

from ptqkit._cli import main

if __name__ == "__main__":
    sys.exit(main("sensitivity", "python -m ptqkit.sensitivity"))
