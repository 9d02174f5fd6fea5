// Runs `ringsim predict` once per point of a search, as child processes, several at a time (SimGrid
// allows one engine per process). Used by `ringsim sweep` and `ringsim plan`.
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace ringsim {

struct PredictPoint {
  int index = 0;
  std::vector<std::string> sets;  // --set arguments for this point
};

struct PointRunOptions {
  std::string self;  // the ringsim executable
  std::string catalog_dir;
  std::string scenario;
  std::optional<std::string> fidelity;  // --fidelity for every point
  int jobs = 1;
  std::string label = "sweep";  // names the command in progress lines and errors
  bool band = true;             // predict each point's band (plan ranks by it; a sweep reports none)
};

// Runs the points `jobs` at a time and calls `done(index, result JSON)` as each finishes. Progress goes
// to stderr (a count with an ETA on a terminal, one line per point otherwise). The first point that
// fails stops the others; its error is thrown as std::runtime_error ("LABEL point N failed: ...").
void run_predict_points(const PointRunOptions& o, const std::vector<PredictPoint>& points,
                        const std::function<void(int, const nlohmann::json&)>& done);

}  // namespace ringsim
