// One synchronous data-parallel training iteration on SimGrid: per-layer compute on every rank, gradients
// announced in backward order, a Horovod-style coordinator that negotiates every cycle and runs one
// collective per fusion buffer, and the optimizer step. `Fidelity::Flow` runs every transfer of every
// member as a SimGrid communication; `Fidelity::Step` evaluates each collective step analytically
// (step_model.h) and runs it as one SimGrid activity, with one representative rank's compute (all ranks
// are identical).
//
// SimGrid allows one engine per process: call predict() at most once per process.
#pragma once

#include <map>
#include <memory>
#include <string>

#include "collective/collective.h"
#include "execute/prediction.h"
#include "graph/topology_graph.h"
#include "load/catalog.h"
#include "load/scenario.h"

namespace ringsim {

// GPU count up to which `predict` defaults to Fidelity::Flow.
constexpr int kFlowFidelityMaxGpus = 64;
Fidelity default_fidelity(const Scenario& s);

// The cluster the simulation builds: the scenario's nodes plus dedicated parameter-server nodes.
ClusterShape simulated_shape(const Scenario& s);

Prediction predict(const Catalog& catalog, const Scenario& scenario, Fidelity fidelity);
namespace training_detail {
class TrainingRun;
}

// predict() in two steps: the run's cluster, routes and collectives' layout made first, at the catalog's
// figures (into the SharedLayouts alive, execute/buffer_collective.h), so that a band's children forked
// after share them; then run() (once: it starts this process's engine).
class PreparedPrediction {
 public:
  PreparedPrediction(const Catalog& catalog, const Scenario& scenario, Fidelity fidelity);
  ~PreparedPrediction();
  PreparedPrediction(const PreparedPrediction&) = delete;
  PreparedPrediction& operator=(const PreparedPrediction&) = delete;
  Prediction run();
  const Scenario& scenario() const { return scenario_; }
  Fidelity fidelity() const { return fidelity_; }

 private:
  Scenario scenario_;
  Fidelity fidelity_;
  std::unique_ptr<training_detail::TrainingRun> run_;
};

// predict()'s images/s and time to train alone, for a process about to end with _exit (a band's sample in
// its child): no link loads, and the run's memory is left to the exit rather than freed.
std::pair<double, double> predict_rates_and_exit(const Catalog& catalog, const Scenario& scenario, Fidelity fidelity);

// Makes the layout predict() would run the scenario's collectives on, at the catalog's figures, for the
// SharedLayouts alive (execute/buffer_collective.h) to give the predictions made after it. No engine runs.
void share_layout(const Catalog& catalog, const Scenario& scenario);

// One collective alone on the scenario's cluster and library (no compute, no fusion, no per-call
// overhead): its duration and the bytes it put on each link, by link name. For tests and benchmarks;
// members are the scenario's GPU ranks (then its parameter servers). Same one-engine-per-process rule.
struct CollectiveTiming {
  double duration_s = 0;
  std::map<std::string, double> edge_bytes;
};
CollectiveTiming simulate_collective(const Catalog& catalog, const Scenario& scenario, const collective::Collective& c,
                                     Fidelity fidelity);
// The allreduce the scenario runs for one fusion buffer of `bytes` (its strategy, library, rings and
// channels), alone on its cluster, as nccl-tests' all_reduce_perf times one. Not for parameter servers.
CollectiveTiming simulate_allreduce(const Catalog& catalog, const Scenario& scenario, std::uint64_t bytes,
                                    int element_bytes, Fidelity fidelity);

}  // namespace ringsim
