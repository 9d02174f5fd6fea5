// Parameter servers: on servers of their own, on the workers, and behind one aggregating GPU a node; and
// how tensors are spread over them.
#include <algorithm>
#include <cstdint>
#include <memory>
#include <numeric>
#include <stdexcept>
#include <string_view>
#include <utility>
#include <vector>

#include "collective/collective.h"

namespace ringsim::collective {

namespace {

// Where each server's shard starts in the buffer: shards laid out one after another.
std::vector<std::uint64_t> shard_offsets(const std::vector<std::uint64_t>& shards) {
  std::vector<std::uint64_t> offsets(shards.size());
  std::exclusive_scan(shards.begin(), shards.end(), offsets.begin(), std::uint64_t{0});
  return offsets;
}

class ParameterServerExchange final : public Collective {
 public:
  ParameterServerExchange(int workers, std::vector<std::uint64_t> shards, Space worker_space, bool on_workers)
      : Collective(std::accumulate(shards.begin(), shards.end(), std::uint64_t{0})),
        workers_(workers),
        shards_(std::move(shards)),
        offsets_(shard_offsets(shards_)),
        worker_space_(worker_space),
        on_workers_(on_workers) {}
  std::string_view algorithm() const override { return on_workers_ ? "parameter_server_on_gpus" : "parameter_server"; }
  int members() const override { return workers_ + (on_workers_ ? 0 : static_cast<int>(shards_.size())); }
  int steps() const override { return 2; }
  std::vector<StepRun> runs() const override { return {{0, 1, Phase::Push}, {1, 1, Phase::Pull}}; }
  Space home_space(int m) const override { return m < workers_ ? worker_space_ : Space::Host; }
  void rank_step(int m, int s, RankStep& out) const override {
    out.clear();
    const bool push = s == 0;
    const Space server_space = on_workers_ ? worker_space_ : Space::Host;
    auto server_of = [&](int j) { return on_workers_ ? j : workers_ + j; };
    auto xfer = [&](int w, int j) {
      return push ? Transfer{w, server_of(j), worker_space_, server_space, offsets_[j], shards_[j], true}
                  : Transfer{server_of(j), w, server_space, worker_space_, offsets_[j], shards_[j], false};
    };
    // As a worker: push every shard to its server, pull it back (a server on this worker keeps its own).
    if (m < workers_)
      for (std::size_t j = 0; j < shards_.size(); ++j)
        if (shards_[j] > 0 && server_of(static_cast<int>(j)) != m)
          (push ? out.sends : out.recvs).push_back(xfer(m, static_cast<int>(j)));
    // As a server: receive and reduce every other worker's push, update, serve the pulls.
    const int j = on_workers_ ? m : m - workers_;
    if (j < 0 || j >= static_cast<int>(shards_.size()) || shards_[j] == 0) return;
    for (int w = 0; w < workers_; ++w)
      if (w != server_of(j)) (push ? out.recvs : out.sends).push_back(xfer(w, j));
    if (push) out.update_bytes = shards_[j];
  }

