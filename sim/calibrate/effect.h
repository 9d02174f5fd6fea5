// A calibrated effect: what it measures, how it is fitted, which overlay keys it writes and which cost
// term of the model reads them. Each effect is one file under calibrate/effects/ and one line of the
// registry (effects.cpp); `ringsim calibrate --effects` lists them.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "calibrate/class_fits.h"
#include "calibrate/measurements.h"
#include "execute/comm_model.h"
#include "graph/topology_graph.h"
#include "load/overlay.h"

namespace ringsim {

// The scenario's topology and the route the library's transfers take between two members, onto which the
// fits map; not copyable, as the comm model refers to the topology.
struct ScenarioRoutes {
  ScenarioRoutes(const Catalog& catalog, const Scenario& s);
  ScenarioRoutes(const ScenarioRoutes&) = delete;
  ScenarioRoutes& operator=(const ScenarioRoutes&) = delete;

  const Path& route(int a, int b) { return cm.path(cm.endpoint(a, space), cm.endpoint(b, space)); }
  const Link& link(int edge) const { return topo.link(cm.edge(edge)); }
  std::pair<double, double> nominal(const Path& p) const;  // bottleneck bandwidth, summed latency

  Topology topo;
  CommModel cm;
  collective::Space space;
};

// What every effect reads: the scenario, the measurements and their fits, and where they map.
struct FitContext {
  const Catalog& catalog;
  const Scenario& scenario;
  const Measurements& measurements;
  const Fitted& fitted;
  const std::vector<LinearFit>& fits;
  ScenarioRoutes& routes;
  // A pair of members per class: member 0 and the first member of each kind of pair with it.
  std::map<std::string, std::pair<int, int>> members;
  std::string gpu;      // the scenario's rank kind
  std::string library;  // the scenario's collective library
  bool cpu_processes = false;
};

struct Effect {
  const char* name;
  const char* measures;  // the measurement it reads
  const char* fit;       // how it is fitted
  std::vector<const char*> overlay_keys;
  const char* cost_term;  // what reads them
  // Writes its figures into the overlay, or a note of why not.
  void (*apply)(const FitContext& context, CatalogOverlay& overlay, std::vector<std::string>& notes);
};

// Every effect, in the order calibration applies them.
const std::vector<Effect>& calibration_effects();

// A fitted figure as the overlay keeps it: 6 significant digits, which is what the fit can tell.
double significant(double v);
// A size in whole bytes, at least 1.
double whole_bytes(double v);

}  // namespace ringsim
