// The collective algorithms and the fusion planner, without any simulator: message matching, what the
// data ends up as when the per-member programs are executed on real buffers, and the fusion rules.
#include <algorithm>
#include <map>
#include <numeric>
#include <tuple>

#include "collective/collective.h"
#include "collective/fusion.h"
#include "test_support.h"

using namespace ringsim::collective;

namespace {

std::tuple<int, int, int, int, std::uint64_t, std::uint64_t, bool> key(const Transfer& t) {
  return {t.src, t.dst, static_cast<int>(t.src_space), static_cast<int>(t.dst_space), t.offset, t.bytes, t.reduce};
}

// Executes a collective step by step on float buffers: every send reads the buffer as it was before the
// step; every receive then overwrites or adds. Returns the buffers per member and space.
struct Buffers {
  std::map<std::pair<int, Space>, std::vector<float>> data;
  std::vector<float>& at(int m, Space s, std::size_t n) {
    auto& v = data[{m, s}];
    if (v.empty()) v.assign(n, 0.0f);
    return v;
  }
};

void execute(const Collective& c, Buffers& b, std::size_t floats) {
  RankStep st;
  for (int s = 0; s < c.steps(); ++s) {
    std::map<decltype(key(Transfer{})), std::vector<float>> in_flight;
    for (int m = 0; m < c.members(); ++m) {
      c.rank_step(m, s, st);
      for (const auto& t : st.sends) {
        auto& src = b.at(t.src, t.src_space, floats);
        in_flight[key(t)] = std::vector<float>(src.begin() + t.offset / 4, src.begin() + (t.offset + t.bytes) / 4);
      }
    }
    for (int m = 0; m < c.members(); ++m) {
      c.rank_step(m, s, st);
      for (const auto& t : st.recvs) {
        auto it = in_flight.find(key(t));
        REQUIRE(it != in_flight.end());
        auto& dst = b.at(t.dst, t.dst_space, floats);
        for (std::size_t i = 0; i < it->second.size(); ++i) {
          float& d = dst[t.offset / 4 + i];
          d = t.reduce ? d + it->second[i] : it->second[i];
        }
      }
    }
  }
}

void require_matching_messages(const Collective& c) {
  RankStep st;
  for (int s = 0; s < c.steps(); ++s) {
    std::vector<decltype(key(Transfer{}))> sends, recvs;
    for (int m = 0; m < c.members(); ++m) {
      c.rank_step(m, s, st);
      for (const auto& t : st.sends) {
        REQUIRE(t.src == m);
        sends.push_back(key(t));
      }
      for (const auto& t : st.recvs) {
        REQUIRE(t.dst == m);
        recvs.push_back(key(t));
      }
    }
    std::sort(sends.begin(), sends.end());
    std::sort(recvs.begin(), recvs.end());
    REQUIRE(sends == recvs);
    // Transports match a pair's messages in the order they are posted (one MPI tag per step): the sender
    // lists its messages to each receiver in the order the receiver lists them from it.
    std::map<std::pair<int, int>, std::vector<decltype(key(Transfer{}))>> sent, received;
    for (int m = 0; m < c.members(); ++m) {
      c.rank_step(m, s, st);
      for (const auto& t : st.sends) sent[{t.src, t.dst}].push_back(key(t));
      for (const auto& t : st.recvs) received[{t.src, t.dst}].push_back(key(t));
    }
    REQUIRE(sent == received);
  }
  // Runs partition the steps, and the steps of a run carry the same pairs with the same largest message.
  int next = 0;
  for (const auto& run : c.runs()) {
    REQUIRE(run.first == next);
    REQUIRE(run.count > 0);
    next += run.count;
    auto pattern = [&](int s) {
      std::vector<std::pair<int, int>> pairs;
      std::uint64_t largest = 0;
      for (int m = 0; m < c.members(); ++m) {
        c.rank_step(m, s, st);
        for (const auto& t : st.sends) {
          pairs.push_back({t.src, t.dst});
          largest = std::max(largest, t.bytes);
        }
      }
      std::sort(pairs.begin(), pairs.end());
      return std::make_pair(pairs, largest);
    };
    const auto first = pattern(run.first);
    for (int s = run.first + 1; s < run.first + run.count; ++s) REQUIRE(pattern(s) == first);
  }
  REQUIRE(next == c.steps());
}

// Member m starts with value (m + 1) * (i + 1) at element i; an allreduce leaves the sum everywhere.
void require_allreduce(const Collective& c, std::size_t floats, Space space) {
  Buffers b;
  for (int m = 0; m < c.members(); ++m) {
    auto& v = b.at(m, Space::Device, floats);
    for (std::size_t i = 0; i < floats; ++i) v[i] = static_cast<float>((m + 1) * (i + 1));
  }
  execute(c, b, floats);
  const float members_sum = c.members() * (c.members() + 1) / 2.0f;
  for (int m = 0; m < c.members(); ++m) {
    const auto& v = b.at(m, Space::Device, floats);
    for (std::size_t i = 0; i < floats; ++i) REQUIRE(v[i] == members_sum * (i + 1));
  }
  if (space == Space::Host && c.members() > 1) REQUIRE(b.data.count({0, Space::Host}) == 1);
}

// Workers [0, workers) start with w + 1 in every element (servers, if any, with nothing); after the
// exchange every worker holds the sum over workers in every element.
Buffers require_workers_sum(const Collective& c, int workers) {
  Buffers b;
  const std::size_t floats = 13;
  for (int w = 0; w < workers; ++w) {
    auto& v = b.at(w, Space::Device, floats);
    for (std::size_t i = 0; i < floats; ++i) v[i] = static_cast<float>(w + 1);
  }
  execute(c, b, floats);
  const float sum = workers * (workers + 1) / 2.0f;
  for (int w = 0; w < workers; ++w)
    for (float x : b.at(w, Space::Device, floats)) REQUIRE(x == sum);
  return b;
}

}  // namespace

