// A cluster as one Boost.Graph: node templates (catalog layouts) x node count x fabric. Vertices are
// GPUs, CPU sockets, host memories, PCIe switches, NVSwitches, NICs and fabric switches; every physical link is two
// directed edges (one per direction), each a resource with its own bandwidth and latency.
#pragma once

#include <boost/graph/adjacency_list.hpp>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "load/catalog.h"
#include "load/scenario.h"

namespace ringsim {

enum class DeviceKind { Gpu, Cpu, HostMemory, PcieSwitch, NvSwitch, Nic, FabricSwitch };
std::string_view to_string(DeviceKind kind);

struct Device {
  DeviceKind kind = DeviceKind::Gpu;
  std::string name;      // unique, e.g. "n0.gpu1", "n0.cpu0", "n1.ib0", "leaf0", "spine2"
  int node = -1;         // cluster node index; -1 for fabric switches
  int local_index = -1;  // GPU index within the node, socket index, ...
};

struct Link {
  std::string link_class;  // catalog link class, or "fabric:<class>" for switch-to-switch links
  LinkKind kind = LinkKind::Pcie;
  double bandwidth = 0;  // bytes/s in this direction
  double latency = 0;    // seconds
  int lanes = 1;         // NVLink bricks bundled in this edge
  int physical_id = 0;   // shared by the two directions of one physical link
};

using TopologyGraph = boost::adjacency_list<boost::vecS, boost::vecS, boost::bidirectionalS, Device, Link>;
using VertexId = boost::graph_traits<TopologyGraph>::vertex_descriptor;
using EdgeId = boost::graph_traits<TopologyGraph>::edge_descriptor;

// What the graph was built from.
struct ClusterShape {
  std::string sku;
  int nodes = 1;
  FabricKind fabric = FabricKind::InfiniBand;
  FabricTopology fabric_topology = FabricTopology::Star;
  int nodes_per_leaf = 0;       // fat_tree
  double oversubscription = 1;  // fat_tree
};
ClusterShape cluster_shape(const ClusterConfig& cluster);

class Topology {
 public:
  // Throws InputError when the SKU lacks the requested fabric's NIC.
  static Topology build(const Catalog& catalog, const ClusterShape& shape);

  const TopologyGraph& graph() const { return graph_; }
  const ClusterShape& shape() const { return shape_; }
  const Device& device(VertexId v) const { return graph_[v]; }
  const Link& link(EdgeId e) const { return graph_[e]; }
  VertexId vertex(const std::string& name) const;  // throws std::out_of_range when unknown

  int nodes() const { return shape_.nodes; }
  int gpus_per_node() const { return gpus_per_node_; }
  VertexId gpu(int node, int local_index) const { return gpus_.at(node * gpus_per_node_ + local_index); }
  const std::vector<VertexId>& gpus() const { return gpus_; }  // node-major order
  // The NICs on the fabric, node-major: nics_per_node() per node (InfiniBand may have one per rail).
  const std::vector<VertexId>& fabric_nics() const { return nics_; }
  std::span<const VertexId> fabric_nics(int node) const {
    if (node < 0 || node >= shape_.nodes) throw std::out_of_range("fabric_nics: no node " + std::to_string(node));
    return std::span<const VertexId>(nics_).subspan(static_cast<std::size_t>(node) * nics_per_node_, nics_per_node_);
  }
  int nics_per_node() const { return nics_per_node_; }
  const std::vector<VertexId>& all_nics() const { return all_nics_; }  // node-major, Ethernet then InfiniBand
  VertexId host_memory(int node, int socket) const;
  int sockets() const { return sockets_; }  // per node
  int spines() const { return spines_; }
  int leaves() const { return leaves_; }
  // NVSwitch systems: the switch `node`'s GPUs reach each other through. A rack-scale NVLink domain (GB200
  // NVL72) has one for `domain_nodes` consecutive nodes, outside any node (node -1, local index = domain).
  VertexId nvswitch(int node) const;
  int nvlink_domain_nodes() const { return domain_nodes_; }
  // The rack-scale NVLink domain of `node` (the local index of its switch); -1 where switches are per node.
  int nvlink_domain(int node) const { return domain_nodes_ > 1 && node >= 0 ? node / domain_nodes_ : -1; }
  // Whether GPUs of nodes a and b reach each other over NVLink (the same rack-scale domain).
  bool same_nvlink_domain(int a, int b) const { return nvlink_domain(a) >= 0 && nvlink_domain(a) == nvlink_domain(b); }

 private:
  TopologyGraph graph_;
  ClusterShape shape_;
  int gpus_per_node_ = 0;
  int sockets_ = 0;
  int leaves_ = 0;
  int spines_ = 0;
  int nics_per_node_ = 1;
  int domain_nodes_ = 1;
  std::vector<VertexId> nvswitches_;  // per node, or per domain when domain_nodes_ > 1
  std::vector<VertexId> gpus_, nics_, all_nics_, memories_;
  std::vector<std::pair<std::string, VertexId>> by_name_;  // sorted by name
  friend class TopologyBuilder;
};

}  // namespace ringsim
