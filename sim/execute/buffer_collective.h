// The one place that maps a scenario's communication strategy to the collective run for one fusion
// buffer: predict (both fidelities), the work estimate, and ringsim-real train (real and emulated) all
// call it, so they run the same algorithm on the same members.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "collective/collective.h"
#include "collective/fusion.h"
#include "graph/routing.h"
#include "load/catalog.h"
#include "load/scenario.h"

namespace ringsim {

// What NCCL's tuning model (libraries.yaml `tuning`) weighs to pick an algorithm (strategy auto) and a
// protocol (auto, ring, tree) for a message.
struct AlgorithmChoice {
  AlgorithmTuning tuning;
  int nodes = 1, ranks = 1, channels = 1;
  bool nvlink = false;     // a node's GPUs talk over NVLink (NCCL's NVLINK latencies; else PCI's)
  bool gpudirect = false;  // the fabric's NICs reach the GPUs directly (InfiniBand)
  double compute_capability = 0;
  double bus_bandwidth = 0;  // bytes/s: the ring's bus bandwidth on this cluster (NCCL's busBw)
  std::string protocol;      // communication.protocol: one protocol only; empty: NCCL picks
  // Auto where the switch reduces: NVLS's call latency and its algorithm bandwidth (bytes/s; 0: no NVLS).
  double nvls_latency = 0, nvls_bandwidth = 0;
  // Across nodes whose switches reduce, the NVLS candidate is NVLSTree: its latency per network hop, of
  // which NCCL's model counts 2 (nodes - 1) a call (0: NVLS inside one NVLink domain).
  double nvls_tree_latency = 0;
};
// NCCL's pick for one message: the algorithm, the protocol and the time its model gives them.
enum class Algorithm { Ring, Tree, Nvls, NvlsTree };
struct AlgorithmPick {
  Algorithm algorithm = Algorithm::Ring;
  const ProtocolTuning* protocol = nullptr;  // NVLS: Simple
  double time_s = 0;
};
// The fastest by NCCL's model among the ring (ring), the tree (tree), NVLS or NVLSTree where the choice has
// it (both ring and tree: auto), and
// the protocols enabled here (ties: the ring, then the tree, then the protocol listed first). An
// all-gather or a reduce-scatter (`op`) has the ring only, as in NCCL 2.18.
AlgorithmPick pick_algorithm(const AlgorithmChoice& c, std::uint64_t bytes, bool ring, bool tree,
                             collective::BusOp op = collective::BusOp::AllReduce);
// Whether NCCL's model finds the tree faster than the ring for `bytes`.
inline bool picks_tree(const AlgorithmChoice& c, std::uint64_t bytes) {
  return pick_algorithm(c, bytes, true, true).algorithm == Algorithm::Tree;
}
// What the simulators charge for a pick's protocol (collective::Protocol): its per-call latency; for the
// ring, NCCL's mean latency per step as a floor for each step's messages; its share of the Simple
// protocol's bandwidth.
collective::Protocol protocol_cost(const AlgorithmChoice& c, const AlgorithmPick& p,
                                   collective::BusOp op = collective::BusOp::AllReduce);

struct BufferCollectiveLayout {
  int workers = 0;                                      // GPU ranks, node-major
  collective::Space space = collective::Space::Device;  // the library's data path
  std::vector<std::vector<int>> ring_orders;            // ring: one ring through every worker per channel
  std::vector<int> local_order;                         // hierarchical: the ring inside each node (empty: index order)
  std::vector<std::vector<int>> tree_chains;            // tree: each channel's chain inside a node (local indices)
  std::optional<AlgorithmChoice> choice;                // ring, tree, auto with a tuning model: NCCL's picks
  double nvls_latency = 0;                              // nvls: the call's latency by the tuning model
  int nvls_channels = 1;                                // NVLSTree: the library's NVLS channels (its slices)
};

class CommModel;
// The layout predict and ringsim-real train both run: the scenario's workers, the data space, its rings
// (one per channel, for strategy ring), the ring inside a node (hierarchical) and the trees' chains (node
// 0's segment of searched ring c / 2 for channel c: both trees of a pair leave by one NIC, the pairs by
// different ones, over different links), from the same ring search (graph/ring_search.h) over the same
// path costs.
// Auto: rings and trees (twice the channels). Ring, tree and auto with a library that has a tuning model:
// the choice, whose bus bandwidth is the step model's for a 256 MiB ring on the rings.
// `multicast`: whether the caller's transports can run NVLS (predict's can; ringsim-real's cannot), which
// auto then weighs where the switch reduces: its bandwidth is the step model's for a 256 MiB NVLS (NVLSTree
// across nodes).
BufferCollectiveLayout buffer_collective_layout(const Scenario& s, collective::Space space, CommModel& costs,
                                                bool multicast = true);

// While one is alive, buffer_collective_layout gives the layout it first made for the same cluster, library,
// strategy and data path: the band's samples (prediction_band.h), forked after the catalog's own layout was
// made, search and tune nothing of their own. NCCL searches its rings and picks its algorithms from its own
// view of the hardware, not from what a run reaches, which is what the samples' figures move. The routes
// are shared alike (SharedRoutes, graph/routing.h).
class SharedLayouts {
 public:
  SharedLayouts();
  ~SharedLayouts();
  SharedLayouts(const SharedLayouts&) = delete;
  SharedLayouts& operator=(const SharedLayouts&) = delete;