TEST_CASE("ring allreduce: 2(p-1) steps, matching messages, the sum on every member", "[collective]") {
  for (Space space : {Space::Device, Space::Host})
    for (int p : {1, 2, 3, 5, 8}) {
      CAPTURE(p, to_string(space));
      const std::size_t floats = 37;  // not a multiple of p: uneven chunks
      auto c = make_ring_allreduce(p, floats * 4, 4, space);
      const int staging = space == Space::Host && p > 1 ? 2 : 0;
      REQUIRE(c->steps() == 2 * (p - 1) + staging);
      require_matching_messages(*c);
      require_allreduce(*c, floats, space);
    }
}

TEST_CASE("ring allreduce sends ~S/p per step to the right neighbour", "[collective]") {
  auto c = make_ring_allreduce(4, 4 * 1000, 4, Space::Device);
  RankStep st;
  c->rank_step(2, 0, st);
  REQUIRE(st.sends.size() == 1);
  REQUIRE(st.sends[0].dst == 3);
  REQUIRE(st.sends[0].bytes == 1000);
  REQUIRE(st.recvs[0].src == 1);
  REQUIRE(st.recvs[0].reduce);
  c->rank_step(2, 3, st);  // first allgather step
  REQUIRE_FALSE(st.recvs[0].reduce);
}

TEST_CASE("hierarchical allreduce: local reduce, ring among roots, local broadcast", "[collective]") {
  for (Space space : {Space::Device, Space::Host})
    for (auto [nodes, local] : {std::pair{1, 4}, {3, 1}, {2, 4}, {3, 3}, {4, 2}}) {
      CAPTURE(nodes, local, to_string(space));
      const std::size_t floats = 41;
      auto c = make_hierarchical_allreduce(nodes, local, floats * 4, 4, space);
      require_matching_messages(*c);
      require_allreduce(*c, floats, space);
    }
  // Only local member 0 of each node talks across nodes.
  auto c = make_hierarchical_allreduce(3, 4, 4 * 120, 4, Space::Device);
  RankStep st;
  for (const auto& run : c->runs()) {
    if (run.phase != Phase::CrossReduceScatter) continue;
    for (int m = 0; m < c->members(); ++m) {
      c->rank_step(m, run.first, st);
      REQUIRE(st.sends.size() == (m % 4 == 0 ? 1u : 0u));
      for (const auto& t : st.sends) REQUIRE(t.dst % 4 == 0);
    }
  }
}

