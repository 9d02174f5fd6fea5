// `ringsim calibrate SCENARIO --runs RUNS.csv`: learning from a few small runs. Each row of RUNS.csv is one
// measured run of the scenario: images_per_sec (total over all GPUs; samples_per_sec is its synonym) and
// any scenario keys as further columns (cluster.nodes, cluster.gpus_per_node, ...). The catalog's uncertain
// figures (uncertain.yaml) that these runs depend on are fitted, within their ranges, so that the
// predictions of the runs match them; the result is an overlay for `predict --calibration`.
#pragma once

#include <Eigen/Dense>
#include <string>
#include <utility>
#include <vector>

#include "load/catalog.h"
#include "load/overlay.h"
#include "load/scenario.h"

namespace ringsim {

struct MeasuredRun {
  std::vector<Override> sets;  // the row's scenario keys
  std::vector<int> columns;    // where each starts on its line
  double images_per_sec = 0;
  int line = 0;
};

// A strict CSV reader: errors give file:line:col, what was expected and the closest valid names.
std::vector<MeasuredRun> read_runs(const std::string& file);

struct FittedFigure {
  std::string name;  // the uncertain parameter
  double low = 0, high = 0, value = 0;
  bool scale = false;
  // Where the runs leave it, 9 times in 10 (its whole range where they do not pin it down).
  double fit_low = 0, fit_high = 0;
};

struct RunsFit {
  std::vector<FittedFigure> fitted;
  std::vector<std::string> not_fitted;          // "name: why, and what to measure"
  std::vector<double> measured, before, after;  // per run: images/s measured, predicted before and after
  CatalogOverlay overlay;
};

// Where each fitted coordinate u (0..1 along a figure's range) may lie, 9 times in 10, given how well the runs
// are fitted: Gauss-Newton, cov(u) = s^2 (J^T J)^-1 over the directions that move the runs by 0.5 % or more
// (J: the runs' log errors against u, r: those errors), s^2 the residuals' variance per degree of freedom
// left, Student's t. A coordinate the runs do not pin down (a direction that moves no run, or no degree of
// freedom left to say how well they fit) keeps all of [0, 1].
std::vector<std::pair<double, double>> fitted_intervals(const Eigen::MatrixXd& jac, const Eigen::VectorXd& r,
                                                        const std::vector<double>& u);

// Refuses (InputError) a fit the runs do not determine: no uncertain figure changes their predictions, or
// more figures do than there are runs; it names what more to measure.
RunsFit fit_runs(const Catalog& catalog, const std::string& scenario_file, const std::vector<Override>& sets,
                 const std::string& runs_file);
// The same for runs read elsewhere; `source` names their file in errors and in the overlay's header.
RunsFit fit_runs(const Catalog& catalog, const std::string& scenario_file, const std::vector<Override>& sets,
                 const std::vector<MeasuredRun>& runs, const std::string& source);

}  // namespace ringsim
