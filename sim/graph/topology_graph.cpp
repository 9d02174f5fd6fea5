#include "graph/topology_graph.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <stdexcept>

#include "load/input_error.h"

namespace ringsim {

std::string_view to_string(DeviceKind kind) {
  switch (kind) {
    case DeviceKind::Gpu:
      return "gpu";
    case DeviceKind::Cpu:
      return "cpu";
    case DeviceKind::HostMemory:
      return "memory";
    case DeviceKind::PcieSwitch:
      return "pcie_switch";
    case DeviceKind::NvSwitch:
      return "nvswitch";
    case DeviceKind::Nic:
      return "nic";
    case DeviceKind::FabricSwitch:
      return "fabric_switch";
  }
  return "?";
}

ClusterShape cluster_shape(const ClusterConfig& c) {
  return {c.sku, c.nodes, c.fabric, c.fabric_topology, c.nodes_per_leaf, c.oversubscription};
}

class TopologyBuilder {
 public:
  TopologyBuilder(const Catalog& catalog, Topology& t) : catalog_(catalog), t_(t) {}

  VertexId add_device(DeviceKind kind, std::string name, int node, int local) {
    return boost::add_vertex(Device{kind, std::move(name), node, local}, t_.graph_);
  }

  // Both directions of one physical link. `extra_latency_from_*` models a switch traversal charged to
  // the hop that leaves the switch.
  void connect(VertexId a, VertexId b, const std::string& cls_name, LinkKind kind, double bandwidth, double latency,
               int lanes = 1, double extra_latency_from_a = 0, double extra_latency_from_b = 0) {
    const int id = next_physical_id_++;
    boost::add_edge(a, b, Link{cls_name, kind, bandwidth, latency + extra_latency_from_a, lanes, id}, t_.graph_);
    boost::add_edge(b, a, Link{cls_name, kind, bandwidth, latency + extra_latency_from_b, lanes, id}, t_.graph_);
  }
  void connect_class(VertexId a, VertexId b, const std::string& cls_name, int lanes = 1) {
    const LinkClass& c = catalog_.link(cls_name);
    connect(a, b, cls_name, c.kind, c.bandwidth * lanes, c.latency, lanes);
  }

  void build_node(int node, const SkuSpec& sku, const NodeLayout& layout) {
    const std::string p = "n" + std::to_string(node) + ".";
    std::map<std::string, VertexId> parents;
    std::vector<VertexId> cpus;
    for (int s = 0; s < layout.sockets; ++s) {
      VertexId cpu = add_device(DeviceKind::Cpu, p + "cpu" + std::to_string(s), node, s);
      VertexId mem = add_device(DeviceKind::HostMemory, p + "mem" + std::to_string(s), node, s);
      connect_class(cpu, mem, sku.memory_link);
      parents["cpu" + std::to_string(s)] = cpu;
      cpus.push_back(cpu);
      t_.memories_.push_back(mem);
    }
    for (int s = 1; s < layout.sockets; ++s) connect_class(cpus[s - 1], cpus[s], sku.socket_link);
    for (std::size_t i = 0; i < layout.pcie_switches.size(); ++i) {
      const auto& sw = layout.pcie_switches[i];
      VertexId v = add_device(DeviceKind::PcieSwitch, p + sw.name, node, static_cast<int>(i));
      connect_class(parents.at(sw.uplink.parent), v, sw.uplink.link);
      parents[sw.name] = v;
    }
    std::vector<VertexId> gpus;
    for (std::size_t i = 0; i < layout.gpus.size(); ++i) {
      VertexId g = add_device(DeviceKind::Gpu, p + "gpu" + std::to_string(i), node, static_cast<int>(i));
      connect_class(parents.at(layout.gpus[i].parent), g, layout.gpus[i].link);
      gpus.push_back(g);
      t_.gpus_.push_back(g);
    }
    for (const auto& nv : layout.nvlinks) connect_class(gpus[nv.gpu_a], gpus[nv.gpu_b], layout.nvlink_class, nv.links);
    if (layout.nvswitch && layout.nvswitch->domain_nodes == 1) {
      VertexId sw = add_device(DeviceKind::NvSwitch, p + "nvswitch", node, 0);
      for (VertexId g : gpus) connect_class(g, sw, layout.nvswitch->link, layout.nvswitch->links_per_gpu);
      t_.nvswitches_.push_back(sw);
    }
    // NICs: the PCIe attachment, and the port that the fabric connects to.
    VertexId eth = add_device(DeviceKind::Nic, p + "eth0", node, 0);
    connect_class(parents.at(layout.ethernet_nic->parent), eth, layout.ethernet_nic->link);
    t_.all_nics_.push_back(eth);
    std::vector<VertexId> ibs;  // one per rail: ib0, ib1, ...
    if (sku.infiniband_link) {
      for (std::size_t k = 0; k < layout.infiniband_nics.size(); ++k) {
        const Attachment& a = layout.infiniband_nics[k];
        ibs.push_back(add_device(DeviceKind::Nic, p + "ib" + std::to_string(k), node, 1 + static_cast<int>(k)));
        connect_class(parents.at(a.parent), ibs.back(), a.link);
        t_.all_nics_.push_back(ibs.back());
      }
    }
    if (t_.shape_.fabric == FabricKind::InfiniBand) {
      if (ibs.empty()) throw InputError({}, sku.name + " has no InfiniBand NIC; use --fabric ethernet");
      t_.nics_.insert(t_.nics_.end(), ibs.begin(), ibs.end());
      t_.nics_per_node_ = static_cast<int>(ibs.size());
    } else {
      t_.nics_.push_back(eth);
      t_.nics_per_node_ = 1;
    }
  }