TEST_CASE("halving-doubling allreduce: 2 log2 P steps (+ fold and unfold), the sum on every member", "[collective]") {
  for (Space space : {Space::Device, Space::Host})
    for (int p : {1, 2, 3, 4, 5, 6, 7, 8, 11, 12, 16}) {
      CAPTURE(p, to_string(space));
      const std::size_t floats = 37;  // uneven chunks, and fewer elements than chunks for none
      auto c = make_halving_doubling_allreduce(p, floats * 4, 4, space);
      int pow2 = 1, log2 = 0;
      while (pow2 * 2 <= p) {
        pow2 *= 2;
        ++log2;
      }
      const int staging = space == Space::Host && p > 1 ? 2 : 0;
      REQUIRE(c->steps() == 2 * log2 + (p > pow2 ? 2 : 0) + staging);
      require_matching_messages(*c);
      require_allreduce(*c, floats, space);
    }
  // 8 members: step 0 exchanges half the buffer with the member 4 away, then a quarter 2 away, an eighth
  // 1 away; the allgather doubles back. Each member sends 2 (p-1)/p of the buffer, as in a ring.
  auto c = make_halving_doubling_allreduce(8, 4 * 800, 4, Space::Device);
  RankStep st;
  std::uint64_t sent = 0;
  const int peers[] = {4, 2, 1, 1, 2, 4};
  const std::uint64_t sizes[] = {1600, 800, 400, 400, 800, 1600};
  for (int s = 0; s < 6; ++s) {
    c->rank_step(0, s, st);
    REQUIRE(st.sends.size() == 1);
    CHECK(st.sends[0].dst == peers[s]);
    CHECK(st.sends[0].bytes == sizes[s]);
    CHECK(st.recvs[0].reduce == (s < 3));
    sent += st.sends[0].bytes;
  }
  CHECK(sent == 2 * 7 * 400);
}

TEST_CASE("hierarchical allreduce with halving-doubling across nodes", "[collective]") {
  for (Space space : {Space::Device, Space::Host})
    for (auto [nodes, local] : {std::pair{1, 4}, {3, 1}, {2, 4}, {3, 3}, {5, 2}, {8, 2}}) {
      CAPTURE(nodes, local, to_string(space));
      const std::size_t floats = 41;
      auto c = make_hierarchical_allreduce(nodes, local, floats * 4, 4, space, {}, CrossNode::HalvingDoubling);
      CHECK(c->algorithm() == "hierarchical_halving_doubling_allreduce");
      require_matching_messages(*c);
      require_allreduce(*c, floats, space);
    }
  // 32 nodes: 10 cross-node steps instead of the ring's 62.
  auto ring = make_hierarchical_allreduce(32, 8, 4 * 2560, 4, Space::Device);
  auto hd = make_hierarchical_allreduce(32, 8, 4 * 2560, 4, Space::Device, {}, CrossNode::HalvingDoubling);
  CHECK(ring->steps() - hd->steps() == 62 - 10);
}

TEST_CASE("parameter server: push and reduce on the servers, update, pull", "[collective]") {
  const int workers = 3;
  const std::vector<std::uint64_t> shards = {8 * 4, 0, 5 * 4};
  auto c = make_parameter_server_exchange(workers, shards, Space::Device);
  REQUIRE(c->members() == workers + 3);
  require_matching_messages(*c);
  require_workers_sum(*c, workers);
  RankStep st;
  c->rank_step(workers + 0, 0, st);
  REQUIRE(st.recvs.size() == workers);
  REQUIRE(st.update_bytes == 32);
  c->rank_step(workers + 1, 0, st);  // empty shard: idle
  REQUIRE(st.recvs.empty());
}

TEST_CASE("parameter placement is TensorFlow's greedy least-loaded, in creation order", "[collective]") {
  // loads: [100] [0] -> t1 to 1: [100][30] -> t2 to 1: [100][90] -> t3 to 1: [100][110] -> t4 to 0
  REQUIRE(assign_to_servers({100, 30, 60, 20, 5}, 2) == std::vector<int>{0, 1, 1, 1, 0});
  REQUIRE(assign_to_servers({10, 10, 10}, 3) == std::vector<int>{0, 1, 2});
  // Round robin (TensorFlow's replicated mode without NCCL) ignores the sizes.
  REQUIRE(assign_to_servers({100, 30, 60, 20, 5}, 2, ServerAssignment::RoundRobin) == std::vector<int>{0, 1, 0, 1, 0});
}

