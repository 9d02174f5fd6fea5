#include "load/overlay.h"

#include <yaml-cpp/yaml.h>

#include "load/figures.h"

namespace ringsim {

namespace {

std::string quantity(double v, const char* unit) { return figure_text(v, unit); }

// Figures that need no comment after them.
void no_comment(const char*) {}

const char* to_yaml(RegimeKey k) {
  return k == RegimeKey::Buffer ? "buffer" : k == RegimeKey::Footprint ? "footprint" : "message";
}

template <class T>
void put(YAML::Emitter& y, const char* key, const std::optional<T>& v, const char* unit) {
  if (v) y << YAML::Key << key << YAML::Value << quantity(*v, unit);
}

// [{from: N B, <key>: V <unit>}, ...]
void put_steps(YAML::Emitter& y, const char* name, const std::optional<std::vector<std::pair<double, double>>>& steps,
               const char* key, const char* unit) {
  if (!steps) return;
  y << YAML::Key << name << YAML::Value << YAML::Flow << YAML::BeginSeq;
  for (const auto& [from, v] : *steps)
    y << YAML::BeginMap << YAML::Key << "from" << YAML::Value << quantity(from, "B") << YAML::Key << key << YAML::Value
      << quantity(v, unit) << YAML::EndMap;
  y << YAML::EndSeq;
}

void put_path(YAML::Emitter& y, const PathOverlay& p) {
  y << YAML::Flow << YAML::BeginMap;
  write_figures(y, p, kPathFigures, no_comment);
  if (p.regimes_by) y << YAML::Key << "regimes_by" << YAML::Value << to_yaml(*p.regimes_by);
  if (p.regimes) {
    y << YAML::Key << "regimes" << YAML::Value << YAML::BeginSeq;
    for (const SizeRegime& r : *p.regimes)
      y << YAML::BeginMap << YAML::Key << "from" << YAML::Value << quantity(r.from_bytes, "B") << YAML::Key
        << "bandwidth_scale" << YAML::Value << quantity(r.bandwidth_scale, "") << YAML::Key << "message_overhead"
        << YAML::Value << quantity(r.message_overhead, "s") << YAML::EndMap;
    y << YAML::EndSeq;
  }
  put_steps(y, "protocol_overheads", p.protocol_overheads, "overhead", "s");
  y << YAML::EndMap;
}

class Writer {
 public:
  explicit Writer(const CatalogOverlay& o) : o_(o) {}

  std::string yaml() {
    for (const auto& line : o_.header) y_ << YAML::Comment(line) << YAML::Newline;
    y_ << YAML::BeginMap;
    if (o_.compute != ComputeOverlay{}) {
      y_ << YAML::Key << "compute" << YAML::Value << YAML::BeginMap;
      write_figures(y_, o_.compute, kComputeFigures, no_comment);
      y_ << YAML::EndMap;
      comment("compute");
    }
    section("libraries", o_.libraries, [this](const std::string& at, const LibraryOverlay& l) { library(at, l); });
    section("link_classes", o_.link_classes, [this](const std::string&, const LinkOverlay& l) {
      y_ << YAML::Flow << YAML::BeginMap;
      write_figures(y_, l, kLinkFigures, no_comment);
      y_ << YAML::EndMap;
    });
    section("gpus", o_.gpus, [this](const std::string&, const GpuOverlay& g) {
      y_ << YAML::Flow << YAML::BeginMap;
      write_figures(y_, g, kGpuFigures, no_comment);
      put_steps(y_, "copy_rates", g.copy_rates, "rate", "B/s");
      put(y_, "core_handoff", g.core_handoff, "s");
      put(y_, "cross_core_handoff", g.cross_core_handoff, "s");
      y_ << YAML::EndMap;
    });
    section("skus", o_.skus, [this](const std::string&, const SkuOverlay& k) {
      y_ << YAML::Flow << YAML::BeginMap;
      if (k.vcpus) y_ << YAML::Key << "vcpus" << YAML::Value << *k.vcpus;
      write_figures(y_, k, kSkuFigures, no_comment);
      y_ << YAML::EndMap;
    });
    if (!o_.measured_on.empty()) y_ << YAML::Key << "measured_on" << YAML::Value << o_.measured_on;
    if (!o_.fitted_ranges.empty()) {
      y_ << YAML::Key << "fitted_ranges" << YAML::Value << YAML::BeginMap;
      for (const auto& [name, range] : o_.fitted_ranges)
        y_ << YAML::Key << name << YAML::Value << YAML::Flow << YAML::BeginSeq << quantity(range.first, "")
           << quantity(range.second, "") << YAML::EndSeq;
      y_ << YAML::EndMap;
    }
    y_ << YAML::EndMap;
    return std::string(y_.c_str()) + "\n";
  }

