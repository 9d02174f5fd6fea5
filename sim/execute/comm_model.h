// What a transfer costs on this cluster with this library: endpoints of collective members, routes over the
// topology graph (memoised; every node of a cluster has the same layout, so routes inside a node are
// computed once and translated), per-edge effective bandwidth and per-message overhead from the library
// profile, and reduction/update costs. Shared by the flow (SimGrid) and step (analytical) fidelities.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "collective/collective.h"
#include "execute/process_costs.h"
#include "graph/ring_search.h"
#include "graph/routing.h"
#include "graph/topology_graph.h"
#include "load/catalog.h"
#include "load/scenario.h"

namespace ringsim {

// Where each collective member keeps its buffers.
struct MemberPlace {
  VertexId device{};  // GPU (workers), host memory (servers) or the NVSwitch (strategy nvls)
  VertexId host{};    // host memory of the member's socket
  bool gpu = true;
  bool in_switch = false;  // an NVSwitch that reduces as data passes: its reductions cost nothing
  bool rpc = false;        // a server process behind its RPC stack (LibraryProfile::rpc_rate)
};

// Where collectives keep their data: host memory for a host-staged library on GPUs. Ranks that are CPU
// processes already hold their buffers in host memory, so nothing is staged (as ringsim-real's host
// transport runs the ring on the fusion buffer itself).
inline collective::Space collective_data_space(const LibraryProfile& lib, const GpuSpec& gpu) {
  return lib.data_path == DataPath::Host && !gpu.cpu_process ? collective::Space::Host : collective::Space::Device;
}

// MPI's copy-in/copy-out between host buffers of two GPU ranks on one node: the receiver copies the message
// out of shared memory at its one core's rate (`dst_rate`; 0 where a member makes no such copies).
inline double shared_memory_copy_s(const collective::Transfer& t, int src_node, int dst_node, double src_rate,
                                   double dst_rate) {
  using collective::Space;
  const bool host_to_host = t.src != t.dst && t.src_space == Space::Host && t.dst_space == Space::Host;
  if (!host_to_host || src_rate <= 0 || dst_rate <= 0 || src_node != dst_node) return 0;
  return static_cast<double>(t.bytes) / dst_rate;
}

// What a collective holds of each of its members' GPUs while it runs: its kernels' SMs, and the memory
// bandwidth each member's data takes (CommModel::compute_interference).
struct ComputeHold {
  static constexpr double kMost = 0.9;  // however many collectives run, they leave the compute some
  double sms = 0;                       // share of the SMs
  std::vector<double> memory;           // per member, share of its GPU's memory bandwidth
  double most() const {                 // of the busiest member
    return sms + (memory.empty() ? 0 : *std::max_element(memory.begin(), memory.end()));
  }
};

// A route with the library's view of it: per-edge effective bandwidths and the message overhead.
struct Path {
  std::vector<int> edges;  // dense edge indices (CommModel::edge)
  double latency = 0;      // route latency + message overhead
  double overhead = 0;     // the library's per-message overhead included in `latency`, with `handoff`
  double handoff = 0;      // CPU processes outnumbering cores: the scheduler handing a core over, per message
  bool crosses_fabric = false;
  double bytes_scale = 1;                // to or from a reducing NVSwitch: 1 / the library's nvls_efficiency
  const PathProfile* profile = nullptr;  // the library's profile for this path
};

// Built in steps: the topology, the library's profile, routes (memoised per node template), path costs
// (per-edge effective bandwidth, paths), the workers' places; and, for ranks that are CPU processes, their
// process costs. As a PathCost it gives the ring search (graph/ring_search.h) what it weighs.
class CommModel final : public PathCost {
 public:
  CommModel(const Catalog& catalog, const Scenario& scenario, const Topology& topology);

