"""jitd: xla_client's local client API on the jitd daemon.

    import numpy as np
    import jitd

    c = jitd.ComputationBuilder("add_one")
    x = c.ParameterFromNumpy(np.zeros(3, np.float32))
    c.Add(x, c.ConstantF32Scalar(1.0))
    exe = c.Build().Compile()
    print(exe.Execute([np.arange(3, dtype=np.float32)]))   # [1. 2. 3.]

Everything runs in the per-machine daemon (`jitd serve`); this package is
Python over libjitd.so (ctypes) and numpy, with the per-call hot path of
Execute in C when its extension jitd._fast is built (fast_path_status()).
Errors raise JitdError with the jitd status code and message.
"""

from ._status import JitdError, StatusCode
from ._types import Shape
from ._client import (Client, CompileOptions, JitdNotImplementedError, LocalBuffer,
                      LocalExecutable, PLATFORMS, available_platforms, compile_stablehlo,
                      fast_path_status, get_client,
                      transfer_from_outfeed, transfer_to_infeed)
from ._builder import (Computation, ComputationBuilder, FftType, GatherDimensionNumbers,
                       LocalComputation, Op, PaddingType, PrimitiveType,
                       ScatterDimensionNumbers)
from ._lib import library_path
from ._remote import XrtBackend, get_backend, remote_identity

__version__ = "0.1.0"

__all__ = [
    "Client", "CompileOptions", "Computation", "ComputationBuilder", "FftType",
    "GatherDimensionNumbers",
    "JitdError", "JitdNotImplementedError", "LocalBuffer", "LocalComputation",
    "LocalExecutable", "Op", "PLATFORMS", "PaddingType", "PrimitiveType",
    "ScatterDimensionNumbers", "Shape", "StatusCode", "available_platforms",
    "compile_stablehlo", "fast_path_status", "get_client",
    "library_path", "transfer_from_outfeed", "transfer_to_infeed",
    "XrtBackend", "get_backend", "remote_identity",
]
