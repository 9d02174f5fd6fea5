#include "graph/ring_search.h"

#include <algorithm>
#include <stdexcept>

namespace ringsim {

namespace {

std::vector<int> index_order(int n) {
  std::vector<int> order(n);
  for (int i = 0; i < n; ++i) order[i] = i;
  return order;
}

// Candidate rings inside a node: every cycle through the node's n ranks starting at rank 0 (up to 8 of
// them), else the local ring and its reverse.
std::vector<std::vector<int>> candidate_cycles(int n, const std::vector<int>& local) {
  if (n > 8) return {local, std::vector<int>(local.rbegin(), local.rend())};
  std::vector<std::vector<int>> cycles;
  std::vector<int> cur = index_order(n);
  do cycles.push_back(cur);
  while (std::next_permutation(cur.begin() + 1, cur.end()));
  return cycles;
}

std::vector<int> entered_at(const std::vector<int>& cycle, int r) {
  std::vector<int> l(cycle.begin() + r, cycle.end());
  l.insert(l.end(), cycle.begin(), cycle.begin() + r);
  return l;
}

// Ranks of `node_count` nodes of n ranks from node `first`, each node's in the local order l.
std::vector<int> ring_of(const std::vector<int>& l, int n, int node_count, int first = 0) {
  std::vector<int> order;
  for (int node = first; node < first + node_count; ++node)
    for (int r : l) order.push_back(node * n + r);
  return order;
}

// Ring c over `node_count` nodes in domains of `domain` (RingSearch::ring_orders): each domain's nodes from
// its (c mod size)-th on.
std::vector<int> channel_ring_of(const std::vector<int>& l, int n, int node_count, int domain, int c) {
  if (domain <= 1 || node_count <= domain) return ring_of(l, n, node_count);
  std::vector<int> order;
  for (int base = 0; base < node_count; base += domain) {
    const int size = std::min(domain, node_count - base);
    for (int k = 0; k < size; ++k)
      for (int r : l) order.push_back((base + (k + c) % size) * n + r);
  }
  return order;
}

// Per-step load of every link under the rings committed so far: transfers over effective bandwidth. A
// candidate ring is staged, evaluated (the most loaded link and the sum of squared loads with it) and
// dropped, or committed.
class LinkLoads {
 public:
  explicit LinkLoads(PathCost& cost) : cost_(cost), load_(cost.edge_count(), 0), delta_(cost.edge_count(), 0) {
    for (int e = 0; e < cost.edge_count(); ++e) bandwidth_.push_back(cost.edge_bandwidth(e));
  }
  void stage(const std::vector<int>& order) {
    for (std::size_t i = 0; i < order.size(); ++i) {
      const int a = order[i], b = order[(i + 1) % order.size()];
      if (a == b) continue;
      for (int e : cost_.hop(a, b).edges) {
        if (delta_[e] == 0) touched_.push_back(e);
        delta_[e] += 1 / bandwidth_[e];
      }
    }
  }
  void evaluate(double& mx, double& sq) {  // with the staged ring added; clears the stage
    mx = max_load_;
    sq = sum_sq_;
    for (int e : touched_) {
      const double after = load_[e] + delta_[e];
      mx = std::max(mx, after);
      sq += after * after - load_[e] * load_[e];
      delta_[e] = 0;
    }
    touched_.clear();
  }
  void commit(const std::vector<int>& order) {
    stage(order);
    for (int e : touched_) {
      sum_sq_ += (load_[e] + delta_[e]) * (load_[e] + delta_[e]) - load_[e] * load_[e];
      load_[e] += delta_[e];
      max_load_ = std::max(max_load_, load_[e]);
      delta_[e] = 0;
    }
    touched_.clear();
  }
  void totals(double& mx, double& sq) const {
    mx = max_load_;
    sq = sum_sq_;
  }
  void remove(const std::vector<int>& order) {  // a committed ring; the maximum and sum are recounted
    stage(order);
    for (int e : touched_) {
      load_[e] = std::max(0.0, load_[e] - delta_[e]);
      delta_[e] = 0;
    }
    touched_.clear();
    max_load_ = sum_sq_ = 0;
    for (double l : load_) {
      max_load_ = std::max(max_load_, l);
      sum_sq_ += l * l;
    }
  }