  // A rack-scale NVLink domain: one switch per `domain_nodes` consecutive nodes, after every node's own
  // devices (so that each node's vertices stay contiguous, as CommModel's node templates need).
  void build_nvlink_domains(const NodeLayout& layout) {
    if (!layout.nvswitch || layout.nvswitch->domain_nodes == 1) return;
    const int per = layout.nvswitch->domain_nodes, domains = (t_.shape_.nodes + per - 1) / per;
    t_.domain_nodes_ = per;
    for (int d = 0; d < domains; ++d) {
      VertexId sw = add_device(DeviceKind::NvSwitch, "nvl" + std::to_string(d) + ".nvswitch", -1, d);
      t_.nvswitches_.push_back(sw);
      for (int n = d * per; n < std::min(t_.shape_.nodes, (d + 1) * per); ++n)
        for (int i = 0; i < t_.gpus_per_node_; ++i)
          connect_class(t_.gpu(n, i), sw, layout.nvswitch->link, layout.nvswitch->links_per_gpu);
    }
  }

  // NIC port to its switch: the SKU's fabric link class (Ethernet takes the SKU's NIC speed).
  struct FabricLink {
    std::string cls;
    LinkKind kind;
    double bandwidth;
    double latency;
  };
  FabricLink fabric_link(const SkuSpec& sku) const {
    if (t_.shape_.fabric == FabricKind::InfiniBand) {
      const LinkClass& c = catalog_.link(*sku.infiniband_link);
      return {c.name, c.kind, c.bandwidth, c.latency};
    }
    const LinkClass& c = catalog_.link(sku.ethernet_link);
    return {c.name, c.kind, sku.ethernet_bandwidth, c.latency};
  }

  void build_fabric(const SkuSpec& sku) {
    const ClusterShape& s = t_.shape_;
    if (s.nodes == 1) return;  // a single node needs no switch
    const FabricSpec& fabric = catalog_.fabric(s.fabric);
    const FabricLink fl = fabric_link(sku);
    const double sw = fabric.switch_latency;
    if (s.fabric_topology == FabricTopology::RailOptimized) return build_rails(fl, sw);
    if (s.fabric_topology == FabricTopology::Star || s.nodes <= s.nodes_per_leaf) {
      VertexId root = add_device(DeviceKind::FabricSwitch, "switch0", -1, 0);
      t_.leaves_ = 1;
      for (VertexId nic : t_.nics_) connect(nic, root, fl.cls, fl.kind, fl.bandwidth, fl.latency, 1, 0, sw);
      return;
    }
    // Two-level fat tree: L leaves of `nodes_per_leaf` nodes (every NIC of a node on its node's leaf); S
    // spines; every leaf has one uplink to every spine, sized so that a leaf's total uplink = its total
    // downlink / oversubscription.
    const int per_leaf = s.nodes_per_leaf;
    t_.leaves_ = (s.nodes + per_leaf - 1) / per_leaf;
    t_.spines_ = std::max(1, static_cast<int>(std::ceil(per_leaf / s.oversubscription)));
    const double uplink_bw = per_leaf * t_.nics_per_node_ * fl.bandwidth / s.oversubscription / t_.spines_;
    std::vector<VertexId> leaves, spines;
    for (int l = 0; l < t_.leaves_; ++l)
      leaves.push_back(add_device(DeviceKind::FabricSwitch, "leaf" + std::to_string(l), -1, l));
    for (int k = 0; k < t_.spines_; ++k)
      spines.push_back(add_device(DeviceKind::FabricSwitch, "spine" + std::to_string(k), -1, k));
    for (int n = 0; n < s.nodes; ++n)
      for (VertexId nic : t_.fabric_nics(n))
        connect(nic, leaves[n / per_leaf], fl.cls, fl.kind, fl.bandwidth, fl.latency, 1, 0, sw);
    for (VertexId leaf : leaves)
      for (VertexId spine : spines) connect(leaf, spine, "fabric:" + fl.cls, fl.kind, uplink_bw, fl.latency, 1, sw, sw);
  }

