#include "execute/step_model.h"

#include <algorithm>
#include <limits>
#include <queue>
#include <stdexcept>
#include <unordered_map>

namespace ringsim {

double flows_duration(const std::vector<Flow>& flows, const CommModel& cm) {
  const std::size_t n = flows.size();
  if (n == 0) return 0;
  // Edges touched by the step, densely renumbered.
  // (A map, not a vector over all of the cluster's edges: a step touches few of them.)
  std::unordered_map<int, int> local_of;
  std::vector<int> edge_ids;
  std::vector<std::vector<int>> flow_edges(n);
  for (std::size_t i = 0; i < n; ++i)
    for (int e : flows[i].path->edges) {
      const auto [it, added] = local_of.try_emplace(e, static_cast<int>(edge_ids.size()));
      if (added) edge_ids.push_back(e);
      flow_edges[i].push_back(it->second);
    }
  const std::size_t m = edge_ids.size();
  std::vector<std::vector<int>> edge_flows(m);
  for (std::size_t i = 0; i < n; ++i)
    for (int le : flow_edges[i]) edge_flows[le].push_back(static_cast<int>(i));

  std::vector<double> remaining(n), rate(n, 0), finish(n, 0);
  std::vector<char> active(n, 0);
  std::size_t left = 0;
  for (std::size_t i = 0; i < n; ++i) {
    remaining[i] = flows[i].bytes;
    if (flows[i].bytes > 0 && !flow_edges[i].empty()) {
      active[i] = 1;
      ++left;
    }
  }
  double now = 0;
  std::vector<double> cap(m);
  std::vector<int> unfrozen(m);
  std::vector<char> frozen(n);
  while (left > 0) {
    // Max-min fair rates by progressive filling: repeatedly saturate the edge with the smallest fair share.
    for (std::size_t e = 0; e < m; ++e) {
      cap[e] = cm.edge_bandwidth(edge_ids[e]);
      unfrozen[e] = 0;
      for (int f : edge_flows[e]) unfrozen[e] += active[f];
    }
    using Item = std::pair<double, int>;  // fair share, edge
    std::priority_queue<Item, std::vector<Item>, std::greater<>> heap;
    for (std::size_t e = 0; e < m; ++e)
      if (unfrozen[e] > 0) heap.push({cap[e] / unfrozen[e], static_cast<int>(e)});
    for (std::size_t i = 0; i < n; ++i) frozen[i] = !active[i];
    while (!heap.empty()) {
      auto [share, e] = heap.top();
      heap.pop();
      if (unfrozen[e] == 0) continue;
      const double current = cap[e] / unfrozen[e];
      if (current != share) {  // stale entry
        heap.push({current, e});
        continue;
      }
      for (int f : edge_flows[e]) {
        if (frozen[f]) continue;
        frozen[f] = 1;
        rate[f] = share;
        for (int other : flow_edges[f]) {
          cap[other] = std::max(0.0, cap[other] - share);
          --unfrozen[other];
          if (other != e && unfrozen[other] > 0) heap.push({cap[other] / unfrozen[other], other});
        }
      }
    }
    // Advance to the next completion.
    double dt = std::numeric_limits<double>::infinity();
    for (std::size_t i = 0; i < n; ++i)
      if (active[i]) dt = std::min(dt, remaining[i] / rate[i]);
    if (!(dt < std::numeric_limits<double>::infinity())) throw std::logic_error("step model: a flow got no bandwidth");
    now += dt;
    for (std::size_t i = 0; i < n; ++i) {
      if (!active[i]) continue;
      remaining[i] -= rate[i] * dt;
      if (remaining[i] <= flows[i].bytes * 1e-12) {
        active[i] = 0;
        finish[i] = now;
        --left;
      }
    }
  }
  double end = 0;
  for (std::size_t i = 0; i < n; ++i) end = std::max(end, finish[i] + flows[i].path->latency + flows[i].extra_latency);
  return end;
}

double collective_duration(const collective::Collective& c, CommModel& cm, std::vector<double>* edge_bytes,
                           std::vector<RunCost>* runs) {
  double total = 0;
  collective::RankStep st;
  std::vector<Flow> flows;
  const CollectiveSize size = cm.collective_size(c);
  for (const auto& run : c.runs()) {
    flows.clear();
    double slowest_local = 0, most_copying = 0;
    for (int m = 0; m < c.members(); ++m) {
      c.rank_step(m, run.first, st);
      for (const auto& t : st.sends) {
        const Path& p = cm.path(t);
        const double b = static_cast<double>(t.bytes);
        flows.push_back(
            {&p, CommModel::wire_bytes(p, b, size), CommModel::message_overhead(p, b, size) - p.overhead, b});
      }
      double copying = 0, local = 0;
      for (const auto& r : st.recvs) {
        copying += cm.receive_copy_time(r);
        if (r.reduce) local += cm.received_reduce_time(m, r.dst_space, r.bytes, size);
      }
      local += copying;
      most_copying = std::max(most_copying, copying);
      if (st.update_bytes > 0) local += cm.update_time(m, st.update_bytes);
      slowest_local = std::max(slowest_local, local);
    }
    const double step = flows_duration(flows, cm) + slowest_local;
    total += step * run.count;
    if (edge_bytes)
      for (const auto& f : flows)
        for (int e : f.path->edges) (*edge_bytes)[e] += f.payload * run.count;
    if (runs) runs->push_back({run.phase, run.count, step, static_cast<int>(flows.size()), most_copying});
  }
  return total;
}

void add_edge_bytes(const collective::Collective& c, CommModel& cm, std::vector<double>& edge_bytes) {
  collective::RankStep st;
  for (const auto& run : c.runs())
    for (int m = 0; m < c.members(); ++m) {
      c.rank_step(m, run.first, st);
      for (const auto& t : st.sends)
        for (int e : cm.path(t).edges) edge_bytes[e] += static_cast<double>(t.bytes) * run.count;
    }
}

}  // namespace ringsim
