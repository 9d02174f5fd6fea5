// `ringsim-real train SCENARIO.yaml`: training iterations of the scenario's model with the simulator's
// fusion planner and collectives on a real transport. Per layer a compute stand-in of the layer's
// modelled duration (on the CPU a timed busy loop, or a sleep standing for a GPU's compute), gradients of the model's
// real tensor sizes announced in backward order, a coordinator that every cycle agrees with all ranks on which tensors
// are ready (MPI_Iallreduce of ready flags), fuses them and runs one collective per buffer. Rank 0 writes the measured
// result in the schema `ringsim predict --json` writes.
#pragma once

#include <mpi.h>

#include <optional>
#include <string>
#include <vector>

#include "transport/fault_injection.h"

namespace ringsim::real {

struct TrainOptions {
  std::string catalog_dir;
  std::string scenario;
  std::vector<std::string> sets;
  int iterations = 5;
  int warmup = 1;
  std::string transport = "host";
  double compute_scale = 1.0;
  std::string compute_stand_in = "spin";  // host transport: "spin" (a CPU computing) or "sleep" (a GPU)
  double timeout_s = 300;
  bool probe_cores = false;            // each iteration between two core-to-core probes (placement/core_to_core.h)
  double core_to_core_nearest_ns = 0;  // the nearest probe of earlier launches (0: none)
  std::optional<std::string> json_file, trace_file;
  Fault fault;
};

int run_train(const TrainOptions& o, MPI_Comm comm);  // exit status

}  // namespace ringsim::real
