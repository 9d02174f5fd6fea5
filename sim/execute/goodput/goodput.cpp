// Goodput of a scenario: its checkpoint's size and cost from the model and the storage, the interruption
// rate from the reliability figures, the checkpoint interval (given, or the one of least expected wall
// time), and the expected wall time with its band and the Monte Carlo's spread.
#include "execute/goodput/goodput.h"

#include <algorithm>
#include <cmath>

#include "load/input_error.h"
#include "load/units.h"

namespace ringsim {

namespace {

constexpr double kDay = 86400;
constexpr int kRuns = 10000;
constexpr double kMostRunSteps = 3e7;  // interruptions the Monte Carlo draws at most, all runs together
constexpr std::uint64_t kSeed = 0x5eedf00dULL;

enum class Corner { Nominal, Optimistic, Pessimistic };

double pick(const RangedFigure& f, Corner c, bool higher_is_better = false) {
  if (c == Corner::Nominal) return f.value;
  return (c == Corner::Optimistic) != higher_is_better ? f.low : f.high;
}

// The storage's aggregate write rate for `writers` spread over `nodes` nodes, and what limits it.
std::pair<double, std::string> write_rate(const Catalog& catalog, const Scenario& s, int writers, int nodes) {
  const ReliabilityConfig& r = s.reliability;
  if (r.checkpoint_write_bandwidth > 0) return {r.checkpoint_write_bandwidth, "reliability.checkpoint_write_bandwidth"};
  const StorageBackendSpec& b = *catalog.find_storage_backend(r.checkpoint_storage);
  const double units = b.scaling == StorageScaling::PerNode     ? nodes
                       : b.scaling == StorageScaling::PerServer ? b.default_servers
                                                                : 1;
  std::pair<double, std::string> best{b.write_bandwidth * units, r.checkpoint_storage + "'s write bandwidth"};
  if (b.writer_bandwidth > 0 && b.writer_bandwidth * writers < best.first)
    best = {b.writer_bandwidth * writers, "each writer's rate to " + r.checkpoint_storage};
  const double nic = catalog.sku(s.cluster.sku).ethernet_bandwidth * nodes;
  if (b.kind == StorageKind::Network && nic > 0 && nic < best.first)
    best = {nic, "the writing nodes' Ethernet (" + std::to_string(nodes) + " x " + format_bandwidth(nic / nodes) + ")"};
  return best;
}

}  // namespace

CheckpointCost checkpoint_cost(const Catalog& catalog, const Scenario& s, double host_copy_fraction) {
  const ModelSpec& model = catalog.model(s.model.name);
  const ComputeSpec& cs = catalog.compute();
  const OptimizerSpec& opt = cs.operators.optimizers.at(model.transformer() ? "transformer" : "cnn");
  CheckpointCost c;
  c.bytes = static_cast<double>(model.total_params) * (cs.memory.master_bytes_per_param + opt.state_bytes_per_param);
  c.writers = state_shards(s);  // each shard once; replicated state: rank 0 alone
  c.writer_bytes = c.bytes / c.writers;
  const int nodes = std::max(1, (c.writers + s.cluster.gpus_per_node - 1) / s.cluster.gpus_per_node);
  std::tie(c.write_bandwidth, c.limit) = write_rate(catalog, s, c.writers, nodes);
  c.write_s = c.bytes / c.write_bandwidth;
  const SkuSpec& sku = catalog.sku(s.cluster.sku);
  const double link = catalog.link(catalog.layout(sku.layout).gpus.front().link).bandwidth;
  c.copy_s = c.writer_bytes / (link * host_copy_fraction);
  return c;
}

namespace {

// The interruption model at one corner of the figures' ranges.
InterruptionModel model_at(const Scenario& s, const CheckpointCost& cp, double work_s, Corner c) {
  const ReliabilityConfig& r = s.reliability;
  const double nodes = s.cluster.nodes;
  const double failures = pick(r.failures_per_1000_node_days, c) / 1000 * nodes / kDay;
  const double evictions = pick(r.evictions_per_node_day, c) * nodes / kDay;
  const double need_node = failures * pick(r.node_loss_fraction, c) + evictions;
  InterruptionModel m;
  m.work_s = work_s;
  m.rate = failures + evictions;
  m.restart_s = pick(r.restart_s, c);
  m.wait_s = pick(r.replacement_s, c);
  if (m.rate > 0) m.wait_probability = need_node / m.rate * no_spare_probability(r.spare_nodes, need_node, m.wait_s);
  m.stall_s = r.checkpoint_async ? cp.copy_s : cp.write_s;
  m.commit_s = r.checkpoint_async ? cp.write_s : 0;
  return m;
}

std::int64_t segments_for(double work_s, double interval_s) {
  return std::max<std::int64_t>(1, static_cast<std::int64_t>(std::floor(work_s / interval_s)));
}

// What would let a job that rarely completes an interval between interruptions finish.
std::string never_completes(const InterruptionModel& m, std::int64_t n, const Scenario& s) {
  return "an interruption comes every " + format_time(1 / m.rate) + " on " + std::to_string(s.cluster.nodes) +
         " nodes and " + format_time(m.work_s / static_cast<double>(n)) +
         " of training between checkpoints rarely completes: fewer nodes, faster checkpoints "
         "(reliability.checkpoint_async, checkpoint_storage)" +
         (s.cluster.low_priority ? ", dedicated VMs" : "") + " or spare nodes";
}

// A band end's expected wall time, held at kUnboundedWork x the work where it rarely completes.
double band_end(const InterruptionModel& m, std::int64_t n, GoodputEstimate& g) {
  const double wall = expected_wall_s(m, n);
  if (std::isfinite(wall) && wall < kUnboundedWork * m.work_s) return wall;
  g.band_unbounded = true;
  return kUnboundedWork * m.work_s;
}

}  // namespace

GoodputEstimate estimate_goodput(const Catalog& catalog, const Scenario& s, double work_s, double work_low_s,
                                 double work_high_s, double iteration_s, bool monte_carlo) {
  GoodputEstimate g;
  const ReliabilityConfig& r = s.reliability;
  if (!r.modelled || !(work_s > 0) || !std::isfinite(work_s)) return g;
  g.modelled = true;
  g.checkpoint = checkpoint_cost(catalog, s, r.host_copy_fraction.value);
  const InterruptionModel nominal = model_at(s, g.checkpoint, work_s, Corner::Nominal);
  const double shortest = std::max(g.checkpoint.write_s, iteration_s);
  if (r.checkpoint_interval_s && *r.checkpoint_interval_s < g.checkpoint.write_s)
    throw InputError(r.interval_at, "reliability.checkpoint_interval: " + format_time(*r.checkpoint_interval_s) +
                                        " is shorter than the checkpoint's write (" + format_bytes(g.checkpoint.bytes) +
                                        " at " + format_bandwidth(g.checkpoint.write_bandwidth) + ": " +
                                        format_time(g.checkpoint.write_s) + "); give at least that, or auto");
  g.interval_auto = !r.checkpoint_interval_s;
  const std::int64_t n =
      r.checkpoint_interval_s ? segments_for(work_s, *r.checkpoint_interval_s) : best_segments(nominal, shortest);
  g.checkpoint_interval_s =
      r.checkpoint_interval_s ? std::min(*r.checkpoint_interval_s, work_s) : work_s / static_cast<double>(n);
  g.mtbf_s = nominal.rate > 0 ? 1 / nominal.rate : 0;
  g.interruptions_per_day = nominal.rate * kDay;
  g.young_daly_interval_s = nominal.rate > 0 ? std::sqrt(2 * nominal.stall_s * g.mtbf_s) : 0;
  g.wall_time_to_train_s = band_end(nominal, n, g);
  g.completes = !g.band_unbounded;
  g.band_unbounded = false;
  if (!g.completes) g.advice = never_completes(nominal, n, s);
  g.ettr = work_s / g.wall_time_to_train_s;
  g.expected_interruptions = nominal.rate * g.wall_time_to_train_s;
  // The band: the figures' ends (the interval as chosen), with and without the time to train's band.
  for (Corner c : {Corner::Optimistic, Corner::Pessimistic}) {
    const CheckpointCost cp = checkpoint_cost(catalog, s, pick(r.host_copy_fraction, c, true));
    const double ettr = work_s / band_end(model_at(s, cp, work_s, c), n, g);
    const double work = c == Corner::Optimistic ? work_low_s : work_high_s;
    const double wall = band_end(model_at(s, cp, work, c), segments_for(work, g.checkpoint_interval_s), g);
    (c == Corner::Optimistic ? g.ettr_high : g.ettr_low) = ettr;
    (c == Corner::Optimistic ? g.wall_time_to_train_s_low : g.wall_time_to_train_s_high) = wall;
  }
  g.ettr_low = std::min(g.ettr_low, g.ettr);
  g.ettr_high = std::max(g.ettr_high, g.ettr);
  g.wall_time_to_train_s_low = std::min(g.wall_time_to_train_s_low, g.wall_time_to_train_s);
  g.wall_time_to_train_s_high = std::max(g.wall_time_to_train_s_high, g.wall_time_to_train_s);
  const double gpus = s.cluster.total_gpus();
  g.lost_gpu_hours = (g.wall_time_to_train_s - work_s) * gpus / 3600;
  g.spare_gpu_hours = r.spare_nodes * s.cluster.gpus_per_node * g.wall_time_to_train_s / 3600;
  // The Monte Carlo: as many runs as its bound on drawn interruptions allows, at most kRuns, at least 100.
  const double per_run = 2 + g.expected_interruptions * 2;
  const int runs = static_cast<int>(std::min(kMostRunSteps / per_run, static_cast<double>(kRuns)));
  if (monte_carlo && g.completes && runs >= 100) g.monte_carlo = simulate_runs(nominal, n, runs, kSeed);
  return g;
}

std::vector<std::vector<double>> ettr_by_nodes(const Catalog& catalog, const Scenario& s, double work_s,
                                               double iteration_s, const std::vector<int>& nodes,
                                               const std::vector<double>& intervals_s) {
  std::vector<std::vector<double>> rows;
  for (int n : nodes) {
    Scenario at = s;
    at.cluster.nodes = n;
    const double work = work_s * s.cluster.nodes / n;
    std::vector<double> row = {static_cast<double>(n)};
    for (double interval : intervals_s) {
      at.reliability.checkpoint_interval_s.reset();
      if (interval > 0) at.reliability.checkpoint_interval_s = interval;
      try {
        const GoodputEstimate g = estimate_goodput(catalog, at, work, work, work, iteration_s, false);
        row.push_back(g.completes ? g.ettr : 0);
      } catch (const InputError&) {  // an interval shorter than this size's checkpoint write
        row.push_back(std::nan(""));
      }
    }
    rows.push_back(row);
  }
  return rows;
}

}  // namespace ringsim
