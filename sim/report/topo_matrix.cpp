#include "report/topo_matrix.h"

#include <algorithm>
#include <cstdio>
#include <sstream>

#include "graph/routing.h"
#include "load/units.h"

namespace ringsim {
namespace {

std::string cell(const std::string& s, std::size_t width) {
  return s.size() >= width ? s + " " : s + std::string(width - s.size(), ' ');
}

std::string fixed(double v, int decimals) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

}  // namespace

std::string topo_matrix_report(const Topology& t, const Catalog& catalog, int max_endpoints) {
  const SkuSpec& sku = catalog.sku(t.shape().sku);
  const GpuSpec& gpu = catalog.gpu(sku.gpu);
  std::ostringstream out;
  out << sku.name << (sku.azure_name.empty() ? "" : " (" + sku.azure_name + ")") << ": " << sku.gpus << " x "
      << gpu.name << ", " << sku.vcpus << " vCPUs, " << format_bytes(sku.memory_bytes) << ", layout " << sku.layout
      << "\n";
  out << "Cluster: " << t.nodes() << " node" << (t.nodes() == 1 ? "" : "s") << ", fabric "
      << to_string(t.shape().fabric);
  if (t.nodes() > 1) {
    out << " (" << to_string(t.shape().fabric_topology);
    if (t.spines() > 0)
      out << ": " << t.leaves() << " leaves x " << t.spines() << " spines, " << t.shape().nodes_per_leaf
          << " nodes per leaf, oversubscription " << t.shape().oversubscription << ":1";
    out << ")";
  }
  out << "; graph: " << boost::num_vertices(t.graph()) << " devices, " << boost::num_edges(t.graph()) / 2
      << " links\n\n";

  // Endpoints: GPUs then NICs, node by node.
  int shown_nodes = t.nodes();
  const int per_node = t.gpus_per_node() + static_cast<int>(t.all_nics().size()) / t.nodes();
  if (per_node * t.nodes() > max_endpoints) shown_nodes = std::min(t.nodes(), 2);
  std::vector<VertexId> ends;
  std::vector<std::string> names;
  const bool multi = t.nodes() > 1;
  for (int n = 0; n < shown_nodes; ++n)
    for (int i = 0; i < t.gpus_per_node(); ++i) {
      ends.push_back(t.gpu(n, i));
      names.push_back((multi ? "n" + std::to_string(n) + "." : std::string()) + "GPU" + std::to_string(i));
    }
  for (VertexId v : t.all_nics()) {
    const Device& d = t.device(v);
    if (d.node >= shown_nodes) continue;
    ends.push_back(v);
    names.push_back((multi ? "n" + std::to_string(d.node) + "." : std::string()) + "NIC" +
                    std::to_string(d.local_index));
  }
  std::size_t width = 6;
  for (const auto& n : names) width = std::max(width, n.size() + 2);

  const Router router(t);
  std::vector<std::vector<Route>> routes(ends.size());
  for (std::size_t i = 0; i < ends.size(); ++i)
    for (std::size_t j = 0; j < ends.size(); ++j) routes[i].push_back(router.route(ends[i], ends[j]));

  auto matrix = [&](const std::string& title, auto&& value) {
    out << title << "\n" << cell("", width);
    for (const auto& n : names) out << cell(n, width);
    out << "\n";
    for (std::size_t i = 0; i < ends.size(); ++i) {
      out << cell(names[i], width);
      for (std::size_t j = 0; j < ends.size(); ++j) out << cell(i == j ? "X" : value(routes[i][j]), width);
      out << "\n";
    }
    out << "\n";
  };
  matrix("Connection", [](const Route& r) { return r.label(); });
  matrix("Bottleneck bandwidth (GB/s, one direction)",
         [](const Route& r) { return fixed(r.bottleneck_bandwidth / 1e9, 2); });
  matrix("Latency (us, one way)", [](const Route& r) { return fixed(r.latency * 1e6, 2); });

  out << "NICs:\n";
  for (std::size_t i = 0; i < ends.size(); ++i) {
    const Device& d = t.device(ends[i]);
    if (d.kind != DeviceKind::Nic) continue;
    const bool on_fabric = std::find(t.fabric_nics().begin(), t.fabric_nics().end(), ends[i]) != t.fabric_nics().end();
    out << "  " << cell(names[i], width) << d.name
        << (d.name.find(".ib") != std::string::npos ? " (InfiniBand" : " (Ethernet")
        << (on_fabric ? ", carries the cluster fabric)" : ", not on the selected fabric)") << "\n";
  }
  if (shown_nodes < t.nodes())
    out << "  (showing nodes 0-" << shown_nodes - 1 << " of " << t.nodes() << "; other nodes are identical)\n";
  out << "\nLegend:\n";
  for (auto k : {ConnectionKind::Self, ConnectionKind::NvLink, ConnectionKind::Pix, ConnectionKind::Pxb,
                 ConnectionKind::Phb, ConnectionKind::Sys, ConnectionKind::Net}) {
    std::string label(to_string(k));
    if (k == ConnectionKind::NvLink) label += "#";
    out << "  " << cell(label, 6) << "= " << describe(k) << "\n";
  }
  return out.str();
}

}  // namespace ringsim
