#include "execute/process_costs.h"

#include <algorithm>

namespace ringsim {

ProcessCosts::ProcessCosts(const Catalog& catalog, const Scenario& s) {
  const SkuSpec& sku = catalog.sku(s.cluster.sku);
  const GpuSpec& gpu = catalog.gpu(sku.gpu);
  // More processes than cores: every rank of a collective step is busy at once, and a step ends when its
  // slowest rank is done. The scheduler keeps processes on their cores over a step's milliseconds, so the
  // busiest core runs ceil(processes / cores) of them and each of those copies and reduces at that
  // fraction of one core's rate (3 processes on 2 cores: 1/2, not 2/3; see validate/README.md).
  const int vcpus = std::max(1, sku.vcpus);
  const int per_core = (s.cluster.gpus_per_node + vcpus - 1) / vcpus;
  cpu_share = 1.0 / per_core;
  // A message is received when its receiver runs: with k processes on a core, its turn comes after the
  // scheduler has handed the core over to it from up to k - 1 others (measured with 2 processes on one
  // core: ringsim-real calibrate's sendrecv_one_core). Processes spread over several shared cores wait at
  // both ends: a step's slowest message crosses cores, and its sender had to get its turn on its own core
  // first (sendrecv_shared_cores: two cores, each shared with a yielding thread; sim/HISTORY.md).
  const double per_turn = gpu.core_handoff + (vcpus > 1 ? gpu.cross_core_handoff : 0.0);
  handoff = (per_core - 1) * per_turn;
}

double ProcessCosts::link_bandwidth(const TopologyGraph& g, EdgeId e, double bandwidth) const {
  const bool at_process =
      g[boost::source(e, g)].kind == DeviceKind::Gpu || g[boost::target(e, g)].kind == DeviceKind::Gpu;
  return at_process ? bandwidth * cpu_share : bandwidth;
}

}  // namespace ringsim
