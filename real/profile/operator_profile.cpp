#include "profile/operator_profile.h"

#include <Eigen/Dense>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <tuple>

#include "load/catalog.h"
#include "load/overlay.h"
#include "load/scenario.h"
#include "load/units.h"
#include "report/output_file.h"
#include "schedule/operators.h"

namespace ringsim::real {

namespace {

using Clock = std::chrono::steady_clock;

double median_seconds(int repetitions, const std::function<void()>& run) {
  std::vector<double> t;
  for (int i = 0; i < repetitions; ++i) {
    const auto start = Clock::now();
    run();
    t.push_back(std::chrono::duration<double>(Clock::now() - start).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

// One matmul kernel on the host: `batch` products of (m x k) by (k x n) in FP32, on a slice of the rows (and
// products) when larger than the limit; the time scaled back by the share left out.
double time_matmul(const Kernel& k, const ProfileOptions& o) {
  const double share = std::min(1.0, o.max_flops / std::max(k.flops, 1.0));
  double batch = k.batch, m = k.m;
  if (share < 1) {  // drop whole products first, then rows
    batch = std::max(1.0, std::floor(k.batch * share));
    m = std::max(1.0, std::floor(k.m * std::min(1.0, share * k.batch / batch)));
  }
  const Eigen::MatrixXf a = Eigen::MatrixXf::Ones(static_cast<Eigen::Index>(m), static_cast<Eigen::Index>(k.k));
  const Eigen::MatrixXf b = Eigen::MatrixXf::Ones(static_cast<Eigen::Index>(k.k), static_cast<Eigen::Index>(k.n));
  Eigen::MatrixXf c(a.rows(), b.cols());
  const double t = median_seconds(o.repetitions, [&] {
    for (int i = 0; i < static_cast<int>(batch); ++i) c.noalias() = a * b;
  });
  return t * (k.m * k.batch) / (m * batch);
}

// A memory-bound kernel: read one buffer and write another of half its bytes each, up to the limit.
double time_memory(const Kernel& k, const ProfileOptions& o) {
  const double bytes = std::min(k.bytes / k.repeat, o.max_bytes);
  const auto n = static_cast<Eigen::Index>(std::max(1.0, bytes / 2 / sizeof(float)));
  const Eigen::VectorXf x = Eigen::VectorXf::Ones(n);
  Eigen::VectorXf y(n);
  const double t = median_seconds(o.repetitions, [&] { y = 1.0001f * x; });
  return t * (k.bytes / k.repeat) / (2.0 * n * sizeof(float)) * k.repeat;
}

struct Timer {
  const ProfileOptions& o;
  std::map<std::tuple<bool, double, double, double, double, double>, double> seen;  // distinct kernels
  double matmul_s = 0, memory_s = 0;
  int timed = 0;
  double operator()(const Kernel& k) {
    const auto key = std::make_tuple(k.matmul, k.m, k.n, k.k, k.batch, k.matmul ? 0 : k.bytes);
    auto it = seen.find(key);
    if (it == seen.end()) {
      it = seen.emplace(key, k.matmul ? time_matmul(k, o) : time_memory(k, o)).first;
      ++timed;
    }
    (k.matmul ? matmul_s : memory_s) += it->second;
    return it->second;
  }
};

}  // namespace

int run_profile(const ProfileOptions& o) {
  const Catalog catalog = Catalog::load(o.catalog_dir);
  std::vector<Override> overrides;
  for (const auto& s : o.sets) overrides.push_back(parse_override(s));
  const Scenario s = load_scenario(o.scenario, catalog, overrides);
  check_output_path(o.out_file);
  const ComputeSpec& cs = catalog.compute();
  const StackSpec& stack = cs.operators.stack_for(s.model.stack);
  const std::string& stack_name = stack.name;
  const GpuSpec& gpu = catalog.gpu(catalog.sku(s.cluster.sku).gpu);
  const StepKernels kernels = step_kernels(catalog.model(s.model.name), s.model.batch_per_gpu, s.model.tokens,
                                           s.model.precision, stack, cs.operators);
  const StepTime modelled = step_time(kernels, gpu_rates(cs, gpu, s.model.precision, stack));
  Timer time{o, {}, 0, 0, 0};
  double measured = 0;
  for (const auto& l : kernels.layers)
    for (const auto* ks : {&l.forward, &l.backward})
      for (const auto& k : *ks) measured += time(k);
  for (const auto& k : kernels.optimizer) measured += time(k);
  const double model_s = modelled.forward_s + modelled.backward_s + modelled.update_s;

  CatalogOverlay overlay;
  overlay.compute.operator_time_scale = measured / model_s;
  overlay.measured_on = s.cluster.sku;
  overlay.header.push_back("ringsim-real profile " + o.scenario + ": " + s.model.name + ", batch " +
                           std::to_string(s.model.batch_per_gpu) + ", " + s.model.precision + ", stack " + stack_name +
                           ", on the host backend as " + gpu.name);
  overlay.header.push_back("measured step " + format_time(measured) + " (matmuls " + format_time(time.matmul_s) +
                           ", memory-bound " + format_time(time.memory_s) + ", " + std::to_string(time.timed) +
                           " distinct kernels timed); the operator model's " + format_time(model_s));
  overlay.comment("compute.operator_time_scale",
                  "measured / modelled step for " + gpu.name + ", " + s.model.precision + ", " + stack_name);
  write_file_atomically(o.out_file, overlay.to_yaml());
  std::printf("ringsim-real profile: %s on %s (%s, %s stack)\n", s.model.name.c_str(), gpu.name.c_str(),
              s.model.precision.c_str(), stack_name.c_str());
  std::printf("  measured step   %s (%.1f samples/s): matmuls %s, memory-bound %s; %d distinct kernels timed\n",
              format_time(measured).c_str(), s.model.batch_per_gpu / measured, format_time(time.matmul_s).c_str(),
              format_time(time.memory_s).c_str(), time.timed);
  std::printf("  operator model  %s (%.1f samples/s)\n", format_time(model_s).c_str(), s.model.batch_per_gpu / model_s);
  std::printf("  wrote %s: compute.operator_time_scale %.4g\n", o.out_file.c_str(), measured / model_s);
  return 0;
}

}  // namespace ringsim::real
