#include "load/overlay.h"

#include <yaml-cpp/yaml.h>

#include <charconv>

namespace ringsim {

namespace {

// The shortest text that reads back to the same double, with the catalog's unit.
std::string quantity(double v, const char* unit) {
  char b[64];
  const auto r = std::to_chars(b, b + sizeof b, v);
  std::string s(b, r.ptr);
  return *unit ? s + " " + unit : s;
}

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
  if (p.bandwidth_fraction)
    y << YAML::Key << "bandwidth_fraction" << YAML::Value << quantity(*p.bandwidth_fraction, "");
  put(y, "message_overhead", p.message_overhead, "s");
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
      if (o_.compute.step_time_cv) put(y_, "step_time_cv", o_.compute.step_time_cv, "");
      if (o_.compute.gpu_to_gpu_cv) put(y_, "gpu_to_gpu_cv", o_.compute.gpu_to_gpu_cv, "");
      if (o_.compute.reference_gpu_score) put(y_, "reference_gpu_score", o_.compute.reference_gpu_score, "");
      if (o_.compute.co_run_slowdown) put(y_, "co_run_slowdown", o_.compute.co_run_slowdown, "");
      if (o_.compute.roofline_efficiency_scale)
        put(y_, "roofline_efficiency_scale", o_.compute.roofline_efficiency_scale, "");
      y_ << YAML::EndMap;
      comment("compute");
    }
    section("libraries", o_.libraries, [this](const std::string& at, const LibraryOverlay& l) { library(at, l); });
    section("link_classes", o_.link_classes, [this](const std::string&, const LinkOverlay& l) {
      y_ << YAML::Flow << YAML::BeginMap;
      put(y_, "bandwidth", l.bandwidth, "B/s");
      put(y_, "latency", l.latency, "s");
      y_ << YAML::EndMap;
    });
    section("gpus", o_.gpus, [this](const std::string&, const GpuOverlay& g) {
      y_ << YAML::Flow << YAML::BeginMap;
      put(y_, "memory_bandwidth", g.memory_bandwidth, "B/s");
      put_steps(y_, "copy_rates", g.copy_rates, "rate", "B/s");
      put(y_, "core_handoff", g.core_handoff, "s");
      put(y_, "cross_core_handoff", g.cross_core_handoff, "s");
      y_ << YAML::EndMap;
    });
    section("skus", o_.skus, [this](const std::string&, const SkuOverlay& k) {
      y_ << YAML::Flow << YAML::BeginMap;
      if (k.vcpus) y_ << YAML::Key << "vcpus" << YAML::Value << *k.vcpus;
      put(y_, "ethernet_bandwidth", k.ethernet_bandwidth, "B/s");
      y_ << YAML::EndMap;
    });
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
    const auto figure = [&](const char* key, const std::optional<double>& v, const char* unit) {
      if (!v) return;
      put(y_, key, v, unit);
      comment(at + "." + key);
    };
    figure("collective_overhead", l.collective_overhead, "s");
    figure("host_reduction_rate", l.host_reduction_rate, "B/s");
    figure("host_copy_rate", l.host_copy_rate, "B/s");
    figure("rpc_rate", l.rpc_rate, "B/s");
    figure("kernel_channels", l.kernel_channels, "");
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
  for (const auto& [name, l] : o.libraries) {
    LibraryOverlay& to = libraries[name];
    take(to.collective_overhead, l.collective_overhead);
    take(to.host_reduction_rate, l.host_reduction_rate);
    take(to.host_copy_rate, l.host_copy_rate);
    take(to.rpc_rate, l.rpc_rate);
    take(to.kernel_channels, l.kernel_channels);
    take(to.host_reduction_regimes, l.host_reduction_regimes);
    take(to.host_reduction_regimes_by, l.host_reduction_regimes_by);
    for (const auto& [p, path] : l.paths) to.paths[p] = path;
  }
  for (const auto& [name, l] : o.link_classes) link_classes[name] = l;
  for (const auto& [name, g] : o.gpus) {
    GpuOverlay& to = gpus[name];
    take(to.memory_bandwidth, g.memory_bandwidth);
    take(to.copy_rates, g.copy_rates);
    take(to.core_handoff, g.core_handoff);
    take(to.cross_core_handoff, g.cross_core_handoff);
  }
  take(compute.step_time_cv, o.compute.step_time_cv);
  take(compute.gpu_to_gpu_cv, o.compute.gpu_to_gpu_cv);
  take(compute.reference_gpu_score, o.compute.reference_gpu_score);
  take(compute.co_run_slowdown, o.compute.co_run_slowdown);
  take(compute.roofline_efficiency_scale, o.compute.roofline_efficiency_scale);
  for (const auto& [name, k] : o.skus) {
    take(skus[name].vcpus, k.vcpus);
    take(skus[name].ethernet_bandwidth, k.ethernet_bandwidth);
  }
  for (const auto& [name, range] : o.fitted_ranges) fitted_ranges[name] = range;
  header.insert(header.end(), o.header.begin(), o.header.end());
  for (const auto& [at, c] : o.comments) comments[at] = c;
}

std::string CatalogOverlay::to_yaml() const { return Writer(*this).yaml(); }

}  // namespace ringsim
