// `ringsim validate`: predictions next to measurements, with the error. Published data
// (validate/data/published.yaml: cases predicted from catalog data alone) and measured results
// (ringsim-real train --json, or any file in the result schema).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "load/catalog.h"
#include "load/scenario.h"
#include "report/plot.h"
#include "validate/result_diff.h"

namespace ringsim {

struct ValidationCase {
  ValidationCase() = default;
  ValidationCase(std::string n, std::string m, double p, double meas)
      : name(std::move(n)), metric(std::move(m)), predicted(p), measured(meas) {}
  std::string name;
  std::string metric;  // "images_per_sec", "iteration_time_s", ...
  double predicted = 0;
  double measured = 0;
  std::string group;  // for plots: the series the case belongs to ("DGX-1-P100 resnet50 b64"); empty: none
  // The software stack the case ran ("ring over nccl", "parameter_server (rpc) over nccl"); empty: none.
  std::string stack;
  double x = 0;  // for plots: the case's position on the x axis (GPUs)
  // Where the measurement was repeated: (largest - smallest) / median of the runs, in %; below 0: unknown.
  double spread_pct = -1;
  // Where measured in three runs or more: each run against the median of the others (others_error_pct).
  double others_error_pct = -1;
  double error_pct() const { return measured != 0 ? (predicted - measured) / measured * 100 : 0; }
  // The prediction's band (execute/estimate/prediction_band.h); both 0 where it has none.
  double low = 0, high = 0;
  bool has_band() const { return high > 0; }
  bool in_band() const { return measured >= low && measured <= high; }
  // A few-shot case (calibrated on smaller runs): the zero-shot prediction of the same run; 0 for others.
  double zero_shot = 0;
  double zero_shot_error_pct() const { return measured != 0 ? (zero_shot - measured) / measured * 100 : 0; }
};

// Over a set of cases: mean |error| in %, the largest |error|, how many have a band, the share of those whose
// measurement is inside it (-1: none), and the median of their high / low (-1: none).
double mape_of(const std::vector<ValidationCase>& cases);
double max_abs_error_of(const std::vector<ValidationCase>& cases);
int banded_of(const std::vector<ValidationCase>& cases);
double band_coverage_of(const std::vector<ValidationCase>& cases);
double band_median_width_of(const std::vector<ValidationCase>& cases);

struct ValidationReport {
  std::string title;
  std::string x_label = "GPUs";  // of grouped cases in plots
  std::vector<ValidationCase> cases;
  // Result files (--measured): where each differs from the prediction, part by part.
  std::vector<std::pair<std::string, ResultDiff>> differences;
  std::vector<std::string> notes;  // what was left out, and why
  // Published few-shot check: each series calibrated on its runs of up to `few_shot_nodes` nodes (`ringsim
  // calibrate --runs`), its larger runs predicted with the fitted figures; what each fit found.
  std::int64_t few_shot_nodes = 0;
  std::vector<ValidationCase> few_shot;
  std::vector<std::string> few_shot_fits;
  double mape() const { return mape_of(cases); }
  double max_abs_error() const { return max_abs_error_of(cases); }
  int banded() const { return banded_of(cases); }
  double band_coverage() const { return band_coverage_of(cases); }
  double band_median_width() const { return band_median_width_of(cases); }
};

// (largest - smallest) / median of repeated measurements, in %; -1 for fewer than two.
double spread_pct(std::vector<double> runs);
// Repeated measurements, each against the median of the others: the median over the runs of
// |run - median(others)| / run, in %; -1 for fewer than three. What a prediction that knew the typical
// run exactly would miss a run by: the measurements' own floor for the error.
double others_error_pct(const std::vector<double>& runs);
// One of them, runs[i], against the median of the others, in %; -1 for fewer than three runs or a zero.
double against_others_pct(const std::vector<double>& runs, std::size_t i);

// Each case predicted in its own process (one SimGrid engine per process), with its band unless `band` is
// false. Where the file has `few_shot: {fit_nodes: N}`, also the few-shot check (ValidationReport::few_shot).
ValidationReport validate_published(const Catalog& catalog, const std::string& cases_file, bool band = true);
// Bench rows with placement probes (calibrate/placement.h) count where the CPUs were as near as the files
// saw them, or as `nearest_core_to_core_ns` (other launches' nearest probe, in ns; 0: none).
ValidationReport validate_measured(const Catalog& catalog, const Scenario& scenario,
                                   const std::vector<std::string>& measured_files, double nearest_core_to_core_ns = 0);

// A real Horovod timeline against the prediction for the same scenario: iteration cadence (when the
// timeline has several iterations), fusion buffers per iteration, mean and total allreduce time per
// iteration.
ValidationReport validate_timeline(const Catalog& catalog, const Scenario& scenario, const std::string& timeline);

std::string validation_table(const ValidationReport& r);
std::string validation_json(const ValidationReport& r);
// Grouped cases: predicted lines and measured markers over x; and every case, predicted against measured
// with the line y = x and +/- 10 %.
Plot validation_plot(const ValidationReport& r);

// Cases whose |error| exceeds the recorded one (a validation JSON) by more than `tolerance_pp`
// percentage points, or that the recorded file lacks; empty when none regressed.
std::vector<std::string> regressions(const ValidationReport& r, const std::string& recorded_json, double tolerance_pp);

}  // namespace ringsim
