// `ringsim topo`: an nvidia-smi topo -m style matrix of connection kinds between the GPUs (and the
// NICs), then the bottleneck bandwidth and the latency of each pair's route, then a legend.
#pragma once

#include <string>

#include "graph/topology_graph.h"

namespace ringsim {

// Clusters with more than `max_endpoints` GPUs+NICs print the first two nodes only (and say so).
std::string topo_matrix_report(const Topology& topology, const Catalog& catalog, int max_endpoints = 48);

}  // namespace ringsim