  // Rail-optimised (NVIDIA enterprise RAs; Juniper JVD "Rail Optimized Fabric": rail N joins GPU N of every
  // server on leaf N): in each group (stripe) of `nodes_per_leaf` nodes, NIC i of every node is
  // on the group's leaf i, so rail i's traffic stays on one switch; spines join every leaf, a leaf's uplink
  // its downlink / oversubscription, as in the fat tree. Traffic from one rail to another crosses a spine.
  void build_rails(const FabricLink& fl, double sw) {
    const ClusterShape& s = t_.shape_;
    const int per_leaf = s.nodes_per_leaf, rails = t_.nics_per_node_;
    t_.leaves_ = (s.nodes + per_leaf - 1) / per_leaf * rails;
    t_.spines_ = std::max(1, static_cast<int>(std::ceil(per_leaf / s.oversubscription)));
    const double uplink_bw = per_leaf * fl.bandwidth / s.oversubscription / t_.spines_;
    std::vector<VertexId> leaves, spines;
    for (int l = 0; l < t_.leaves_; ++l)
      leaves.push_back(add_device(DeviceKind::FabricSwitch, "leaf" + std::to_string(l), -1, l));
    for (int k = 0; k < t_.spines_; ++k)
      spines.push_back(add_device(DeviceKind::FabricSwitch, "spine" + std::to_string(k), -1, k));
    for (int n = 0; n < s.nodes; ++n) {
      const auto nics = t_.fabric_nics(n);
      for (int i = 0; i < rails; ++i)
        connect(nics[i], leaves[n / per_leaf * rails + i], fl.cls, fl.kind, fl.bandwidth, fl.latency, 1, 0, sw);
    }
    for (VertexId leaf : leaves)
      for (VertexId spine : spines) connect(leaf, spine, "fabric:" + fl.cls, fl.kind, uplink_bw, fl.latency, 1, sw, sw);
  }

 private:
  const Catalog& catalog_;
  Topology& t_;
  int next_physical_id_ = 0;
};

Topology Topology::build(const Catalog& catalog, const ClusterShape& shape) {
  Topology t;
  t.shape_ = shape;
  const SkuSpec& sku = catalog.sku(shape.sku);
  t.shape_.sku = sku.name;
  if (shape.nodes < 1) throw InputError({}, "a cluster needs at least one node");
  if (t.shape_.fabric_topology != FabricTopology::Star && t.shape_.nodes_per_leaf <= 0)
    t.shape_.nodes_per_leaf = catalog.fabric(shape.fabric).default_nodes_per_leaf;
  if (t.shape_.oversubscription < 1) throw InputError({}, "oversubscription must be at least 1");
  const NodeLayout& layout = catalog.layout(sku.layout);
  t.gpus_per_node_ = static_cast<int>(layout.gpus.size());
  t.sockets_ = layout.sockets;
  TopologyBuilder b(catalog, t);
  for (int n = 0; n < shape.nodes; ++n) b.build_node(n, sku, layout);
  b.build_nvlink_domains(layout);
  b.build_fabric(sku);
  for (auto v : boost::make_iterator_range(boost::vertices(t.graph_))) t.by_name_.emplace_back(t.graph_[v].name, v);
  std::sort(t.by_name_.begin(), t.by_name_.end());
  return t;
}

VertexId Topology::vertex(const std::string& name) const {
  auto it = std::lower_bound(by_name_.begin(), by_name_.end(), std::make_pair(name, VertexId{0}),
                             [](const auto& a, const auto& b) { return a.first < b.first; });
  if (it == by_name_.end() || it->first != name) throw std::out_of_range("no device named '" + name + "'");
  return it->second;
}

VertexId Topology::nvswitch(int node) const {
  if (nvswitches_.empty()) throw std::out_of_range("nvswitch: " + shape_.sku + " has no NVSwitch");
  return nvswitches_.at(static_cast<std::size_t>(node / domain_nodes_));
}

VertexId Topology::host_memory(int node, int socket) const { return memories_.at(node * sockets_ + socket); }

}  // namespace ringsim
