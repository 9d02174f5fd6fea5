// A band around a prediction: the catalog's uncertain figures (uncertain.yaml) that take part in the
// scenario, sampled over their ranges, the step fidelity run at each sample, and the spread of the results
// carried over to the prediction.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "execute/analytic/collective_bench.h"
#include "execute/prediction.h"
#include "execute/simgrid/training_sim.h"
#include "load/catalog.h"
#include "load/overlay.h"
#include "load/scenario.h"

namespace ringsim {

// The spread: each end of the band relative to the prediction at the catalog's own figures.
struct BandRatios {
  int samples = 0;
  double rate_low = 1, rate_high = 1;  // images/s
  double time_low = 1, time_high = 1;  // time to train
  std::vector<std::string> parameters;
  std::string compute_evidence;  // where the compute model's range came from (schedule/compute_evidence.h)
  // The samples' images/s and time to train while no run at the catalog's own figures is there to take
  // them relative to (band_ratios' `point_is_own`): relate_band does, with the point's.
  std::vector<std::pair<double, double>> pending;
};

// Predictions at kBandSamples deterministic points (a Halton sequence: log-uniform over each range, uniform
// where it starts at 0) and at the catalog's figures; each end is the most extreme of them relative to the
// catalog's (the expected 5.9th and 94.1st percentiles of the figures' ranges: a band of 9 in 10). Where the GPUs'
// spread (compute.gpu_to_gpu_cv) is uncertain, the samples also place the GPU that gave the single-GPU rate among the
// run's GPUs, a standard normal score (ComputeSpec::reference_gpu_score). Figures that `calibration` sets are measured
// and stay, except those a fit to runs set: these are sampled over the ranges the runs leave them (fitted_ranges). Each
// prediction runs in a child process (SimGrid allows one engine per process): call this before the process runs its own
// prediction. The samples run the step fidelity with one collective at a time, except where the prediction runs the
// flow fidelity with collectives at once: then that, as the prediction does (the links the collectives
// share make the network's figures move it more than one collective at a time shows).
// Given `point`, this scenario's prediction in `fidelity` prepared (where band_runs_as_point), the samples
// share its layout, and the prediction at the catalog's own figures is not run here: it is the point's, which
// relate_band (or apply_band) takes the samples relative to.
constexpr int kBandSamples = 16;
BandRatios band_ratios(const Catalog& catalog, const Scenario& scenario, const CatalogOverlay& calibration = {},
                       Fidelity fidelity = Fidelity::Step, const PreparedPrediction* point = nullptr);
// Whether a band around a prediction in `fidelity` samples the step fidelity, one collective at a time.
bool band_samples_step(const Scenario& scenario, Fidelity fidelity);
// Whether the band's samples run as the prediction in `fidelity` itself does (its fidelity, the scenario as
// it is), so that the point is the band's run at the catalog's own figures.
bool band_runs_as_point(const Scenario& scenario, Fidelity fidelity);
// The pending samples of `band` taken relative to the point's images/s and time to train.
void relate_band(BandRatios& band, double rate, double time);

// images/s and time to train of `scenario` with the catalog's figures changed by `figures`, predicted in a
// child process: the step fidelity with one collective at a time where `step`, else the scenario's own
// fidelity.
std::pair<double, double> predict_in_child(const Catalog& catalog, const Scenario& scenario,
                                           const CatalogOverlay& figures, bool step = true);

// Several such predictions, in children run side by side (run_in_children); results in the jobs' order.
struct ChildPrediction {
  const Scenario* scenario = nullptr;
  CatalogOverlay figures;
  bool step = true;                  // the step fidelity, one collective at a time
  std::optional<Fidelity> fidelity;  // else this one with the scenario as it is (unset: its default)
};
std::vector<std::pair<double, double>> predict_in_children(const Catalog& catalog,
                                                           const std::vector<ChildPrediction>& jobs);

// The band around `point`, which it always holds (pending samples taken relative to it).
void apply_band(BandRatios band, Prediction& point);

// A bench table's band: the figures of uncertain.yaml its collectives depend on (not the compute's), sampled
// as a prediction's band samples them, each sample's table predicted in a child process (run side by side);
// each row's ends are the most extreme times relative to `bench`'s, which they always hold.
void apply_bench_band(const Catalog& catalog, const Scenario& scenario, const CatalogOverlay& calibration,
                      const BenchSizes& sizes, collective::BusOp op, BenchPrediction& bench);

}  // namespace ringsim
