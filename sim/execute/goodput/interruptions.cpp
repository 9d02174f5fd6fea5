// The renewal model of goodput.h in closed form (Daly's expected segment time, arXiv-free: Daly 2006, FGCS
// 22(3), generalised to an overlapped write) and as a Monte Carlo over whole runs, which checks it.
#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "execute/goodput/goodput.h"

namespace ringsim {

namespace {

// 1 / (rate x the chance a restart completes before the next interruption): the expected time from an
// interruption to training again, restarts interrupted included, plus the interruption's own 1 / rate.
double restart_factor(const InterruptionModel& m) {
  const double survive = (1 - m.wait_probability) * std::exp(-m.rate * m.restart_s) +
                         m.wait_probability * std::exp(-m.rate * (m.restart_s + m.wait_s));
  return 1 / (m.rate * survive);
}

}  // namespace

// From a fresh start at a safe checkpoint, the next one is safe after L + W uninterrupted (the piece, its
// stall, its write); from a checkpoint just made safe, W of the next piece is already done and L remain.
// Completing x uninterrupted takes (e^(rate x) - 1) x restart_factor in expectation.
double expected_wall_s(const InterruptionModel& m, std::int64_t segments) {
  const double n = static_cast<double>(std::max<std::int64_t>(1, segments));
  const double L = m.work_s / n + m.stall_s, W = m.commit_s;
  if (m.rate <= 0) return n * L + W;
  if (m.rate * (L + W) > 700) return std::numeric_limits<double>::infinity();
  const double k = restart_factor(m);
  const double fresh = std::expm1(m.rate * (L + W)) * k;
  const double next = -std::expm1(-m.rate * L) * (k + fresh);
  return fresh + (n - 1) * next;
}

// The expected wall time is unimodal in the segment count (long pieces lose more to each interruption, many
// pieces stall more): a ternary search over the counts, then the neighbours.
std::int64_t best_segments(const InterruptionModel& m, double min_interval_s) {
  const double most = std::floor(m.work_s / std::max(min_interval_s, 1e-9));
  std::int64_t lo = 1, hi = static_cast<std::int64_t>(std::clamp(most, 1.0, 1e15));
  while (hi - lo > 2) {
    const std::int64_t a = lo + (hi - lo) / 3, b = hi - (hi - lo) / 3;
    if (expected_wall_s(m, a) > expected_wall_s(m, b))
      lo = a + 1;
    else
      hi = b;
  }
  std::int64_t best = lo;
  for (std::int64_t n = lo; n <= hi; ++n)
    if (expected_wall_s(m, n) < expected_wall_s(m, best)) best = n;
  return best;
}

double no_spare_probability(int spares, double rate, double hold_s) {
  const double a = rate * hold_s;
  double b = 1;
  for (int k = 1; k <= spares; ++k) b = a * b / (k + a * b);
  return b;
}

namespace {

// One run: interruptions drawn one after another; between them the run moves from checkpoint to
// checkpoint; each sends it back to the last safe one and restarts (a restart itself may be interrupted).
struct RunSimulator {
  const InterruptionModel& m;
  std::int64_t n;
  double L, W;
  std::mt19937_64 rng;
  double uniform() { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }
  double next_interruption() {
    return m.rate > 0 ? -std::log1p(-uniform()) / m.rate : std::numeric_limits<double>::infinity();
  }
  double restart(int& interruptions) {
    double t = 0;
    for (;;) {
      const double r = m.restart_s + (uniform() < m.wait_probability ? m.wait_s : 0);
      const double next = next_interruption();
      if (next >= r) return t + r;
      t += next;
      ++interruptions;
    }
  }
  double run(int& interruptions) {
    double t = 0;
    std::int64_t safe = 0;  // checkpoints safe
    bool fresh = true;      // just restarted (nothing of the next piece done)
    for (;;) {
      const double first = fresh ? L + W : L;
      const double to_end = first + static_cast<double>(n - safe - 1) * L;
      const double next = next_interruption();
      if (next >= to_end) return t + to_end;
      if (next >= first) safe += 1 + static_cast<std::int64_t>(std::floor((next - first) / L));
      t += next;
      ++interruptions;
      t += restart(interruptions);
      fresh = true;
    }
  }
};

}  // namespace

MonteCarloRuns simulate_runs(const InterruptionModel& m, std::int64_t segments, int runs, std::uint64_t seed) {
  const std::int64_t n = std::max<std::int64_t>(1, segments);
  RunSimulator sim{m, n, m.work_s / static_cast<double>(n) + m.stall_s, m.commit_s, std::mt19937_64(seed)};
  std::vector<double> wall;
  wall.reserve(static_cast<std::size_t>(std::max(runs, 1)));
  MonteCarloRuns out;
  out.runs = std::max(runs, 1);
  double interruptions = 0;
  for (int r = 0; r < out.runs; ++r) {
    int count = 0;
    wall.push_back(sim.run(count));
    interruptions += count;
  }
  double sum = 0;
  for (double w : wall) sum += w;
  out.mean_s = sum / out.runs;
  out.mean_interruptions = interruptions / out.runs;
  std::sort(wall.begin(), wall.end());
  out.p10_s = wall[static_cast<std::size_t>(0.1 * (out.runs - 1))];
  out.p90_s = wall[static_cast<std::size_t>(0.9 * (out.runs - 1))];
  for (int q = 0; q <= 100; ++q)
    out.percentiles_s.push_back(wall[static_cast<std::size_t>(q / 100.0 * (out.runs - 1))]);
  return out;
}

}  // namespace ringsim