 private:
  SharedRoutes routes_;
};

// parameter_server only: the server of each tensor, as the scenario assigns them.
std::vector<int> tensor_servers(const Scenario& s, const std::vector<std::uint64_t>& tensor_bytes);

// parameter_server only: a fusion buffer's bytes on each server and, with node aggregation, the local GPU
// that sums it: its first tensor's index modulo the GPUs per node, as TensorFlow picks a GPU per variable.
struct BufferShards {
  std::vector<std::uint64_t> bytes;
  int aggregator = 0;
};
BufferShards buffer_shards(const Scenario& s, const std::vector<int>& server_of,
                           const std::vector<std::uint64_t>& tensor_bytes, const std::vector<int>& tensors);

// Auto's NVLS (one NVLink domain) or NVLSTree (across nodes) for a buffer, where its layout weighs them;
// null otherwise. The flow fidelity routes its pairs beside the ring's and the tree's.
std::unique_ptr<collective::Collective> make_nvls_candidate(const Scenario& s, const BufferCollectiveLayout& layout,
                                                            std::uint64_t bytes, int element_bytes);

// `shards`: parameter_server only.
std::unique_ptr<collective::Collective> make_buffer_collective(const Scenario& s, const BufferCollectiveLayout& layout,
                                                               std::uint64_t bytes, int element_bytes,
                                                               const BufferShards& shards = {});

// An all-gather or a reduce-scatter of a `bytes` buffer (the whole, of which each worker holds ~1/n): the
// ring over the layout's rings (index order where it has none), with the protocol the library's tuning
// picks for it, as NCCL 2.18 runs them whatever the allreduce's strategy. Build the layout of the scenario
// as gather_layout_scenario gives it.
std::unique_ptr<collective::Collective> make_gather_collective(const BufferCollectiveLayout& layout,
                                                               collective::BusOp op, std::uint64_t bytes,
                                                               int element_bytes);
// A sharded framework's all-gather or gradient reduce-scatter: make_gather_collective's ring over every GPU,
// or under fsdp's hybrid_shard over each node's GPUs at once (along the layout's ring inside a node), the
// reduce-scatter followed by each shard's ring allreduce across the nodes (the GPUs at one ring position, one
// a node). Hybrid collectives carry no protocol (the library's plain figures) and one call's overhead.
std::unique_ptr<collective::Collective> make_sharded_collective(const Scenario& s, const BufferCollectiveLayout& layout,
                                                                collective::BusOp op, std::uint64_t bytes,
                                                                int element_bytes);
// The scenario whose layout an all-gather or reduce-scatter runs on: the same, with the ring as its strategy
// where it names an allreduce of its own (its rings searched, its protocol picked where the library tunes).
Scenario gather_layout_scenario(const Scenario& s);

}  // namespace ringsim
