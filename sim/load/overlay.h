// A calibration overlay: catalog figures measured on a machine (or fitted from runs) that replace the
// catalog's. Typed, so that what `ringsim calibrate` writes (to_yaml, with yaml-cpp) is exactly what the
// catalog's own parsers read back (Catalog::read_overlay); a figure left unset keeps the catalog's value.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "load/catalog.h"

namespace ringsim {

// libraries.NAME.paths.{intra_node, infiniband, ethernet}: a PathProfile's figures.
struct PathOverlay {
  std::optional<double> bandwidth_fraction, message_overhead;  // fraction, seconds
  std::optional<std::vector<SizeRegime>> regimes;
  std::optional<RegimeKey> regimes_by;
  std::optional<std::vector<std::pair<double, double>>> protocol_overheads;  // (from bytes, seconds)
  bool operator==(const PathOverlay&) const = default;
};

// libraries.NAME: a LibraryProfile's figures.
struct LibraryOverlay {
  std::optional<double> collective_overhead;                                     // seconds per call
  std::optional<double> host_reduction_rate;                                     // bytes/s
  std::optional<double> host_copy_rate;                                          // bytes/s
  std::optional<double> rpc_rate;                                                // bytes/s
  std::optional<double> kernel_channels;                                         // SMs a collective keeps
  std::optional<std::vector<std::pair<double, double>>> host_reduction_regimes;  // (from bytes, bytes/s)
  std::optional<RegimeKey> host_reduction_regimes_by;
  std::map<std::string, PathOverlay> paths;  // intra_node | cross_socket | infiniband | ethernet
  bool operator==(const LibraryOverlay&) const = default;
};

// link_classes.NAME: a link class's nominal figures (CPU processes: their copy link itself).
struct LinkOverlay {
  std::optional<double> bandwidth, latency;  // bytes/s, seconds
  bool operator==(const LinkOverlay&) const = default;
};

// gpus.NAME: what a rank kind does itself (CPU processes: copies, core handoffs).
struct GpuOverlay {
  std::optional<double> memory_bandwidth;                            // bytes/s
  std::optional<std::vector<std::pair<double, double>>> copy_rates;  // (from bytes, bytes/s)
  std::optional<double> core_handoff, cross_core_handoff;            // seconds
  bool operator==(const GpuOverlay&) const = default;
};

// skus.NAME: what a machine reports about itself, or a figure of it that is uncertain.
struct SkuOverlay {
  std::optional<int> vcpus;
  std::optional<double> ethernet_bandwidth;  // bytes/s
  bool operator==(const SkuOverlay&) const = default;
};

// compute: how one rank's compute varies from step to step, GPUs of one type from each other, and a GPU
// among busy neighbours from one alone.
struct ComputeOverlay {
  std::optional<double> step_time_cv, gpu_to_gpu_cv, reference_gpu_score, co_run_slowdown;
  std::optional<double> roofline_efficiency_scale;  // compute.yaml roofline.efficiency_scale
  std::optional<double> operator_time_scale;        // a factor on the operator model's step time
  std::optional<double> fp8_matmul_scale;           // a factor on FP8 matmuls' achievable rate
  std::optional<double> attention_scale;            // a factor on fused attention's achievable rate
  bool operator==(const ComputeOverlay&) const = default;
};

struct CatalogOverlay {
  ComputeOverlay compute;
  std::map<std::string, LibraryOverlay> libraries;
  std::map<std::string, LinkOverlay> link_classes;
  std::map<std::string, GpuOverlay> gpus;
  std::map<std::string, SkuOverlay> skus;

  // What a fit to runs (calibrate --runs) leaves each figure it set: uncertain parameter name -> [low, high],
  // as uncertain.yaml gives them (values, or factors of the figure this overlay sets). The band samples these
  // ranges instead of leaving the figures out.
  std::map<std::string, std::pair<double, double>> fitted_ranges;

  // The SKU the measurements ran on (`measured_on:`): a scenario on another SKU leaves the overlay out, as its
  // GPUs, links and software may differ; empty: wherever it is given (a hand-written overlay).
  std::string measured_on;

  // Comments for people, not read back: lines at the top, and one after an entry, keyed by its dotted
  // path ("libraries.mpi.collective_overhead", "link_classes.shm", "gpus.cpu_process").
  std::vector<std::string> header;
  std::map<std::string, std::string> comments;

  // Adds to the comment at `at`.
  void comment(const std::string& at, const std::string& text) {
    std::string& c = comments[at];
    c += (c.empty() ? "" : "; ") + text;
  }
  // The same figures and fitted ranges (comments aside).
  bool same_figures(const CatalogOverlay& o) const {
    return compute == o.compute && libraries == o.libraries && link_classes == o.link_classes && gpus == o.gpus &&
           skus == o.skus && fitted_ranges == o.fitted_ranges;
  }
  // Another overlay's figures replace or join these.
  void merge(const CatalogOverlay& o);
  // YAML in the catalog's units; numbers in the shortest form that reads back to the same double.
  std::string to_yaml() const;
};

}  // namespace ringsim
