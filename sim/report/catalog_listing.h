// `ringsim catalog`: the SKUs, GPUs, models and link classes the catalog holds, as aligned tables.
#pragma once

#include <string>

#include "load/catalog.h"

namespace ringsim {

// section: "all", "skus", "gpus", "models", "links".
std::string catalog_listing(const Catalog& catalog, const std::string& section);

}  // namespace ringsim
