#pragma once

#include <pybind11/pybind11.h>

namespace ptqkit {

// Registers ptqkit.AutotuneOptions; call before binding QuantizeOptions (which holds one).
void BindAutotuneOptions(pybind11::module_& m);

}  // namespace ptqkit
