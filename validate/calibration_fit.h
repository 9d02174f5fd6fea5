// `ringsim calibrate`: fits the simulator's per-path costs to microbenchmarks. For each class of rank
// pair (same socket, across sockets, across the network) a message of S bytes takes alpha + beta * S
// (fitted by least squares on relative error, with Eigen); the host reduction takes gamma per byte.
// Inputs: `ringsim-real calibrate --json` files and nccl-tests text output (all_reduce_perf: a ring of
// n ranks takes 2(n-1) alpha + 2(n-1)/n S beta; sendrecv_perf: alpha + S beta). Output: a calibration
// overlay (library path profiles) for the scenario's SKU, library and fabric.
#pragma once

#include <string>
#include <vector>

#include "load/catalog.h"
#include "load/scenario.h"
#include "report/plot.h"

namespace ringsim {

struct FitPoint {
  double x_alpha = 1;  // multiplier of alpha
  double x_beta = 0;   // multiplier of beta (bytes, scaled by the collective's factor)
  double seconds = 0;
};

struct LinearFit {
  std::string path_class;  // same_socket | cross_socket | network | reduction
  std::string source;      // file(s)
  double alpha = 0, beta = 0;
  double r2 = 0;
  double worst_residual_pct = 0;  // largest |fit - measured| / measured
  std::size_t points = 0;
  std::vector<FitPoint> data;  // the points fitted
  double from_bytes = 0;       // a size regime's first message size (0: the first regime)
};

// Weighted least squares t ~ alpha * x_alpha + beta * x_beta, minimising relative residuals; alpha is
// clamped at zero (refit with beta alone) when the unconstrained fit makes it negative.
LinearFit fit_linear(const std::vector<FitPoint>& points);

// Point-to-point and reduction data (x_alpha 1, x_beta the message size): up to `max_regimes` fits over
// consecutive size ranges of at least `min_points` points each (segmented least squares), the count
// chosen by Akaike's criterion on the relative residuals, so a regime is added only where it explains
// the data (caches, protocol switches) beyond its extra parameters. Sorted by from_bytes.
// One line for people: "same_socket from 8 MiB: alpha 3.4 us, 1/beta 11.1 GB/s, R^2 0.98, worst residual 11 % (4
// points)".
std::string fit_summary(const LinearFit& f);

std::vector<LinearFit> fit_regimes(std::vector<FitPoint> points, int max_regimes = 4, std::size_t min_points = 3);

struct CalibrationInputs {
  std::vector<std::string> data_files;        // ringsim.calibration-data/1 JSON
  std::vector<std::string> nccl_tests_files;  // nccl-tests stdout
  // Where the files' samples carry placement probes (validate/placement.h): a nearest probe seen by other
  // launches, in ns (0: the files' own).
  double nearest_core_to_core_ns = 0;
};

struct CalibrationResult {
  std::vector<LinearFit> fits;
  std::string overlay_yaml;         // the overlay for the scenario
  double collective_overhead = -1;  // seconds per collective call, where measured (allreduce_small)
  std::vector<std::string> notes;
};

// Effective bandwidth against message size per class: the measurements and the fitted curves.
Plot calibration_plot(const CalibrationResult& r);

CalibrationResult calibrate(const Catalog& catalog, const Scenario& scenario, const CalibrationInputs& in);

}  // namespace ringsim
