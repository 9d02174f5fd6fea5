// Internal to the scenario loader (scenario.cpp): the reliability section (issue 55), read once the cluster
// and model sections are.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "load/catalog.h"
#include "load/scenario.h"
#include "load/yaml_reader.h"

namespace ringsim::scenario_detail {

const std::vector<std::string>& reliability_keys();

// The section's figures, the catalog's for those it does not give (`section`: absent where the scenario has
// none). A catalog without reliability.yaml leaves goodput unmodelled and refuses the section.
ReliabilityConfig parse_reliability(const std::optional<YamlField>& section, const Scenario& s, const Catalog& catalog);

}  // namespace ringsim::scenario_detail
