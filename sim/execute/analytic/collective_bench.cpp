#include "execute/analytic/collective_bench.h"

#include "execute/analytic/step_model.h"
#include "execute/buffer_collective.h"
#include "execute/comm_model.h"
#include "graph/topology_graph.h"
#include "load/input_error.h"

namespace ringsim {

namespace {
// The sizes of the sweep: whole elements, and for an all-gather or reduce-scatter whole elements on each
// rank (nccl-tests' count per rank x ranks; sizes below one element a rank round to 0, as its rows do).
std::vector<std::uint64_t> bench_sizes(const BenchSizes& sizes, collective::BusOp op, int ranks, int element_bytes) {
  auto list = collective::sweep_sizes(sizes.min_bytes, sizes.max_bytes, sizes.factor, element_bytes);
  if (op == collective::BusOp::AllReduce) return list;
  const auto unit = static_cast<std::uint64_t>(element_bytes) * static_cast<std::uint64_t>(ranks);
  std::vector<std::uint64_t> out;
  for (std::uint64_t b : list) out.push_back(b / unit * unit);
  return out;
}

constexpr int kFloatBytes = 4;  // nccl-tests' default type (-d float)
}  // namespace

void check_bench_work(std::size_t sizes, int gpus, int tables) {
  if (static_cast<int>(sizes) > kMaxBenchRows)
    throw InputError({}, "bench: " + std::to_string(sizes) + " sizes is more than " + std::to_string(kMaxBenchRows) +
                             "; raise -f or narrow -b/-e");
  // A size's cost grows with the ranks (each step's transfers): about 1 s per 70,000 rank-sizes on one core.
  const double work = static_cast<double>(sizes) * gpus * tables;
  const std::string band = tables > 1 ? " with the band's " + std::to_string(tables - 1) + " more tables" : "";
  if (work > kMaxBenchRankSizes)
    throw InputError({}, "bench: " + std::to_string(sizes) + " sizes on " + std::to_string(gpus) + " GPUs" + band +
                             " is estimated at " + std::to_string(static_cast<long long>(work / 70000)) +
                             " s, above the limit of " + std::to_string(kMaxBenchRankSizes / 70000) + " s; " +
                             (tables > 1 ? "pass --no-band, " : "") + "raise -f, narrow -b/-e or bench fewer nodes");
}

std::size_t bench_size_count(const BenchSizes& sizes, const Scenario& scenario, collective::BusOp op) {
  return bench_sizes(sizes, op, scenario.cluster.total_gpus(), kFloatBytes).size();
}

BenchPrediction predict_bench(const Catalog& catalog, const Scenario& scenario, const BenchSizes& sizes,
                              collective::BusOp op) {
  const bool allreduce = op == collective::BusOp::AllReduce;
  if (allreduce && scenario.communication.strategy == Strategy::ParameterServer)
    throw InputError({},
                     "bench: strategy parameter_server runs no allreduce; set communication.strategy to ring, "
                     "hierarchical, halving_doubling or nvls");
  const Scenario s = allreduce ? scenario : gather_layout_scenario(scenario);
  const auto list = bench_sizes(sizes, op, s.cluster.total_gpus(), kFloatBytes);
  check_bench_work(list.size(), s.cluster.total_gpus());
  const Topology topo = Topology::build(catalog, cluster_shape(s.cluster));  // no servers: no parameter_server
  CommModel cm(catalog, s, topo);
  const BufferCollectiveLayout layout = buffer_collective_layout(s, cm.data_space(), cm);
  BenchPrediction out;
  out.op = op;
  out.ranks = cm.workers();
  out.bus_factor = collective::bus_bandwidth_factor(op, out.ranks);
  out.algorithm = allreduce ? std::string(to_string(s.communication.strategy)) : "ring";
  for (std::uint64_t bytes : list) {
    BenchRow row;
    row.bytes = bytes;
    row.count = bytes / kFloatBytes / (allreduce ? 1 : static_cast<std::uint64_t>(out.ranks));
    if (bytes > 0) {
      const auto c = allreduce ? make_buffer_collective(s, layout, bytes, kFloatBytes)
                               : make_gather_collective(layout, op, bytes, kFloatBytes);
      row.time_s = collective_duration(*c, cm, nullptr) + cm.call_overhead(*c);
      row.algorithm = std::string(c->algorithm());
      row.protocol = std::string(c->protocol.name);
    }
    out.rows.push_back(row);
  }
  return out;
}

}  // namespace ringsim