TEST_CASE("parameter servers on the workers: each GPU serves its shard, keeps its own part local", "[collective]") {
  const std::vector<std::uint64_t> shards = {8 * 4, 0, 5 * 4, 0};
  auto c = make_parameter_server_on_workers(shards, Space::Device);
  REQUIRE(c->members() == 4);
  REQUIRE(c->algorithm() == "parameter_server_on_gpus");
  require_matching_messages(*c);
  const Buffers b = require_workers_sum(*c, 4);
  REQUIRE(b.data.count({0, Space::Host}) == 0);  // nothing staged through host memory
  RankStep st;
  c->rank_step(0, 0, st);  // serves shard 0: three pushes in; pushes shard 2 out
  REQUIRE(st.recvs.size() == 3);
  REQUIRE(st.sends.size() == 1);
  REQUIRE(st.sends[0].dst == 2);
  REQUIRE(st.update_bytes == 32);
  c->rank_step(1, 0, st);  // serves an empty shard
  REQUIRE(st.recvs.empty());
  REQUIRE(st.update_bytes == 0);
  c->rank_step(1, 1, st);  // pulls shards 0 and 2
  REQUIRE(st.recvs.size() == 2);
}

TEST_CASE("node-aggregated parameter server: sum in the node, push, pull once per node, copy to every GPU",
          "[collective]") {
  const int nodes = 2, local = 3, workers = nodes * local;
  const std::vector<std::uint64_t> shards = {8 * 4, 5 * 4};
  auto c = make_node_aggregated_parameter_server(nodes, local, shards, 1, Space::Device);
  REQUIRE(c->members() == workers + 2);
  REQUIRE(c->steps() == 4);
  require_matching_messages(*c);
  require_workers_sum(*c, workers);
  RankStep st;
  c->rank_step(4, 0, st);  // node 1's aggregator (local 1) sums its two neighbours
  REQUIRE(st.recvs.size() == 2);
  c->rank_step(4, 1, st);  // and pushes both shards
  REQUIRE(st.sends.size() == 2);
  c->rank_step(workers + 0, 1, st);  // a server gets one push per node, then updates
  REQUIRE(st.recvs.size() == nodes);
  REQUIRE(st.update_bytes == 32);
  c->rank_step(3, 2, st);  // node 1's local 0 pulls both shards into host memory
  REQUIRE(st.recvs.size() == 2);
  REQUIRE(st.recvs[0].dst_space == Space::Host);
  c->rank_step(3, 3, st);  // and copies the buffer into its 3 GPUs, its own by a local copy
  REQUIRE(st.sends.size() == 3);
  REQUIRE(st.recvs.size() == 1);
  REQUIRE(st.recvs[0].src == 3);
  c->rank_step(5, 1, st);  // not an aggregator: idle while the push runs
  REQUIRE(st.sends.empty());
  REQUIRE_THROWS(make_node_aggregated_parameter_server(nodes, local, shards, local, Space::Device));
}

TEST_CASE("chunking splits whole elements, the first chunks one larger", "[collective]") {
  Chunking ch(4 * 10, 4, 4);
  REQUIRE(ch.size(0) == 12);
  REQUIRE(ch.size(1) == 12);
  REQUIRE(ch.size(2) == 8);
  REQUIRE(ch.size(3) == 8);
  REQUIRE(ch.offset(3) == 32);
  REQUIRE_THROWS(Chunking(10, 4, 4));  // not whole elements
}

TEST_CASE("fusion planner: a hand-computed example", "[fusion]") {
  // Five float tensors (bytes), 2 ranks, threshold 100 bytes, negotiations at t = 0, 5, 10 (ms).
  //   tensor: 0:40  1:40  2:30  3:120  4:20
  // Rank A announces 4,3 at 1 ms, 2 at 2 ms, 1,0 at 7 ms; rank B announces 4 at 1 ms, 3,2 at 3 ms,
  // 1 at 6 ms, 0 at 11 ms. Ready (both ranks): 4@1, 3@3, 2@3, 1@7, 0@11.
  FusionPlanner p({{40, 4}, {40, 4}, {30, 4}, {120, 4}, {20, 4}}, 100, 2);
  REQUIRE(p.negotiate(0).empty());
  p.announce(4, 1);
  p.announce(3, 1);
  p.announce(4, 1);
  p.announce(2, 2);
  p.announce(3, 3);
  p.announce(2, 3);
  // Cycle at 5: 4 (20 B) then 3 (120 B > threshold: alone), then 2 (30 B).
  auto b5 = p.negotiate(5);
  REQUIRE(b5.size() == 3);
  REQUIRE(b5[0].tensors == std::vector<int>{4});
  REQUIRE(b5[1].tensors == std::vector<int>{3});
  REQUIRE(b5[1].bytes == 120);
  REQUIRE(b5[2].tensors == std::vector<int>{2});
  REQUIRE(b5[2].negotiated_at == 5);
  p.announce(1, 6);
  p.announce(1, 7);
  p.announce(0, 7);
  auto b10 = p.negotiate(10);
  REQUIRE(b10.size() == 1);
  REQUIRE(b10[0].tensors == std::vector<int>{1});
  REQUIRE(p.ready_time(1) == 7);
  REQUIRE_FALSE(p.all_planned());
  p.announce(0, 11);
  auto b15 = p.negotiate(15);
  REQUIRE(b15.size() == 1);
  REQUIRE(b15[0].tensors == std::vector<int>{0});
  REQUIRE(p.all_planned());
}

