// The calibrated scalar figures as tables: each row declares a figure once — its key in the catalog and in
// an overlay, how it is read (kind and range) and written back (its unit), where the catalog keeps it and
// where an overlay sets it. Reading an overlay, applying it, merging two and writing one, and the uncertain
// figures' mapping (uncertain.cpp) iterate these rows: a new calibrated figure is one row here (plus its
// cost term that reads it, and a probe if it is measured).
#pragma once

#include <yaml-cpp/yaml.h>

#include <charconv>
#include <optional>
#include <string>

#include "load/catalog.h"
#include "load/overlay.h"
#include "load/yaml_reader.h"

namespace ringsim {

// How a figure is read and written: a plain number in [min, max], a time (seconds, >= 0) or a bandwidth
// (bytes/s, > 0).
struct FigureKind {
  enum { Number, Time, Bandwidth } kind;
  double min = 0, max = 0;  // Number only
  const char* unit() const { return kind == Time ? "s" : kind == Bandwidth ? "B/s" : ""; }
  double read(const YamlField& v) const {
    return kind == Time        ? v.nonnegative_quantity(Quantity::Time)
           : kind == Bandwidth ? v.positive_quantity(Quantity::Bandwidth)
                               : v.number(min, max);
  }
};

template <class Spec, class Overlay>
struct FigureRow {
  const char* key;
  FigureKind kind;
  double Spec::*value;
  std::optional<double> Overlay::*slot;
};

constexpr FigureKind kTime{FigureKind::Time}, kBandwidth{FigureKind::Bandwidth};
constexpr FigureKind number(double min, double max) { return {FigureKind::Number, min, max}; }

// compute: (compute.yaml) in the order an overlay writes them.
inline constexpr FigureRow<ComputeSpec, ComputeOverlay> kComputeFigures[] = {
    {"step_time_cv", number(0, 1), &ComputeSpec::step_time_cv, &ComputeOverlay::step_time_cv},
    {"gpu_to_gpu_cv", number(0, 1), &ComputeSpec::gpu_to_gpu_cv, &ComputeOverlay::gpu_to_gpu_cv},
    {"reference_gpu_score", number(-10, 10), &ComputeSpec::reference_gpu_score, &ComputeOverlay::reference_gpu_score},
    {"co_run_slowdown", number(0, 1), &ComputeSpec::co_run_slowdown, &ComputeOverlay::co_run_slowdown},
    {"roofline_efficiency_scale", number(0.01, 10), &ComputeSpec::roofline_efficiency_scale,
     &ComputeOverlay::roofline_efficiency_scale},
    {"operator_time_scale", number(0.01, 100), &ComputeSpec::operator_time_scale, &ComputeOverlay::operator_time_scale},
    {"fp8_matmul_scale", number(0.01, 10), &ComputeSpec::fp8_matmul_scale, &ComputeOverlay::fp8_matmul_scale},
    {"attention_scale", number(0.01, 10), &ComputeSpec::attention_scale, &ComputeOverlay::attention_scale}};
// libraries.NAME: (libraries.yaml)
inline constexpr FigureRow<LibraryProfile, LibraryOverlay> kLibraryFigures[] = {
    {"collective_overhead", kTime, &LibraryProfile::collective_overhead, &LibraryOverlay::collective_overhead},
    {"host_reduction_rate", kBandwidth, &LibraryProfile::host_reduction_rate, &LibraryOverlay::host_reduction_rate},
    {"host_copy_rate", kBandwidth, &LibraryProfile::host_copy_rate, &LibraryOverlay::host_copy_rate},
    {"rpc_rate", kBandwidth, &LibraryProfile::rpc_rate, &LibraryOverlay::rpc_rate},
    {"kernel_channels", number(0, 64), &LibraryProfile::kernel_channels, &LibraryOverlay::kernel_channels}};
// libraries.NAME.paths.PATH:
inline constexpr FigureRow<PathProfile, PathOverlay> kPathFigures[] = {
    {"bandwidth_fraction", number(0.01, 1.0), &PathProfile::bandwidth_fraction, &PathOverlay::bandwidth_fraction},
    {"message_overhead", kTime, &PathProfile::message_overhead, &PathOverlay::message_overhead}};
// link_classes.NAME: (links.yaml)
inline constexpr FigureRow<LinkClass, LinkOverlay> kLinkFigures[] = {
    {"bandwidth", kBandwidth, &LinkClass::bandwidth, &LinkOverlay::bandwidth},
    {"latency", kTime, &LinkClass::latency, &LinkOverlay::latency}};
// gpus.NAME: (gpus.yaml; its copy rates and core handoffs are read apart)
inline constexpr FigureRow<GpuSpec, GpuOverlay> kGpuFigures[] = {
    {"memory_bandwidth", kBandwidth, &GpuSpec::memory_bandwidth, &GpuOverlay::memory_bandwidth}};
// skus.NAME: (skus.yaml; vcpus, a whole number, is read apart)
inline constexpr FigureRow<SkuSpec, SkuOverlay> kSkuFigures[] = {
    {"ethernet_bandwidth", kBandwidth, &SkuSpec::ethernet_bandwidth, &SkuOverlay::ethernet_bandwidth}};

// The row of `rows` called `key`; nullptr where there is none.
template <class Row, std::size_t N>
const Row* find_figure(const Row (&rows)[N], const std::string& key) {
  for (const auto& r : rows)
    if (key == r.key) return &r;
  return nullptr;
}

// The rows' keys, for a section's list of allowed keys.
template <class Row, std::size_t N>
std::vector<std::string> figure_keys(const Row (&rows)[N]) {
  std::vector<std::string> keys;
  for (const auto& r : rows) keys.push_back(r.key);
  return keys;
}

// An overlay section's figures from `f` (its keys already checked).
template <class Spec, class Overlay, std::size_t N>
void read_figures(const YamlField& f, const FigureRow<Spec, Overlay> (&rows)[N], Overlay& o) {
  for (const auto& r : rows)
    if (auto v = f.find(r.key)) o.*r.slot = r.kind.read(*v);
}

// The overlay's figures into the catalog's entry.
template <class Spec, class Overlay, std::size_t N>
void apply_figures(const Overlay& o, const FigureRow<Spec, Overlay> (&rows)[N], Spec& spec) {
  for (const auto& r : rows)
    if (o.*r.slot) spec.*r.value = *(o.*r.slot);
}

// The figures `from` sets replace those of `to`.
template <class Spec, class Overlay, std::size_t N>
void merge_figures(Overlay& to, const Overlay& from, const FigureRow<Spec, Overlay> (&rows)[N]) {
  for (const auto& r : rows)
    if (from.*r.slot) to.*r.slot = from.*r.slot;
}

// The shortest text that reads back to the same double, with the catalog's unit.
inline std::string figure_text(double v, const char* unit) {
  char b[64];
  const auto r = std::to_chars(b, b + sizeof b, v);
  std::string s(b, r.ptr);
  return *unit ? s + " " + unit : s;
}

// The figures the overlay sets, as `key: value unit`; `after(key)` runs after each (a comment).
template <class Spec, class Overlay, std::size_t N, class After>
void write_figures(YAML::Emitter& y, const Overlay& o, const FigureRow<Spec, Overlay> (&rows)[N], After after) {
  for (const auto& r : rows) {
    if (!(o.*r.slot)) continue;
    y << YAML::Key << r.key << YAML::Value << figure_text(*(o.*r.slot), r.kind.unit());
    after(r.key);
  }
}

}  // namespace ringsim
