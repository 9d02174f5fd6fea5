// Goodput of a scenario: its checkpoint's size and cost from the model and the storage, the interruption
// rate from the reliability figures, the checkpoint interval (given, or the one of least expected wall
// time), and the expected wall time with its band and the Monte Carlo's spread.
#include "execute/goodput/goodput.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "load/input_error.h"
#include "load/units.h"

namespace ringsim {

namespace {

constexpr double kDay = 86400;
constexpr int kRuns = 10000;
constexpr double kMostRunSteps = 3e7;  // interruptions the Monte Carlo draws at most, all runs together
constexpr std::uint64_t kSeed = 0x5eedf00dULL;

constexpr int kBandDraws = 1000;  // the band's draws of the reliability figures

// One value of each reliability figure: the catalog's (or the scenario's), or a draw from their ranges.
struct Figures {
  double failures = 0, evictions = 0, node_loss = 0, restart = 0, wait = 0, host_copy = 0;
};

Figures nominal_figures(const ReliabilityConfig& r) {
  return {r.failures_per_1000_node_days.value,
          r.evictions_per_node_day.value,
          r.node_loss_fraction.value,
          r.restart_s.value,
          r.replacement_s.value,
          r.host_copy_fraction.value};
}

// Independent draws: rates and times log-uniform over their ranges (they span factors), fractions uniform.
Figures drawn_figures(const ReliabilityConfig& r, std::mt19937_64& rng) {
  auto uniform = [&] { return static_cast<double>(rng() >> 11) * 0x1.0p-53; };
  auto log_uniform = [&](const RangedFigure& f) {
    return f.low > 0 ? f.low * std::pow(f.high / f.low, uniform()) : f.low + (f.high - f.low) * uniform();
  };
  auto linear = [&](const RangedFigure& f) { return f.low + (f.high - f.low) * uniform(); };
  Figures d;
  d.failures = log_uniform(r.failures_per_1000_node_days);
  d.evictions = log_uniform(r.evictions_per_node_day);
  d.node_loss = linear(r.node_loss_fraction);
  d.restart = log_uniform(r.restart_s);
  d.wait = log_uniform(r.replacement_s);
  d.host_copy = linear(r.host_copy_fraction);
  return d;
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

// The interruption model at one value of the figures.
InterruptionModel model_at(const Scenario& s, const CheckpointCost& cp, double work_s, const Figures& f) {
  const ReliabilityConfig& r = s.reliability;
  const double nodes = s.cluster.nodes;
  const double failures = f.failures / 1000 * nodes / kDay;
  const double evictions = f.evictions * nodes / kDay;
  const double need_node = failures * f.node_loss + evictions;
  InterruptionModel m;
  m.work_s = work_s;
  m.rate = failures + evictions;
  m.restart_s = f.restart;
  m.wait_s = f.wait;
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

// The expected wall time, held at kUnboundedWork x the work (and flagged) where it rarely completes.
double band_end(const InterruptionModel& m, std::int64_t n, GoodputEstimate& g) {
  const double wall = expected_wall_s(m, n);
  if (std::isfinite(wall) && wall < kUnboundedWork * m.work_s) return wall;
  g.band_unbounded = true;
  return kUnboundedWork * m.work_s;
}

// The band: the ETTR's 5th and 95th percentiles over draws of the figures (the interval as chosen), and the
// wall time's from them and the time to train's band.
void set_band(const Catalog& catalog, const Scenario& s, double work_s, double work_low_s, double work_high_s,
              std::int64_t n, GoodputEstimate& g) {
  std::mt19937_64 rng(kSeed);
  const CheckpointCost nominal = checkpoint_cost(catalog, s, s.reliability.host_copy_fraction.value);
  std::vector<double> ettr;
  for (int k = 0; k < kBandDraws; ++k) {
    const Figures f = drawn_figures(s.reliability, rng);
    CheckpointCost cp = nominal;
    cp.copy_s = nominal.copy_s * s.reliability.host_copy_fraction.value / f.host_copy;
    const double wall = expected_wall_s(model_at(s, cp, work_s, f), n);
    ettr.push_back(std::isfinite(wall) && wall < kUnboundedWork * work_s ? work_s / wall : 0);
  }
  std::sort(ettr.begin(), ettr.end());
  g.ettr_low = std::min(ettr[static_cast<std::size_t>(0.05 * (kBandDraws - 1))], g.ettr);
  g.ettr_high = std::max(ettr[static_cast<std::size_t>(0.95 * (kBandDraws - 1))], g.ettr);
  g.band_unbounded = g.ettr_low <= 0;
  g.wall_time_to_train_s_low = std::min(work_low_s / g.ettr_high, g.wall_time_to_train_s);
  g.wall_time_to_train_s_high =
      g.band_unbounded ? kUnboundedWork * work_high_s : std::max(work_high_s / g.ettr_low, g.wall_time_to_train_s);
}

}  // namespace

GoodputEstimate estimate_goodput(const Catalog& catalog, const Scenario& s, double work_s, double work_low_s,
                                 double work_high_s, double iteration_s, bool monte_carlo) {
  GoodputEstimate g;
  const ReliabilityConfig& r = s.reliability;
  if (!r.modelled || !(work_s > 0) || !std::isfinite(work_s)) return g;
  g.modelled = true;
  g.checkpoint = checkpoint_cost(catalog, s, r.host_copy_fraction.value);
  const InterruptionModel nominal = model_at(s, g.checkpoint, work_s, nominal_figures(r));
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
  set_band(catalog, s, work_s, work_low_s, work_high_s, n, g);
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
