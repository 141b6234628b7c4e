// The quantize report as JSON: what --report_json writes, and (its "loss" part) what the Python
// report dict carries, so that both say the same thing. Keys are QuantizeReport's field names;
// optional values absent from a run are null.
#pragma once

#include <nlohmann/json.hpp>

#include "ptqkit/quantize.h"

namespace ptqkit {

nlohmann::ordered_json LossReportToJson(const LossReport& loss);
nlohmann::ordered_json AccuracyBudgetToJson(const AccuracyBudgetReport& budget);
// Defined in pipeline/autotune_report_json.cc.
nlohmann::ordered_json AutotuneReportToJson(const AutotuneReport& autotune);
nlohmann::ordered_json QuantizeReportToJson(const QuantizeReport& report);

}  // namespace ptqkit
