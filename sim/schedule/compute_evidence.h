// How far the compute models miss the public single-GPU rates nearest a configuration (the catalog's
// single_gpu_rates.yaml): the evidence a compute band is drawn from, narrow where rates of that GPU
// generation, model family and stack are many, the catalog's prior range where there are none.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "load/catalog.h"
#include "load/scenario.h"

namespace ringsim {

// A rate as the roofline predicts it (the catalog's efficiencies), and as the operator model on `stack` does.
double roofline_prediction(const Catalog& catalog, const SingleGpuRate& rate);
double operator_prediction(const Catalog& catalog, const SingleGpuRate& rate, const StackSpec& stack);

// The public rates a band for `query` draws on: those of its stack and model family, nearest first (GPU
// generation, then the same GPU, model and precision), at most kNearestRates. None where fewer than
// kFewestRates qualify or none is of the query's GPU generation (CUDA compute capability's major
// version; none for a GPU without one): the figure is then extrapolated, and `why` says so.
constexpr std::size_t kNearestRates = 8, kFewestRates = 4;
std::vector<const SingleGpuRate*> nearest_rates(const Catalog& catalog, const SingleGpuRate& query,
                                                const std::vector<const SingleGpuRate*>& pool, std::string* why);

// The 90 % prediction interval of a new ratio of predicted to measured rate, from the ratios of the
// nearest rates taken as log-normal: exp(mean -/+ t(0.95, n - 1) x sd x sqrt(1 + 1 / n)) of their logs
// (Student's t; n >= 2).
std::pair<double, double> prediction_interval(const std::vector<double>& ratios);

// What a compute band draws on: the nearest rates, their ratios of predicted to measured rate, and the
// ratios' 90 % interval; not found where nearest_rates finds none (`detail` then says why).
struct ComputeEvidence {
  bool found = false;
  double low = 1, high = 1;  // predicted / measured, 9 in 10
  std::vector<const SingleGpuRate*> rates;
  std::vector<double> ratios;
  std::string detail;  // which rates, or why none
};
ComputeEvidence evidence_interval(const Catalog& catalog, const SingleGpuRate& query,
                                  const std::vector<const SingleGpuRate*>& pool,
                                  const std::function<double(const SingleGpuRate&)>& ratio);

// The evidence for a scenario's compute band, with the catalog's figures, under the compute model that gives
// the scenario's rate (`source`: roofline, whose efficiencies are the default stack's, or operators).
ComputeEvidence compute_evidence(const Catalog& catalog, const Scenario& scenario, const std::string& source);

}  // namespace ringsim
