// The step fidelity: a collective step evaluated analytically from the loads its transfers put on the
// routed graph. All transfers of a step start together and share every directed edge max-min fairly (the
// sharing SimGrid's CM02 model computes); as transfers finish, the others speed up. A run of identical
// steps costs one step times its count.
#pragma once

#include <string_view>
#include <vector>

#include "collective/collective.h"
#include "execute/comm_model.h"

namespace ringsim {

struct Flow {
  const Path* path = nullptr;
  double bytes = 0;          // as the path's base bandwidth sees them (CommModel::wire_bytes)
  double extra_latency = 0;  // the size regime's overhead less the path's
  double payload = 0;        // bytes carried, for link loads
};

// Seconds until the last flow completes (its path latency included).
double flows_duration(const std::vector<Flow>& flows, const CommModel& cm);

struct RunCost {
  collective::Phase phase = collective::Phase::ReduceScatter;
  int count = 0;
  double step_s = 0;      // one step: transfers plus the slowest member's reduction and update
  int transfers = 0;      // messages in one step
  double copy_s = 0;      // of step_s: the most a member spends copying messages out of shared memory
  bool by_class = false;  // evaluated through the collective's node classes (Collective::node_classes)
};

// Evaluates every run of `c`; adds bytes carried per dense edge into `edge_bytes` (sized edge_count()).
double collective_duration(const collective::Collective& c, CommModel& cm, std::vector<double>* edge_bytes,
                           std::vector<RunCost>* runs = nullptr);

}  // namespace ringsim
