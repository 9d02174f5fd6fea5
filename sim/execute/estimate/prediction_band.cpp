#include "execute/estimate/prediction_band.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <sstream>

#include "execute/buffer_collective.h"
#include "execute/estimate/child_process.h"
#include "execute/simgrid/training_sim.h"
#include "load/uncertain.h"
#include "schedule/compute_evidence.h"
#include "schedule/compute_model.h"

namespace ringsim {

namespace {

// The k-th point (k >= 1) of the van der Corput sequence in base `b`, in (0, 1).
double halton(int k, int b) {
  double f = 1, r = 0;
  for (int i = k; i > 0; i /= b) {
    f /= b;
    r += f * (i % b);
  }
  return r;
}

int prime(std::size_t i) {
  static const int kPrimes[] = {2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41, 43, 47, 53, 59, 61, 67, 71};
  return kPrimes[i % (sizeof kPrimes / sizeof kPrimes[0])];
}

// The single-GPU rate was measured on one GPU, not on the run's: where GPUs of one type differ by an
// uncertain spread, the band also samples where that GPU stands among them (ComputeSpec::reference_gpu_score).
// Runs fitted for the spread measured the run's GPUs, so a calibration that fitted it leaves the score out.
constexpr const char* kReferenceGpu = "reference_gpu_score";
bool samples_reference_gpu(const std::vector<const UncertainParameter*>& params, const CatalogOverlay& calibration) {
  return std::any_of(params.begin(), params.end(), [&](auto* p) {
    return p->figure == "compute.gpu_to_gpu_cv" && !calibration.fitted_ranges.count(p->name);
  });
}

// The catalog's figures moved to sample k (0: none).
CatalogOverlay sample_figures(const Catalog& catalog, const std::vector<const UncertainParameter*>& params, int k,
                              bool reference_gpu) {
  CatalogOverlay o;
  for (std::size_t i = 0; k > 0 && i < params.size(); ++i)
    o.merge(uncertain_overlay(catalog, *params[i], value_at(*params[i], halton(k, prime(i)))));
  if (k > 0 && reference_gpu) o.compute.reference_gpu_score = normal_quantile(halton(k, prime(params.size())));
  return o;
}

// The compute model's figure over the range its nearest public single-GPU rates leave it, where there are
// such rates (schedule/compute_evidence.h): the roofline's efficiency scales the rate, the operator model's
// scale the time, so a prediction e times too fast takes 1 / e of the one and e times the other; the range
// always holds the catalog's own figure.
std::optional<UncertainParameter> evidence_range(const Catalog& c, const UncertainParameter& p,
                                                 const ComputeEvidence& e) {
  if (!e.found) return std::nullopt;
  UncertainParameter q = p;
  if (p.figure == "compute.roofline_efficiency_scale") {
    const double v = c.compute().roofline_efficiency_scale;
    std::tie(q.low, q.high) = std::pair{v * std::min(1.0, 1 / e.high), v * std::max(1.0, 1 / e.low)};
  } else if (p.figure == "compute.operator_time_scale") {
    // the ratios are the operator model's unscaled (operator_prediction), so they are the figure's own values
    const double v = c.compute().operator_time_scale;
    std::tie(q.low, q.high) = std::pair{std::min(v, e.low), std::max(v, e.high)};
  } else {
    return std::nullopt;
  }
  q.scale = false;
  return q;
}

// The range a band samples `p` over: none where `calibration` measured it; the range a fit to runs left it;
// else the evidence's, where `evidence` gives one; else uncertain.yaml's. `fitted` keeps the ranges made here
// (reserved: the pointers stay valid).
const UncertainParameter* sampled_range(const Catalog& c, const CatalogOverlay& calibration,
                                        const UncertainParameter& p, const ComputeEvidence* evidence,
                                        std::vector<UncertainParameter>& fitted) {
  if (const auto range = calibration.fitted_ranges.find(p.name); range != calibration.fitted_ranges.end()) {
    fitted.push_back(p);
    std::tie(fitted.back().low, fitted.back().high) = range->second;
    return &fitted.back();
  }
  if (overlay_sets(c, calibration, p)) return nullptr;
  if (const auto from_evidence = evidence ? evidence_range(c, p, *evidence) : std::nullopt) {
    fitted.push_back(*from_evidence);
    return &fitted.back();
  }
  return &p;
}

// The smallest and the largest: of n samples, the expected 1 / (n + 1) and n / (n + 1) quantiles (5.9 % and
// 94.1 % of 16), the nearest order statistics to the 5th and 95th percentiles a band of 9 in 10 needs.
std::pair<double, double> ends(const std::vector<double>& r) {
  const auto [lo, hi] = std::minmax_element(r.begin(), r.end());
  return {*lo, *hi};
}

}  // namespace

std::vector<std::pair<double, double>> predict_in_children(const Catalog& catalog,
                                                           const std::vector<ChildPrediction>& jobs) {
  std::vector<std::function<std::string()>> tasks;
  for (const auto& j : jobs)
    tasks.push_back([&catalog, &j] {
      Catalog c = catalog;
      c.apply(j.figures);
      // The step fidelity runs collectives one at a time: where the scenario's run at once, what is wanted
      // of it is a ratio between figures, which this keeps (the flow fidelity's cost, many times, would not).
      Scenario one = *j.scenario;
      if (j.step) one.communication.concurrent_collectives = 1;
      const auto [rate, time] =
          predict_rates_and_exit(c, one, j.step ? Fidelity::Step : j.fidelity.value_or(default_fidelity(one)));
      char b[80];
      std::snprintf(b, sizeof b, "%.17g %.17g", rate, time);
      return std::string(b);
    });
  std::vector<std::pair<double, double>> out;
  for (const auto& text : run_in_children(tasks)) {
    std::istringstream in(text);
    double rate = 0, time = 0;
    in >> rate >> time;
    out.emplace_back(rate, time);
  }
  return out;
}

std::pair<double, double> predict_in_child(const Catalog& catalog, const Scenario& s, const CatalogOverlay& figures,
                                           bool step) {
  return predict_in_children(catalog, {{&s, figures, step, std::nullopt}}).front();
}

bool band_samples_step(const Scenario& s, Fidelity fidelity) {
  return fidelity == Fidelity::Step || s.communication.concurrent_collectives == 1;
}

bool band_runs_as_point(const Scenario& s, Fidelity fidelity) {
  return fidelity == Fidelity::Step || !band_samples_step(s, fidelity);
}

void relate_band(BandRatios& band, double rate, double time) {
  if (band.pending.empty()) return;
  std::vector<double> rates{1}, times{1};  // the point's own, relative to itself
  for (const auto& [r, t] : band.pending) {
    rates.push_back(r / rate);
    times.push_back(t / time);
  }
  band.pending.clear();
  std::tie(band.rate_low, band.rate_high) = ends(rates);
  std::tie(band.time_low, band.time_high) = ends(times);
}

BandRatios band_ratios(const Catalog& catalog, const Scenario& s, const CatalogOverlay& calibration, Fidelity fidelity,
                       const PreparedPrediction* point) {
  BandRatios band;
  std::vector<const UncertainParameter*> params;
  std::vector<UncertainParameter> fitted;  // figures a fit to runs set, over what the runs leave them
  fitted.reserve(catalog.uncertain().size());
  // The roofline's efficiency moves only a rate the roofline gives (not a measured or given one), the operator
  // model's error only a rate it gives.
  const std::string source = build_compute_model(catalog, s, false).source;
  const ComputeEvidence evidence = compute_evidence(catalog, s, source);
  for (const auto& p : catalog.uncertain()) {
    if (!applies_to(p, s, catalog) || (source != "roofline" && p.figure == "compute.roofline_efficiency_scale") ||
        (source != "operators" && p.figure == "compute.operator_time_scale"))
      continue;
    const UncertainParameter* q = sampled_range(catalog, calibration, p, &evidence, fitted);
    if (!q) continue;
    params.push_back(q);
    band.parameters.push_back(p.name);
  }
  band.compute_evidence = evidence.detail;  // empty for a measured or given rate
  if (params.empty()) return band;
  const bool reference_gpu = samples_reference_gpu(params, calibration);
  if (reference_gpu) band.parameters.push_back(kReferenceGpu);
  std::vector<ChildPrediction> jobs;
  const bool step = band_samples_step(s, fidelity);
  if (point && (!band_runs_as_point(s, fidelity) || point->fidelity() != fidelity))
    throw std::logic_error("band_ratios: the point runs otherwise than the band's samples");
  // The samples' children share the layout of the catalog's own figures, made once: by the point, or here.
  const SharedLayouts shared;
  if (!point) share_layout(catalog, s);
  for (int k = point ? 1 : 0; k <= kBandSamples; ++k)
    jobs.push_back({&s, sample_figures(catalog, params, k, reference_gpu), step, fidelity});
  band.pending = predict_in_children(catalog, jobs);
  band.samples = kBandSamples;
  if (point) return band;
  const auto [rate, time] = band.pending.front();  // the catalog's own figures
  band.pending.erase(band.pending.begin());
  relate_band(band, rate, time);
  return band;
}

void apply_bench_band(const Catalog& catalog, const Scenario& s, const CatalogOverlay& calibration,
                      const BenchSizes& sizes, collective::BusOp op, BenchPrediction& b) {
  std::vector<UncertainParameter> fitted;  // figures a fit to runs set, over what the runs leave them
  fitted.reserve(catalog.uncertain().size());
  std::vector<const UncertainParameter*> params;
  for (const auto& p : catalog.uncertain()) {
    if (p.figure.rfind("compute.", 0) == 0 || !applies_to(p, s, catalog)) continue;  // collectives alone
    const UncertainParameter* q = sampled_range(catalog, calibration, p, nullptr, fitted);
    if (!q) continue;
    params.push_back(q);
    b.band_parameters.push_back(p.name);
  }
  if (params.empty()) return;
  std::vector<std::function<std::string()>> tasks;  // each sample's table in a child, side by side
  for (int k = 1; k <= kBandSamples; ++k)
    tasks.push_back([&, k] {
      Catalog c = catalog;
      c.apply(sample_figures(catalog, params, k, false));
      std::string times;
      char t[32];
      for (const BenchRow& r : predict_bench(c, s, sizes, op).rows) {
        std::snprintf(t, sizeof t, "%.17g ", r.time_s);
        times += t;
      }
      return times;
    });
  std::vector<double> low(b.rows.size(), 1), high(b.rows.size(), 1);
  for (const std::string& text : run_in_children(tasks)) {
    std::istringstream in(text);
    for (std::size_t i = 0; i < b.rows.size(); ++i) {
      double time = 0;
      in >> time;
      if (b.rows[i].time_s <= 0) continue;
      low[i] = std::min(low[i], time / b.rows[i].time_s);
      high[i] = std::max(high[i], time / b.rows[i].time_s);
    }
  }
  for (std::size_t i = 0; i < b.rows.size(); ++i) {
    b.rows[i].time_low_s = b.rows[i].time_s * low[i];
    b.rows[i].time_high_s = b.rows[i].time_s * high[i];
  }
  b.band_samples = kBandSamples;
}

void apply_band(BandRatios band, Prediction& p) {
  relate_band(band, p.images_per_sec, p.time_to_train_s);
  p.band_samples = band.samples;
  p.band_parameters = band.parameters;
  p.band_compute_evidence = band.compute_evidence;
  p.images_per_sec_low = std::min(p.images_per_sec, p.images_per_sec * band.rate_low);
  p.images_per_sec_high = std::max(p.images_per_sec, p.images_per_sec * band.rate_high);
  p.time_to_train_s_low = std::min(p.time_to_train_s, p.time_to_train_s * band.time_low);
  p.time_to_train_s_high = std::max(p.time_to_train_s, p.time_to_train_s * band.time_high);
}

}  // namespace ringsim
