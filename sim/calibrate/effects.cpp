#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "calibrate/effect.h"

namespace ringsim {

// One line per effect; each is defined in calibrate/effects/.
Effect collective_overhead_effect();
Effect host_reduction_effect();
Effect intra_node_path_effect();
Effect network_path_effect();
Effect copy_rate_effect();
Effect core_handoff_effect();

const std::vector<Effect>& calibration_effects() {
  static const std::vector<Effect> kEffects = {collective_overhead_effect(), host_reduction_effect(),
                                               intra_node_path_effect(),     network_path_effect(),
                                               copy_rate_effect(),           core_handoff_effect()};
  return kEffects;
}

ScenarioRoutes::ScenarioRoutes(const Catalog& catalog, const Scenario& s)
    : topo(Topology::build(catalog, cluster_shape(s.cluster))), cm(catalog, s, topo), space(cm.data_space()) {}

std::pair<double, double> ScenarioRoutes::nominal(const Path& p) const {
  double bw = 1e300, lat = 0;
  for (int e : p.edges) {
    const Link& l = link(e);
    bw = std::min(bw, l.bandwidth);
    lat += l.latency;
  }
  return std::make_pair(bw, lat);
}

double significant(double v) {
  char b[64];
  std::snprintf(b, sizeof b, "%.6g", v);
  return std::strtod(b, nullptr);
}

double whole_bytes(double v) { return std::max(std::trunc(v), 1.0); }

}  // namespace ringsim