TEST_CASE("fusion planner: packs in ready order up to the threshold, 0 disables fusion, dtypes apart", "[fusion]") {
  const std::vector<FusionTensor> t = {{30, 4}, {30, 4}, {30, 4}, {30, 2}, {30, 2}};
  FusionPlanner fused(t, 64, 1);
  for (int i = 4; i >= 0; --i) fused.announce(i, 1);
  auto b = fused.negotiate(2);
  REQUIRE(b.size() == 3);
  REQUIRE(b[0].tensors == std::vector<int>{4, 3});  // float16 pair: 60 B <= 64
  REQUIRE(b[0].element_bytes == 2);
  REQUIRE(b[1].tensors == std::vector<int>{2, 1});
  REQUIRE(b[2].tensors == std::vector<int>{0});

  FusionPlanner unfused(t, 0, 1);
  for (int i = 4; i >= 0; --i) unfused.announce(i, 1);
  REQUIRE(unfused.negotiate(2).size() == 5);
}

TEST_CASE("ring channels: each ring reduces its share of the buffer along its own order", "[collective]") {
  const std::vector<std::vector<int>> orders = {{0, 1, 2, 3}, {0, 3, 2, 1}, {2, 0, 3, 1}};
  const std::size_t floats = 41;  // 14, 14, 13 floats per channel; chunks of 3 and 4
  auto c = make_ring_allreduce(4, floats * 4, 4, Space::Device, orders);
  REQUIRE(c->steps() == 2 * 3);
  require_matching_messages(*c);
  require_allreduce(*c, floats, Space::Device);
  RankStep st;
  c->rank_step(2, 0, st);  // one transfer per channel: to 3, to 1 (the reversed ring), to 0
  REQUIRE(st.sends.size() == 3);
  CHECK(st.sends[0].dst == 3);
  CHECK(st.sends[1].dst == 1);
  CHECK(st.sends[2].dst == 0);
  // In every step each channel's ring moves its whole share once, over all members.
  for (int s = 0; s < c->steps(); ++s) {
    std::uint64_t bytes = 0;
    for (int m = 0; m < 4; ++m) {
      c->rank_step(m, s, st);
      for (const auto& t : st.sends) bytes += t.bytes;
    }
    CHECK(bytes == floats * 4);
  }
  // Channel shares are contiguous: channel 1 holds floats 14-27, channel 2 floats 28-40.
  c->rank_step(1, 0, st);
  CHECK(st.sends[1].offset >= 14 * 4);
  CHECK(st.sends[1].offset + st.sends[1].bytes <= 28 * 4);
  CHECK(st.sends[2].offset >= 28 * 4);
  REQUIRE_THROWS(make_ring_allreduce(3, 12, 4, Space::Device, std::vector<std::vector<int>>{}));
  REQUIRE_THROWS(make_ring_allreduce(3, 12, 4, Space::Device, std::vector<std::vector<int>>{{0, 1, 2}, {0, 0, 1}}));
}

