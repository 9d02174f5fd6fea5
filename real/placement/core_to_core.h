// Which cores a machine's processes run on, as far as it changes what they measure. A virtual machine's
// vCPUs can move between the host's cores with no sign to the guest: from cores of one L3 cache, for
// spells, to cores that share none, where exchanges between processes run several times slower
// (real/HISTORY.md). A measurement taken in one placement predicts nothing about the other, and one taken
// across a move measures neither.
//
// The core-to-core probe tells them apart: the time a cache line takes to go from one CPU to another (half
// a round trip between two threads pinned there), several times longer between cores that share no cache.
// `probed` waits for the CPUs to be as near as they have been before it measures, brackets the
// measurement by two probes, and takes it again when the one after shows them moved.
#pragma once

#include <mpi.h>

#include <functional>
#include <limits>
#include <nlohmann/json.hpp>

namespace ringsim::real {

// A probe more than this many times the nearest one marks a different placement: the two placements'
// probes differ by far more, probes within one placement by less (real/HISTORY.md).
inline constexpr double kFartherThanNearest = 2.0;

class CoreToCoreProbe {
 public:
  // Collective over `comm`. The CPUs are on rank 0's host: the one rank 0 runs on and the first other one
  // that a rank of that host runs on, else the lowest other CPU of the machine. Without a second CPU, or
  // where threads may not be pinned, the probe is disabled and measures -1. `nearest_ns` (> 0): the
  // nearest probe earlier launches saw, so that this one waits for it from its first sample.
  explicit CoreToCoreProbe(MPI_Comm comm, double nearest_ns = 0);
  bool enabled() const { return cpus_[1] >= 0; }
  int cpu(int i) const { return cpus_[i]; }
  // Collective: every rank waits, yielding its CPU (so that the probe's two threads have the CPUs), while
  // rank 0 hands a cache line back and forth between the two CPUs; all ranks return the one-way time in ns,
  // the median of 9 groups of 64 round trips (a group that another process interrupted is an outlier).
  double measure();
  // The lowest probe so far, in ns (infinity before the first).
  double nearest() const { return nearest_; }
  // Whether `ns` is within kFartherThanNearest times the nearest so far.
  bool near(double ns) const { return ns <= kFartherThanNearest * nearest_; }
  // Collective: probes until the CPUs are near (asleep 20 ms between probes) or this launch has waited
  // `wait_budget_s` in all (the placement has then changed for longer than a spell, or for good);
  // returns the last probe.
  double measure_when_near();
  double waited_s() const { return waited_s_; }
  // A file's "core_to_core" block: the CPUs, the nearest probe, the factor above it at which a sample was
  // taken again, and the seconds waited (calibrate/placement.h reads it).
  nlohmann::ordered_json to_json() const;

 private:
  MPI_Comm comm_;
  int rank_ = 0;
  int cpus_[2] = {-1, -1};
  double nearest_ = std::numeric_limits<double>::infinity();
  double waited_s_ = 0;
  static constexpr double wait_budget_s = 60;
};

// A measurement with the probes taken just before and just after it.
struct ProbedSample {
  double seconds = 0;
  double before_ns = -1, after_ns = -1;  // -1: not probed
  int retakes = 0;                       // measurements taken again for the probes
};

// Runs `measure` (collective; it returns seconds) between two probes, the first once the CPUs are near
// (measure_when_near: the other placement comes in spells that pass), and runs it again, up to
// `max_retakes` times, while a probe is more than kFartherThanNearest times the nearest so far. The last
// one is kept whatever its probes say: they are in the sample, for whoever reads it.
// Without a probe (null or disabled), `measure` once.
ProbedSample probed(CoreToCoreProbe* probe, const std::function<double()>& measure, int max_retakes = 3);

// A sample's probes in its JSON object: "core_to_core_ns": [before, after] and "retakes".
void put_probes(nlohmann::ordered_json& into, const ProbedSample& sample);

// Runs the calling thread on `cpu` alone (Linux affinity); false where the system refuses.
bool pin_to(int cpu);

// Waits for `request` to complete, yielding the CPU between tests (MPI's blocking waits poll it). Not
// asleep: ranks asleep around every probe let the vCPUs halt, which slows the exchanges taken after the
// probes; yielding does not (real/HISTORY.md).
void wait_yielding(MPI_Request& request);

}  // namespace ringsim::real
