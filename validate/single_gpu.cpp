#include "validate/single_gpu.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <memory>

#include "load/units.h"
#include "schedule/compute_evidence.h"

namespace ringsim {

namespace {

// The ranges a stack's free figures are fitted within (compute.yaml's [dispatch]: 5-25 us an eager op; a
// fused stack issues fewer, cheaper kernels). Element-wise kernels a normalisation: a CNN's ReLU and residual
// add, a few; a transformer block in eager PyTorch under autocast about 22 beside its matmuls, attention and
// norms (Hugging Face's BertLayer: casts of each linear's input, weight and bias, dropouts, residual adds,
// GELU, the heads' merge), 11 a normalisation.
constexpr double kKernelLow = 1e-6, kKernelHigh = 40e-6;
constexpr double kElementwiseHigh[2] = {6, 20};  // CNNs, transformers

double log_error(const Catalog& c, const SingleGpuRate& r, const StackSpec& st) {
  return std::log(operator_prediction(c, r, st) / r.samples_per_sec);
}

double cost(const Catalog& c, const StackSpec& st, const std::vector<const SingleGpuRate*>& rates) {
  double s = 0;
  for (const auto* r : rates) s += std::pow(log_error(c, *r, st), 2);
  return s;
}

// The minimum of f over [lo, hi] by golden-section search.
double golden(const std::function<double(double)>& f, double lo, double hi, int steps = 24) {
  const double g = (std::sqrt(5.0) - 1) / 2;
  double a = lo, b = hi, x1 = b - g * (b - a), x2 = a + g * (b - a), f1 = f(x1), f2 = f(x2);
  for (int i = 0; i < steps; ++i) {
    if (f1 < f2) {
      b = x2, x2 = x1, f2 = f1, x1 = b - g * (b - a), f1 = f(x1);
    } else {
      a = x1, x1 = x2, f1 = f2, x2 = a + g * (b - a), f2 = f(x2);
    }
  }
  return (a + b) / 2;
}

std::string case_name(const SingleGpuRate& r) {
  return r.gpu + " " + r.model + " b" + std::to_string(r.batch_per_gpu) +
         (r.tokens > 1 ? " s" + std::to_string(r.tokens) : "") + " " + r.precision + " " + r.stack;
}

}  // namespace

StackSpec fit_stack(const Catalog& c, const StackSpec& start, const std::vector<const SingleGpuRate*>& rates) {
  StackSpec st = start;
  if (rates.empty()) return st;
  bool has[2] = {false, false};  // rates of CNNs, of transformers: a family without any keeps its figure
  for (const auto* r : rates) has[c.model(r->model).transformer()] = true;
  // Coordinate descent: the kernels' cost and their count trade off, so rounds go on until they stop helping.
  double last = cost(c, st, rates);
  for (int round = 0; round < 30; ++round) {
    st.kernel_s = std::exp(golden(
        [&](double x) {
          StackSpec t = st;
          t.kernel_s = std::exp(x);
          return cost(c, t, rates);
        },
        std::log(kKernelLow), std::log(kKernelHigh)));
    for (const bool family : {false, true}) {
      if (!has[family]) continue;
      st.elementwise_kernels.of(family) = golden(
          [&](double x) {
            StackSpec t = st;
            t.elementwise_kernels.of(family) = x;
            return cost(c, t, rates);
          },
          0, kElementwiseHigh[family]);
    }
    const double now = cost(c, st, rates);
    if (last - now < 1e-6 * last) break;
    last = now;
  }
  return st;
}

namespace {
// Every rate of `rates` but `r`: what a held-out rate's band draws on.
std::vector<const SingleGpuRate*> others_than(const std::vector<SingleGpuRate>& rates, const SingleGpuRate& r) {
  std::vector<const SingleGpuRate*> out;
  for (const auto& o : rates)
    if (&o != &r) out.push_back(&o);
  return out;
}

// A rate's band as predict draws it (schedule/compute_evidence.h): the 90 % interval of its nearest other
// rates' leave-one-out ratios of predicted to measured, or the operator model's range in uncertain.yaml
// where they are too few.
std::pair<double, double> band_factors(const Catalog& c, const SingleGpuRate& r,
                                       const std::vector<SingleGpuRate>& rates,
                                       const std::map<const SingleGpuRate*, double>& loo) {
  const ComputeEvidence e =
      evidence_interval(c, r, others_than(rates, r), [&](const SingleGpuRate& o) { return std::exp(loo.at(&o)); });
  if (e.found) return {e.low, e.high};
  for (const auto& p : c.uncertain())
    if (p.figure == "compute.operator_time_scale") return {p.low, p.high};
  return {1, 1};
}

// The roofline's band as predict draws it for a rate of the default stack, each rate held out: how many of
// those rates fall inside, and the bands' median width.
std::string roofline_band_note(const Catalog& c, const std::vector<SingleGpuRate>& rates) {
  const std::string& stack = c.compute().operators.default_stack;
  const auto roofline = [&](const SingleGpuRate& o) { return roofline_prediction(c, o) / o.samples_per_sec; };
  int inside = 0, banded = 0, total = 0;
  std::vector<double> widths;
  for (const auto& r : rates) {
    if (r.stack != stack) continue;
    ++total;
    const ComputeEvidence e = evidence_interval(c, r, others_than(rates, r), roofline);
    if (!e.found) continue;
    const double low = std::min(e.low, 1.0), high = std::max(e.high, 1.0);  // the band holds the prediction
    ++banded;
    inside += low <= roofline(r) && roofline(r) <= high;
    widths.push_back(high / low);
  }
  std::sort(widths.begin(), widths.end());
  return "the roofline (" + stack +
         " stack), banded as predict bands it by its nearest other rates: " + std::to_string(inside) + " of " +
         std::to_string(banded) + " inside" +
         (widths.empty() ? "" : " at a median width of " + format_number(widths[widths.size() / 2])) + "; " +
         std::to_string(total - banded) + " of " + std::to_string(total) + " extrapolated (the catalog's range)";
}
}  // namespace

ValidationReport validate_single_gpu(const Catalog& catalog, const std::string& file) {
  const auto rates = catalog.read_single_gpu_rates(file);
  const OperatorSpec& ops = catalog.compute().operators;
  ValidationReport rep;
  rep.title = "single-GPU rates, operator model, leave-one-out: " + file;
  rep.x_label = "case";
  std::map<std::string, std::vector<const SingleGpuRate*>> by_stack;
  for (const auto& r : rates) by_stack[r.stack].push_back(&r);
  std::map<const SingleGpuRate*, double> loo;  // each rate's leave-one-out log error
  for (const auto& [name, members] : by_stack) {
    for (const auto* r : members) {
      std::vector<const SingleGpuRate*> others;
      for (const auto* o : members)
        if (o != r) others.push_back(o);
      loo[r] = log_error(catalog, *r, fit_stack(catalog, ops.stacks.at(name), others));
    }
    const StackSpec all = fit_stack(catalog, ops.stacks.at(name), members);
    double roof = 0, fitted = 0;
    for (const auto* r : members) {
      roof += std::abs(roofline_prediction(catalog, *r) / r->samples_per_sec - 1);
      fitted += std::abs(std::exp(log_error(catalog, *r, all)) - 1);
    }
    const double n = static_cast<double>(members.size());
    // A figure fitted to its range's end stands in for an effect the model lacks.
    const StackSpec& catalog_stack = ops.stacks.at(name);
    const bool at_end = all.kernel_s > 0.98 * kKernelHigh || all.kernel_s < 1.02 * kKernelLow ||
                        all.elementwise_kernels.cnn > 0.98 * kElementwiseHigh[0] ||
                        all.elementwise_kernels.transformer > 0.98 * kElementwiseHigh[1];
    auto figures = [](const StackSpec& st) {
      return format_number(st.kernel_s * 1e6) + " us, elementwise_kernels cnn " +
             format_number(st.elementwise_kernels.cnn) + ", transformer " +
             format_number(st.elementwise_kernels.transformer);
    };
    rep.notes.push_back("stack " + name + ": " + std::to_string(members.size()) +
                        " rates; fitted to all of them: kernel_s " + figures(all) + " (catalog " +
                        figures(catalog_stack) + "); MAPE fitted " + format_number(fitted / n * 100) +
                        " %, the roofline's " + format_number(roof / n * 100) + " %" +
                        (at_end ? "; a figure at its range's end: the model lacks an effect these rates show" : ""));
  }
  int index = 0;
  for (const auto& r : rates) {
    ValidationCase vc(case_name(r), "samples_per_sec", r.samples_per_sec * std::exp(loo[&r]), r.samples_per_sec);
    vc.group = r.stack;
    vc.x = ++index;
    const auto [low, high] = band_factors(catalog, r, rates, loo);
    // A prediction too high by a factor e leaves the measurement at prediction / e; the band holds the prediction.
    vc.low = std::min(vc.predicted, vc.predicted / high);
    vc.high = std::max(vc.predicted, vc.predicted / low);
    rep.cases.push_back(vc);
  }
  rep.notes.push_back(roofline_band_note(catalog, rates));
  return rep;
}

}  // namespace ringsim
