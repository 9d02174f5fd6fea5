// Horovod's background loop for one training iteration, written once for every place that runs it: the
// simulation (SimGrid actors, both fidelities), ringsim-real train on MPI, CUDA and NCCL, and its
// emulation under SMPI. Every cycle the gradients that all ranks have ready are negotiated, packed into
// fusion buffers (fusion.h) and their collectives run in order, overlapping the rest of the backward
// pass, until every gradient has been planned.
#pragma once

#include "collective/fusion.h"

namespace ringsim::collective {

// Where the loop runs: its clock, how ranks agree on what is ready, and how it waits between cycles.
class CycleRuntime {
 public:
  virtual ~CycleRuntime() = default;
  virtual double now() = 0;
  // Before the negotiation at `now`: the gradients every rank has ready are announced to the planner.
  // (The simulation's ranks announce as they compute; a real run agrees with an allreduce of flags.)
  virtual void agree_ready(FusionPlanner& planner, double now) = 0;
  // After the negotiation at `tick` (`idle`: it planned nothing): wait for the next one, a cycle later
  // (cycle 0: as soon as another gradient is ready).
  virtual void wait_next_cycle(FusionPlanner& planner, double tick, double cycle_s, bool idle) = 0;
};

// What runs a fusion buffer's collective: at once, or started beside others (several in flight).
class BufferRunner {
 public:
  virtual ~BufferRunner() = default;
  virtual void start(const FusionBuffer& buffer) = 0;
  virtual void finish() = 0;  // waits for every buffer started
};

// Negotiates every `cycle_s` seconds until the planner has planned every tensor, then waits for the
// buffers' collectives to end.
void run_horovod_cycles(FusionPlanner& planner, CycleRuntime& runtime, BufferRunner& runner, double cycle_s);

}  // namespace ringsim::collective
