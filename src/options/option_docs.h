// The option table as documents: the README's markdown tables and a JSON listing (`ptqkit options`).
#pragma once

#include <string>

#include "options/option_spec.h"

namespace ptqkit::options {

// The `ptqkit quantize` table (every option the CLI takes), the sensitivity scan's own options, then
// the table of ModelOpt flags ptqkit refuses or reads differently. The README holds exactly this text (tests/python/test_options.py).
std::string QuantizeOptionsMarkdown();

// Every spec, with its default as the CLI writes it, as a JSON document.
std::string QuantizeOptionsJson();

// The value of every option after `settings` were applied, as the CLI writes each ("" = none).
std::string SettingsJson(const QuantizeSettings& settings);

}  // namespace ptqkit::options
