#include "validate/stack_coverage.h"

#include <cmath>
#include <cstdio>
#include <sstream>

#include "load/scenario.h"

namespace ringsim {

std::string stack_of(const Scenario& s) {
  const auto& c = s.communication;
  std::string stack(to_string(c.strategy));
  if (c.strategy == Strategy::ParameterServer && c.ps_transport == PsTransport::Rpc) stack += " (rpc)";
  if (c.framework != Framework::Horovod) stack += ", " + std::string(to_string(c.framework));
  return stack + " over " + std::string(to_string(c.library));
}

std::map<std::string, std::vector<ValidationCase>> cases_by_stack(const std::vector<ValidationCase>& cases) {
  std::map<std::string, std::vector<ValidationCase>> by;
  for (const auto& c : cases)
    if (!c.stack.empty()) by[c.stack].push_back(c);
  return by;
}

std::string stack_table(const std::vector<ValidationCase>& cases) {
  const auto by = cases_by_stack(cases);
  if (by.empty()) return "";
  std::ostringstream o;
  char line[256];
  std::snprintf(line, sizeof line, "  by stack: %-38s %5s %7s %20s %7s\n", "strategy over library", "cases", "MAPE",
                "inside their bands", "width");
  o << line;
  for (const auto& [stack, of] : by) {
    std::string bands = "-", width = "-";
    if (banded_of(of) > 0) {
      const int banded = banded_of(of), inside = static_cast<int>(std::lround(band_coverage_of(of) * banded));
      std::snprintf(line, sizeof line, "%d of %d (%.0f %%)", inside, banded, band_coverage_of(of) * 100);
      bands = line;
      std::snprintf(line, sizeof line, "%.2f", band_median_width_of(of));
      width = line;
    }
    std::snprintf(line, sizeof line, "    %-44s %5zu %5.1f %% %20s %7s\n", stack.c_str(), of.size(), mape_of(of),
                  bands.c_str(), width.c_str());
    o << line;
  }
  return o.str();
}

nlohmann::ordered_json stack_json(const std::vector<ValidationCase>& cases) {
  nlohmann::ordered_json j = nlohmann::ordered_json::array();
  for (const auto& [stack, of] : cases_by_stack(cases)) {
    nlohmann::ordered_json one{{"stack", stack}, {"cases", of.size()}, {"mape_pct", mape_of(of)}};
    if (banded_of(of) > 0)
      one.update({{"banded", banded_of(of)},
                  {"band_coverage", band_coverage_of(of)},
                  {"band_median_width", band_median_width_of(of)}});
    j.push_back(one);
  }
  return j;
}

}  // namespace ringsim