 private:
  PathCost& cost_;
  std::vector<double> bandwidth_, load_, delta_;
  std::vector<int> touched_;
  double max_load_ = 0, sum_sq_ = 0;
};

}  // namespace

std::vector<int> RingSearch::local_ring_order() {
  if (!local_ring_.empty()) return local_ring_;  // searched once
  const int n = cost_.ranks_per_node();
  std::vector<int> order = index_order(n);
  if (n <= 2 || n > 10) return local_ring_ = order;
  std::vector<std::vector<double>> bw(n, std::vector<double>(n)), lat(n, std::vector<double>(n));
  for (int a = 0; a < n; ++a)
    for (int b = 0; b < n; ++b) {
      if (a == b) continue;
      const PathCost::Hop p = cost_.hop(a, b);
      double slowest = 1e300;
      for (int e : p.edges) slowest = std::min(slowest, cost_.edge_bandwidth(e));
      bw[a][b] = slowest;
      lat[a][b] = p.latency;
    }
  std::vector<int> best = order, cur = order;
  double best_bw = -1, best_lat = 0;
  do {  // permutations of positions 1..n-1, in lexicographic order
    double slowest = 1e300, total = 0;
    for (int i = 0; i < n; ++i) {
      const int a = cur[i], b = cur[(i + 1) % n];
      slowest = std::min(slowest, bw[a][b]);
      total += lat[a][b];
    }
    if (slowest > best_bw * (1 + 1e-12) || (slowest >= best_bw * (1 - 1e-12) && total < best_lat * (1 - 1e-12))) {
      best = cur;
      best_bw = slowest;
      best_lat = total;
    }
  } while (std::next_permutation(cur.begin() + 1, cur.end()));
  return local_ring_ = best;
}

bool RingSearch::whole_nodes(const std::vector<int>& local) const {
  const int n = cost_.ranks_per_node();
  return static_cast<int>(local.size()) == n && cost_.workers() % n == 0;
}

std::vector<int> RingSearch::ring_order() {
  const std::vector<int> local = local_ring_order();
  if (!whole_nodes(local)) return index_order(cost_.workers());
  const int n = cost_.ranks_per_node();
  return ring_of(local, n, cost_.workers() / n);
}

std::vector<std::vector<int>> RingSearch::ring_orders(int channels) {
  if (channels < 1) throw std::invalid_argument("ring channels: at least one");
  std::vector<std::vector<int>> rings{ring_order()};
  if (channels == 1) return rings;
  const std::vector<int> local = local_ring_order();
  if (!whole_nodes(local)) {  // index order: the same ring each channel
    rings.assign(channels, rings.front());
    return rings;
  }
  const int n = cost_.ranks_per_node();
  const int nodes = cost_.workers() / n, sampled = std::min(nodes, 2);
  const int first = sampled > 1 ? std::clamp(cost_.sampled_node(), 0, nodes - 2) : 0;
  const std::vector<std::vector<int>> cycles = candidate_cycles(n, local);
  LinkLoads loads(cost_);  // over `sampled` nodes' worth of ring
  loads.commit(ring_of(local, n, sampled, first));
  // The best candidate given the rings committed: the most loaded link least loaded, then the loads most
  // even, then the first. Paired: each with its reverse, which takes every link's other direction.
  auto reversed = [](std::vector<int> l) {
    std::reverse(l.begin(), l.end());
    return l;
  };
  auto best_candidate = [&](double& best_max, double& best_sq, bool paired) {
    std::vector<int> best;
    for (const auto& cycle : cycles)
      for (int r = 0; r < (sampled > 1 ? n : 1); ++r) {
        std::vector<int> l = entered_at(cycle, r);
        loads.stage(ring_of(l, n, sampled, first));
        if (paired) loads.stage(ring_of(reversed(l), n, sampled, first));
        double mx = 0, sq = 0;
        loads.evaluate(mx, sq);
        if (best.empty() || mx < best_max * (1 - 1e-9) || (mx <= best_max * (1 + 1e-9) && sq < best_sq * (1 - 1e-9))) {
          best = std::move(l);
          best_max = mx;
          best_sq = sq;
        }
      }
    return best;
  };
  // Rings in pairs, a ring and its reverse (the first's reverse second), as NCCL's search finds them on
  // NVLink meshes; an odd last one alone.
  std::vector<std::vector<int>> chosen{local};
  double mx = 0, sq = 0;
  for (int c = 1; c < channels; ++c) {
    if (c % 2 == 1)
      chosen.push_back(reversed(chosen[c - 1]));
    else
      chosen.push_back(best_candidate(mx, sq, c + 1 < channels));
    loads.commit(ring_of(chosen.back(), n, sampled, first));
  }
  loads.totals(mx, sq);
  // Greedy choices can leave two rings on one link where another set shares none: choose each ring again
  // given all the others, while that lowers the loads (NCCL's search backtracks; a few rounds here).
  for (int round = 0, improved = 1; round < 4 && improved; ++round) {
    improved = 0;
    for (int c = 1; c < channels; ++c) {
      const double before_max = mx, before_sq = sq;
      loads.remove(ring_of(chosen[c], n, sampled, first));
      std::vector<int> again = best_candidate(mx, sq, false);
      if (mx < before_max * (1 - 1e-9) || (mx <= before_max * (1 + 1e-9) && sq < before_sq * (1 - 1e-9))) {
        chosen[c] = std::move(again);
        improved = 1;
      } else {
        mx = before_max;
        sq = before_sq;
      }
      loads.commit(ring_of(chosen[c], n, sampled, first));
    }
  }
  for (int c = 1; c < channels; ++c) rings.push_back(channel_ring_of(chosen[c], n, nodes, cost_.domain_nodes(), c));
  return rings;
}

}  // namespace ringsim
