#include "schedule/compute_evidence.h"

#include <algorithm>
#include <boost/math/distributions/students_t.hpp>
#include <cmath>
#include <tuple>

#include "load/units.h"
#include "schedule/operators.h"

namespace ringsim {

double operator_prediction(const Catalog& c, const SingleGpuRate& r, const StackSpec& st) {
  const ComputeSpec& cs = c.compute();
  const StepTime t = step_time(step_kernels(c.model(r.model), r.batch_per_gpu, r.tokens, r.precision, st, cs.operators),
                               gpu_rates(cs, c.gpu(r.gpu), r.precision, st));
  return r.batch_per_gpu / (t.forward_s + t.backward_s + t.update_s / r.gradient_accumulation);
}

double roofline_prediction(const Catalog& c, const SingleGpuRate& r) {
  const ComputeSpec& cs = c.compute();
  const ModelSpec& m = c.model(r.model);
  const PrecisionSpec& p = cs.precisions.at(r.precision);
  const double eff = (m.transformer() ? p.transformer_efficiency : p.cnn_efficiency) * cs.roofline_efficiency_scale;
  const double fwd_bwd =
      m.forward_flops(r.tokens) * (1 + cs.backward_to_forward) / (c.gpu(r.gpu).peak_flops(p.peak) * eff);
  return r.batch_per_gpu / (r.batch_per_gpu * fwd_bwd + 3.0 * m.gradient_bytes() / c.gpu(r.gpu).memory_bandwidth);
}

namespace {

// CUDA compute capability's major version (3 Kepler ... 9 Hopper); -1 for a GPU without one.
int generation(const GpuSpec& g) { return g.compute_capability > 0 ? static_cast<int>(g.compute_capability) : -1; }

// How far `r` is from `q`: GPU generations apart (a GPU without a generation is far from every other), then
// whether the GPU, the model and the precision differ.
std::tuple<int, bool, bool, bool> distance(const Catalog& c, const SingleGpuRate& q, const SingleGpuRate& r) {
  const int a = generation(c.gpu(q.gpu)), b = generation(c.gpu(r.gpu));
  const int gens = a < 0 || b < 0 ? (q.gpu == r.gpu ? 0 : 1000) : std::abs(a - b);
  return {gens, q.gpu != r.gpu, q.model != r.model, q.precision != r.precision};
}

std::string case_label(const SingleGpuRate& r) {
  return r.gpu + " " + r.model + " b" + std::to_string(r.batch_per_gpu) + " " + r.precision;
}

}  // namespace

std::vector<const SingleGpuRate*> nearest_rates(const Catalog& c, const SingleGpuRate& query,
                                                const std::vector<const SingleGpuRate*>& pool, std::string* why) {
  const bool transformer = c.model(query.model).transformer();
  std::vector<const SingleGpuRate*> near;
  for (const auto* r : pool)
    if (r->stack == query.stack && c.model(r->model).transformer() == transformer) near.push_back(r);
  const std::string kind = std::string(transformer ? "transformer" : "CNN") + " rates on the " + query.stack + " stack";
  if (near.size() < kFewestRates) {
    if (why) *why = std::to_string(near.size()) + " public " + kind + ", fewer than " + std::to_string(kFewestRates);
    return {};
  }
  std::stable_sort(near.begin(), near.end(),
                   [&](const auto* x, const auto* y) { return distance(c, query, *x) < distance(c, query, *y); });
  if (std::get<0>(distance(c, query, *near.front())) > 0) {
    const int g = generation(c.gpu(query.gpu));
    if (why)
      *why = "no public " + kind + " of a GPU of " + query.gpu + "'s generation" +
             (g < 0 ? "" : " (compute capability " + std::to_string(g) + ".x)");
    return {};
  }
  near.resize(std::min(near.size(), kNearestRates));
  return near;
}

std::pair<double, double> prediction_interval(const std::vector<double>& ratios) {
  const double n = static_cast<double>(ratios.size());
  double mean = 0, ss = 0;
  for (const double r : ratios) mean += std::log(r) / n;
  for (const double r : ratios) ss += std::pow(std::log(r) - mean, 2);
  const double t = boost::math::quantile(boost::math::students_t(n - 1), 0.95);
  const double half = t * std::sqrt(ss / (n - 1)) * std::sqrt(1 + 1 / n);
  return {std::exp(mean - half), std::exp(mean + half)};
}

ComputeEvidence evidence_interval(const Catalog& c, const SingleGpuRate& query,
                                  const std::vector<const SingleGpuRate*>& pool,
                                  const std::function<double(const SingleGpuRate&)>& ratio) {
  ComputeEvidence e;
  e.rates = nearest_rates(c, query, pool, &e.detail);
  if (e.rates.empty()) return e;
  for (const auto* r : e.rates) e.ratios.push_back(ratio(*r));
  std::tie(e.low, e.high) = prediction_interval(e.ratios);
  e.found = true;
  return e;
}

ComputeEvidence compute_evidence(const Catalog& c, const Scenario& s, const std::string& source) {
  if (source != "roofline" && source != "operators") return {};
  const auto& ops = c.compute().operators;
  const std::string stack = source == "roofline" || s.model.stack.empty() ? ops.default_stack : s.model.stack;
  const SingleGpuRate query{c.sku(s.cluster.sku).gpu, s.model.name,  s.model.precision, stack, "",
                            s.model.batch_per_gpu,    s.model.tokens};
  std::vector<const SingleGpuRate*> pool;
  for (const auto& r : c.single_gpu_rates()) pool.push_back(&r);
  const StackSpec& st = ops.stacks.at(stack);
  ComputeEvidence e = evidence_interval(c, query, pool, [&](const SingleGpuRate& r) {
    return (source == "roofline" ? roofline_prediction(c, r) : operator_prediction(c, r, st)) / r.samples_per_sec;
  });
  const std::string model = source == "roofline" ? "the roofline" : "the operator model";
  if (!e.found) {
    e.detail += ": " + model + "'s range in uncertain.yaml";
    return e;
  }
  std::string names;
  for (const auto* r : e.rates) names += (names.empty() ? "" : ", ") + case_label(*r);
  const auto [lo, hi] = std::minmax_element(e.ratios.begin(), e.ratios.end());
  e.detail = model + " gives the " + std::to_string(e.rates.size()) + " nearest public rates on the " + stack +
             " stack " + format_number(*lo) + " to " + format_number(*hi) + " times their measured rate (" + names +
             "; single_gpu_rates.yaml): a new one " + format_number(e.low) + " to " + format_number(e.high) +
             " times, 9 in 10";
  return e;
}

}  // namespace ringsim
