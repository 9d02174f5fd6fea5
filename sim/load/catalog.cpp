#include "load/catalog.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <set>

#include "load/catalog_values.h"
#include "load/input_file.h"
#include "load/yaml_reader.h"

#ifndef RINGSIM_CATALOG_DIR
#define RINGSIM_CATALOG_DIR "topologies"
#endif

namespace fs = std::filesystem;

namespace ringsim {

std::string_view to_string(LinkKind kind) {
  switch (kind) {
    case LinkKind::Pcie:
      return "pcie";
    case LinkKind::NvLink:
      return "nvlink";
    case LinkKind::SocketInterconnect:
      return "socket";
    case LinkKind::Memory:
      return "memory";
    case LinkKind::Ethernet:
      return "ethernet";
    case LinkKind::InfiniBand:
      return "infiniband";
  }
  return "?";
}

std::string_view to_string(StorageScaling s) {
  return s == StorageScaling::PerNode ? "per_node" : s == StorageScaling::Shared ? "shared" : "per_server";
}

std::string_view to_string(FabricKind kind) { return kind == FabricKind::InfiniBand ? "infiniband" : "ethernet"; }

double ModelSpec::gradient_bytes() const { return static_cast<double>(total_params) * dtype_bytes(); }
int ModelSpec::dtype_bytes() const { return dtype == "float16" ? 2 : 4; }

double GpuSpec::peak_flops(const std::string& arithmetic) const {
  if (arithmetic == "fp32") return fp32_peak_flops;
  const auto it = peaks.find(arithmetic);
  return it == peaks.end() ? 0 : it->second;
}

double TensorSpec::forward_flops(double tokens) const {
  const double n = static_cast<double>(numel);
  if (out_h > 0) return 2.0 * n * out_h * out_w;
  if (shape.size() != 2) return 0;
  switch (use) {
    case TensorUse::Lookup:
      return 0;
    case TensorUse::PerSample:
      return 2.0 * n;
    case TensorUse::Attention:
      return 2.0 * n * tokens + 4.0 * tokens * tokens * static_cast<double>(shape[0]);
    case TensorUse::PerToken:
      break;
  }
  return 2.0 * n * tokens;
}

double ModelSpec::forward_flops(int tokens) const {
  double f = 0;
  for (const auto& t : tensors) f += t.forward_flops(tokens);
  return f;
}

double ModelSpec::vocabulary() const {
  double v = 0;
  for (const auto& t : tensors)
    if (t.shape.size() == 2 && t.use == TensorUse::PerToken) v = std::max(v, static_cast<double>(t.shape[0]));
  return v >= 8192 ? v : 0;
}

bool ModelSpec::transformer() const {
  return std::any_of(tensors.begin(), tensors.end(), [](const TensorSpec& t) { return t.use == TensorUse::Attention; });
}

const MeasuredRate* ComputeSpec::find(const std::string& gpu, const std::string& model, int batch,
                                      const std::string& precision, int tokens, int default_tokens) const {
  for (const auto& m : measured)
    if (m.gpu == gpu && m.model == model && m.batch_per_gpu == batch && m.precision == precision &&
        (m.seq_len ? m.seq_len : default_tokens) == tokens)
      return &m;
  return nullptr;
}

namespace {

const std::vector<std::string> kLinkKinds = {"pcie", "nvlink", "socket", "memory", "ethernet", "infiniband"};

LinkKind parse_link_kind(const YamlField& f) {
  const std::string k = f.choice(kLinkKinds);
  for (auto kind : {LinkKind::Pcie, LinkKind::NvLink, LinkKind::SocketInterconnect, LinkKind::Memory,
                    LinkKind::Ethernet, LinkKind::InfiniBand})
    if (to_string(kind) == k) return kind;
  f.fail("unknown link kind");
}

template <class Map>
std::vector<std::string> keys_of(const Map& m) {
  std::vector<std::string> k;
  for (const auto& [name, v] : m) k.push_back(name);
  return k;
}

Attachment parse_attachment(const YamlField& f) {
  f.require_map({"parent", "link"});
  return {f.get("parent").str(), f.get("link").str()};
}

}  // namespace

namespace catalog_detail {

// A rank kind's core handoffs (`core_handoff`, `cross_core_handoff`: times): only CPU processes share cores
// with other ranks.
double core_handoff_of(const GpuSpec& g, const YamlField& value) {
  if (!g.cpu_process) value.fail("only ranks of kind cpu_process share cores with other ranks");
  return value.nonnegative_quantity(Quantity::Time);
}

YamlField open_root(const fs::path& file, std::vector<std::string> top_keys, const std::string& kind) {
  std::error_code ec;
  if (!fs::exists(file, ec))
    throw InputError({file.string(), 0, 0, ""}, ec ? "cannot access: " + ec.message() : kind + " file is missing");
  auto doc = std::make_shared<YamlDocument>(YamlDocument::load_file(file.string(), kind));
  YamlField root = YamlField::root(doc);
  root.require_map(top_keys);
  return root;
}

}  // namespace catalog_detail

using catalog_detail::core_handoff_of;
using catalog_detail::open_root;

std::string Catalog::default_dir() {
  if (const char* env = std::getenv("RINGSIM_CATALOG"); env && *env) return env;
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const fs::path installed = exe.parent_path().parent_path() / "share" / "ringsim" / "topologies";
    if (fs::exists(installed / "skus.yaml")) return installed.string();
  }
  return RINGSIM_CATALOG_DIR;
}

