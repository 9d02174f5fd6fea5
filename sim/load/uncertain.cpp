#include "load/uncertain.h"

#include <fnmatch.h>

#include <cmath>
#include <sstream>

#include "load/input_error.h"

namespace ringsim {

namespace {

std::vector<std::string> split(const std::string& figure) {
  std::vector<std::string> parts;
  std::stringstream in(figure);
  for (std::string part; std::getline(in, part, '.');) parts.push_back(part);
  return parts;
}

bool one_of(const std::string& s, std::initializer_list<const char*> names) {
  for (const char* n : names)
    if (s == n) return true;
  return false;
}

// The scalar figures of compute.yaml and of a library that a parameter may name: where the catalog keeps
// each, and where an overlay sets it.
template <class Spec, class Overlay>
struct Figure {
  const char* name;
  double Spec::*value;
  std::optional<double> Overlay::*slot;
};
constexpr Figure<ComputeSpec, ComputeOverlay> kComputeFigures[] = {
    {"step_time_cv", &ComputeSpec::step_time_cv, &ComputeOverlay::step_time_cv},
    {"gpu_to_gpu_cv", &ComputeSpec::gpu_to_gpu_cv, &ComputeOverlay::gpu_to_gpu_cv},
    {"co_run_slowdown", &ComputeSpec::co_run_slowdown, &ComputeOverlay::co_run_slowdown},
    {"roofline_efficiency_scale", &ComputeSpec::roofline_efficiency_scale, &ComputeOverlay::roofline_efficiency_scale}};
constexpr Figure<LibraryProfile, LibraryOverlay> kLibraryFigures[] = {
    {"collective_overhead", &LibraryProfile::collective_overhead, &LibraryOverlay::collective_overhead},
    {"host_reduction_rate", &LibraryProfile::host_reduction_rate, &LibraryOverlay::host_reduction_rate},
    {"host_copy_rate", &LibraryProfile::host_copy_rate, &LibraryOverlay::host_copy_rate},
    {"rpc_rate", &LibraryProfile::rpc_rate, &LibraryOverlay::rpc_rate},
    {"kernel_channels", &LibraryProfile::kernel_channels, &LibraryOverlay::kernel_channels}};

// The entry of `table` called `name`; nullptr where there is none.
template <class Spec, class Overlay, std::size_t N>
const Figure<Spec, Overlay>* find_figure(const Figure<Spec, Overlay> (&table)[N], const std::string& name) {
  for (const auto& f : table)
    if (name == f.name) return &f;
  return nullptr;
}

// The value an overlay entry's optional holds for the figure, and where to write it.
std::optional<double>* slot(CatalogOverlay& o, const std::vector<std::string>& f, const std::string& sku) {
  if (f[0] == "compute") return &(o.compute.*find_figure(kComputeFigures, f[1])->slot);
  if (f[0] == "skus") return &o.skus[sku].ethernet_bandwidth;
  if (f[0] == "link_classes")
    return f[2] == "bandwidth" ? &o.link_classes[f[1]].bandwidth : &o.link_classes[f[1]].latency;
  LibraryOverlay& l = o.libraries[f[1]];
  if (f.size() == 3) return &(l.*find_figure(kLibraryFigures, f[2])->slot);
  PathOverlay& p = l.paths[f[3]];
  return f[4] == "bandwidth_fraction" ? &p.bandwidth_fraction : &p.message_overhead;
}

// The catalog's own value of the figure.
double catalog_value(const Catalog& c, const std::vector<std::string>& f, const std::string& sku) {
  if (f[0] == "compute") return c.compute().*find_figure(kComputeFigures, f[1])->value;
  if (f[0] == "skus") return c.sku(sku).ethernet_bandwidth;
  if (f[0] == "link_classes") return f[2] == "bandwidth" ? c.link(f[1]).bandwidth : c.link(f[1]).latency;
  const LibraryProfile& l = c.library(f[1]);
  if (f.size() == 3) return l.*find_figure(kLibraryFigures, f[2])->value;
  const PathProfile& p = l.path(f[3]);
  return f[4] == "bandwidth_fraction" ? p.bandwidth_fraction : p.message_overhead;
}

// The SKUs a figure applies to: for `skus.PATTERN`, every SKU with Ethernet whose name matches the shell
// pattern (fnmatch); else none needed.
std::vector<std::string> skus_of(const Catalog& c, const std::vector<std::string>& f) {
  if (f[0] != "skus") return {""};
  std::vector<std::string> out;
  for (const auto& name : c.sku_names())
    if (c.sku(name).ethernet_bandwidth > 0 && fnmatch(f[1].c_str(), name.c_str(), 0) == 0) out.push_back(name);
  return out;
}

}  // namespace

std::string check_figure(const Catalog& c, const std::string& figure) {
  const std::vector<std::string> f = split(figure);
  const char* expected =
      "expected compute.{step_time_cv,gpu_to_gpu_cv,co_run_slowdown,roofline_efficiency_scale}, "
      "skus.PATTERN.ethernet_bandwidth, "
      "link_classes.NAME.{bandwidth,latency}, "
      "libraries.NAME.{collective_overhead,host_reduction_rate,host_copy_rate,rpc_rate,kernel_channels} or "
      "libraries.NAME.paths.{intra_node,cross_socket,infiniband,ethernet}.{bandwidth_fraction,message_overhead}";
  try {
    if (f.size() == 2 && f[0] == "compute" && find_figure(kComputeFigures, f[1])) return "";
    if (f.size() == 3 && f[0] == "skus" && f[2] == "ethernet_bandwidth")
      return skus_of(c, f).empty() ? "no SKU with Ethernet matches '" + f[1] + "'" : "";
    const bool link = f.size() == 3 && f[0] == "link_classes" && one_of(f[2], {"bandwidth", "latency"});
    const bool library = f.size() == 3 && f[0] == "libraries" && find_figure(kLibraryFigures, f[2]);
    const bool path = f.size() == 5 && f[0] == "libraries" && f[2] == "paths" &&
                      one_of(f[3], {"intra_node", "cross_socket", "infiniband", "ethernet"}) &&
                      one_of(f[4], {"bandwidth_fraction", "message_overhead"});
    if (link) c.link(f[1]);  // throws, naming the closest link classes, where there is no such one
    if (library || path) c.library(f[1]);
    if (link || library || path) return "";
  } catch (const InputError& e) {
    return e.message();
  }
  return expected;
}

std::optional<Quantity> figure_quantity(const std::string& figure) {
  const std::string last = split(figure).back();
  if (one_of(last, {"bandwidth", "host_reduction_rate", "host_copy_rate", "rpc_rate", "ethernet_bandwidth"}))
    return Quantity::Bandwidth;
  if (one_of(last, {"latency", "collective_overhead", "message_overhead"})) return Quantity::Time;
  return std::nullopt;
}

double value_at(const UncertainParameter& p, double u) {
  return p.low > 0 ? p.low * std::pow(p.high / p.low, u) : p.low + u * (p.high - p.low);
}

CatalogOverlay uncertain_overlay(const Catalog& c, const UncertainParameter& p, double x) {
  const std::vector<std::string> f = split(p.figure);
  CatalogOverlay o;
  for (const auto& sku : skus_of(c, f)) *slot(o, f, sku) = p.scale ? catalog_value(c, f, sku) * x : x;
  return o;
}

namespace {
// The socket a layout's GPU hangs from: the cpu<k> its chain of PCIe switches ends at.
int gpu_socket(const NodeLayout& l, int gpu) {
  const std::string top = l.pcie_chain(l.gpus.at(static_cast<std::size_t>(gpu)).parent).back();
  return top.rfind("cpu", 0) == 0 ? std::atoi(top.c_str() + 3) : 0;
}

// A collective's GPU pairs may go through host memory between the sockets (LibraryProfile::cross_socket).
bool gpus_across_sockets(const Scenario& s, const Catalog& c) {
  const SkuSpec& sku = c.sku(s.cluster.sku);
  const NodeLayout& l = c.layout(sku.layout);
  if (l.sockets < 2 || sku.socket_link.empty() ||
      !gpu_pairs_through_host(c.library(std::string(to_string(s.communication.library))), c.gpu(sku.gpu),
                              s.communication.strategy == Strategy::ParameterServer, c.link(sku.socket_link)))
    return false;
  const int gpus = std::min(s.cluster.gpus_per_node, static_cast<int>(l.gpus.size()));
  for (int g = 1; g < gpus; ++g)
    if (gpu_socket(l, g) != gpu_socket(l, 0)) return true;
  return false;
}
}  // namespace

bool applies_to(const UncertainParameter& p, const Scenario& s, const Catalog& catalog) {
  const std::vector<std::string> f = split(p.figure);
  const bool several_nodes = s.cluster.nodes > 1 || s.communication.strategy == Strategy::ParameterServer;
  const bool ethernet = several_nodes && s.cluster.fabric == FabricKind::Ethernet;
  if (f[0] == "compute") {
    if (f[1] == "roofline_efficiency_scale") return true;  // one GPU too; the band asks where the rate comes from
    return f[1] == "co_run_slowdown" ? s.cluster.gpus_per_node > 1 : s.cluster.total_gpus() > 1;
  }
  if (f[0] == "skus") return ethernet && fnmatch(f[1].c_str(), s.cluster.sku.c_str(), 0) == 0;
  if (f[0] == "link_classes") return true;
  if (f[1] != to_string(s.communication.library)) return false;
  // The collectives' kernels: allreduces between GPUs only (parameter servers' exchanges are copies).
  if (f.size() == 3 && f[2] == "kernel_channels")
    return s.cluster.total_gpus() > 1 && s.communication.strategy != Strategy::ParameterServer;
  // Sums on the host: MPI's own reductions, or parameter servers on CPUs (a device library's only ones).
  if (f.size() == 3 && f[2] == "host_reduction_rate")
    return s.communication.library == CommLibrary::Mpi || s.communication.server_members() > 0;
  if (f.size() == 3 && f[2] == "rpc_rate")
    return s.communication.server_members() > 0 && s.communication.ps_transport == PsTransport::Rpc;
  if (f.size() == 3) return true;
  if (f[3] == "intra_node") return s.cluster.gpus_per_node > 1;
  if (f[3] == "cross_socket") return s.cluster.gpus_per_node > 1 && gpus_across_sockets(s, catalog);
  return several_nodes && f[3] == to_string(s.cluster.fabric);
}

bool overlay_sets(const Catalog& c, const CatalogOverlay& overlay, const UncertainParameter& p) {
  const std::vector<std::string> f = split(p.figure);
  CatalogOverlay copy = overlay;
  for (const auto& sku : skus_of(c, f))
    if (slot(copy, f, sku)->has_value()) return true;
  return false;
}

}  // namespace ringsim
