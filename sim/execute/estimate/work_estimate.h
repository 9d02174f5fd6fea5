// What a simulation or an emulation will cost, estimated from the scenario before anything runs, so that
// a scenario too large for the chosen fidelity is refused with a suggestion instead of running for hours
// or exhausting memory.
#pragma once

#include <cstdint>
#include <string>

#include "execute/prediction.h"
#include "load/catalog.h"
#include "load/scenario.h"

namespace ringsim {

struct WorkEstimate {
  std::int64_t ranks = 0;           // workers plus parameter servers
  std::int64_t graph_elements = 0;  // devices plus links of the topology graph
  int fusion_buffers = 0;           // collectives per iteration (an estimate: fusion depends on timing)
  // Collectives the step fidelity evaluates in the whole run: it evaluates each buffer size once
  // (TrainingRun::step_cost), so DDP's fixed buckets count by distinct size; Horovod's fused buffers,
  // whose sizes follow the timing, each count.
  int distinct_buffers = 0;
  double transfers_per_buffer = 0;  // messages of one collective, every member's sends summed
  // The step fidelity's work: the sends of each distinct step (a run of equal steps is evaluated once), of
  // each node class's first node and the other nodes' to other nodes where the collective has classes.
  double step_transfers_per_buffer = 0;
  double transfers_per_iteration = 0;  // what the flow fidelity and the emulation run one by one
  // Negotiation cycles that do work: the simulation skips idle ones; the emulation runs every cycle's
  // allreduce of readiness flags (its transfers are in transfers_per_iteration).
  double negotiations_per_iteration = 0;
  int iterations = 1;       // iterations `predict` simulates (more with a storage section)
  double band_seconds = 0;  // of `seconds`, the band's runs (predict without --no-band)
  int band_runs = 0;
  double memory_bytes = 0;  // peak, for the fidelity asked
  double seconds = 0;       // rough wall time on one core of a 2020s server
};

WorkEstimate estimate_work(const Catalog& catalog, const Scenario& scenario, Fidelity fidelity);

// Above this many transfers per iteration the flow fidelity and the emulation are refused (unless the
// caller raises the limit): about 5 min of flow simulation, 25 min of emulation.
constexpr double kDefaultMaxTransfers = 5e7;

// Above this many estimated seconds of wall time any run is refused (unless the caller raises the limit):
// the step fidelity's cost grows with ranks x fusion buffers, which no transfer count shows.
constexpr double kDefaultMaxSeconds = 900;

struct WorkLimits {
  double max_transfers = kDefaultMaxTransfers;  // flow and emulated, per iteration
  double max_seconds = kDefaultMaxSeconds;      // every fidelity (emulated: per iteration)
};

// Throws InputError when the estimate exceeds a limit or this machine's physical memory; the message
// gives the estimate and what to do instead. `what` names the command.
void check_work_limits(const WorkEstimate& e, Fidelity fidelity, const WorkLimits& limits, const std::string& what);

// "2.3e7 transfers per iteration (28 fusion buffers x 823,296), about 2.3 GB, about 3 min" for `check`.
std::string describe(const WorkEstimate& e, Fidelity fidelity);

}  // namespace ringsim
