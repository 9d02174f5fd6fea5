// Goodput's part of the result: the JSON `goodput` object and the table's rows (execute/goodput).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "execute/prediction.h"
#include "report/plot.h"

namespace ringsim {

nlohmann::ordered_json goodput_json(const GoodputEstimate& g);
// (label, text) rows, none where goodput is not modelled.
std::vector<std::pair<std::string, std::string>> goodput_rows(const Prediction& p);

// `predict --plot`: ETTR against node count (1/16 to 8 x the scenario's) at the interval chosen, a quarter and
// four times it, and each size's own best; below, the simulated runs' completion times (their distribution).
Plot goodput_plot(const Catalog& catalog, const Prediction& p);

}  // namespace ringsim
