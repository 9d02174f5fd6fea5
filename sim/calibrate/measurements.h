// What calibration reads: `ringsim-real calibrate --json` files (ping-pong, exchanges, core handoffs, small
// calls, host reductions and copies) and nccl-tests output, as points per class: a class of rank pair
// (same_socket, cross_socket, network) or a host operation (reduction, copy).
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "calibrate/fit.h"
#include "calibrate/placement.h"
#include "load/catalog.h"
#include "load/scenario.h"

namespace ringsim {

struct CalibrationInputs {
  std::vector<std::string> data_files;        // ringsim.calibration-data/1 JSON
  std::vector<std::string> nccl_tests_files;  // nccl-tests stdout
  // Where the files' samples carry placement probes (calibrate/placement.h): a nearest probe seen by other
  // launches, in ns (0: the files' own).
  double nearest_core_to_core_ns = 0;
};

// The class a pair's ping-pong is fitted under where the same file has its exchanges.
constexpr const char* kPingPongSuffix = " ping-pong";
// Exchanges of two processes on one core (the first pair within a host).
constexpr const char* kOneCore = "one core";
// The same pair's exchanges on two cores, each core shared with another thread that yields.
constexpr const char* kSharedCores = "two shared cores";

// What the measurement files hold: each class's points (a class of rank pair, or a host operation), the
// files they came from, and what reading them left to say.
struct Measurements {
  std::map<std::string, std::vector<FitPoint>> by_class;
  std::map<std::string, std::string> sources;
  std::set<std::string> exchange_classes;  // fitted to exchanges (each rank sends and receives a message)
  std::vector<FitPoint> small_calls;       // 2-process ring allreduce of small buffers (a call's own cost)
  std::string call_class;                  // the pair class they ran on
  std::vector<std::string> input_notes;    // what the files left to the scenario
  // Placement probes: samples count where the CPUs were as near as the files (and the caller) saw them.
  PlacementFilter placement;
  int points_left_out = 0;  // no sample in the nearest placement

  // A file among a class's sources, once.
  void add_source(const std::string& cls, const std::string& file) {
    if (sources[cls].find(file) == std::string::npos) sources[cls] += (sources[cls].empty() ? "" : ", ") + file;
  }
  // A point's time over its samples that count; below 0, and counted as left out, where none does.
  double seconds_of(const nlohmann::json& p) {
    const double t = placement.point_seconds(p);
    if (t < 0) ++points_left_out;
    return t;
  }
  // A file's {bytes, seconds} points that have a time: above 0, or also 0 where `keep_zero` (host operations).
  std::vector<FitPoint> timed_points(const nlohmann::json& points, double x_alpha, bool keep_zero) {
    std::vector<FitPoint> out;
    for (const auto& p : points)
      if (const double t = seconds_of(p); t > 0 || (keep_zero && t >= 0))
        out.push_back({x_alpha, p.at("bytes").get<double>(), t});
    return out;
  }
  // Adds them to a class, which exists only once it has a point.
  void add_points(const std::string& cls, const nlohmann::json& points, double x_alpha = 1, bool keep_zero = false) {
    const std::vector<FitPoint> pts = timed_points(points, x_alpha, keep_zero);
    if (pts.empty()) return;
    std::vector<FitPoint>& to = by_class[cls];
    to.insert(to.end(), pts.begin(), pts.end());
  }
};

// All input files' points by class, each size's repeated measurements (launches) merged by the median.
Measurements read_measurements(const Catalog& catalog, const Scenario& s, const CalibrationInputs& in);
// The notes reading left: the files' own, then what the placement filter left out.
std::vector<std::string> reading_notes(const Measurements& m);

}  // namespace ringsim