std::string Catalog::require_link(const YamlField& f, std::optional<LinkKind> kind) const {
  const std::string name = f.str();
  auto it = links_.find(name);
  if (it == links_.end()) f.fail("unknown link class '" + name + "'" + suggestion_suffix(name, link_order_));
  if (kind && it->second.kind != *kind)
    f.fail("link class '" + name + "' is of kind " + std::string(to_string(it->second.kind)) + ", expected " +
           std::string(to_string(*kind)));
  return name;
}

// links.yaml: the link classes, first, as everything else refers to them.
void Catalog::load_links(const fs::path& base) {
  YamlField root = open_root(base / "links.yaml", {"link_classes"});
  for (auto& [name, f] : root.get("link_classes").entries()) {
    f.require_map({"kind", "description", "bandwidth", "latency", "gpu_peer_access"});
    LinkClass l;
    l.name = name;
    l.kind = parse_link_kind(f.get("kind"));
    l.description = f.get("description").str();
    l.bandwidth = f.get("bandwidth").positive_quantity(Quantity::Bandwidth);
    l.latency = f.get("latency").nonnegative_quantity(Quantity::Time);
    if (auto peer = f.find("gpu_peer_access")) {
      if (l.kind != LinkKind::SocketInterconnect)
        peer->fail("only links of kind socket take it; this one is of kind " + std::string(to_string(l.kind)));
      l.gpu_peer_access = peer->boolean();
    }
    links_.emplace(name, l);
    link_order_.push_back(name);
  }
}

// gpus.yaml.
void Catalog::load_gpus(const fs::path& base) {
  YamlField root = open_root(base / "gpus.yaml", {"gpus"});
  for (auto& [name, f] : root.get("gpus").entries()) {
    f.require_map({"description", "kind", "fp32_peak", "peaks", "memory_bandwidth", "memory", "gpus_per_board",
                   "multiprocessors", "compute_capability", "core_handoff", "cross_core_handoff"});
    GpuSpec g;
    g.name = name;
    if (auto k = f.find("kind")) g.cpu_process = k->choice({"gpu", "cpu_process"}) == "cpu_process";
    // Required of CPU processes, refused for GPUs.
    for (auto [key, value] :
         {std::pair{"core_handoff", &g.core_handoff}, {"cross_core_handoff", &g.cross_core_handoff}}) {
      const auto h = g.cpu_process ? std::optional<YamlField>(f.get(key)) : f.find(key);
      if (h) *value = core_handoff_of(g, *h);
    }
    g.description = f.get("description").str();
    g.fp32_peak_flops = f.get("fp32_peak").positive_quantity(Quantity::FlopRate);
    if (auto p = f.find("peaks")) {
      p->require_map({"tf32", "fp16", "bf16", "fp8"});
      for (auto& [arith, v] : p->entries()) g.peaks[arith] = v.positive_quantity(Quantity::FlopRate);
    }
    g.memory_bandwidth = f.get("memory_bandwidth").positive_quantity(Quantity::Bandwidth);
    g.memory_bytes = f.get("memory").positive_quantity(Quantity::Bytes);
    g.gpus_per_board = static_cast<int>(f.get("gpus_per_board").integer(1, 2));
    if (auto m = f.find("multiprocessors")) g.multiprocessors = static_cast<int>(m->integer(1, 1024));
    if (auto c = f.find("compute_capability")) g.compute_capability = c->number(1, 100);
    gpus_.emplace(name, g);
    gpu_order_.push_back(name);
  }
}

