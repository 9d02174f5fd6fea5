#include "report/job_script.h"

#include <sstream>

namespace ringsim {

std::string job_script(const Scenario& s, const JobOptions& o) {
  const bool ps = s.communication.strategy == Strategy::ParameterServer;
  const int gpn = s.cluster.gpus_per_node;
  const int nodes = s.cluster.nodes;
  const int servers = s.communication.server_members();
  const int ranks = nodes * gpn + servers;
  const bool ib = s.cluster.fabric == FabricKind::InfiniBand;
  std::ostringstream out;
  out << "#!/bin/bash\n";
  if (o.launcher == "slurm") {
    out << "#SBATCH --job-name=ringsim-" << s.name << "\n"
        << "#SBATCH --nodes=" << nodes + (ps && s.communication.ps_placement == PsPlacement::Dedicated ? servers : 0)
        << "\n"
        << "#SBATCH --ntasks=" << ranks << "\n"
        << "#SBATCH --gres=gpu:" << gpn << "\n";
  }
  out << "# ringsim validation job for scenario '" << s.name << "' (" << s.file << "):\n"
      << "# " << nodes << " x " << s.cluster.sku << ", " << gpn << " processes (one per GPU) per node"
      << (ps ? ", plus " + std::to_string(servers) + " parameter-server processes" : "") << ", "
      << to_string(s.cluster.fabric) << ".\n"
      << "# Runs ringsim-real bench (our ring vs the library) and train (the scenario's iterations); compare\n"
      << "# result.json with `ringsim predict " << o.scenario_path << " --json prediction.json`.\n"
      << "set -euo pipefail\n"
      << "REAL=${RINGSIM_REAL:-ringsim-real}\n"
      << "SCENARIO=${RINGSIM_SCENARIO:-" << o.scenario_path << "}\n"
      << "OUT=${RINGSIM_OUT:-.}\n"
      << "BENCH_ARGS=${RINGSIM_BENCH_ARGS:--b 8 -e 256M -f 2}\n";
  std::string sets;
  for (const auto& kv : o.sets) sets += " --set '" + kv + "'";
  std::string launch;
  if (o.launcher == "slurm") {
    launch = "srun --ntasks=" + std::to_string(ranks) + " --ntasks-per-node=" + std::to_string(gpn + servers);
  } else if (o.launcher == "intel-mpi") {
    // As in the Batch AI seed: hosts from the service, DAPL over the InfiniBand interface.
    out << "HOSTS=${AZ_BATCH_HOST_LIST:?set AZ_BATCH_HOST_LIST to the comma-separated node list}\n";
    launch = "mpirun -n " + std::to_string(ranks) + " -ppn " + std::to_string(gpn) + " -hosts $HOSTS";
    if (ib)
      launch += " -env I_MPI_FABRICS=dapl -env I_MPI_DAPL_PROVIDER=ofa-v2-ib0 -env I_MPI_DYNAMIC_CONNECTION=0";
    else
      launch += " -env I_MPI_FABRICS=tcp";
  } else {
    out << "HOSTFILE=${HOSTFILE:?set HOSTFILE to an Open MPI hostfile with " << nodes << " nodes, slots=" << gpn
        << "}\n";
    launch = "mpirun -np " + std::to_string(ranks) + " --hostfile $HOSTFILE --map-by ppr:" + std::to_string(gpn) +
             ":node --bind-to none";
    if (!ib) launch += " -x NCCL_IB_DISABLE=1 --mca btl tcp,self,vader";
  }
  out << "\n"
      << launch << " \"$REAL\" bench $BENCH_ARGS --transport " << o.transport << " --json \"$OUT/bench.json\"\n"
      << launch << " \"$REAL\" train \"$SCENARIO\"" << sets << " --transport " << o.transport
      << " --json \"$OUT/result.json\" --trace \"$OUT/timeline.json\"\n";
  return out.str();
}

}  // namespace ringsim
