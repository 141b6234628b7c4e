// numpy arrays -> ptqkit::HostTensor, for calibration data given in memory.
// The Python layer (ptqkit/_calibration.py) has already turned every accepted shape of
// calibration_data into {input name: array}; this copies each array's bytes into a HostTensor
// (HostTensor owns its bytes, and the GIL is released while the C++ library reads them).
// numpy's C API is deliberately not used: the dtype is read from Python attributes and the bytes
// through the buffer protocol, which holds for every numpy and pybind11 version (pybind11 2.10,
// Debian's, reads dtype structs with numpy 1.x's layout, which numpy 2 changed).
#pragma once

#include <pybind11/pybind11.h>

#include <map>
#include <string>

#include "ptqkit/tensor.h"

namespace ptqkit::python {

// Throws ptqkit::Error naming the input for a dtype ptqkit has no ONNX type for (object, str,
// complex, ...). Non-contiguous and byte-swapped arrays are copied to native C order first.
HostTensor ToHostTensor(const std::string& name, const pybind11::object& array);

// REQUIRES: every value of `arrays` is a numpy array (the Python layer converts).
std::map<std::string, HostTensor> ToHostTensors(const pybind11::dict& arrays);

}  // namespace ptqkit::python