// fabrics.yaml.
void Catalog::load_fabrics(const fs::path& base) {
  YamlField root = open_root(base / "fabrics.yaml", {"fabrics"});
  YamlField fabrics = root.get("fabrics");
  fabrics.require_map({"infiniband", "ethernet"});
  for (auto kind : {FabricKind::InfiniBand, FabricKind::Ethernet}) {
    YamlField f = fabrics.get(std::string(to_string(kind)));
    f.require_map({"description", "switch_latency", "default_nodes_per_leaf"});
    FabricSpec s;
    s.kind = kind;
    s.description = f.get("description").str();
    s.switch_latency = f.get("switch_latency").nonnegative_quantity(Quantity::Time);
    s.default_nodes_per_leaf = static_cast<int>(f.get("default_nodes_per_leaf").integer(1, 4096));
    fabrics_.emplace(kind, s);
  }
}

// datasets.yaml.
void Catalog::load_datasets(const fs::path& base) {
  YamlField root = open_root(base / "datasets.yaml", {"datasets"});
  for (auto& [name, f] : root.get("datasets").entries()) {
    f.require_map({"description", "training_images", "training_tokens", "training_bytes"});
    f.get("description").str();
    if (f.has("training_images") == f.has("training_tokens"))
      f.fail("give either training_images (an image data set) or training_tokens (a text data set)");
    DatasetSpec d{name, 0, 0, 0};
    if (auto i = f.find("training_images")) d.training_images = i->integer(1, std::int64_t(1) << 40);
    if (auto t = f.find("training_tokens")) d.training_tokens = t->integer(1, std::int64_t(1) << 50);
    if (auto b = f.find("training_bytes")) d.training_bytes = b->positive_quantity(Quantity::Bytes);
    datasets_.emplace(name, d);
    dataset_order_.push_back(name);
  }
}

// Each GPU's rail (NodeLayout::gpu_rail).
static void assign_rails(NodeLayout& l) {
  // The NIC whose PCIe path from the GPU meets it soonest; of NICs as close, the one fewest GPUs use so far
  // (two GPUs and two NICs on one switch: a NIC each, as NCCL pairs them). A device's chain is its parent, the
  // parent's parent, ... up to its CPU socket; devices under different sockets meet past the socket link.
  auto chain = [&](const std::string& parent) { return l.pcie_chain(parent); };
  std::vector<int> users(l.infiniband_nics.size(), 0);  // GPUs on each rail so far: ties go to the least used
  for (const auto& g : l.gpus) {
    const auto cg = chain(g.parent);
    int best = -1;
    std::size_t best_hops = 0;
    for (std::size_t k = 0; k < l.infiniband_nics.size(); ++k) {
      const auto cn = chain(l.infiniband_nics[k].parent);
      std::size_t hops = cg.size() + cn.size() + 1;  // beyond both sockets
      for (std::size_t i = 0; i < cg.size(); ++i)
        if (auto it = std::find(cn.begin(), cn.end(), cg[i]); it != cn.end()) {
          hops = i + static_cast<std::size_t>(it - cn.begin());
          break;
        }
      if (best < 0 || hops < best_hops || (hops == best_hops && users[k] < users[best])) {
        best = static_cast<int>(k);
        best_hops = hops;
      }
    }
    if (best >= 0) {
      l.gpu_rail.push_back(best);
      ++users[best];
    }
  }
}

