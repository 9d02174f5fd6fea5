// Samples taken where the processes' CPUs were as near as they get. ringsim-real's --probe-cores puts in
// every sample (a calibration point's samples, a bench row) the core-to-core latency probed just before and
// just after it, and in every file the nearest probe of its launch and the factor above it at which the
// launch took a sample again (real/placement/core_to_core.h). A VM's vCPUs move between the host's cores,
// from cores of one L3 cache to cores sharing none, where exchanges run several times slower
// (validate/HISTORY.md). A sample counts where both its probes are within that factor of the nearest probe
// of all the files read together; the others measured another machine.
#pragma once

#include <limits>
#include <nlohmann/json.hpp>
#include <string>

namespace ringsim {

class PlacementFilter {
 public:
  // Reads a file's "core_to_core" block, if it has one.
  void add_file(const nlohmann::json& file);
  // Counts a probe known from elsewhere (files of other launches) as the nearest, where it is nearer.
  void add_nearest(double ns);
  bool active() const { return factor_ > 0 && nearest_ns_ < std::numeric_limits<double>::infinity(); }
  double nearest_ns() const { return nearest_ns_; }
  double limit_ns() const { return factor_ * nearest_ns_; }
  // Whether a sample or row (an object with "core_to_core_ns": [before, after]) counts: true where it was
  // not probed or no file was. Counted in kept() and excluded().
  bool accept(const nlohmann::json& sample);
  // A calibration point's time: the median of its samples that count, its "seconds" where it has no
  // samples; below 0 where none counts.
  double point_seconds(const nlohmann::json& point);
  int kept() const { return kept_; }
  int excluded() const { return excluded_; }
  // "12 of 1,230 samples taken with CPUs 0 and 1 more than 62 ns apart (twice the nearest, 31 ns) left out"
  std::string summary(const std::string& what) const;

 private:
  double nearest_ns_ = std::numeric_limits<double>::infinity();
  double factor_ = 0;
  std::string cpus_;
  int kept_ = 0, excluded_ = 0;
};

}  // namespace ringsim
