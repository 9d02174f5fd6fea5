// `ringsim-real calibrate`: the microbenchmarks `ringsim calibrate` fits the simulator to. Between one pair
// of ranks of each class present in the launch (same socket, across sockets, across the network), over
// message sizes: ping-pong, and the exchange a collective step makes (both ranks send and receive at once
// through the host transport, as nccl-tests' sendrecv_perf), and that exchange again with both processes
// on one core up to 256 KiB (the cost of the scheduler handing the core over). Then the host reduction's
// throughput and memory copies as the fusion buffer's, each timed on both processes of a pair at once
// (the slower counts), and the compute stand-in's accuracy. Rank 0 writes the points as JSON
// (schema ringsim.calibration-data/1).
#pragma once

#include <mpi.h>

#include <cstdint>
#include <string>

namespace ringsim::real {

struct CalibrateOptions {
  std::uint64_t min_bytes = 8;
  std::uint64_t max_bytes = 64ull << 20;
  int repetitions = 10;
  bool probe_cores = false;            // every sample between two core-to-core probes (placement/core_to_core.h)
  double core_to_core_nearest_ns = 0;  // the nearest probe of earlier launches (0: none)
  std::string json_file;
};

int run_calibrate(const CalibrateOptions& o, MPI_Comm comm);

}  // namespace ringsim::real
