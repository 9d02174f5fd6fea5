// Benchmark of `predict` at scale: wall time, peak RSS and simulated events per second for ResNet-50 on
// NC24rs_v3 clusters (InfiniBand fat tree), each case in its own process (one SimGrid engine per process).
// Prints figures; asserts nothing. Usage: ringsim_bench [--quick] [catalog_dir] [scenario.yaml]
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "execute/estimate/child_process.h"
#include "execute/simgrid/training_sim.h"
#include "load/catalog.h"
#include "load/scenario.h"

using namespace ringsim;

namespace {

struct Case {
  int nodes;
  Fidelity fidelity;
  std::string strategy = "ring";
};

void run_case(const std::string& catalog_dir, const std::string& scenario_file, const Case& c,
              const std::vector<std::string>& sets = {}) {
  try {
    std::fputs(run_in_child([&] {
                 const auto t0 = std::chrono::steady_clock::now();
                 const Catalog catalog = Catalog::load(catalog_dir);
                 std::vector<Override> o = {parse_override("cluster.nodes=" + std::to_string(c.nodes)),
                                            parse_override("cluster.fabric_topology=fat_tree"),
                                            parse_override("communication.strategy=" + c.strategy)};
                 for (const auto& set : sets) o.push_back(parse_override(set));
                 const Scenario s = load_scenario(scenario_file, catalog, o);
                 const Prediction p = predict(catalog, s, c.fidelity);
                 const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
                 rusage ru{};
                 getrusage(RUSAGE_SELF, &ru);
                 const double events = static_cast<double>(p.simulated_activities + p.represented_transfers);
                 char line[256];
                 std::snprintf(line, sizeof line, "%7d  %5s %5s  %9.3f  %8.1f  %12lld  %14lld  %12.3g  %10.1f\n",
                               p.gpus, std::string(to_string(c.fidelity)).c_str(), c.strategy.c_str(), wall,
                               ru.ru_maxrss / 1024.0, static_cast<long long>(p.simulated_activities),
                               static_cast<long long>(p.represented_transfers), events / wall,
                               p.iteration_time_s * 1e3);
                 return std::string(line);
               }).c_str(),
               stdout);
  } catch (const std::exception& e) {
    std::printf("case with %d nodes failed: %s\n", c.nodes, e.what());
  }
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  bool quick = false;
  std::vector<std::string> rest;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--quick") == 0)
      quick = true;
    else
      rest.push_back(argv[i]);
  }
  const std::string catalog_dir = rest.size() > 0 ? rest[0] : Catalog::default_dir();
  const std::string scenario =
      rest.size() > 1 ? rest[1] : catalog_dir + "/../scenarios/resnet50_imagenet_8x_nc24rs_v3.yaml";
  std::printf("ResNet-50, batch 64, NC24rs_v3 x N, InfiniBand fat tree, ring over NCCL, one iteration\n");
  const char* header =
      "   GPUs  fid.  algo.   wall (s)  RSS (MiB)  SimGrid acts  chunk transfers  events/s  iter (ms)\n";
  std::printf("%s", header);
  // Nodes of 4 GPUs: 16 and 64 GPUs in both fidelities, 256 GPUs in both (flow: the slow, exact reference),
  // 1,024 and 16,384 GPUs in the step fidelity. --quick skips the two long ones.
  std::vector<Case> cases = {{4, Fidelity::Flow},  {4, Fidelity::Step},  {16, Fidelity::Flow},  {16, Fidelity::Step},
                             {64, Fidelity::Flow}, {64, Fidelity::Step}, {256, Fidelity::Step}, {4096, Fidelity::Step}};
  if (quick)
    cases.erase(std::remove_if(
                    cases.begin(), cases.end(),
                    [](const Case& c) { return (c.nodes == 64 && c.fidelity == Fidelity::Flow) || c.nodes == 4096; }),
                cases.end());
  for (const Case& c : cases) run_case(catalog_dir, scenario, c);
  // Today's fleet (issue 29): GPT-2 XL in bf16 under PyTorch DDP on ND96isr_H100_v5 (8 H100, a 400 Gb/s NIC
  // each), ring, NCCL's tree and auto (NCCL's tuning model per message). --quick keeps the 128-GPU cases.
  const std::string h100 = catalog_dir + "/../scenarios/bert_large_bf16_plan.yaml";
  const std::vector<std::string> gpt2 = {"cluster.sku=ND96isr_H100_v5",
                                         "model.name=gpt2_xl",
                                         "model.seq_len=1024",
                                         "model.batch_per_gpu=8",
                                         "cluster.fabric_topology=rail_optimized",
                                         "communication.framework=pytorch_ddp"};
  std::printf(
      "\nGPT-2 XL, seq 1024, batch 8, bf16, DDP, ND96isr_H100_v5 x N, rail-optimised InfiniBand fat tree, one "
      "iteration\n%s",
      header);
  std::vector<Case> fleet = {{16, Fidelity::Step, "ring"},   {16, Fidelity::Step, "tree"},
                             {128, Fidelity::Step, "ring"},  {128, Fidelity::Step, "tree"},
                             {2048, Fidelity::Step, "ring"}, {2048, Fidelity::Step, "hierarchical"},
                             {2048, Fidelity::Step, "tree"}, {2048, Fidelity::Step, "auto"}};
  if (quick) fleet.resize(2);
  for (const Case& c : fleet) run_case(catalog_dir, h100, c, gpt2);
  return 0;
}
