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

namespace {

// The forward and backward time of one micro-batch on one GPU, and where it comes from.
double micro_batch_s(const Catalog& catalog, const Scenario& s, ComputeModel& cm) {
  const ModelSpec& model = catalog.model(s.model.name);
  const GpuSpec& gpu = catalog.gpu(catalog.sku(s.cluster.sku).gpu);
  const ComputeSpec& cs = catalog.compute();
  const int batch = s.model.batch_per_gpu;
  const std::string noun = model.sample_noun();
  if (s.model.images_per_sec_single_gpu) {
    cm.source = "scenario";
    cm.source_detail = "model.samples_per_sec_single_gpu = " + format_number(*s.model.images_per_sec_single_gpu) + " " +
                       noun + "/s" + (s.model.single_gpu_rate_from.empty() ? "" : " " + s.model.single_gpu_rate_from);
    return batch / *s.model.images_per_sec_single_gpu - cm.update_s;
  }
  if (const MeasuredRate* m =
          cs.find(gpu.name, model.name, batch, s.model.precision, s.model.tokens, model.default_tokens)) {
    cm.source = "measured";
    cm.source_detail = format_number(m->images_per_sec) + " " + noun + "/s for " + gpu.name + ", batch " +
                       std::to_string(batch) + ", " + m->precision + " (" + m->source + ")";
    return batch / m->images_per_sec - cm.update_s;
  }
  const PrecisionSpec& p = cs.precisions.at(s.model.precision);
  const double efficiency =
      (model.transformer() ? p.transformer_efficiency : p.cnn_efficiency) * cs.roofline_efficiency_scale;
  const double flops = model.forward_flops(s.model.tokens);
  const double b2f = cs.backward_to_forward;
  cm.source = "roofline";
  cm.source_detail = format_number(flops / 1e9) + " GFLOP forward per " + noun.substr(0, noun.size() - 1) + " x " +
                     format_number(1 + b2f) + " at " + format_number(efficiency * 100) + " % of " + gpu.name + "'s " +
                     format_flop_rate(gpu.peak_flops(p.peak)) + " " + p.peak + " (compute.yaml precisions, " +
                     p.source + ")";
  return batch * flops * (1 + b2f) / (gpu.peak_flops(p.peak) * efficiency);
}

}  // namespace

ComputeModel build_compute_model(const Catalog& catalog, const Scenario& s, bool stragglers) {
  const ModelSpec& model = catalog.model(s.model.name);
  const GpuSpec& gpu = catalog.gpu(catalog.sku(s.cluster.sku).gpu);
  const ComputeSpec& cs = catalog.compute();
  ComputeModel cm;

  for (std::size_t i = 0; i < model.tensors.size(); ++i) {
    const TensorSpec& t = model.tensors[i];
    const std::string name = layer_of(t.name);
    if (cm.layers.empty() || cm.layers.back().name != name) cm.layers.push_back({name, {}, 0, 0, 0});
    cm.layers.back().tensors.push_back(static_cast<int>(i));
    cm.layers.back().forward_flops += t.forward_flops(s.model.tokens);
  }
  const double flops = model.forward_flops(s.model.tokens);
  cm.update_s = optimizer_update_s(model, gpu);

  double fwd_bwd = micro_batch_s(catalog, s, cm);
  if (fwd_bwd <= 0)
    throw InputError({s.file, 0, 0, ""},
                     "the single-GPU rate leaves no time for forward and backward passes (" + cm.source_detail + ")");
  // Gradient accumulation: the step's first k - 1 micro-batches run before its last, whose backward pass
  // produces the gradients that travel; they count in the forward time.
  const int k = s.training.gradient_accumulation;
  cm.accumulation_s = (k - 1) * fwd_bwd;
  fwd_bwd *= k;
  cm.single_gpu_images_per_sec = static_cast<double>(k) * s.model.batch_per_gpu / (fwd_bwd + cm.update_s);
  if (s.cluster.total_gpus() > 1) fwd_bwd *= 1 + cs.reference_gpu_score * cs.gpu_to_gpu_cv;
  // GPUs only: processes on a host's CPU share its cores through the catalog's handoff figures instead.
  if (s.cluster.gpus_per_node > 1 && !gpu.cpu_process) cm.co_run_s = fwd_bwd * cs.co_run_slowdown;
  fwd_bwd += cm.co_run_s;
  if (stragglers) cm.straggler_s = fwd_bwd * cs.straggler_cv() * expected_max_of_normals(s.cluster.total_gpus());
  fwd_bwd += cm.straggler_s;
  const double last = fwd_bwd / k;  // the last micro-batch, as the others
  cm.accumulation_s = fwd_bwd - last;
  const double b2f = cs.backward_to_forward;
  cm.backward_s = last - last / (1 + b2f);
  cm.forward_s = fwd_bwd - cm.backward_s;
  for (auto& l : cm.layers) {
    const double share = flops > 0 ? l.forward_flops / flops : 1.0 / cm.layers.size();
    l.forward_s = cm.forward_s * share;
    l.backward_s = cm.backward_s * share;
  }
  return cm;
}

}  // namespace ringsim
