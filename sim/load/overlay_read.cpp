// Reading a calibration overlay against the catalog (every name and value checked, file:line:col errors)
// and applying it: the scalar figures by their tables (figures.h), the size curves and regimes apart.
#include <algorithm>

#include "load/catalog_values.h"
#include "load/figures.h"
#include "load/overlay.h"

namespace ringsim {

using catalog_detail::core_handoff_of;
using catalog_detail::open_root;

namespace {

// Size steps: a list of {from: BYTES, <key>: VALUE}, in ascending order of `from` (`what` names them).
template <class Value>
std::vector<std::pair<double, double>> size_steps(const YamlField& list, const std::string& key, Value value,
                                                  const std::string& what) {
  std::vector<std::pair<double, double>> steps;
  for (auto& item : list.items()) {
    item.require_map({"from", key});
    const double from = item.get("from").positive_quantity(Quantity::Bytes);
    if (!steps.empty() && from <= steps.back().first)
      item.get("from").fail(what + " must be in ascending order of size");
    steps.emplace_back(from, value(item.get(key)));
  }
  return steps;
}

RegimeKey regime_key(const YamlField& f) {
  const std::string k = f.choice({"message", "buffer", "footprint"});
  return k == "buffer" ? RegimeKey::Buffer : k == "footprint" ? RegimeKey::Footprint : RegimeKey::Message;
}

std::vector<std::pair<double, double>> rate_steps(const YamlField& v, const std::string& what) {
  return size_steps(
      v, "rate", [](const YamlField& r) { return r.positive_quantity(Quantity::Bandwidth); }, what);
}

std::vector<SizeRegime> size_regimes(const YamlField& v) {
  std::vector<SizeRegime> regimes;
  for (auto& item : v.items()) {
    item.require_map({"from", "bandwidth_scale", "message_overhead"});
    SizeRegime g{item.get("from").positive_quantity(Quantity::Bytes), item.get("bandwidth_scale").number(0.01, 100.0),
                 item.get("message_overhead").nonnegative_quantity(Quantity::Time)};
    if (!regimes.empty() && g.from_bytes <= regimes.back().from_bytes)
      item.get("from").fail("regimes must be in ascending order of size");
    regimes.push_back(g);
  }
  return regimes;
}

PathOverlay read_path_overlay(const YamlField& p) {
  std::vector<std::string> keys = figure_keys(kPathFigures);
  keys.insert(keys.end(), {"regimes", "regimes_by", "protocol_overheads"});
  p.require_map(keys);
  PathOverlay o;
  read_figures(p, kPathFigures, o);
  if (auto v = p.find("regimes")) o.regimes = size_regimes(*v);
  if (auto v = p.find("regimes_by")) o.regimes_by = regime_key(*v);
  if (auto v = p.find("protocol_overheads"))
    o.protocol_overheads = size_steps(
        *v, "overhead", [](const YamlField& x) { return x.nonnegative_quantity(Quantity::Time); },
        "protocol overheads");
  return o;
}

LibraryOverlay read_library_overlay(const YamlField& f) {
  std::vector<std::string> keys = figure_keys(kLibraryFigures);
  keys.insert(keys.end(), {"host_reduction_regimes", "host_reduction_regimes_by", "paths"});
  f.require_map(keys);
  LibraryOverlay o;
  read_figures(f, kLibraryFigures, o);
  if (auto v = f.find("host_reduction_regimes")) o.host_reduction_regimes = rate_steps(*v, "regimes");
  if (auto v = f.find("host_reduction_regimes_by")) o.host_reduction_regimes_by = regime_key(*v);
  if (auto paths = f.find("paths")) {
    paths->require_map({"intra_node", "cross_socket", "infiniband", "ethernet"});
    for (auto& [name, p] : paths->entries()) o.paths[name] = read_path_overlay(p);
  }
  return o;
}

GpuOverlay read_gpu_overlay(const GpuSpec& g, const YamlField& f) {
  std::vector<std::string> keys = figure_keys(kGpuFigures);
  keys.insert(keys.end(), {"core_handoff", "cross_core_handoff", "copy_rates"});
  f.require_map(keys);
  GpuOverlay o;
  read_figures(f, kGpuFigures, o);
  if (auto v = f.find("copy_rates")) o.copy_rates = rate_steps(*v, "copy_rates");
  if (auto v = f.find("core_handoff")) o.core_handoff = core_handoff_of(g, *v);
  if (auto v = f.find("cross_core_handoff")) o.cross_core_handoff = core_handoff_of(g, *v);
  return o;
}

// Each entry of a named section, checked against the catalog's names, read by `read`.
template <class Map, class Out, class Read>
void read_named(const YamlField& root, const char* section, const Map& known, const char* what,
                const std::vector<std::string>& names, std::map<std::string, Out>& out, Read read) {
  auto sec = root.find(section);
  if (!sec) return;
  sec->require_map();
  for (auto& [name, f] : sec->entries()) {
    auto it = known.find(name);
    if (it == known.end()) f.fail(std::string("unknown ") + what + " '" + name + "'" + suggestion_suffix(name, names));
    out[name] = read(it->second, f);
  }
}

void apply_path(const PathOverlay& o, PathProfile& p) {
  apply_figures(o, kPathFigures, p);
  if (o.regimes || o.regimes_by) p.set_regimes(o.regimes.value_or(p.regimes()), o.regimes_by.value_or(p.regimes_by));
  if (o.protocol_overheads) p.protocol_overheads.points = *o.protocol_overheads;
}

void apply_library(const LibraryOverlay& o, LibraryProfile& l) {
  apply_figures(o, kLibraryFigures, l);
  if (o.host_reduction_regimes) l.host_reduction_regimes.points = *o.host_reduction_regimes;
  if (o.host_reduction_regimes_by) l.host_reduction_regimes_by = *o.host_reduction_regimes_by;
  l.host_reduction_regimes.shape = regime_shape(l.host_reduction_regimes_by, SizeCurve::Shape::Geometric);
  for (const auto& [name, p] : o.paths) apply_path(p, l.path(name));
}

void apply_gpu(const GpuOverlay& o, GpuSpec& g) {
  apply_figures(o, kGpuFigures, g);
  if (o.copy_rates) g.copy_rates.points = *o.copy_rates;
  if (o.core_handoff) g.core_handoff = *o.core_handoff;
  if (o.cross_core_handoff) g.cross_core_handoff = *o.cross_core_handoff;
}
}  // namespace

// fitted_ranges: {NAME: [LOW, HIGH]}, each NAME an uncertain parameter, in its units without a unit suffix.
std::map<std::string, std::pair<double, double>> Catalog::read_fitted_ranges(const YamlField& f) const {
  f.require_map();
  std::vector<std::string> names;
  for (const auto& p : uncertain_) names.push_back(p.name);
  std::map<std::string, std::pair<double, double>> out;
  for (const auto& [name, range] : f.entries()) {
    if (std::find(names.begin(), names.end(), name) == names.end())
      range.fail("unknown uncertain parameter '" + name + "'" + suggestion_suffix(name, names));
    if (!range.is_sequence() || range.items().size() != 2) range.fail("expected [LOW, HIGH]");
    const auto ends = range.items();
    const double low = ends[0].number(0, 1e15), high = ends[1].number(0, 1e15);
    if (low > high) range.fail("expected LOW <= HIGH");
    out[name] = {low, high};
  }
  return out;
}

CatalogOverlay Catalog::read_overlay(const std::string& file) const {
  YamlField root =
      open_root(file, {"compute", "libraries", "link_classes", "gpus", "skus", "fitted_ranges", "measured_on"},
                "calibration overlay");
  CatalogOverlay o;
  if (auto m = root.find("measured_on")) o.measured_on = m->choice(sku_order_);
  if (auto r = root.find("fitted_ranges")) o.fitted_ranges = read_fitted_ranges(*r);
  if (auto c = root.find("compute")) {
    c->require_map(figure_keys(kComputeFigures));
    read_figures(*c, kComputeFigures, o.compute);
  }
  read_named(root, "libraries", libraries_, "library", library_order_, o.libraries,
             [](const LibraryProfile&, const YamlField& f) { return read_library_overlay(f); });
  read_named(root, "link_classes", links_, "link class", link_order_, o.link_classes,
             [](const LinkClass&, const YamlField& f) {
               f.require_map(figure_keys(kLinkFigures));
               LinkOverlay l;
               read_figures(f, kLinkFigures, l);
               return l;
             });
  read_named(root, "gpus", gpus_, "GPU", gpu_order_, o.gpus, read_gpu_overlay);
  read_named(root, "skus", skus_, "SKU", sku_order_, o.skus, [](const SkuSpec&, const YamlField& f) {
    std::vector<std::string> keys = {"vcpus"};
    for (const auto& key : figure_keys(kSkuFigures)) keys.push_back(key);
    f.require_map(keys);
    SkuOverlay k;
    if (auto v = f.find("vcpus")) k.vcpus = static_cast<int>(v->integer(1, 4096));
    read_figures(f, kSkuFigures, k);
    return k;
  });
  return o;
}

void Catalog::apply(const CatalogOverlay& o) {
  for (const auto& [name, l] : o.libraries) apply_library(l, libraries_.at(name));
  for (const auto& [name, l] : o.link_classes) apply_figures(l, kLinkFigures, links_.at(name));
  for (const auto& [name, g] : o.gpus) apply_gpu(g, gpus_.at(name));
  for (const auto& [name, k] : o.skus) {
    if (k.vcpus) skus_.at(name).vcpus = *k.vcpus;
    apply_figures(k, kSkuFigures, skus_.at(name));
  }
  apply_figures(o.compute, kComputeFigures, compute_);
}

void Catalog::apply_overlay(const std::string& file) { apply(read_overlay(file)); }

}  // namespace ringsim
