// `ringsim calibrate SCENARIO --runs RUNS.csv`: learning from a few small runs. Each row of RUNS.csv is one
// measured run of the scenario: images_per_sec (total over all GPUs; samples_per_sec is its synonym) and
// any scenario keys as further columns (cluster.nodes, cluster.gpus_per_node, ...). The catalog's uncertain
// figures (uncertain.yaml) that these runs depend on are fitted, within their ranges, so that the
// predictions of the runs match them; the result is an overlay for `predict --calibration`.
#pragma once

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
  // Where the runs leave it, 9 times in 10 (calibrate/posterior.h).
  double fit_low = 0, fit_high = 0;
  double prior_share = 1;  // of its prior spread, what it keeps (1: the runs say nothing of it)
};

// The run to measure next: of the configurations a planner measures first, the one that would narrow the band
// of the scenario's own prediction most.
struct NextRun {
  std::string target;               // the scenario's configuration ("cluster.nodes=16 cluster.gpus_per_node=8")
  std::string run;                  // empty: none of them would narrow it
  double sd_now = 0, sd_after = 0;  // of the scenario's predicted log rate, now and after that run
};

struct RunsFit {
  std::vector<FittedFigure> fitted;
  std::vector<std::string> not_fitted;  // "name: why, and what to measure"
  std::vector<std::string> warnings;    // rows of one configuration far apart
  double noise = 0;                     // of a run's log rate, as the posterior took it
  NextRun next;
  std::vector<double> measured, before, after;  // per run: images/s measured, predicted before and after
  CatalogOverlay overlay;
};

// The figures' posterior given the runs (calibrate/posterior.h), for any number of runs: figures the runs
// pin down move and narrow, the others keep the catalog's value and range. Refuses (InputError) only
// malformed runs.
RunsFit fit_runs(const Catalog& catalog, const std::string& scenario_file, const std::vector<Override>& sets,
                 const std::string& runs_file);
// The same for runs read elsewhere; `source` names their file in errors and in the overlay's header.
// `advise`: also name the run to measure next (RunsFit::next; several predictions per candidate).
RunsFit fit_runs(const Catalog& catalog, const std::string& scenario_file, const std::vector<Override>& sets,
                 const std::vector<MeasuredRun>& runs, const std::string& source, bool advise = true);

}  // namespace ringsim
