// ptqkit::AutotuneOptions for Python (QuantizeOptions.autotune); the keywords that fill it are
// in python/ptqkit/_autotune.py.
#include "autotune_binding.h"

#include <pybind11/stl.h>

#include "ptqkit/autotune.h"

namespace ptqkit {
namespace py = pybind11;

void BindAutotuneOptions(py::module_& m) {
  py::class_<AutotuneOptions>(m, "AutotuneOptions", "ptqkit::AutotuneOptions (defaults = the CLI's)")
      .def(py::init<>())
      .def_readwrite("mode", &AutotuneOptions::mode)
      .def_readwrite("schemes_per_region", &AutotuneOptions::schemes_per_region)
      .def_readwrite("warmup_runs", &AutotuneOptions::warmup_runs)
      .def_readwrite("timing_runs", &AutotuneOptions::timing_runs)
      .def_readwrite("max_groups", &AutotuneOptions::max_groups)
      .def_readwrite("backend", &AutotuneOptions::backend)
      .def_readwrite("use_trtexec", &AutotuneOptions::use_trtexec)
      .def_readwrite("trtexec_args", &AutotuneOptions::trtexec_args)
      .def_readwrite("timing_cache", &AutotuneOptions::timing_cache)
      .def_readwrite("threads", &AutotuneOptions::threads)
      .def_readwrite("min_speedup", &AutotuneOptions::min_speedup)
      .def_readwrite("output_dir", &AutotuneOptions::output_dir)
      .def_readwrite("state_file", &AutotuneOptions::state_file)
      .def_readwrite("pattern_cache_file", &AutotuneOptions::pattern_cache_file)
      .def_readwrite("node_filter_list", &AutotuneOptions::node_filter_list)
      .def_readwrite("qdq_baseline", &AutotuneOptions::qdq_baseline)
      .def_readwrite("verbose", &AutotuneOptions::verbose);
}

}  // namespace ptqkit