// skus.yaml's node layouts: devices, their PCIe tree and NVLinks, NICs and each GPU's rail.
void Catalog::load_layouts(const YamlField& layouts) {
  for (auto& [name, f] : layouts.entries()) {
    f.require_map(
        {"description", "sockets", "pcie_switches", "gpus", "nics", "nvlink_class", "nvlinks", "nvswitch", "rings"});
    NodeLayout l;
    l.name = name;
    l.description = f.get("description").str();
    l.sockets = static_cast<int>(f.get("sockets").integer(1, 8));
    std::set<std::string> parents;
    for (int s = 0; s < l.sockets; ++s) parents.insert("cpu" + std::to_string(s));
    auto check_parent = [&](const YamlField& field, const Attachment& a) {
      if (!parents.count(a.parent)) {
        field.get("parent").fail("unknown parent '" + a.parent + "'" +
                                 suggestion_suffix(a.parent, {parents.begin(), parents.end()}));
      }
    };
    if (auto sw = f.find("pcie_switches")) {
      for (auto& item : sw->items()) {
        item.require_map({"name", "parent", "link"});
        PcieSwitchSpec s{item.get("name").str(),
                         {item.get("parent").str(), require_link(item.get("link"), LinkKind::Pcie)}};
        check_parent(item, s.uplink);
        if (!parents.insert(s.name).second) item.get("name").fail("duplicate device name '" + s.name + "'");
        l.pcie_switches.push_back(s);
      }
    }
    for (auto& item : f.get("gpus").items()) {
      Attachment a = parse_attachment(item);
      // PCIe for GPUs; memory for the processes of a CPU-only host (checked against the SKU's device).
      if (links_.count(a.link) && links_.at(a.link).kind != LinkKind::Memory)
        require_link(item.get("link"), LinkKind::Pcie);
      else
        require_link(item.get("link"), LinkKind::Memory);
      check_parent(item, a);
      l.gpus.push_back(a);
    }
    if (l.gpus.empty()) f.get("gpus").fail("a layout needs at least one GPU");
    YamlField nics = f.get("nics");
    nics.require_map({"ethernet", "infiniband"});
    if (auto e = nics.find("ethernet")) {
      l.ethernet_nic = parse_attachment(*e);
      require_link(e->get("link"), LinkKind::Pcie);
      check_parent(*e, *l.ethernet_nic);
    }
    if (auto ib = nics.find("infiniband")) {  // one NIC, or a list of them (one per rail)
      for (const YamlField& item : ib->is_sequence() ? ib->items() : std::vector<YamlField>{*ib}) {
        l.infiniband_nics.push_back(parse_attachment(item));
        require_link(item.get("link"), LinkKind::Pcie);
        check_parent(item, l.infiniband_nics.back());
      }
      if (l.infiniband_nics.empty()) ib->fail("expected a NIC ({parent, link}) or a list of them, not an empty list");
    }
    if (auto nv = f.find("nvlinks")) {
      for (auto& item : nv->items()) {
        item.require_map({"gpus", "links"});
        auto pair = item.get("gpus").items();
        if (pair.size() != 2) item.get("gpus").fail("expected two GPU indices, e.g. [0, 1]");
        const int n = static_cast<int>(l.gpus.size());
        NvLinkSpec s{static_cast<int>(pair[0].integer(0, n - 1)), static_cast<int>(pair[1].integer(0, n - 1)),
                     static_cast<int>(item.get("links").integer(1, 12))};
        if (s.gpu_a == s.gpu_b) item.get("gpus").fail("an NVLink joins two different GPUs");
        l.nvlinks.push_back(s);
      }
      if (!l.nvlinks.empty()) l.nvlink_class = require_link(f.get("nvlink_class"), LinkKind::NvLink);
    }
    if (auto sw = f.find("nvswitch")) {
      sw->require_map({"link", "links_per_gpu", "reduction", "domain_nodes"});
      l.nvswitch = NodeLayout::NvSwitch{
          require_link(sw->get("link"), LinkKind::NvLink), static_cast<int>(sw->get("links_per_gpu").integer(1, 72)),
          sw->find("reduction") && sw->get("reduction").boolean(),
          sw->find("domain_nodes") ? static_cast<int>(sw->get("domain_nodes").integer(1, 576)) : 1};
    }
    if (auto r = f.find("rings")) l.rings = static_cast<int>(r->integer(1, 64));
    assign_rails(l);
    layouts_.emplace(name, l);
  }
}

