// `ringsim-real calibrate`: the microbenchmarks `ringsim calibrate` fits the simulator to. Ping-pong
// over message sizes between one pair of ranks of each class present in the launch (same socket,
// across sockets, across the network), the host reduction's throughput, and the compute stand-in's
// accuracy. Rank 0 writes the points as JSON (schema ringsim.calibration-data/1).
#pragma once

#include <mpi.h>

#include <cstdint>
#include <string>

namespace ringsim::real {

struct CalibrateOptions {
  std::uint64_t min_bytes = 8;
  std::uint64_t max_bytes = 64ull << 20;
  int repetitions = 10;
  std::string json_file;
};

int run_calibrate(const CalibrateOptions& o, MPI_Comm comm);

}  // namespace ringsim::real