TEST_CASE("ring and hierarchical allreduce follow a given ring order", "[collective]") {
  const std::vector<int> order = {0, 1, 2, 3, 7, 5, 6, 4};  // the DGX-1 NVLink ring
  auto ring = make_ring_allreduce(8, 4 * 53, 4, Space::Device, order);
  require_matching_messages(*ring);
  require_allreduce(*ring, 53, Space::Device);
  RankStep st;
  ring->rank_step(3, 0, st);
  REQUIRE(st.sends[0].dst == 7);
  REQUIRE(st.recvs[0].src == 2);
  ring->rank_step(4, 0, st);
  REQUIRE(st.sends[0].dst == 0);
  auto hier = make_hierarchical_allreduce(2, 4, 4 * 37, 4, Space::Device, {0, 2, 3, 1});
  require_matching_messages(*hier);
  require_allreduce(*hier, 37, Space::Device);
  hier->rank_step(5, 0, st);  // node 1, local 1: position 3, sends to position 0 = local 0
  REQUIRE(st.sends[0].dst == 4);
  // The gather to local 0 and the scatter from it also go from each position to the next, as NCCL's ring
  // reduce and broadcast: a link outside the ring (across a DGX-1's sockets) carries none of it.
  int local_steps = 0;
  for (const auto& run : hier->runs()) {
    if (run.phase != Phase::LocalGather && run.phase != Phase::LocalScatter) continue;
    ++local_steps;
    for (int m = 0; m < hier->members(); ++m) {
      hier->rank_step(m, run.first, st);
      for (const auto& t : st.sends) {
        const std::vector<int> ring = {0, 2, 3, 1};
        const auto at = std::find(ring.begin(), ring.end(), t.src % 4) - ring.begin();
        CHECK(t.dst == t.src / 4 * 4 + ring[(at + 1) % 4]);
      }
    }
  }
  CHECK(local_steps == 2 * 3);
  REQUIRE_THROWS(make_ring_allreduce(3, 12, 4, Space::Device, {0, 0, 1}));
  REQUIRE_THROWS(make_hierarchical_allreduce(1, 3, 12, 4, Space::Device, {1, 0, 2}));
}

TEST_CASE("nvls allreduce: the switch reduces and multicasts, S (1 + 1/n) through each GPU's port each way",
          "[collective]") {
  for (int p : {1, 2, 3, 8})
    for (int slices : {1, 3, 5}) {
      CAPTURE(p, slices);
      auto c = make_nvls_allreduce(p, 13 * 4, 4, slices);
      REQUIRE(c->members() == p + 1);  // the GPUs, then the switch
      REQUIRE(c->steps() == slices + 3);
      require_matching_messages(*c);
      require_workers_sum(*c, p);
    }
  // 64 floats on 8 GPUs in 2 slices: each GPU sends its whole buffer and its shard, receives both.
  auto c = make_nvls_allreduce(8, 64 * 4, 4, 2);
  std::vector<std::uint64_t> sent(9, 0), received(9, 0);
  RankStep st;
  for (int s = 0; s < c->steps(); ++s)
    for (int m = 0; m < 9; ++m) {
      c->rank_step(m, s, st);
      for (const auto& t : st.sends) sent[m] += t.bytes;
      for (const auto& t : st.recvs) received[m] += t.bytes;
    }
  for (int g = 0; g < 8; ++g) {
    CHECK(sent[g] == 64 * 4 + 8 * 4);
    CHECK(received[g] == 64 * 4 + 8 * 4);
  }
  CHECK(sent[8] == 8 * (64 * 4 + 8 * 4));
}

TEST_CASE("nvls tree allreduce: NVLS in each node, the double binary tree across, the sum on every GPU",
          "[collective]") {
  for (int nodes : {1, 2, 3, 4, 7})
    for (int local : {1, 2, 8})
      for (int slices : {1, 3}) {
        CAPTURE(nodes, local, slices);
        auto c = make_nvls_tree_allreduce(nodes, local, 13 * 4, 4, slices);
        REQUIRE(c->members() == nodes * local + nodes);  // the GPUs, then each node's switch
        require_matching_messages(*c);
        require_workers_sum(*c, nodes * local);
      }
  // One node is NVLS: the same messages in the same steps.
  auto one = make_nvls_tree_allreduce(1, 8, 64 * 4, 4, 2);
  auto nvls = make_nvls_allreduce(8, 64 * 4, 4, 2);
  REQUIRE(one->steps() == nvls->steps());
  // Two nodes of 8, 256 floats in one slice: each GPU's port carries S (1 + 1/8) each way, as NVLS; its
  // NIC sends and receives S / 16 in each tree, in one tree as the leaf, in the other as the root.
  auto two = make_nvls_tree_allreduce(2, 8, 256 * 4, 4, 1);
  CHECK(two->steps() == 1 + 5);  // the leaf's multicast at 2 + 1 + 1 + 1
  std::vector<std::uint64_t> to_switch(16, 0), from_switch(16, 0), out(16, 0), in(16, 0);
  RankStep st;
  for (int s = 0; s < two->steps(); ++s)
    for (int m = 0; m < 16; ++m) {
      two->rank_step(m, s, st);
      for (const auto& t : st.sends) (t.dst >= 16 ? to_switch : out)[m] += t.bytes;
      for (const auto& t : st.recvs) (t.src >= 16 ? from_switch : in)[m] += t.bytes;
    }
  for (int g = 0; g < 16; ++g) {
    CAPTURE(g);
    CHECK(to_switch[g] == 256 * 4 + 256 * 4 / 8);
    CHECK(from_switch[g] == 256 * 4 + 256 * 4 / 8);
    CHECK(out[g] == 256 * 4 / 8);  // half its shard up in one tree, the other half down in the other
    CHECK(in[g] == 256 * 4 / 8);
  }
}

