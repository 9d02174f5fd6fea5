#include "emulate/emulation_spec.h"

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>

namespace ringsim {

std::string EmulationSpec::to_json() const {
  nlohmann::ordered_json j = {
      {"schema", "ringsim.emulation-spec/1"}, {"catalog", catalog_dir}, {"scenario", scenario_file}, {"sets", sets}};
  return j.dump(1) + "\n";
}

EmulationSpec EmulationSpec::read(const std::string& file) {
  std::ifstream in(file);
  if (!in) throw std::runtime_error("cannot read the emulation spec " + file);
  std::stringstream text;
  text << in.rdbuf();
  try {
    const auto j = nlohmann::json::parse(text.str());
    if (j.at("schema") != "ringsim.emulation-spec/1") throw std::runtime_error("unknown schema");
    return {j.at("catalog").get<std::string>(), j.at("scenario").get<std::string>(),
            j.at("sets").get<std::vector<std::string>>()};
  } catch (const std::exception& e) {
    throw std::runtime_error(file + ": not an emulation spec written by `ringsim emulate`: " + e.what());
  }
}

EmulationSpec::Loaded EmulationSpec::load() const {
  Catalog catalog = Catalog::load(catalog_dir);
  std::vector<Override> overrides;
  for (const auto& s : sets) overrides.push_back(parse_override(s));
  Scenario s = load_scenario(scenario_file, catalog, overrides);
  apply_calibration(catalog, s);
  return {std::move(catalog), std::move(s)};
}

int emulated_ranks(const Scenario& s) { return s.cluster.total_gpus() + s.communication.server_members(); }

}  // namespace ringsim
