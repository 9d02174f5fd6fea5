#include "graph/routing.h"

#include <algorithm>
#include <boost/graph/dijkstra_shortest_paths.hpp>
#include <boost/graph/filtered_graph.hpp>
#include <boost/property_map/function_property_map.hpp>
#include <boost/property_map/property_map.hpp>
#include <limits>
#include <map>
#include <sstream>
#include <stdexcept>
#include <unordered_map>
#include <vector>

namespace ringsim {

std::string_view to_string(ConnectionKind kind) {
  switch (kind) {
    case ConnectionKind::Self:
      return "X";
    case ConnectionKind::NvLink:
      return "NV";
    case ConnectionKind::Pix:
      return "PIX";
    case ConnectionKind::Pxb:
      return "PXB";
    case ConnectionKind::Phb:
      return "PHB";
    case ConnectionKind::Sys:
      return "SYS";
    case ConnectionKind::Net:
      return "NET";
  }
  return "?";
}

std::string_view describe(ConnectionKind kind) {
  switch (kind) {
    case ConnectionKind::Self:
      return "Self";
    case ConnectionKind::NvLink:
      return "Connection traversing a bonded set of # NVLinks";
    case ConnectionKind::Pix:
      return "Connection traversing at most a single PCIe switch";
    case ConnectionKind::Pxb:
      return "Connection traversing multiple PCIe switches (without the CPU)";
    case ConnectionKind::Phb:
      return "Connection traversing a CPU's PCIe host bridge (same socket)";
    case ConnectionKind::Sys:
      return "Connection traversing PCIe and the socket interconnect (QPI/UPI) between CPUs";
    case ConnectionKind::Net:
      return "Connection leaving the node through its NIC and the cluster fabric";
  }
  return "";
}

std::string Route::label() const {
  if (kind == ConnectionKind::NvLink) return "NV" + std::to_string(nvlinks);
  return std::string(to_string(kind));
}

namespace {

struct RouteFilter {
  const Topology* t = nullptr;
  VertexId src{}, dst{};
  int src_node = -1, dst_node = -1;
  int spine = -1;  // allowed spine index, -1: any
  // The edge switches (leaves, or a star's one switch) under the two end nodes' NICs; empty: any. A
  // two-level fabric's shortest route never detours through a third leaf, and leaving the others out keeps
  // a search from scanning every NIC port of the fabric (the cost of a route grew with the cluster).
  // A pointer: Boost copies the filter into every edge iterator.
  const std::vector<VertexId>* edge_switches = nullptr;
  bool operator()(VertexId v) const {
    if (v == src || v == dst) return true;
    const Device& d = t->device(v);
    switch (d.kind) {
      case DeviceKind::Gpu:
      case DeviceKind::HostMemory:
        return false;             // endpoints only
      case DeviceKind::NvSwitch:  // a rack's NVLink domain serves both ends, or the node's own switch
        if (d.node < 0)
          return t->nvlink_domain(src_node) == d.local_index && t->nvlink_domain(dst_node) == d.local_index;
        return d.node == src_node || d.node == dst_node;
      case DeviceKind::FabricSwitch:
        if (src_node == dst_node) return false;
        if (d.name.rfind("spine", 0) == 0) return spine < 0 || d.local_index == spine;
        return !edge_switches || edge_switches->empty() ||
               std::find(edge_switches->begin(), edge_switches->end(), v) != edge_switches->end();
      default:
        return d.node == src_node || d.node == dst_node;
    }
  }
};

// A distance map that holds only the vertices reached; the others are at infinity.
struct SparseDistance {
  using key_type = VertexId;
  using value_type = double;
  using reference = double;
  using category = boost::read_write_property_map_tag;
  std::unordered_map<VertexId, double>* d;
  friend double get(const SparseDistance& m, VertexId v) {
    const auto it = m.d->find(v);
    return it == m.d->end() ? std::numeric_limits<double>::infinity() : it->second;
  }
  friend void put(const SparseDistance& m, VertexId v, double x) { (*m.d)[v] = x; }
};

ConnectionKind classify(const Topology& t, const Route& r, int* nvlinks) {
  if (r.edges.empty()) return ConnectionKind::Self;
  bool net = false, sys = false, cpu = false;
  int switches = 0;
  for (std::size_t i = 0; i < r.edges.size(); ++i) {
    const Link& l = t.link(r.edges[i]);
    if (l.kind == LinkKind::Ethernet || l.kind == LinkKind::InfiniBand) net = true;
    if (l.kind == LinkKind::SocketInterconnect) sys = true;
    if (i == 0) continue;
    const Device& via = t.device(boost::source(r.edges[i], t.graph()));
    if (via.kind == DeviceKind::Cpu) cpu = true;
    if (via.kind == DeviceKind::PcieSwitch) ++switches;
  }
  if (net) return ConnectionKind::Net;
  // NVLink: directly, or through the node's NVSwitch (nvidia-smi shows both as NV<bricks>).
  const bool nvlink =
      std::all_of(r.edges.begin(), r.edges.end(), [&](EdgeId e) { return t.link(e).kind == LinkKind::NvLink; });
  if (nvlink && r.edges.size() <= 2) {
    *nvlinks = t.link(r.edges[0]).lanes;
    return ConnectionKind::NvLink;
  }
  if (sys) return ConnectionKind::Sys;
  if (cpu) return ConnectionKind::Phb;
  return switches > 1 ? ConnectionKind::Pxb : ConnectionKind::Pix;
}

struct RouteStore {
  int open = 0;  // SharedRoutes alive
  std::map<std::string, std::unordered_map<std::uint64_t, std::vector<VertexId>>> by_shape;
};
RouteStore& route_store() {
  static RouteStore store;
  return store;
}

// What the vertex numbering of a topology follows from: its shape and its size.
std::string shape_key(const Topology& t) {
  const ClusterShape& c = t.shape();
  std::ostringstream k;
  k << c.sku << ' ' << c.nodes << ' ' << static_cast<int>(c.fabric) << ' ' << static_cast<int>(c.fabric_topology) << ' '
    << c.nodes_per_leaf << ' ' << c.oversubscription << ' ' << boost::num_vertices(t.graph()) << ' '
    << boost::num_edges(t.graph());
  return k.str();
}

}  // namespace

Router::Router(const Topology& topology) : t_(topology), shape_(shape_key(topology)) {}

SharedRoutes::SharedRoutes() { ++route_store().open; }
SharedRoutes::~SharedRoutes() {
  if (--route_store().open == 0) route_store().by_shape.clear();
}

Route Router::route(VertexId src, VertexId dst) const {
  RouteStore& store = route_store();
  if (store.open == 0 || src == dst) return search(src, dst);
  auto& routes = store.by_shape[shape_];
  const std::uint64_t key = (static_cast<std::uint64_t>(src) << 32) | static_cast<std::uint64_t>(dst);
  if (auto it = routes.find(key); it != routes.end()) return along(it->second);
  Route r = search(src, dst);
  std::vector<VertexId>& vertices = routes[key];
  vertices.push_back(src);
  for (EdgeId e : r.edges) vertices.push_back(boost::target(e, t_.graph()));
  return r;
}

Route Router::search(VertexId src, VertexId dst) const {
  Route r;
  r.src = src;
  r.dst = dst;
  r.bottleneck_bandwidth = std::numeric_limits<double>::infinity();
  if (src == dst) return r;

  const TopologyGraph& g = t_.graph();
  RouteFilter filter{&t_, src, dst, t_.device(src).node, t_.device(dst).node, -1};
  if (filter.src_node != filter.dst_node && t_.spines() > 0 && filter.dst_node >= 0)
    filter.spine = filter.dst_node % t_.spines();
  std::vector<VertexId> edge_switches;
  if (filter.src_node != filter.dst_node && filter.src_node >= 0 && filter.dst_node >= 0)
    for (int node : {filter.src_node, filter.dst_node})
      for (VertexId nic : t_.fabric_nics(node))
        for (auto e : boost::make_iterator_range(boost::out_edges(nic, g)))
          if (t_.device(boost::target(e, g)).kind == DeviceKind::FabricSwitch)
            edge_switches.push_back(boost::target(e, g));
  filter.edge_switches = &edge_switches;
  boost::filtered_graph<TopologyGraph, boost::keep_all, RouteFilter> fg(g, boost::keep_all(), filter);

  // Only the vertices the search reaches (the two nodes and the fabric) get a distance, a predecessor
  // and a colour, so a route costs the same on 2 nodes as on 65,536.
  std::unordered_map<VertexId, VertexId> pred;
  std::unordered_map<VertexId, double> dist;
  std::unordered_map<VertexId, boost::default_color_type> color;  // absent: white
  pred[src] = src;
  dist[src] = 0;
  auto weight = boost::make_function_property_map<EdgeId, double>([&g](EdgeId e) { return g[e].latency; });
  boost::dijkstra_shortest_paths_no_init(fg, src, boost::make_assoc_property_map(pred), SparseDistance{&dist}, weight,
                                         boost::get(boost::vertex_index, g), std::less<double>(),
                                         boost::closed_plus<double>(), 0.0, boost::default_dijkstra_visitor(),
                                         boost::make_assoc_property_map(color));
  if (!dist.contains(dst))
    throw std::runtime_error("no route from " + t_.device(src).name + " to " + t_.device(dst).name);

  std::vector<VertexId> path;
  for (VertexId v = dst; v != src; v = pred[v]) path.push_back(v);
  path.push_back(src);
  std::reverse(path.begin(), path.end());
  return along(path);
}

Route Router::along(const std::vector<VertexId>& path) const {
  const TopologyGraph& g = t_.graph();
  Route r;
  r.src = path.front();
  r.dst = path.back();
  r.bottleneck_bandwidth = std::numeric_limits<double>::infinity();
  for (std::size_t i = 0; i + 1 < path.size(); ++i) {
    // Parallel edges do not occur; pick the lowest-latency edge between the two vertices anyway.
    std::optional<EdgeId> best;
    for (auto e : boost::make_iterator_range(boost::out_edges(path[i], g)))
      if (boost::target(e, g) == path[i + 1] && (!best || g[e].latency < g[*best].latency)) best = e;
    r.edges.push_back(*best);
    r.latency += g[*best].latency;
    r.bottleneck_bandwidth = std::min(r.bottleneck_bandwidth, g[*best].bandwidth);
  }
  r.kind = classify(t_, r, &r.nvlinks);
  return r;
}

}  // namespace ringsim