TEST_CASE("tree: NCCL's binary trees, each rank a leaf of one and inside the other", "[collective]") {
  // NCCL's illustration for 14 ranks: 0 -> 8 -> {4, 12}, 4 -> {2, 6}, 12 -> {10, 13}, 2 -> {1, 3}, ...
  const std::vector<int> parent14 = {-1, 2, 4, 2, 8, 6, 4, 6, 0, 10, 12, 10, 8, 12};
  for (int r = 0; r < 14; ++r) CHECK(binary_tree_parent(r, 14) == parent14[r]);
  // The second tree mirrors the first for an even count (root 13) and shifts it by one for an odd (root 1).
  CHECK(double_binary_tree_parent(1, 13, 14) == -1);
  CHECK(double_binary_tree_parent(1, 5, 14) == 13 - parent14[8]);
  CHECK(double_binary_tree_parent(1, 1, 13) == -1);
  CHECK(double_binary_tree_parent(1, 9, 13) == 1);
  for (int n : {2, 5, 8, 13, 64}) {
    std::vector<int> inner(n, 0);  // trees in which each rank has a child
    for (int tree : {0, 1})
      for (int r = 0; r < n; ++r)
        if (int up = double_binary_tree_parent(tree, r, n); up >= 0) inner[up] |= 1 << tree;
    // Never inside both trees, but for tree 0's root (one child) when the count is odd, as NCCL's shift has it.
    for (int r = n % 2; r < n; ++r) CHECK(inner[r] != 3);
  }
}

TEST_CASE("tree allreduce: chains inside nodes, the double binary tree across, pipelined chunks", "[collective]") {
  for (int nodes : {1, 2, 3, 5})
    for (int local : {1, 2, 4})
      for (int channels : {1, 2, 4})
        for (int chunks : {1, 3}) {
          CAPTURE(nodes, local, channels, chunks);
          std::vector<std::vector<int>> chains(channels);
          if (local == 4) chains[channels - 1] = {2, 3, 0, 1};
          auto c = make_tree_allreduce(nodes, local, 48 * 4, 4, Space::Device, chains, chunks);
          require_matching_messages(*c);
          require_allreduce(*c, 48, Space::Device);
        }
  auto staged = make_tree_allreduce(3, 2, 48 * 4, 4, Space::Host, {{}, {}}, 2);
  require_matching_messages(*staged);
  require_allreduce(*staged, 48, Space::Host);
  REQUIRE_THROWS(make_tree_allreduce(2, 3, 12, 4, Space::Device, {{0, 0, 1}}, 1));
}

TEST_CASE("tree allreduce: chunks + 2H - 1 steps, and S up and S down through every member", "[collective]") {
  // 4 nodes of 8: one channel's tree is node 0's chain (7 hops) over the node tree 0 -> 2 -> {1, 3}, so H = 9.
  auto c = make_tree_allreduce(4, 8, 64 * 1024 * 4, 4, Space::Device, {{}}, 16);
  CHECK(c->steps() == 16 + 2 * 9 - 1);
  RankStep st;
  std::vector<std::uint64_t> up(32, 0), down(32, 0);
  for (int s = 0; s < c->steps(); ++s)
    for (int m = 0; m < 32; ++m) {
      c->rank_step(m, s, st);
      for (const auto& t : st.recvs) (t.reduce ? up : down)[m] += t.bytes;
    }
  // Node 2 (members 16-23) is inside the node tree: its head receives node 1's and node 3's sums, its chain
  // one; a leaf node's head receives the down pass once.
  CHECK(up[16] == 3 * c->bytes());
  CHECK(up[8] == 1 * c->bytes());
  CHECK(up[15] == 0);   // the chain's last GPU
  CHECK(down[0] == 0);  // the root
  for (int m = 1; m < 32; ++m) CHECK(down[m] == c->bytes());
  // NCCL's chunk: 512 KiB, halved to keep 8 per level of a 2-channel, depth-9 tree; 32 KiB at the least.
  CHECK(tree_chunks(256 << 20, 2, 9) == 256);
  CHECK(tree_chunks(64 << 20, 2, 9) == 128);  // 256 KiB chunks
  CHECK(tree_chunks(8 << 20, 2, 9) == 64);    // 64 KiB keeps 4 per level
  CHECK(tree_chunks(1 << 20, 2, 9) == 16);    // 32 KiB, the smallest
  CHECK(tree_chunks(4096, 2, 9) == 1);
}

