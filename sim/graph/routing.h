// Routes between endpoints of a Topology (GPU <-> GPU, GPU <-> host memory, host <-> host): the path
// (directed edges), its bottleneck bandwidth, summed latency, and the nvidia-smi-style connection kind.
#pragma once

#include <string>
#include <vector>

#include "graph/topology_graph.h"

namespace ringsim {

// Like `nvidia-smi topo -m`, plus NET for paths that leave the node.
enum class ConnectionKind {
  Self,    // X
  NvLink,  // NV#: direct NVLink bricks
  Pix,     // through one PCIe switch
  Pxb,     // through several PCIe switches, not through a CPU
  Phb,     // through a CPU's PCIe host bridge (same socket)
  Sys,     // across the socket interconnect (QPI/UPI)
  Net,     // across the cluster network
};
std::string_view to_string(ConnectionKind kind);
std::string_view describe(ConnectionKind kind);  // legend text

struct Route {
  VertexId src{}, dst{};
  std::vector<EdgeId> edges;        // in path order
  double latency = 0;               // seconds, summed
  double bottleneck_bandwidth = 0;  // bytes/s, minimum over the edges (infinite for Self)
  ConnectionKind kind = ConnectionKind::Self;
  int nvlinks = 0;            // for NvLink: bricks on the edge
  std::string label() const;  // "NV2", "PIX", "NET", ...
};

class Router {
 public:
  explicit Router(const Topology& topology);
  // Lowest-latency path (ties: lowest vertex ids) that does not pass through another GPU or host
  // memory; routes between nodes cross the fabric NICs, and a fat tree picks spine = destination
  // node mod spines (D-mod-k). Throws std::runtime_error when no path exists.
  Route route(VertexId src, VertexId dst) const;

 private:
  Route search(VertexId src, VertexId dst) const;            // the lowest-latency path, as route() says
  Route along(const std::vector<VertexId>& vertices) const;  // the route through these vertices, its costs

  const Topology& t_;
  std::string shape_;  // what the topology's vertex numbering follows from (SharedRoutes' key)
};

// While one is alive, Router::route gives the vertices it first found between the same two endpoints of a
// topology of the same shape, with this graph's links and costs: the band's samples (forked after the
// catalog's own figures were routed) search nothing of their own. An InfiniBand subnet manager routes by
// the fabric's structure and NCCL its paths by their kinds, not by the latencies a sample moves.
class SharedRoutes {
 public:
  SharedRoutes();
  ~SharedRoutes();
  SharedRoutes(const SharedRoutes&) = delete;
  SharedRoutes& operator=(const SharedRoutes&) = delete;
};

}  // namespace ringsim