// skus.yaml's sizes, each on a layout.
void Catalog::load_skus(const YamlField& skus) {
  for (auto& [name, f] : skus.entries()) {
    f.require_map({"azure_name", "series", "quota_family", "gpu", "gpus", "vcpus", "memory", "local_ssd", "cpu",
                   "layout", "socket_link", "memory_link", "ethernet", "infiniband"});
    SkuSpec s;
    s.name = name;
    if (auto a = f.find("azure_name")) s.azure_name = a->str();  // absent: not an Azure size
    s.series = f.get("series").str();
    if (auto q = f.find("quota_family")) s.quota_family = q->str();  // absent: no Azure quota
    if (s.azure_name.empty() != s.quota_family.empty())
      f.fail("azure_name and quota_family go together (both for an Azure size, neither otherwise)");
    s.gpu = f.get("gpu").str();
    if (!gpus_.count(s.gpu)) f.get("gpu").fail("unknown GPU '" + s.gpu + "'" + suggestion_suffix(s.gpu, gpu_order_));
    s.gpus = static_cast<int>(f.get("gpus").integer(1, 64));
    s.vcpus = static_cast<int>(f.get("vcpus").integer(1, 4096));
    s.memory_bytes = f.get("memory").positive_quantity(Quantity::Bytes);
    s.local_ssd_bytes = f.get("local_ssd").nonnegative_quantity(Quantity::Bytes);
    s.cpu = f.get("cpu").str();
    s.layout = f.get("layout").str();
    auto lit = layouts_.find(s.layout);
    if (lit == layouts_.end())
      f.get("layout").fail("unknown layout '" + s.layout + "'" + suggestion_suffix(s.layout, keys_of(layouts_)));
    const NodeLayout& layout = lit->second;
    if (static_cast<int>(layout.gpus.size()) != s.gpus)
      f.get("gpus").fail("layout '" + s.layout + "' places " + std::to_string(layout.gpus.size()) + " GPUs, not " +
                         std::to_string(s.gpus));
    const bool processes = gpus_.at(s.gpu).cpu_process;
    for (const Attachment& a : layout.gpus)
      if ((links_.at(a.link).kind == LinkKind::Memory) != processes)
        f.get("layout").fail(
            "layout '" + s.layout + "' attaches its devices with " + a.link + ", but '" + s.gpu + "' is " +
            (processes ? "a CPU process (expected a memory-kind link)" : "a GPU (expected a PCIe link)"));
    if (layout.sockets > 1)
      s.socket_link = require_link(f.get("socket_link"), LinkKind::SocketInterconnect);
    else if (f.has("socket_link"))
      f.get("socket_link").fail("layout '" + s.layout + "' has one socket: no socket link");
    s.memory_link = require_link(f.get("memory_link"), LinkKind::Memory);
    YamlField eth = f.get("ethernet");
    eth.require_map({"bandwidth", "link"});
    s.ethernet_bandwidth = eth.get("bandwidth").positive_quantity(Quantity::Bandwidth);
    s.ethernet_link = require_link(eth.get("link"), LinkKind::Ethernet);
    if (!layout.ethernet_nic) f.get("layout").fail("layout '" + s.layout + "' has no Ethernet NIC");
    if (auto ib = f.find("infiniband")) {
      s.infiniband_link = require_link(*ib, LinkKind::InfiniBand);
      if (layout.infiniband_nics.empty()) ib->fail("layout '" + s.layout + "' has no InfiniBand NIC slot");
    }
    skus_.emplace(name, s);
    sku_order_.push_back(name);
  }
}

namespace {
// A map from compute capability to a figure: {0: X, 8.0: Y}.
template <class Value>
ByCapability by_capability(const YamlField& f, Value value) {
  ByCapability out;
  for (auto& [key, v] : f.entries()) {
    char* end = nullptr;
    const double cc = std::strtod(key.c_str(), &end);
    if (end == key.c_str() || *end != '\0' || cc < 0)
      v.fail("expected a compute capability (0, 7.0, 8.0, ...) as the key");
    out.points.emplace_back(cc, value(v));
  }
  std::sort(out.points.begin(), out.points.end());
  return out;
}

std::vector<double> numbers(const YamlField& f, double lo, double hi) {
  std::vector<double> out;
  for (const auto& item : f.items()) out.push_back(item.number(lo, hi));
  return out;
}

ProtocolTuning::Latency tuning_latency(const YamlField& l) {
  l.require_map({"base", "nvlink", "pci", "network"});
  ProtocolTuning::Latency out;
  out.base = l.get("base").nonnegative_quantity(Quantity::Time);
  out.nvlink = l.get("nvlink").nonnegative_quantity(Quantity::Time);
  out.pci = l.get("pci").nonnegative_quantity(Quantity::Time);
  out.network = l.get("network").nonnegative_quantity(Quantity::Time);
  return out;
}

// libraries.yaml `tuning.protocols.NAME`.
ProtocolTuning protocol_tuning(const std::string& name, const YamlField& f) {
  f.require_map({"ring_latency", "tree_latency", "ring_bandwidth", "tree_bandwidth", "tree_bandwidth_one_node",
                 "ring_bandwidth_gather_one_node", "network_post", "max_bus_bandwidth", "needs_nvlink",
                 "needs_gpudirect", "compute_capabilities", "tree_correction"});
  ProtocolTuning p;
  p.name = name;
  p.ring = tuning_latency(f.get("ring_latency"));
  p.tree = tuning_latency(f.get("tree_latency"));
  p.ring_bandwidth = f.get("ring_bandwidth").number(0.01, 1);
  p.tree_bandwidth = f.get("tree_bandwidth").number(0.01, 1);
  if (auto t = f.find("tree_bandwidth_one_node")) p.tree_bandwidth_one_node = t->number(0.01, 1);
  if (auto t = f.find("ring_bandwidth_gather_one_node")) p.ring_bandwidth_gather_one_node = t->number(0.01, 1);
  if (auto n = f.find("network_post")) p.network_post = n->nonnegative_quantity(Quantity::Time);
  if (auto m = f.find("max_bus_bandwidth")) {
    m->require_map({"one_node", "two_nodes", "more_nodes"});
    p.max_bus_one_node =
        by_capability(m->get("one_node"), [](const YamlField& v) { return v.positive_quantity(Quantity::Bandwidth); });
    p.max_bus_two_nodes = m->get("two_nodes").positive_quantity(Quantity::Bandwidth);
    p.max_bus_more_nodes = m->get("more_nodes").positive_quantity(Quantity::Bandwidth);
  }
  if (auto n = f.find("needs_nvlink")) p.needs_nvlink = n->boolean();
  if (auto n = f.find("needs_gpudirect")) p.needs_gpudirect = n->boolean();
  if (auto c = f.find("compute_capabilities")) p.capabilities = numbers(*c, 0, 100);
  p.tree_correction = numbers(f.get("tree_correction"), 0.01, 1);
  return p;
}

// libraries.yaml `tuning`: NCCL's model for picking algorithm and protocol.
AlgorithmTuning algorithm_tuning(const YamlField& f) {
  f.require_map({"ring_plateau", "tree_bandwidth", "nvls_latency", "nvls_tree_latency", "protocols"});
  AlgorithmTuning t;
  t.ring_plateau = by_capability(f.get("ring_plateau"), [](const YamlField& v) { return v.number(1, 10); });
  t.tree_bandwidth = f.get("tree_bandwidth").number(0.01, 1);
  if (auto n = f.find("nvls_latency")) t.nvls_latency = n->nonnegative_quantity(Quantity::Time);
  if (auto n = f.find("nvls_tree_latency")) t.nvls_tree_latency = n->nonnegative_quantity(Quantity::Time);
  YamlField protocols = f.get("protocols");
  protocols.require_map({"ll", "ll128", "simple"});
  for (auto& [name, p] : protocols.entries()) t.protocols.push_back(protocol_tuning(name, p));
  if (!t.protocol("simple")) protocols.fail("protocol 'simple' is missing (NCCL's default protocol)");
  return t;
}
}  // namespace

