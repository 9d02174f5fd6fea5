// `ringsim calibrate`: fits the simulator's per-path and per-rank costs to microbenchmarks. For each class
// of rank pair (same socket, across sockets, across the network) a message of S bytes takes alpha + beta S
// (calibrate/fit.h); host reductions and copies likewise. Inputs: `ringsim-real calibrate --json` files and
// nccl-tests output (all_reduce_perf: a ring of n ranks takes 2(n-1) alpha + 2(n-1)/n S beta;
// sendrecv_perf: alpha + S beta). Each calibrated effect (calibrate/effect.h) then writes its figures into
// a typed overlay for the scenario's SKU, library and fabric.
#pragma once

#include <string>
#include <vector>

#include "calibrate/fit.h"
#include "calibrate/measurements.h"
#include "load/catalog.h"
#include "load/overlay.h"
#include "load/scenario.h"
#include "report/plot.h"

namespace ringsim {

struct CalibrationResult {
  std::vector<LinearFit> fits;
  CatalogOverlay overlay;
  std::string overlay_yaml;         // overlay.to_yaml()
  double collective_overhead = -1;  // seconds per collective call, where measured (allreduce_small)
  std::vector<std::string> notes;
};

CalibrationResult calibrate(const Catalog& catalog, const Scenario& scenario, const CalibrationInputs& in);

// Effective bandwidth against message size per class: the measurements and the fitted curves.
Plot calibration_plot(const CalibrationResult& r);

// The registry for people: per effect what it measures, how it is fitted, what it writes, what reads it.
std::string effects_table();

}  // namespace ringsim
