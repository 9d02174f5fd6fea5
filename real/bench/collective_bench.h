// `ringsim-real bench`: an nccl-tests-style sweep of message sizes for our ring (the shared collective
// code on a real transport) against the library's own collective, on the same buffers in the same run.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <optional>
#include <string>

#include "transport/fault_injection.h"

namespace ringsim::real {

struct BenchOptions {
  std::uint64_t min_bytes = 8;
  std::uint64_t max_bytes = 32ull << 20;
  double factor = 2;
  std::string op = "allreduce";    // allreduce | reduce_scatter | allgather
  std::string algorithm = "ring";  // ring | halving_doubling (allreduce only)
  std::string type = "float";      // float | int32 | double
  std::string transport = "host";
  int iters = 20;
  int warmup = 5;
  bool baseline = true;                // also time the library's own collective
  bool probe_cores = false;            // each size's timing between two core-to-core probes (placement/core_to_core.h)
  double core_to_core_nearest_ns = 0;  // the nearest probe of earlier launches (0: none)
  double timeout_s = 300;
  std::optional<std::string> json_file;
  Fault fault;  // testing aid (--inject-fault)
};

// Runs on every rank of `comm`; rank 0 prints the table and writes the JSON. Returns the number of
// wrong elements summed over ranks and sizes.
std::int64_t run_bench(const BenchOptions& o, MPI_Comm comm);

}  // namespace ringsim::real
