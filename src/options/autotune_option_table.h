// The autotune options (ptqkit/autotune.h, issue 12) as option-table entries (issue 11's
// options/option_spec.h), for BuildTable() in quantize_option_table.cc: they replace the refusals
// of ModelOpt's --autotune and --autotune_* flags there. (Written on the autotune branch, before
// the option table reached it: cli/autotune_flags.cc and python/ptqkit/_autotune.py did the same
// job there and go once this is wired in.)
#pragma once

#include <vector>

#include "options/option_spec.h"

namespace ptqkit::options {

void AddAutotuneOptions(std::vector<OptionSpec>& table);

}  // namespace ptqkit::options
