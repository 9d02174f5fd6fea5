#include "schedule/compute_model.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "load/input_error.h"
#include "load/units.h"
#include "schedule/operators.h"

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

// The operator model's micro-batch (schedule/operators.h), its optimizer step and its layers' shares of the
// forward and backward passes, all times the catalog's operator_time_scale.
double operator_micro_batch_s(const Catalog& catalog, const Scenario& s, ComputeModel& cm) {
  const ComputeSpec& cs = catalog.compute();
  const StackSpec& stack = cs.operators.stacks.at(s.model.stack);
  const GpuSpec& gpu = catalog.gpu(catalog.sku(s.cluster.sku).gpu);
  const StepKernels kernels = step_kernels(catalog.model(s.model.name), s.model.batch_per_gpu, s.model.tokens,
                                           s.model.precision, stack, cs.operators);
  const StepTime t = step_time(kernels, gpu_rates(cs, gpu, s.model.precision, stack));
  const double scale = cs.operator_time_scale;
  cm.update_s = t.update_s * scale;
  cm.backward_share = t.backward_s / (t.forward_s + t.backward_s);
  for (std::size_t i = 0; i < kernels.layers.size(); ++i)
    cm.operator_layer_s[kernels.layers[i].layer] = t.layer_forward_s[i] + t.layer_backward_s[i];
  cm.source = "operators";
  const bool measured = std::count(stack.evidence_gpus.begin(), stack.evidence_gpus.end(), gpu.name) > 0;
  cm.source_detail = "operator model, " + stack.name + " stack: " + std::to_string(t.kernels) + " kernels a step on " +
                     gpu.name + " (compute.yaml operators; evidence " + stack.evidence + ")" +
                     (measured ? "" : "; no single-GPU rate of " + gpu.name + " on this stack: extrapolated");
  return (t.forward_s + t.backward_s) * scale;
}

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
  // The measured rows were taken on the catalog's default stack: another stack's run is the operator model's.
  const bool rows_apply = s.model.stack.empty() || s.model.stack == cs.operators.default_stack;
  if (const MeasuredRate* m =
          rows_apply ? cs.find(gpu.name, model.name, batch, s.model.precision, s.model.tokens, model.default_tokens)
                     : nullptr) {
    cm.source = "measured";
    cm.source_detail = format_number(m->images_per_sec) + " " + noun + "/s for " + gpu.name + ", batch " +
                       std::to_string(batch) + ", " + m->precision + " (" + m->source + ")";
    return batch / m->images_per_sec - cm.update_s;
  }
  if (!s.model.stack.empty()) return operator_micro_batch_s(catalog, s, cm);
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

// Activation checkpointing's recomputation in the backward pass: full repeats every layer's forward pass;
// selective the attention's score products (QK^T and the scores times V), which flash attention's backward
// pass recomputes anyway. A measured single-GPU rate (the scenario's) was taken as the user runs it.
void add_recomputation(const ModelSpec& model, const Scenario& s, const ComputeSpec& cs, double& fwd_bwd,
                       ComputeModel& cm) {
  const std::string& mode = s.model.activation_checkpointing;
  if (mode == "none" || cm.source == "scenario") return;
  const bool flash = cs.operators.stack_for(s.model.stack).flash_attention;
  const auto& a = model.architecture;
  const double t = s.model.tokens, flops = model.forward_flops(s.model.tokens);
  const double share = mode == "full" ? 1 : flash ? 0 : a.layers * 4 * t * t * a.hidden / flops;
  const double forward = cm.backward_share > 0 ? 1 - cm.backward_share : 1 / (1 + cs.backward_to_forward);
  const double extra = fwd_bwd * forward * share;
  cm.backward_share = (fwd_bwd * (1 - forward) + extra) / (fwd_bwd + extra);
  cm.recompute_s = extra;
  fwd_bwd += extra;
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
  cm.model_flops_per_sample = 3 * model.forward_flops(s.model.tokens);
  // MFU's denominator: the peak of the precision's matmuls (fp8's FP8 peak, as LLM Foundry's tables count it)
  cm.peak_flops = gpu.peak_flops(cs.precisions.at(s.model.precision).linear_peak());
  cm.memory = estimate_memory(catalog, s);

  double fwd_bwd = micro_batch_s(catalog, s, cm);
  cm.update_s /= state_shards(s);  // sharded states: each GPU steps its shard
  add_recomputation(model, s, catalog.compute(), fwd_bwd, cm);
  if (!s.model.images_per_sec_single_gpu && !s.model.single_gpu_rates.empty())
    cm.source_detail += "; model.samples_per_sec_single_gpu has no rate for " + gpu.name;
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
  cm.backward_s = cm.backward_share > 0 ? last * cm.backward_share : last - last / (1 + b2f);
  cm.forward_s = fwd_bwd - cm.backward_s;
  double operator_total = 0;
  for (const auto& [name, sec] : cm.operator_layer_s) operator_total += sec;
  for (auto& l : cm.layers) {
    double share = flops > 0 ? l.forward_flops / flops : 1.0 / cm.layers.size();
    if (operator_total > 0) {  // the operator model's own split over layers
      const auto it = cm.operator_layer_s.find(l.name);
      share = it == cm.operator_layer_s.end() ? 0 : it->second / operator_total;
    }
    l.forward_s = cm.forward_s * share;
    l.backward_s = cm.backward_s * share;
  }
  return cm;
}

}  // namespace ringsim