// nvls_efficiency: one figure, or {default: X, GPU: Y, ...} where NCCL's tuning differs by architecture.
void Catalog::nvls_efficiency(const YamlField& e, LibraryProfile& l) const {
  if (!e.is_map()) {
    l.nvls_efficiency = e.number(0.01, 1);
    return;
  }
  l.nvls_efficiency = e.get("default").number(0.01, 1);
  for (auto& [gpu, v] : e.entries()) {
    if (gpu == "default") continue;
    if (!gpus_.count(gpu)) v.fail("unknown GPU '" + gpu + "'" + suggestion_suffix(gpu, gpu_order_));
    l.nvls_efficiency_by_gpu[gpu] = v.number(0.01, 1);
  }
}

// libraries.yaml: the collective libraries' path profiles.
void Catalog::load_libraries(const fs::path& base) {
  YamlField root = open_root(base / "libraries.yaml", {"libraries"});
  for (auto& [name, f] : root.get("libraries").entries()) {
    f.require_map({"description", "data_path", "collective_overhead", "host_reduction_rate", "host_copy_rate",
                   "rpc_rate", "kernel_channels", "reduce_slice", "nvls_efficiency", "nvls_channels", "tuning",
                   "ring_order", "version", "algorithms_since", "paths"});
    LibraryProfile l;
    l.name = name;
    l.description = f.get("description").str();
    l.data_path = f.get("data_path").choice({"device", "host"}) == "device" ? DataPath::Device : DataPath::Host;
    l.collective_overhead = f.get("collective_overhead").nonnegative_quantity(Quantity::Time);
    l.host_reduction_rate = f.get("host_reduction_rate").positive_quantity(Quantity::Bandwidth);
    if (l.data_path == DataPath::Host || f.find("host_copy_rate"))
      l.host_copy_rate = f.get("host_copy_rate").positive_quantity(Quantity::Bandwidth);
    if (auto r = f.find("rpc_rate")) l.rpc_rate = r->positive_quantity(Quantity::Bandwidth);
    if (auto k = f.find("kernel_channels")) l.kernel_channels = k->number(0, 64);
    if (auto r = f.find("reduce_slice")) l.reduce_slice = r->positive_quantity(Quantity::Bytes);
    if (auto e = f.find("nvls_efficiency")) nvls_efficiency(*e, l);
    if (auto n = f.find("nvls_channels")) l.nvls_channels = n->number(0, 64);
    if (auto t = f.find("tuning")) l.tuning = algorithm_tuning(*t);
    if (auto v = f.find("version")) l.version = catalog_detail::release_version(*v);
    if (auto a = f.find("algorithms_since")) {
      if (l.version.empty()) a->fail("algorithms_since needs the library's version");
      a->require_map({"tree", "nvls", "nvls_tree"});
      for (auto& [algorithm, v] : a->entries()) l.algorithms_since[algorithm] = catalog_detail::release_version(v);
    }
    if (auto r = f.find("ring_order"))
      l.ring_order = r->choice({"searched", "device"}) == "device" ? RingOrder::Device : RingOrder::Searched;
    YamlField paths = f.get("paths");
    paths.require_map({"intra_node", "cross_socket", "infiniband", "ethernet"});
    auto path = [&](const char* key) {
      YamlField p = paths.get(key);
      p.require_map({"bandwidth_fraction", "message_overhead"});
      PathProfile r;
      r.bandwidth_fraction = p.get("bandwidth_fraction").number(0.01, 1.0);
      r.message_overhead = p.get("message_overhead").nonnegative_quantity(Quantity::Time);
      return r;
    };
    l.intra_node = path("intra_node");
    l.infiniband = path("infiniband");
    l.ethernet = path("ethernet");
    if (paths.find("cross_socket")) l.cross_socket = path("cross_socket");
    libraries_.emplace(name, l);
    library_order_.push_back(name);
  }
  for (const char* required : {"nccl", "mpi"})
    if (!libraries_.count(required)) root.get("libraries").fail(std::string("library '") + required + "' is missing");
}

