#include "schedule/compute_model.h"

#include <cmath>
#include <cstdio>

#include "load/input_error.h"
#include "load/units.h"

namespace ringsim {

namespace {
std::string layer_of(const std::string& tensor) {
  const auto cut = tensor.find_last_of("./");
  return cut == std::string::npos ? tensor : tensor.substr(0, cut);
}
}  // namespace

double optimizer_update_s(const ModelSpec& model, const GpuSpec& gpu) {
  return 3.0 * model.gradient_bytes() / gpu.memory_bandwidth;
}

double normal_cdf(double x) { return 0.5 * std::erfc(-x / std::sqrt(2.0)); }

double normal_quantile(double p) {
  double lo = -10, hi = 10;
  for (int i = 0; i < 100; ++i) {
    const double mid = (lo + hi) / 2;
    (normal_cdf(mid) < p ? lo : hi) = mid;
  }
  return (lo + hi) / 2;
}

double expected_max_of_normals(int n) {
  if (n <= 1) return 0;
  // E[max] = integral of x n phi(x) Phi(x)^(n-1) dx, by the trapezoid rule over [-12, 12].
  constexpr int kSteps = 24000;
  constexpr double kLo = -12, kHi = 12, kH = (kHi - kLo) / kSteps;
  double sum = 0;
  for (int i = 0; i <= kSteps; ++i) {
    const double x = kLo + i * kH;
    const double phi = std::exp(-0.5 * x * x) / std::sqrt(2 * M_PI);
    const double cdf = normal_cdf(x);
    const double f = x * n * phi * std::pow(cdf, n - 1);
    sum += (i == 0 || i == kSteps) ? f / 2 : f;
  }
  return sum * kH;
}

ComputeModel build_compute_model(const Catalog& catalog, const Scenario& s, bool stragglers) {
  const ModelSpec& model = catalog.model(s.model.name);
  const GpuSpec& gpu = catalog.gpu(catalog.sku(s.cluster.sku).gpu);
  const ComputeSpec& cs = catalog.compute();
  const int batch = s.model.batch_per_gpu;
  ComputeModel cm;

  for (std::size_t i = 0; i < model.tensors.size(); ++i) {
    const TensorSpec& t = model.tensors[i];
    const std::string name = layer_of(t.name);
    if (cm.layers.empty() || cm.layers.back().name != name) cm.layers.push_back({name, {}, 0, 0, 0});
    cm.layers.back().tensors.push_back(static_cast<int>(i));
    cm.layers.back().forward_flops += t.forward_flops();
  }
  const double flops = model.forward_flops();
  cm.update_s = optimizer_update_s(model, gpu);

  double fwd_bwd = 0;
  const double b2f = cs.backward_to_forward;
  if (s.model.images_per_sec_single_gpu) {
    cm.source = "scenario";
    cm.source_detail = "model.images_per_sec_single_gpu = " + format_number(*s.model.images_per_sec_single_gpu) +
                       " images/s in " + s.file;
    fwd_bwd = batch / *s.model.images_per_sec_single_gpu - cm.update_s;
  } else if (const MeasuredRate* m = cs.find(gpu.name, model.name, batch)) {
    cm.source = "measured";
    cm.source_detail = format_number(m->images_per_sec) + " images/s for " + gpu.name + ", batch " +
                       std::to_string(batch) + " (" + m->source + ")";
    fwd_bwd = batch / m->images_per_sec - cm.update_s;
  } else {
    cm.source = "roofline";
    cm.source_detail = format_number(flops / 1e9) + " GFLOP forward per image x " + format_number(1 + b2f) + " at " +
                       format_number(cs.roofline_efficiency * 100) + " % of " + gpu.name + "'s " +
                       format_flop_rate(gpu.fp32_peak_flops) + " (compute.yaml roofline)";
    fwd_bwd = batch * flops * (1 + b2f) / (gpu.fp32_peak_flops * cs.roofline_efficiency);
  }
  if (fwd_bwd <= 0)
    throw InputError({s.file, 0, 0, ""},
                     "the single-GPU rate leaves no time for forward and backward passes (" + cm.source_detail + ")");
  cm.single_gpu_images_per_sec = batch / (fwd_bwd + cm.update_s);
  if (s.cluster.total_gpus() > 1) fwd_bwd *= 1 + cs.reference_gpu_score * cs.gpu_to_gpu_cv;
  if (stragglers) cm.straggler_s = fwd_bwd * cs.straggler_cv() * expected_max_of_normals(s.cluster.total_gpus());
  fwd_bwd += cm.straggler_s;
  cm.forward_s = fwd_bwd / (1 + b2f);
  cm.backward_s = fwd_bwd - cm.forward_s;
  for (auto& l : cm.layers) {
    const double share = flops > 0 ? l.forward_flops / flops : 1.0 / cm.layers.size();
    l.forward_s = cm.forward_s * share;
    l.backward_s = cm.backward_s * share;
  }
  return cm;
}

}  // namespace ringsim
