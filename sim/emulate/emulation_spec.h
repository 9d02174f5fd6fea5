// What `ringsim emulate` hands to the processes smpirun starts: the catalog, the scenario and its
// overrides, so that the platform plug-in rebuilds exactly the cluster `predict` simulates.
#pragma once

#include <string>
#include <vector>

#include "load/catalog.h"
#include "load/scenario.h"

namespace ringsim {

struct EmulationSpec {
  std::string catalog_dir;
  std::string scenario_file;
  std::vector<std::string> sets;  // --set arguments, then calibration=FILE when given

  std::string to_json() const;
  static EmulationSpec read(const std::string& file);  // throws std::runtime_error

  // Loads catalog and scenario as `predict` does (the scenario's calibration overlay applied).
  struct Loaded {
    Catalog catalog;
    Scenario scenario;
  };
  Loaded load() const;
};

// MPI processes the scenario runs: one per GPU, plus the parameter servers.
int emulated_ranks(const Scenario& s);

}  // namespace ringsim
