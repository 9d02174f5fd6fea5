#include "execute/analytic/allreduce_bench.h"

#include "execute/analytic/step_model.h"
#include "execute/buffer_collective.h"
#include "execute/comm_model.h"
#include "graph/topology_graph.h"
#include "load/input_error.h"

namespace ringsim {

BenchPrediction predict_allreduce_bench(const Catalog& catalog, const Scenario& s, const BenchSizes& sizes) {
  if (s.communication.strategy == Strategy::ParameterServer)
    throw InputError({},
                     "bench: strategy parameter_server runs no allreduce; set communication.strategy to ring, "
                     "hierarchical, halving_doubling or nvls");
  constexpr int kFloatBytes = 4;  // all_reduce_perf's default type (-d float)
  const auto list = collective::sweep_sizes(sizes.min_bytes, sizes.max_bytes, sizes.factor, kFloatBytes);
  if (static_cast<int>(list.size()) > kMaxBenchRows)
    throw InputError({}, "bench: " + std::to_string(list.size()) + " sizes is more than " +
                             std::to_string(kMaxBenchRows) + "; raise -f or narrow -b/-e");
  // A size's cost grows with the ranks (each step's transfers): about 1 s per 70,000 rank-sizes on one core.
  const double work = static_cast<double>(list.size()) * s.cluster.total_gpus();
  if (work > kMaxBenchRankSizes)
    throw InputError({}, "bench: " + std::to_string(list.size()) + " sizes on " +
                             std::to_string(s.cluster.total_gpus()) + " GPUs is estimated at " +
                             std::to_string(static_cast<long long>(work / 70000)) + " s, above the limit of " +
                             std::to_string(kMaxBenchRankSizes / 70000) +
                             " s; raise -f, narrow -b/-e or bench fewer nodes");
  const Topology topo = Topology::build(catalog, cluster_shape(s.cluster));  // no servers: no parameter_server
  CommModel cm(catalog, s, topo);
  const BufferCollectiveLayout layout = buffer_collective_layout(s, cm.data_space(), cm);
  BenchPrediction out;
  out.ranks = cm.workers();
  out.bus_factor = collective::bus_bandwidth_factor(collective::BusOp::AllReduce, out.ranks);
  out.algorithm = std::string(to_string(s.communication.strategy));
  for (std::uint64_t bytes : list) {
    BenchRow row;
    row.bytes = bytes;
    row.count = bytes / kFloatBytes;
    if (bytes > 0) {
      const auto c = make_buffer_collective(s, layout, bytes, kFloatBytes);
      row.time_s = collective_duration(*c, cm, nullptr) + cm.call_overhead(*c);
      row.algorithm = std::string(c->algorithm());
      row.protocol = std::string(c->protocol.name);
    }
    out.rows.push_back(row);
  }
  return out;
}

}  // namespace ringsim