// storage.yaml.
void Catalog::load_storage(const fs::path& base) {
  YamlField root = open_root(base / "storage.yaml", {"storage_backends"});
  auto entries = root.get("storage_backends").entries();
  for (auto& [name, f] : entries) {
    f.require_map({"description", "kind", "scaling", "bandwidth", "iops", "request_latency", "default_servers", "cache",
                   "cache_default", "write_bandwidth", "writer_bandwidth"});
    StorageBackendSpec b;
    b.name = name;
    b.description = f.get("description").str();
    b.kind = f.get("kind").choice({"local", "network"}) == "local" ? StorageKind::Local : StorageKind::Network;
    const std::string sc = f.get("scaling").choice({"per_node", "shared", "per_server"});
    b.scaling = sc == "per_node" ? StorageScaling::PerNode
                : sc == "shared" ? StorageScaling::Shared
                                 : StorageScaling::PerServer;
    if (b.kind == StorageKind::Local && b.scaling != StorageScaling::PerNode)
      f.get("scaling").fail("a local backend is per_node (every node reads its own disk)");
    b.bandwidth = f.get("bandwidth").positive_quantity(Quantity::Bandwidth);
    b.iops = f.get("iops").positive_number();
    b.request_latency = f.get("request_latency").nonnegative_quantity(Quantity::Time);
    if (b.scaling == StorageScaling::PerServer)
      b.default_servers = static_cast<int>(f.get("default_servers").integer(1, 65536));
    else if (auto d = f.find("default_servers"))
      d->fail("applies only to scaling: per_server");
    if (auto w = f.find("write_bandwidth")) b.write_bandwidth = w->positive_quantity(Quantity::Bandwidth);
    if (auto w = f.find("writer_bandwidth")) b.writer_bandwidth = w->positive_quantity(Quantity::Bandwidth);
    storage_.emplace(name, b);
    storage_order_.push_back(name);
  }
  // Cache references after all backends are known.
  for (auto& [name, f] : entries) {
    StorageBackendSpec& b = storage_.at(name);
    if (auto cf = f.find("cache")) {
      b.cache = cf->str();
      auto it = storage_.find(b.cache);
      if (it == storage_.end())
        cf->fail("unknown storage backend '" + b.cache + "'" + suggestion_suffix(b.cache, storage_order_));
      if (it->second.kind != StorageKind::Local) cf->fail("a cache is a local backend; '" + b.cache + "' is not");
      b.cache_default = f.get("cache_default").boolean();
    } else if (auto d = f.find("cache_default")) {
      d->fail("applies only to a backend with a cache");
    }
  }
}

