// What ranks that are CPU processes (GpuSpec::cpu_process) cost more when they share a host's cores: each
// copies and reduces at its share of a core, and a message waits for the scheduler to hand a core over.
// CommModel holds one only for such ranks.
#pragma once

#include "graph/topology_graph.h"
#include "load/catalog.h"
#include "load/scenario.h"

namespace ringsim {

struct ProcessCosts {
  double cpu_share = 1;  // of one core per process, for the processes of a CPU-only host
  double handoff = 0;    // per message between them, when they outnumber the cores

  ProcessCosts(const Catalog& catalog, const Scenario& s);

  // A link's effective bandwidth with the process's share of its core, where the link ends at a process.
  double link_bandwidth(const TopologyGraph& g, EdgeId e, double bandwidth) const;
  // The handoff a message from src to dst pays: none for a copy within one process's memory.
  double message_handoff(VertexId src, VertexId dst) const { return src == dst ? 0 : handoff; }
};

}  // namespace ringsim
