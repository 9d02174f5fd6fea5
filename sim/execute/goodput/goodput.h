// Goodput (issue 55): time to train with failures, evictions, restarts and checkpoints. The failure-free
// time to train (the prediction) is the work; interruptions strike as a Poisson process in wall time, each
// losing the work since the last completed checkpoint and costing a restart.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "load/catalog.h"
#include "load/scenario.h"

namespace ringsim {

// What one checkpoint is and costs: the parameters (FP32 masters) and optimizer state, written by one rank
// (replicated) or by each shard's rank (sharded, every shard once).
struct CheckpointCost {
  double bytes = 0;         // the whole checkpoint
  double writer_bytes = 0;  // what each writer writes (and an asynchronous one copies to host memory)
  int writers = 1;
  double write_s = 0;          // to storage
  double copy_s = 0;           // to host memory (the stall of an asynchronous checkpoint)
  double write_bandwidth = 0;  // bytes/s, all writers together
  std::string limit;           // what limits the write
};
CheckpointCost checkpoint_cost(const Catalog& catalog, const Scenario& s, double host_copy_fraction);

// The renewal model both the closed form and the Monte Carlo follow: the work runs in `segments` equal
// pieces, each followed by a checkpoint that stops training for `stall_s` and is safe `commit_s` later (the
// write overlapping the next piece: asynchronous; 0: synchronous); the job ends when the last one is safe.
struct InterruptionModel {
  double work_s = 0;            // failure-free time to train
  double rate = 0;              // interruptions per second of wall time (failures and evictions)
  double restart_s = 0;         // each interruption's, until training again
  double wait_s = 0;            // more, for an interruption that finds no spare node
  double wait_probability = 0;  // of the interruptions, those that wait
  double stall_s = 0, commit_s = 0;
};
double expected_wall_s(const InterruptionModel& m, std::int64_t segments);
// The segment count of the least expected wall time, each segment at least `min_interval_s` of work.
std::int64_t best_segments(const InterruptionModel& m, double min_interval_s);

struct MonteCarloRuns {
  int runs = 0;
  double mean_s = 0, p10_s = 0, p90_s = 0;
  double mean_interruptions = 0;
  std::vector<double> percentiles_s;  // the runs' wall times at 0, 1, ..., 100 % (the distribution's chart)
};
// `runs` whole runs, seeded (the same inputs give the same figures).
MonteCarloRuns simulate_runs(const InterruptionModel& m, std::int64_t segments, int runs, std::uint64_t seed);

// Erlang's loss formula: the chance that an interruption needing a node finds all `spares` in use, when such
// interruptions come at `rate` and each holds a spare for `hold_s` (until its node is replaced).
double no_spare_probability(int spares, double rate, double hold_s);

inline constexpr double kUnboundedWork = 1000;  // wall time beyond this many times the work: "never"

struct GoodputEstimate {
  bool modelled = false;
  CheckpointCost checkpoint;
  double checkpoint_interval_s = 0;  // work between checkpoints
  bool interval_auto = false;
  double young_daly_interval_s = 0;  // sqrt(2 x checkpoint cost x MTBF), for reference
  double mtbf_s = 0;                 // the job's: between interruptions
  double interruptions_per_day = 0;
  double ettr = 1, ettr_low = 1, ettr_high = 1;  // work / wall time
  // Whether the job completes at the catalog's figures: where an interval rarely completes between
  // interruptions, the wall time is held at kUnboundedWork x the work and `completes` is false (`advice` says
  // what would help); at the pessimistic figures only, the band's high end is held there.
  bool completes = true;
  bool band_unbounded = false;
  std::string advice;
  double expected_interruptions = 0;
  double wall_time_to_train_s = 0, wall_time_to_train_s_low = 0, wall_time_to_train_s_high = 0;
  double lost_gpu_hours = 0;   // the job's GPUs' hours without progress (wall - work)
  double spare_gpu_hours = 0;  // the spare nodes' GPUs, held for the wall time
  MonteCarloRuns monte_carlo;
};

// Goodput of `s` given its failure-free time to train and that time's band; `iteration_s`: an interval is
// at least one step. Throws InputError (the scenario's checkpoint_interval) for an interval shorter than the
// checkpoint's write. The Monte Carlo runs where its interruptions stay countable (runs 0 where not).
GoodputEstimate estimate_goodput(const Catalog& catalog, const Scenario& s, double work_s, double work_low_s,
                                 double work_high_s, double iteration_s, bool monte_carlo = true);

// ETTR against node count (`predict --plot`): `s` on each of `nodes`, its failure-free time to train scaled
// from `work_s` as 1 / nodes (perfect scaling: the chart is about failures, not communication), at each
// interval of `intervals_s` (0: auto). One row a node count: nodes, then an ETTR per interval (0: never).
std::vector<std::vector<double>> ettr_by_nodes(const Catalog& catalog, const Scenario& s, double work_s,
                                               double iteration_s, const std::vector<int>& nodes,
                                               const std::vector<double>& intervals_s);

}  // namespace ringsim