  const Topology& topology() const { return topo_; }
  const LibraryProfile& library() const { return lib_; }
  const GpuSpec& gpu() const { return gpu_; }
  // Whether a node's first two GPUs talk over NVLink (NCCL's tuning: NVLink or PCI latencies inside a node).
  bool gpus_on_nvlink();
  collective::Space data_space() const { return collective_data_space(lib_, gpu_); }

  // Members: GPU ranks 0..gpus-1 (node-major), then parameter servers.
  int workers() const override { return workers_; }
  int ranks_per_node() const override { return ranks_per_node_; }
  void set_servers(const std::vector<MemberPlace>& servers);
  // Whether member workers() is an NVSwitch, reducing in the switch (strategy nvls; auto where NVLS or
  // NVLSTree is available).
  bool has_switch_member() const { return switch_members_ > 0; }
  // Switch members after the GPUs: 1 (one NVLink domain: NVLS), each node's (auto across nodes whose switch
  // reduces: NCCL's NVLSTree), or 0.
  int switch_members() const { return switch_members_; }
  const MemberPlace& member(int m) const { return places_.at(m); }
  // Where member m's data in space s is: a vertex of the topology, or, for a server process behind its RPC
  // stack, an endpoint of its own past the graph's vertices (its host memory and that stack's two edges).
  VertexId endpoint(int m, collective::Space s) const {
    if (places_.at(m).rpc) return rpc_endpoint_base_ + static_cast<VertexId>(m - workers_);
    return s == collective::Space::Device ? places_.at(m).device : places_.at(m).host;
  }
  std::size_t endpoint_count() const { return rpc_endpoint_base_ + (places_.size() - workers_) * rpc_; }
  std::string endpoint_name(VertexId v) const;

  const Path& path(VertexId src, VertexId dst);
  const Path& path(const collective::Transfer& t) {
    return path(endpoint(t.src, t.src_space), endpoint(t.dst, t.dst_space));
  }

  // Dense edge indices over the whole graph.
  int edge_count() const override { return static_cast<int>(edges_.size()); }
  EdgeId edge(int i) const { return edges_[i]; }
  int edge_index(EdgeId e) const { return edge_index_.at(e.get_property()); }
  double edge_bandwidth(int i) const override { return edge_bw_[i]; }  // effective for this library
  // A socket link's GPU-to-GPU path through host memory (LibraryProfile::cross_socket): edge(i) is the link.
  bool gpu_pair_edge(int i) const { return i >= link_edges_ && i < pair_edges_end_; }
  // A server process's RPC stack, one edge each way (LibraryProfile::rpc_rate): no link of the graph.
  bool rpc_edge(int i) const { return i >= pair_edges_end_; }
  double edge_latency(int i) const { return i >= link_edges_ ? 0 : topo_.link(edges_[i]).latency; }
  // Worker a to worker b in the data space: the path's edges and latency.
  Hop hop(int a, int b) override;
  int sampled_node() const override {  // the last node of the first rack-scale NVLink domain, when there are two
    const int d = topo_.nvlink_domain_nodes();
    return d > 1 && topo_.nodes() > d ? d - 1 : 0;
  }
  int domain_nodes() const override {
    const int d = topo_.nvlink_domain_nodes();
    return d > 1 && workers_ / std::max(1, ranks_per_node_) > d ? d : 1;
  }
  std::string edge_name(int i) const;
  // Whether every node's paths among its own members cost what node 0's do, translated: nodes laid out
  // alike, and no CPU processes' core shares, which differ by edge.
  bool alike_nodes() const { return uniform_nodes_ && !process_; }
  // Whether collective c's members may be evaluated by its node classes here: the GPUs of alike nodes, and
  // each node's switch, fewer classes than nodes.
  bool by_node_class(const collective::NodeClasses& k, const collective::Collective& c) const {
    const int nodes = k.nodes();
    return nodes > 0 && k.local == ranks_per_node_ && nodes * k.local == workers_ && k.members() == c.members() &&
           (k.extra == 0 || (k.extra == 1 && switch_members_ == nodes)) && alike_nodes() && k.count() < nodes;
  }
  // Edge i of node `from`, between two of that node's vertices, as node `to`'s; -1 where i is no such edge.
  int translated_edge(int i, int from, int to);

