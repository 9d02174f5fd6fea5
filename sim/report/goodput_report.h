// Goodput's part of the result: the JSON `goodput` object and the table's rows (execute/goodput).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "execute/prediction.h"

namespace ringsim {

nlohmann::ordered_json goodput_json(const GoodputEstimate& g);
// (label, text) rows, none where goodput is not modelled.
std::vector<std::pair<std::string, std::string>> goodput_rows(const Prediction& p);

}  // namespace ringsim
