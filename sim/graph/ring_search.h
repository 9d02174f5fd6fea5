// NCCL-style ring and channel search (as NCCL keeps src/graph/search.cc beside its topology): the rings a
// ring allreduce runs, through ranks that are laid out node-major, following the fastest links. It weighs
// only what a PathCost gives: per-link effective bandwidth and each rank-to-rank path's links and latency.
#pragma once

#include <span>
#include <vector>

namespace ringsim {

// What the ring search needs of a cost model (CommModel implements it): ranks node-major, the links
// between them by dense index with their effective bandwidths, and the path from one rank to another.
class PathCost {
 public:
  struct Hop {
    std::span<const int> edges;  // dense link indices, in [0, edge_count())
    double latency = 0;          // the route's latency with the per-message overhead
  };
  virtual int workers() const = 0;  // ranks, node-major
  virtual int ranks_per_node() const = 0;
  virtual int edge_count() const = 0;
  virtual double edge_bandwidth(int e) const = 0;  // effective, for the library
  virtual Hop hop(int a, int b) = 0;               // rank a to rank b, in the collective's data space
  // The first of the two consecutive nodes whose part of a ring the channel search weighs: where rings
  // leave one rack-scale NVLink domain for the next, whose nodes talk over NVLink (0 otherwise).
  virtual int sampled_node() const { return 0; }
  // Nodes of one rack-scale NVLink domain where the ranks span several such domains; 1 otherwise.
  virtual int domain_nodes() const { return 1; }

 protected:
  ~PathCost() = default;
};

class RingSearch {
 public:
  explicit RingSearch(PathCost& cost) : cost_(cost) {}

  // The ring through one node's ranks: over all cycles starting at local rank 0, the one whose slowest hop
  // is fastest, then the lowest total latency, then the first in lexicographic order. Index order beyond
  // 10 ranks per node (searched once).
  std::vector<int> local_ring_order();
  // The ring through every rank: nodes in index order, each node's ranks in local_ring_order(). Index
  // order when the ranks do not fill whole nodes.
  std::vector<int> ring_order();
  // `channels` rings through every rank, the first ring_order(), the second its reverse. Each further ring
  // visits the nodes in index order and every node's ranks along one cycle (any cycle up to 8 ranks per
  // node, else the local ring or its reverse) entered at any rank, in pairs with its reverse (each link the
  // other way): the candidate pair that leaves the most loaded link (per-step transfers over effective
  // bandwidth, over two nodes' worth of ring) least loaded, then the loads most even, then the first; then
  // each ring after the first is searched again alone given the others while that lowers the loads. So
  // rings spread over NVLinks and leave by different NICs, as NCCL's do on a DGX-1. Across rack-scale
  // NVLink domains ring c visits each domain's nodes from its (c mod domain)-th on, so that each ring leaves
  // the domain by another node's NICs (the domain's GPUs reach each other through its switch in any order).
  std::vector<std::vector<int>> ring_orders(int channels);

 private:
  bool whole_nodes(const std::vector<int>& local) const;  // the local ring covers a node, ranks fill nodes

  PathCost& cost_;
  std::vector<int> local_ring_;  // local_ring_order(), once searched
};

}  // namespace ringsim
