#include "validate/single_gpu.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <memory>

#include "load/input_error.h"
#include "load/units.h"
#include "load/yaml_reader.h"
#include "schedule/operators.h"

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

// The q-quantile of v (linear between order statistics).
double quantile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  const double at = q * (v.size() - 1);
  const auto i = static_cast<std::size_t>(at);
  return i + 1 < v.size() ? v[i] + (at - i) * (v[i + 1] - v[i]) : v.back();
}

std::string case_name(const SingleGpuRate& r) {
  return r.gpu + " " + r.model + " b" + std::to_string(r.batch_per_gpu) +
         (r.tokens > 1 ? " s" + std::to_string(r.tokens) : "") + " " + r.precision + " " + r.stack;
}

}  // namespace

std::vector<SingleGpuRate> read_single_gpu_rates(const Catalog& catalog, const std::string& file) {
  auto doc = std::make_shared<YamlDocument>(YamlDocument::load_file(file, "single-GPU rates"));
  YamlField root = YamlField::root(doc);
  root.require_map({"rates"});
  std::vector<SingleGpuRate> out;
  for (auto& f : root.get("rates").items()) {
    f.require_map({"gpu", "model", "batch_per_gpu", "precision", "seq_len", "gradient_accumulation", "stack",
                   "samples_per_sec", "source"});
    SingleGpuRate r;
    r.gpu = f.get("gpu").choice(catalog.gpu_names());
    r.model = f.get("model").choice(catalog.model_names());
    r.batch_per_gpu = static_cast<int>(f.get("batch_per_gpu").integer(1, 1 << 20));
    r.precision = f.get("precision").choice(catalog.compute().precision_order);
    r.stack = f.get("stack").choice(catalog.compute().operators.stack_order);
    const ModelSpec& m = catalog.model(r.model);
    r.tokens = m.default_tokens;
    if (auto s = f.find("seq_len")) r.tokens = static_cast<int>(s->integer(1, m.max_tokens));
    if (auto a = f.find("gradient_accumulation")) r.gradient_accumulation = static_cast<int>(a->integer(1, 1 << 20));
    r.samples_per_sec = f.get("samples_per_sec").positive_number();
    r.source = f.get("source").str();
    r.line = f.location().line;
    out.push_back(r);
  }
  return out;
}

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

ValidationReport validate_single_gpu(const Catalog& catalog, const std::string& file) {
  const auto rates = read_single_gpu_rates(catalog, file);
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
    std::vector<double> others;  // the stack's other leave-one-out errors: the band
    for (const auto* o : by_stack[r.stack])
      if (o != &r) others.push_back(loo[o]);
    ValidationCase vc(case_name(r), "samples_per_sec", r.samples_per_sec * std::exp(loo[&r]), r.samples_per_sec);
    vc.group = r.stack;
    vc.x = ++index;
    if (others.size() >= 2) {
      // The band: the prediction over the others' errors' 5th and 95th percentiles (a prediction too high by
      // a factor e leaves the measurement at prediction / e); it always holds the prediction.
      vc.low = std::min(vc.predicted, vc.predicted / std::exp(quantile(others, 0.95)));
      vc.high = std::max(vc.predicted, vc.predicted / std::exp(quantile(others, 0.05)));
    }
    rep.cases.push_back(vc);
  }
  return rep;
}

}  // namespace ringsim
