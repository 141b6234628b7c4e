"""ptqkit: post-training quantization of ONNX models, with the call shapes of ModelOpt's
``modelopt.onnx.quantization``, so switching is a change of import::

    import numpy as np
    import ptqkit

    ptqkit.quantize(onnx_path="model.onnx", calibration_data=np.load("calib.npz"),
                    output_path="model.quant.onnx", quantize_mode="int8")

    from ptqkit.sensitivity import score, suggest_exclusion, summarize_exclusion

Everything runs in the C++ library (the extension ``ptqkit._ptqkit``); this package only maps
Python arguments onto its options. Errors are ``ptqkit.Error`` (a ``ValueError``) carrying the
library's one-line message; ``error.kind`` is "invalid_input", "io", "runtime" or "unsupported".
The command lines are ``python -m ptqkit`` (= ``ptqkit quantize``) and
``python -m ptqkit.sensitivity`` (= ``ptqkit sensitivity``). ``ptqkit.distributed`` (needs Ray:
``pip install 'ptqkit[ray]'``) runs a sensitivity scan as shards on a Ray cluster.
"""
from ptqkit._ptqkit import Error
from ptqkit._quantize import quantize
from ptqkit import sensitivity

__version__ = "0.1.0"
__all__ = ["Error", "quantize", "sensitivity", "__version__"]