Catalog Catalog::load(const std::string& dir) {
  Catalog c;
  c.dir_ = dir;
  const fs::path base(dir);
  if (!fs::is_directory(base))
    throw InputError({dir, 0, 0, ""}, "catalog directory not found (set --catalog DIR or RINGSIM_CATALOG)");
  c.load_links(base);
  c.load_gpus(base);
  c.load_fabrics(base);
  c.load_datasets(base);
  {
    YamlField root = open_root(base / "skus.yaml", {"layouts", "skus"});
    c.load_layouts(root.get("layouts"));
    c.load_skus(root.get("skus"));
  }
  c.load_libraries(base);
  c.load_storage(base);
  c.load_models(base);
  c.load_compute(base);
  c.load_uncertain(base);
  c.load_reliability(base);
  c.load_single_gpu_rates(base);
  if (c.skus_.empty()) throw InputError({(base / "skus.yaml").string(), 0, 0, ""}, "the catalog defines no SKU");
  return c;
}

namespace {
template <class Map>
const typename Map::mapped_type& lookup(const Map& m, const std::string& name, const char* what,
                                        const std::vector<std::string>& names) {
  auto it = m.find(name);
  if (it == m.end())
    throw InputError({}, std::string("unknown ") + what + " '" + name + "'" + suggestion_suffix(name, names));
  return it->second;
}
}  // namespace

const GpuSpec& Catalog::gpu(const std::string& n) const { return lookup(gpus_, n, "GPU", gpu_order_); }

const LibraryProfile& Catalog::library(const std::string& n) const {
  return lookup(libraries_, n, "library", library_order_);
}
const StorageBackendSpec* Catalog::find_storage_backend(const std::string& name) const {
  auto it = storage_.find(name);
  return it == storage_.end() ? nullptr : &it->second;
}
const LinkClass& Catalog::link(const std::string& n) const { return lookup(links_, n, "link class", link_order_); }
const FabricSpec& Catalog::fabric(FabricKind k) const { return fabrics_.at(k); }
const SkuSpec& Catalog::sku(const std::string& n) const {
  if (const SkuSpec* s = find_sku(n)) return *s;
  return lookup(skus_, n, "SKU", sku_order_);
}
const NodeLayout& Catalog::layout(const std::string& n) const {
  return lookup(layouts_, n, "layout", keys_of(layouts_));
}
const ModelSpec& Catalog::model(const std::string& n) const {
  if (const ModelSpec* m = find_model(n)) return *m;
  return lookup(models_, n, "model", model_order_);
}
const DatasetSpec& Catalog::dataset(const std::string& n) const {
  return lookup(datasets_, n, "dataset", dataset_order_);
}

const SkuSpec* Catalog::find_sku(const std::string& name) const {
  auto it = skus_.find(name);
  if (it != skus_.end()) return &it->second;
  for (const auto& [n, s] : skus_)
    if (!s.azure_name.empty() && s.azure_name == name) return &s;
  return nullptr;
}

const ModelSpec* Catalog::find_model(const std::string& name) const {
  if (auto it = models_.find(name); it != models_.end()) return &it->second;
  auto file = model_files_.find(name);
  if (file == model_files_.end()) return nullptr;
  return &models_.emplace(name, read_model(file->second)).first->second;
}

std::vector<std::string> NodeLayout::pcie_chain(const std::string& parent) const {
  std::vector<std::string> c{parent};
  for (bool up = true; up;) {
    up = false;
    for (const auto& sw : pcie_switches)
      if (sw.name == c.back()) {
        c.push_back(sw.uplink.parent);  // the loader only accepts parents defined before, so this ends
        up = true;
        break;
      }
  }
  return c;
}

int NodeLayout::rails_of_first(int gpus) const {
  std::set<int> rails;
  for (int g = 0; g < gpus && g < static_cast<int>(gpu_rail.size()); ++g) rails.insert(gpu_rail[g]);
  return static_cast<int>(rails.size());
}

int compare_versions(const std::string& a, const std::string& b) {
  std::size_t i = 0, j = 0;
  while (i < a.size() || j < b.size()) {
    const auto part = [](const std::string& v, std::size_t& k) {
      long n = 0;
      while (k < v.size() && v[k] != '.') n = n * 10 + (v[k++] - '0');
      if (k < v.size()) ++k;
      return n;
    };
    const long x = part(a, i), y = part(b, j);
    if (x != y) return x < y ? -1 : 1;
  }
  return 0;
}

namespace catalog_detail {

std::string release_version(const YamlField& value) {
  const std::string v = value.str();
  bool ok = !v.empty() && v.front() != '.' && v.back() != '.' && v.size() <= 16;
  for (std::size_t k = 0; ok && k < v.size(); ++k)
    ok = std::isdigit(static_cast<unsigned char>(v[k])) || (v[k] == '.' && v[k + 1] != '.');
  if (!ok) value.fail("expected a release version such as 2.4 or 2.18.5, got '" + printable(v, 40) + "'");
  return v;
}

}  // namespace catalog_detail

}  // namespace ringsim
