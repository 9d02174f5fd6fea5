// Benchmark of goodput (issue 55): what the closed form, the interval search and the Monte Carlo add to a
// prediction, against the prediction itself (step fidelity, no band, in a child process), measured in one
// run. `plan` adds, per priced configuration, one scenario load and one estimate (the second column pair).
// Prints figures; asserts nothing. Usage: ringsim_bench_goodput [catalog_dir] [scenarios_dir]
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "execute/estimate/child_process.h"
#include "execute/goodput/goodput.h"
#include "execute/simgrid/training_sim.h"
#include "load/catalog.h"
#include "load/scenario.h"

using namespace ringsim;

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

void run_case(const std::string& catalog_dir, const std::string& file, const std::vector<std::string>& sets) {
  const Catalog catalog = Catalog::load(catalog_dir);
  std::vector<Override> o;
  for (const auto& s : sets) o.push_back(parse_override(s));
  auto t0 = std::chrono::steady_clock::now();
  const std::string out = run_in_child([&] {
    const Prediction p = predict(catalog, load_scenario(file, catalog, o), Fidelity::Step);
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.17g %.17g", p.time_to_train_s, p.iteration_time_s);
    return std::string(buf);
  });
  const double predict_s = seconds_since(t0);
  double work = 0, step = 0;
  std::sscanf(out.c_str(), "%lg %lg", &work, &step);
  t0 = std::chrono::steady_clock::now();
  const Scenario s = load_scenario(file, catalog, o);
  const double load_s = seconds_since(t0);
  t0 = std::chrono::steady_clock::now();
  const GoodputEstimate g = estimate_goodput(catalog, s, work, work, work, step);
  const double goodput_s = seconds_since(t0);
  std::string name = file.substr(file.find_last_of('/') + 1);
  for (const auto& set : sets) name += " " + set;
  std::printf("%-72s %6d  %8.3f  %8.4f  %6.1f %%  %8.4f  %6.1f %%  %6d  %9.1f\n", name.c_str(), s.cluster.total_gpus(),
              predict_s, goodput_s, 100 * goodput_s / predict_s, load_s + goodput_s,
              100 * (load_s + goodput_s) / predict_s, g.monte_carlo.runs, g.expected_interruptions);
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  const std::string catalog = argc > 1 ? argv[1] : Catalog::default_dir();
  const std::string dir = argc > 2 ? argv[2] : catalog + "/../scenarios";
  std::printf("%-72s %6s  %8s  %8s  %8s  %8s  %8s  %6s  %9s\n", "scenario", "GPUs", "predict", "goodput", "added",
              "plan+", "added", "runs", "interr.");
  run_case(catalog, dir + "/resnet50_imagenet_8x_nc24rs_v3.yaml", {});
  run_case(catalog, dir + "/llama3_8b_fsdp_2x_nd96isr_h100_v5.yaml", {});
  run_case(catalog, dir + "/llama3_70b_hsdp_2048x_nd96isr_h100_v5.yaml", {});
  run_case(catalog, dir + "/llama3_70b_hsdp_2048x_nd96isr_h100_v5.yaml", {"reliability.checkpoint_async=true"});
  run_case(catalog, dir + "/llama3_70b_hsdp_2048x_nd96isr_h100_v5.yaml",
           {"training.tokens=15T", "reliability.spare_nodes=8"});
  return 0;
}