 private:
  // A top-level section, each entry followed by its comment where it has one.
  template <class Map, class Entry>
  void section(const char* name, const Map& entries, Entry entry) {
    if (entries.empty()) return;
    y_ << YAML::Key << name << YAML::Value << YAML::BeginMap;
    for (const auto& [key, value] : entries) {
      const std::string at = std::string(name) + "." + key;
      y_ << YAML::Key << key << YAML::Value;
      entry(at, value);
      comment(at);
    }
    y_ << YAML::EndMap;
  }

  void library(const std::string& at, const LibraryOverlay& l) {
    y_ << YAML::BeginMap;
    write_figures(y_, l, kLibraryFigures, [&](const char* key) { comment(at + "." + key); });
    if (l.host_reduction_regimes_by)
      y_ << YAML::Key << "host_reduction_regimes_by" << YAML::Value << to_yaml(*l.host_reduction_regimes_by);
    put_steps(y_, "host_reduction_regimes", l.host_reduction_regimes, "rate", "B/s");
    if (!l.paths.empty()) {
      y_ << YAML::Key << "paths" << YAML::Value << YAML::BeginMap;
      for (const auto& [name, p] : l.paths) {
        y_ << YAML::Key << name << YAML::Value;
        put_path(y_, p);
        comment(at + ".paths." + name);
      }
      y_ << YAML::EndMap;
    }
    y_ << YAML::EndMap;
  }

  void comment(const std::string& at) {
    if (auto it = o_.comments.find(at); it != o_.comments.end()) y_ << YAML::Comment(it->second);
  }

  const CatalogOverlay& o_;
  YAML::Emitter y_;
};

template <class T>
void take(std::optional<T>& to, const std::optional<T>& from) {
  if (from) to = from;
}

}  // namespace

void CatalogOverlay::merge(const CatalogOverlay& o) {
  if (!o.measured_on.empty()) measured_on = o.measured_on;
  for (const auto& [name, l] : o.libraries) {
    LibraryOverlay& to = libraries[name];
    merge_figures(to, l, kLibraryFigures);
    take(to.host_reduction_regimes, l.host_reduction_regimes);
    take(to.host_reduction_regimes_by, l.host_reduction_regimes_by);
    for (const auto& [p, path] : l.paths) to.paths[p] = path;
  }
  for (const auto& [name, l] : o.link_classes) link_classes[name] = l;
  for (const auto& [name, g] : o.gpus) {
    GpuOverlay& to = gpus[name];
    merge_figures(to, g, kGpuFigures);
    take(to.copy_rates, g.copy_rates);
    take(to.core_handoff, g.core_handoff);
    take(to.cross_core_handoff, g.cross_core_handoff);
  }
  merge_figures(compute, o.compute, kComputeFigures);
  for (const auto& [name, k] : o.skus) {
    take(skus[name].vcpus, k.vcpus);
    merge_figures(skus[name], k, kSkuFigures);
  }
  for (const auto& [name, range] : o.fitted_ranges) fitted_ranges[name] = range;
  header.insert(header.end(), o.header.begin(), o.header.end());
  for (const auto& [at, c] : o.comments) comments[at] = c;
}

std::string CatalogOverlay::to_yaml() const { return Writer(*this).yaml(); }

}  // namespace ringsim
