// `ringsim emulate SCENARIO`: the real `ringsim-real` program (its SMPI build) on the scenario's cluster
// simulated by SimGrid SMPI. Writes the emulation spec, the cost profile and the host file into a
// temporary directory, runs smpirun with the platform plug-in and deliberate settings (CM02 network
// model as `predict`, no measured computation, Open MPI's collective selection), and leaves the result
// JSON (`train`) or the bench rows (`--bench`) where asked.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "execute/estimate/work_estimate.h"

namespace ringsim {

struct EmulateOptions {
  std::string scenario;
  std::vector<std::string> sets;
  std::optional<std::string> calibration;
  // train
  int iterations = 2;
  int warmup = 1;
  std::optional<std::string> json_file, trace_file;
  // --bench: the nccl-tests-style sweep over the scenario's GPU ranks
  bool bench = false;
  std::string min_bytes = "1M", max_bytes = "256M", op = "allreduce", algorithm = "ring";
  double factor = 2;
  int bench_iters = 1, bench_warmup = 0;
  bool bench_baseline = false;          // also time SMPI's own MPI_Allreduce (private temporaries: memory-hungry)
  std::optional<std::string> keep_dir;  // keep the generated files here
  WorkLimits limits;                    // train: refuse above them per iteration
  std::string self;                     // this program's path (the emulation libraries are beside it)
};

int run_emulate(const std::string& catalog_dir, const EmulateOptions& o);

// Ranks up to which `ringsim emulate` runs (SMPI keeps every rank's stack and an actor per rank).
constexpr int kMaxEmulatedRanks = 4096;

}  // namespace ringsim