  // The sizes of collective c that size regimes may be keyed by: its buffer, and its footprint, what the
  // members on one node hold while it runs: each its buffer, and the scratch that the most it receives to
  // reduce in one step lands in (as ringsim-real's host transport receives).
  CollectiveSize collective_size(const collective::Collective& c) const;

  // A message of `bytes`, part of collective `c`, on path p under the profile's size regimes: the bytes
  // that cost the same at the path's base effective bandwidth, and its per-message overhead.
  static bool regime(const Path& p, double bytes, const CollectiveSize& c, SizeRegime& out) {
    return p.profile && p.profile->regime(regime_size(p.profile->regimes_by, bytes, c), out);
  }
  // Under the collective's protocol `pr` (collective::Protocol), which reaches a share of the bandwidth
  // and makes each message take at least its step floor besides its bytes' time.
  static double wire_bytes(const Path& p, double bytes, const CollectiveSize& c, const collective::Protocol& pr) {
    SizeRegime r;
    return (regime(p, bytes, c, r) ? bytes / r.bandwidth_scale : bytes) * p.bytes_scale / pr.bandwidth;
  }
  // Besides the route's latency (p.latency less p.overhead).
  static double message_overhead(const Path& p, double bytes, const CollectiveSize& c, const collective::Protocol& pr) {
    SizeRegime r;
    const double protocol = p.profile ? p.profile->protocol_overhead(bytes) : 0;
    const double own = protocol + (regime(p, bytes, c, r) ? r.message_overhead + p.handoff : p.overhead);
    return std::max(own, pr.step_floor_s - (p.latency - p.overhead));
  }
  // What one call of collective `c` costs besides its messages: its protocol's, or the library's.
  double call_overhead(const collective::Collective& c) const {
    return c.protocol.name.empty() ? lib_.collective_overhead : c.protocol.call_s;
  }

  // Seconds to reduce `bytes` received into a buffer in `space` of member m (part of collective `c`, whose
  // sizes pick the reduction's regime where they are keyed by buffer or footprint); to apply an update
  // there.
  double reduce_time(int m, collective::Space space, std::uint64_t bytes, const CollectiveSize& c = {}) const;
  // What reducing a received message leaves after its receive: where the library's kernels reduce as the
  // data arrives (LibraryProfile::reduce_slice, allreduces on the GPU), its last slice's reduction, as the
  // GPU reduces faster than any catalog link delivers (HBM / 3 against the link); else all of it.
  double received_reduce_time(int m, collective::Space space, std::uint64_t bytes, const CollectiveSize& c = {}) const;
  // The bytes of a message of `bytes` whose reduction remains after its receive on member m's `space`.
  std::uint64_t reduced_after_receive(int m, collective::Space space, std::uint64_t bytes) const;
  double update_time(int m, std::uint64_t bytes) const;
  double device_copy_time(std::uint64_t bytes) const;  // a GPU memory-to-memory copy (fusion buffer)
  // A fusion buffer's copy in or out: in GPU memory, or, on the host data path, by the one CPU thread of
  // Horovod's cycle (memcpy at the library's host_copy_rate).
  double fusion_copy_time(std::uint64_t bytes) const;
  // What member t.dst spends copying a received message out of shared memory: MPI's copy-in/copy-out
  // between GPU ranks' host buffers on one node runs at one core's memcpy rate (0 for any other message).
  double receive_copy_time(const collective::Transfer& t) const;
  double receive_copy_rate(int m) const;  // bytes/s of those copies into member m; 0: it makes none
  int node_of(int m) const { return topo_.device(places_.at(m).host).node; }
  // What collective `c`, taking `duration` seconds, holds of a GPU's compute while it runs (nothing on a host
  // data path): its kernels' SMs (the library's kernel_channels of the GPU's multiprocessors, for
  // allreduces; parameter servers' exchanges are copies) and the memory bandwidth its data takes (a member
  // reads what it sends and the operands it reduces, and writes what it receives). Compute overlapping the
  // collective runs at 1 - the member's total of its speed.
  ComputeHold compute_interference(const collective::Collective& c, double duration) const;

