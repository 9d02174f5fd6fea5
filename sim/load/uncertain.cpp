#include "load/uncertain.h"

#include <fnmatch.h>

#include <cmath>
#include <sstream>

#include "load/catalog_values.h"
#include "load/figures.h"
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

// The value an overlay entry's optional holds for the figure, and where to write it.
std::optional<double>* slot(CatalogOverlay& o, const std::vector<std::string>& f, const std::string& sku) {
  if (f[0] == "compute") return &(o.compute.*find_figure(kComputeFigures, f[1])->slot);
  if (f[0] == "skus") return &(o.skus[sku].*find_figure(kSkuFigures, f[2])->slot);
  if (f[0] == "link_classes") return &(o.link_classes[f[1]].*find_figure(kLinkFigures, f[2])->slot);
  LibraryOverlay& l = o.libraries[f[1]];
  if (f.size() == 3) return &(l.*find_figure(kLibraryFigures, f[2])->slot);
  return &(l.paths[f[3]].*find_figure(kPathFigures, f[4])->slot);
}

// The catalog's own value of the figure.
double catalog_value(const Catalog& c, const std::vector<std::string>& f, const std::string& sku) {
  if (f[0] == "compute") return c.compute().*find_figure(kComputeFigures, f[1])->value;
  if (f[0] == "skus") return c.sku(sku).*find_figure(kSkuFigures, f[2])->value;
  if (f[0] == "link_classes") return c.link(f[1]).*find_figure(kLinkFigures, f[2])->value;
  const LibraryProfile& l = c.library(f[1]);
  if (f.size() == 3) return l.*find_figure(kLibraryFigures, f[2])->value;
  return l.path(f[3]).*find_figure(kPathFigures, f[4])->value;
}

// "{a,b,c}": a table's keys, for the message that lists the figures a parameter may name.
template <class Row, std::size_t N>
std::string braced(const Row (&rows)[N]) {
  std::string s;
  for (const auto& r : rows) s += (s.empty() ? "{" : ",") + std::string(r.key);
  return s + "}";
}

// The kind of the figure's row (a time, a bandwidth or a plain number).
FigureKind kind_of(const std::vector<std::string>& f) {
  if (f[0] == "compute") return find_figure(kComputeFigures, f[1])->kind;
  if (f[0] == "skus") return find_figure(kSkuFigures, f[2])->kind;
  if (f[0] == "link_classes") return find_figure(kLinkFigures, f[2])->kind;
  if (f.size() == 3) return find_figure(kLibraryFigures, f[2])->kind;
  return find_figure(kPathFigures, f[4])->kind;
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
  const std::string expected =
      "expected compute." + braced(kComputeFigures) + ", skus.PATTERN." + braced(kSkuFigures) + ", link_classes.NAME." +
      braced(kLinkFigures) + ", libraries.NAME." + braced(kLibraryFigures) +
      " or libraries.NAME.paths.{intra_node,cross_socket,infiniband,ethernet}." + braced(kPathFigures);
  try {
    if (f.size() == 2 && f[0] == "compute" && find_figure(kComputeFigures, f[1])) return "";
    if (f.size() == 3 && f[0] == "skus" && find_figure(kSkuFigures, f[2]))
      return skus_of(c, f).empty() ? "no SKU with Ethernet matches '" + f[1] + "'" : "";
    const bool link = f.size() == 3 && f[0] == "link_classes" && find_figure(kLinkFigures, f[2]);
    const bool library = f.size() == 3 && f[0] == "libraries" && find_figure(kLibraryFigures, f[2]);
    const bool path = f.size() == 5 && f[0] == "libraries" && f[2] == "paths" &&
                      one_of(f[3], {"intra_node", "cross_socket", "infiniband", "ethernet"}) &&
                      find_figure(kPathFigures, f[4]);
    if (link) c.link(f[1]);  // throws, naming the closest link classes, where there is no such one
    if (library || path) c.library(f[1]);
    if (link || library || path) return "";
  } catch (const InputError& e) {
    return e.message();
  }
  return expected;
}

std::optional<Quantity> figure_quantity(const std::string& figure) {
  const FigureKind k = kind_of(split(figure));
  if (k.kind == FigureKind::Bandwidth) return Quantity::Bandwidth;
  if (k.kind == FigureKind::Time) return Quantity::Time;
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
    // one GPU too; the band asks where the rate comes from
    if (f[1] == "roofline_efficiency_scale") return true;
    if (f[1] == "operator_time_scale") return !s.model.stack.empty();  // the operator model's runs
    if (f[1] == "attention_scale")                                     // the operator model's fused attention
      return !s.model.stack.empty() && catalog.model(s.model.name).transformer() &&
             catalog.compute().operators.stack_for(s.model.stack).flash_attention;
    if (f[1] == "fp8_matmul_scale")  // the operator model's FP8 linear layers
      return !s.model.stack.empty() && !catalog.compute().precisions.at(s.model.precision).linear.empty();
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

// uncertain.yaml: the assumed figures' ranges.
void Catalog::load_uncertain(const std::filesystem::path& base) {
  namespace fs = std::filesystem;
  using catalog_detail::open_root;
  if (!fs::exists(base / "uncertain.yaml")) return;
  YamlField root = open_root(base / "uncertain.yaml", {"parameters"});
  for (auto& [name, f] : root.get("parameters").entries()) {
    f.require_map({"figure", "range", "scale", "source"});
    UncertainParameter p;
    p.name = name;
    p.figure = f.get("figure").str();
    if (const std::string why = check_figure(*this, p.figure); !why.empty()) f.get("figure").fail(why);
    if (f.has("range") == f.has("scale")) f.fail("give either range: [LOW, HIGH] (values) or scale: [LOW, HIGH]");
    const YamlField r = f.has("range") ? f.get("range") : f.get("scale");
    const std::vector<YamlField> ends = r.items();
    if (ends.size() != 2) r.fail("expected [LOW, HIGH]");
    p.scale = f.has("scale");
    const std::optional<Quantity> kind = p.scale ? std::nullopt : figure_quantity(p.figure);
    const auto value = [&](const YamlField& v) { return kind ? v.nonnegative_quantity(*kind) : v.number(0, 1e300); };
    p.low = value(ends[0]);
    p.high = value(ends[1]);
    if (p.high < p.low) ends[1].fail("the range's HIGH is below its LOW");
    p.source = "uncertain.yaml:" + std::to_string(f.location().line) + " " + f.get("source").str();
    uncertain_.push_back(p);
  }
}

}  // namespace ringsim