namespace {
// What Collective::node_classes promises, step by step: every member sends and receives what its twin in its
// class's first node does (among its own node's members translated by the node; with other nodes in the same
// sizes), and remote_sends lists exactly its sends to other nodes.
void require_node_classes(const Collective& c) {
  const NodeClasses k = c.node_classes();
  REQUIRE(k.count() > 0);
  REQUIRE(k.members() == c.members());
  RankStep st, twin;
  std::vector<Transfer> remote;
  auto split = [&](const std::vector<Transfer>& ts, int m, bool outgoing) {
    const int shift = k.node(m);
    std::vector<decltype(key(Transfer{}))> own;
    std::vector<std::uint64_t> other;
    for (const Transfer& t : ts) {
      const int peer = outgoing ? t.dst : t.src;
      if (k.node(peer) != shift) {
        other.push_back(t.bytes);
        continue;
      }
      auto local = [&](int x) {  // x's place in its node: its GPUs, then its extra members
        const int gpus = k.nodes() * k.local;
        return x < gpus ? x - shift * k.local : k.local + x - gpus - shift * k.extra;
      };
      Transfer u = t;
      u.src = local(t.src);
      u.dst = local(t.dst);
      own.push_back(key(u));
    }
    std::sort(other.begin(), other.end());
    return std::make_pair(own, other);
  };
  for (int s = 0; s < c.steps(); ++s)
    for (int m = 0; m < c.members(); ++m) {
      CAPTURE(s, m);
      c.rank_step(m, s, st);
      c.rank_step(k.twin(m), s, twin);
      CHECK(split(st.sends, m, true) == split(twin.sends, k.twin(m), true));
      CHECK(split(st.recvs, m, false) == split(twin.recvs, k.twin(m), false));
      c.remote_sends(m, s, k, remote);
      std::vector<Transfer> expected;
      for (const Transfer& t : st.sends)
        if (k.node(t.dst) != k.node(m)) expected.push_back(t);
      CHECK(remote == expected);
    }
}
}  // namespace

TEST_CASE("node classes: tree and NVLSTree nodes alike move alike, and their sends to other nodes", "[collective]") {
  for (int nodes : {2, 5, 12, 16})
    for (int chunks : {1, 5}) {
      CAPTURE(nodes, chunks);
      auto tree = make_tree_allreduce(nodes, 4, 96 * 4, 4, Space::Device, {{}, {}, {2, 3, 0, 1}, {2, 3, 0, 1}}, chunks);
      require_node_classes(*tree);
      auto nvls_tree = make_nvls_tree_allreduce(nodes, 4, 96 * 4, 4, chunks);
      require_node_classes(*nvls_tree);
    }
  // 16 nodes fall into 8 classes (a node and its mirror image in the other tree); the classes number nodes
  // by first appearance.
  const NodeClasses k = make_tree_allreduce(16, 4, 96 * 4, 4, Space::Device, {{}, {}}, 3)->node_classes();
  CHECK(k.count() == 8);
  CHECK(k.of_node.front() == 0);
  for (int c = 0; c < k.count(); ++c) CHECK(k.of_node[k.first[c]] == c);
  // Collectives that know no classes say so; the default remote_sends filters rank_step's.
  CHECK(make_ring_allreduce(8, 64, 4, Space::Device)->node_classes().count() == 0);
  auto ring = make_ring_allreduce(8, 64, 4, Space::Device);
  const NodeClasses four(4, 0, {0, 0});
  std::vector<Transfer> remote;
  ring->remote_sends(3, 0, four, remote);
  REQUIRE(remote.size() == 1);
  CHECK(remote.front().dst == 4);
  ring->remote_sends(1, 0, four, remote);
  CHECK(remote.empty());
}