 private:
  void index_edges(const Catalog& catalog, const Scenario& s);  // dense edge indices, effective bandwidths
  void find_templates();                                        // node templates
  void place_workers(const Scenario& s);
  Path make_path(const Route& r) const;
  const Route& intra(VertexId a, VertexId b);                       // a, b in the same node
  const Route& fabric(VertexId nic_a, VertexId nic_b, int node_b);  // between two nodes' fabric NICs
  VertexId to_template(VertexId v) const;
  VertexId from_template(VertexId v, int node) const;
  bool over_nvlink_domain(VertexId src, VertexId dst) const;
  // Server j's RPC stack: its edge in (2 j past the twins), then its edge out.
  int rpc_edge_of(int server, bool out) const { return pair_edges_end_ + 2 * server + (out ? 1 : 0); }

  const Topology& topo_;
  const LibraryProfile& lib_;
  const GpuSpec& gpu_;
  std::optional<ProcessCosts> process_;  // ranks that are CPU processes only
  bool footprint_keyed_ = false;         // some regime is keyed by footprint (collective_size computes it)
  double kernel_channels_ = 0;           // SMs the collectives' kernels hold (LibraryProfile::kernel_channels)
  int switch_members_ = 0;               // NVSwitches that are members after the GPUs (NVLS, NVLSTree)
  double reduce_slice_ = 0;              // LibraryProfile::reduce_slice for allreduces; 0 for parameter servers
  std::vector<int> gpu_rail_;            // InfiniBand fabrics: each local GPU's NIC (NodeLayout::gpu_rail)
  Router router_;
  int workers_ = 0;
  int ranks_per_node_ = 0;
  std::vector<MemberPlace> places_;
  std::vector<EdgeId> edges_;  // the graph's links, GPU-pair twins of socket links, servers' RPC stacks
  std::vector<double> edge_bw_;
  int link_edges_ = 0;                               // edges_ that are the graph's links
  int pair_edges_end_ = 0;                           // edges_ up to here: links, then GPU-pair twins
  bool rpc_ = false;                                 // servers are processes behind the library's RPC stack
  VertexId rpc_endpoint_base_ = 0;                   // the first server process's endpoint
  std::vector<int> gpu_pair_twin_;                   // per link edge: its GPU-to-GPU twin's index, or -1
  std::unordered_map<const void*, int> edge_index_;  // edge property address -> dense index
  void index_node_edges();
  std::vector<int> edge_slot_;          // per edge inside a node: its place in the node; -1 others
  std::vector<int> node_edges_;         // node n's edge at slot k: [n * node_slots_ + k]
  int node_slots_ = -1;                 // -1: not indexed yet
  std::vector<std::size_t> node_base_;  // first vertex of each node
  std::size_t node_size_ = 0;
  bool uniform_nodes_ = false;
  std::map<std::pair<VertexId, VertexId>, Route> template_routes_;  // node-0-relative intra-node routes
  std::map<std::pair<VertexId, VertexId>, Route> fabric_routes_;
  // One searched route per (first switch, last switch, spine) class; the others are translated from it.
  std::map<std::tuple<VertexId, VertexId, int>, Route> fabric_classes_;
  std::map<std::pair<VertexId, VertexId>, Route> intra_routes_;  // translated
  std::unordered_map<std::uint64_t, Path> paths_;
};

}  // namespace ringsim
