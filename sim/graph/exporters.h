// Views of a Topology for other tools: Graphviz (one undirected edge per physical link, a box per node)
// and a SimGrid platform (DTD 4.1) that `smpirun -platform` and s4u::Engine::load_platform accept:
// one zone per node (Full routing, one host per GPU, the fabric NIC as gateway), links = directed edges
// of the graph, zoneRoutes between nodes along the same routes the Router picks.
#pragma once

#include <string>

#include "graph/topology_graph.h"

namespace ringsim {

std::string to_graphviz(const Topology& topology);
std::string to_simgrid_platform_xml(const Topology& topology, const Catalog& catalog);

}  // namespace ringsim
