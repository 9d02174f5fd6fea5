// Readers the catalog's files share with the calibration overlay's (overlay_read.cpp) and the uncertain
// figures' (uncertain.cpp), which read the same values in the same way.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "load/catalog.h"
#include "load/yaml_reader.h"

namespace ringsim::catalog_detail {

// A rank kind's core handoffs (`core_handoff`, `cross_core_handoff`: times): only CPU processes share cores
// with other ranks.
double core_handoff_of(const GpuSpec& g, const YamlField& value);

// A release version, "2.4" or "2.18.5": whole numbers joined by dots.
std::string release_version(const YamlField& value);

// A catalog file's root mapping with its allowed top-level keys; `kind` names the file in its errors.
YamlField open_root(const std::filesystem::path& file, std::vector<std::string> top_keys,
                    const std::string& kind = "catalog");

}  // namespace ringsim::catalog_detail