 private:
  int workers_;
  std::vector<std::uint64_t> shards_, offsets_;
  Space worker_space_;
  bool on_workers_;
};

// TensorFlow's distributed_replicated: each node first sums its GPUs' gradients on one of them (the
// aggregator), which pushes the node's sum to the servers; each node pulls the updated parameters once,
// into its local member 0's host memory, and copies them into every GPU.
class NodeAggregatedParameterServer final : public Collective {
 public:
  NodeAggregatedParameterServer(int nodes, int local, std::vector<std::uint64_t> shards, int aggregator,
                                Space worker_space)
      : Collective(std::accumulate(shards.begin(), shards.end(), std::uint64_t{0})),
        nodes_(nodes),
        local_(local),
        aggregator_(aggregator),
        shards_(std::move(shards)),
        offsets_(shard_offsets(shards_)),
        worker_space_(worker_space) {}
  std::string_view algorithm() const override { return "parameter_server_node_aggregated"; }
  int members() const override { return workers() + static_cast<int>(shards_.size()); }
  int steps() const override { return 4; }
  std::vector<StepRun> runs() const override {
    return {{0, 1, Phase::LocalReduce}, {1, 1, Phase::Push}, {2, 1, Phase::Pull}, {3, 1, Phase::LocalBroadcast}};
  }
  Space home_space(int m) const override { return m < workers() ? worker_space_ : Space::Host; }
  void rank_step(int m, int s, RankStep& out) const override {
    out.clear();
    const int w = workers();
    if (m >= w) {  // a server
      const int j = m - w;
      if (shards_[j] == 0 || s == 0 || s == 3) return;
      for (int n = 0; n < nodes_; ++n) {
        if (s == 1) out.recvs.push_back(push(n, j));
        if (s == 2) out.sends.push_back(pull(n, j));
      }
      if (s == 1) out.update_bytes = shards_[j];
      return;
    }
    const int node = m / local_, l = m % local_, agg = node * local_ + aggregator_, root = node * local_;
    switch (s) {
      case 0:  // every GPU's gradients into the aggregator's
        if (l == aggregator_) {
          for (int k = 0; k < local_; ++k)
            if (k != aggregator_) out.recvs.push_back(gather(node * local_ + k, agg));
        } else {
          out.sends.push_back(gather(m, agg));
        }
        return;
      case 1:
        if (m != agg) return;
        for (std::size_t j = 0; j < shards_.size(); ++j)
          if (shards_[j] > 0) out.sends.push_back(push(node, static_cast<int>(j)));
        return;
      case 2:
        if (m != root) return;
        for (std::size_t j = 0; j < shards_.size(); ++j)
          if (shards_[j] > 0) out.recvs.push_back(pull(node, static_cast<int>(j)));
        return;
      default:          // from the node's host copy into every GPU
        if (m == root)  // its own GPU by a local copy, listed as a send and a receive
          for (int k = 0; k < local_; ++k) out.sends.push_back(spread(root, node * local_ + k));
        out.recvs.push_back(spread(root, m));
        return;
    }
  }

 private:
  int workers() const { return nodes_ * local_; }
  Transfer gather(int from, int to) const { return {from, to, worker_space_, worker_space_, 0, bytes_, true}; }
  Transfer push(int node, int j) const {
    return {node * local_ + aggregator_, workers() + j, worker_space_, Space::Host, offsets_[j], shards_[j], true};
  }
  Transfer pull(int node, int j) const {
    return {workers() + j, node * local_, Space::Host, Space::Host, offsets_[j], shards_[j], false};
  }
  Transfer spread(int root, int to) const { return {root, to, Space::Host, worker_space_, 0, bytes_, false}; }
  int nodes_, local_, aggregator_;
  std::vector<std::uint64_t> shards_, offsets_;
  Space worker_space_;
};

}  // namespace

std::unique_ptr<Collective> make_parameter_server_exchange(int workers, const std::vector<std::uint64_t>& shard_bytes,
                                                           Space worker_space) {
  if (workers < 1 || shard_bytes.empty()) throw std::invalid_argument("parameter server needs workers and servers");
  return std::make_unique<ParameterServerExchange>(workers, shard_bytes, worker_space, false);
}

std::unique_ptr<Collective> make_parameter_server_on_workers(const std::vector<std::uint64_t>& shard_bytes,
                                                             Space worker_space) {
  if (shard_bytes.empty()) throw std::invalid_argument("parameter servers on workers need workers");
  return std::make_unique<ParameterServerExchange>(static_cast<int>(shard_bytes.size()), shard_bytes, worker_space,
                                                   true);
}

std::unique_ptr<Collective> make_node_aggregated_parameter_server(int nodes, int local,
                                                                  const std::vector<std::uint64_t>& shard_bytes,
                                                                  int aggregator, Space worker_space) {
  if (nodes < 1 || local < 1 || shard_bytes.empty() || aggregator < 0 || aggregator >= local)
    throw std::invalid_argument("node-aggregated parameter server needs nodes, GPUs, servers and an aggregating GPU");
  return std::make_unique<NodeAggregatedParameterServer>(nodes, local, shard_bytes, aggregator, worker_space);
}

std::vector<int> assign_to_servers(const std::vector<std::uint64_t>& tensor_bytes, int servers, ServerAssignment how) {
  std::vector<std::uint64_t> load(servers, 0);
  std::vector<int> where;
  where.reserve(tensor_bytes.size());
  if (how == ServerAssignment::RoundRobin) {
    for (std::size_t i = 0; i < tensor_bytes.size(); ++i) where.push_back(static_cast<int>(i % servers));
    return where;
  }
  for (auto b : tensor_bytes) {
    const int j = static_cast<int>(std::min_element(load.begin(), load.end()) - load.begin());
    load[j] += b;
    where.push_back(j);
  }
  return where;
}

}  // namespace ringsim::collective
