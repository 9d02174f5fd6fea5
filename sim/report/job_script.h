// `ringsim job`: the launch script that runs the validation (ringsim-real bench and train) on the
// scenario's cluster under a given MPI launcher.
#pragma once

#include <string>
#include <vector>

#include "load/scenario.h"

namespace ringsim {

struct JobOptions {
  std::string launcher = "mpirun";  // mpirun (Open MPI) | slurm | intel-mpi
  std::string transport = "nccl";   // ringsim-real --transport
  std::string scenario_path;        // as the script should name it on the cluster
  std::vector<std::string> sets;    // --set overrides the scenario was loaded with
};

std::string job_script(const Scenario& s, const JobOptions& o);

}  // namespace ringsim
