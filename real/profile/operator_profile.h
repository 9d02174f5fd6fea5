// `ringsim-real profile SCENARIO.yaml`: the scenario's model as the operator model's kernels (sim/schedule/
// operators.h), each timed on this machine (the host backend: Eigen matmuls and a streaming kernel, one core),
// summed into a measured step and written as a compute overlay: the factor between the measured step and the
// operator model's for the scenario's GPU type, precision and stack (compute.operator_time_scale), which
// `ringsim predict --calibration` applies.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace ringsim::real {

struct ProfileOptions {
  std::string catalog_dir;
  std::string scenario;
  std::vector<std::string> sets;
  std::string out_file;  // the overlay
  int repetitions = 3;   // timed runs of each distinct kernel (median kept)
  // Kernels with more arithmetic or bytes than these are timed on a slice of their rows and scaled up.
  double max_flops = 2e9, max_bytes = 256e6;
};

int run_profile(const ProfileOptions& o);  // exit status

}  // namespace ringsim::real
