// The parts of collective.h that every algorithm uses: names, node classes, chunking, nccl-tests' sizes. The
// algorithms have a file each (ring.cpp, halving_doubling.cpp, hierarchical.cpp, tree.cpp, nvls.cpp,
// parameter_server.cpp), their shared steps in algorithm_steps.h.
#include "collective/collective.h"

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string_view>
#include <utility>
#include <vector>

namespace ringsim::collective {

std::string_view to_string(Space s) { return s == Space::Device ? "device" : "host"; }

std::string_view to_string(Phase p) {
  switch (p) {
    case Phase::CopyToHost:
      return "copy_to_host";
    case Phase::CopyToDevice:
      return "copy_to_device";
    case Phase::ReduceScatter:
      return "reduce_scatter";
    case Phase::Allgather:
      return "allgather";
    case Phase::Fold:
      return "fold";
    case Phase::Unfold:
      return "unfold";
    case Phase::LocalReduceScatter:
      return "local_reduce_scatter";
    case Phase::LocalGather:
      return "local_gather";
    case Phase::LocalScatter:
      return "local_scatter";
    case Phase::LocalAllgather:
      return "local_allgather";
    case Phase::CrossReduceScatter:
      return "cross_reduce_scatter";
    case Phase::CrossAllgather:
      return "cross_allgather";
    case Phase::CrossFold:
      return "cross_fold";
    case Phase::CrossUnfold:
      return "cross_unfold";
    case Phase::LocalReduce:
      return "local_reduce";
    case Phase::Push:
      return "push";
    case Phase::Pull:
      return "pull";
    case Phase::InSwitch:
      return "in_switch";
    case Phase::LocalBroadcast:
      return "local_broadcast";
    case Phase::TreeUp:
      return "tree_up";
    case Phase::TreeUpDown:
      return "tree_up_down";
    case Phase::TreeDown:
      return "tree_down";
  }
  return "unknown";
}

NodeClasses::NodeClasses(int local_members, int extra_members, std::vector<int> classes)
    : local(local_members), extra(extra_members), of_node(std::move(classes)) {
  for (int n = 0; n < nodes(); ++n)
    if (of_node[n] == count())
      first.push_back(n);
    else if (of_node[n] < 0 || of_node[n] > count())
      throw std::invalid_argument("node classes: not numbered in order");
}

void Collective::remote_sends(int m, int s, const NodeClasses& nodes, std::vector<Transfer>& out) const {
  RankStep st;
  rank_step(m, s, st);
  out.clear();
  for (const Transfer& t : st.sends)
    if (nodes.node(t.dst) != nodes.node(m)) out.push_back(t);
}

Chunking::Chunking(std::uint64_t bytes, int parts, int element_bytes_) : element_bytes(element_bytes_) {
  if (parts < 1 || element_bytes < 1 || bytes % element_bytes != 0)
    throw std::invalid_argument("chunking: bytes must be a whole number of elements and parts >= 1");
  const std::uint64_t elements = bytes / element_bytes;
  elements_base = elements / parts;
  remainder = elements % parts;
}
std::uint64_t Chunking::offset(int c) const {
  const auto cu = static_cast<std::uint64_t>(c);
  return (cu * elements_base + std::min<std::uint64_t>(cu, remainder)) * element_bytes;
}
std::uint64_t Chunking::size(int c) const {
  return (elements_base + (static_cast<std::uint64_t>(c) < remainder ? 1 : 0)) * element_bytes;
}

std::vector<std::uint64_t> sweep_sizes(std::uint64_t min_bytes, std::uint64_t max_bytes, double factor,
                                       std::size_t element_bytes) {
  std::vector<std::uint64_t> sizes;
  for (double b = static_cast<double>(min_bytes); b <= static_cast<double>(max_bytes) * (1 + 1e-9);
       b = b == 0 ? static_cast<double>(element_bytes) : b * factor)
    sizes.push_back(static_cast<std::uint64_t>(b) / element_bytes * element_bytes);
  return sizes;
}

std::string_view op_name(BusOp op) {
  switch (op) {
    case BusOp::AllGather:
      return "allgather";
    case BusOp::ReduceScatter:
      return "reduce_scatter";
    case BusOp::AllReduce:
      break;
  }
  return "allreduce";
}

std::optional<BusOp> parse_op(std::string_view name) {
  if (name == "allreduce" || name == "all_reduce") return BusOp::AllReduce;
  if (name == "allgather" || name == "all_gather") return BusOp::AllGather;
  if (name == "reduce_scatter") return BusOp::ReduceScatter;
  return std::nullopt;
}

}  // namespace ringsim::collective
