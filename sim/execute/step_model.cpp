#include "execute/step_model.h"

#include <algorithm>
#include <functional>
#include <limits>
#include <span>
#include <stdexcept>
#include <string>
#include <unordered_map>

namespace ringsim {

namespace {

// The flows of one step as compressed rows, both ways: each flow's edges (dense local numbers, path order)
// and each edge's flows (ascending). Kept between calls: a run of thousands of flows is evaluated many times.
struct FlowGraph {
  std::vector<int> local_of;  // cluster edge -> local number, -1 where the step does not touch it
  std::vector<int> edge_ids;  // local number -> cluster edge
  std::vector<int> flow_start, flow_edges, edge_start, edge_flows, fill;

  void build(const std::vector<Flow>& flows, int cluster_edges) {
    if (local_of.size() != static_cast<std::size_t>(cluster_edges)) local_of.assign(cluster_edges, -1);
    edge_ids.clear();
    flow_start.assign(1, 0);
    flow_edges.clear();
    for (const Flow& f : flows) {
      for (int e : f.path->edges) {
        int& l = local_of[e];
        if (l < 0) {
          l = static_cast<int>(edge_ids.size());
          edge_ids.push_back(e);
        }
        flow_edges.push_back(l);
      }
      flow_start.push_back(static_cast<int>(flow_edges.size()));
    }
    const std::size_t m = edge_ids.size();
    edge_start.assign(m + 1, 0);
    for (int l : flow_edges) ++edge_start[l + 1];
    for (std::size_t e = 0; e < m; ++e) edge_start[e + 1] += edge_start[e];
    fill.assign(edge_start.begin(), edge_start.end() - 1);
    edge_flows.resize(flow_edges.size());
    for (std::size_t i = 0; i + 1 < flow_start.size(); ++i)
      for (int k = flow_start[i]; k < flow_start[i + 1]; ++k) edge_flows[fill[flow_edges[k]]++] = static_cast<int>(i);
    for (int e : edge_ids) local_of[e] = -1;  // clean for the next step
  }
  std::size_t edges() const { return edge_ids.size(); }
};

// One set of flows, all of them at once (progressive filling, event by event).
double max_min_end(const std::vector<Flow>& flows, const CommModel& cm) {
  const std::size_t n = flows.size();
  if (n == 0) return 0;
  // Edges touched by the step, densely renumbered (a step touches few of the cluster's edges).
  thread_local FlowGraph fg;
  fg.build(flows, cm.edge_count());
  const std::size_t m = fg.edges();
  auto edges_of = [&](std::size_t f) {
    return std::span<const int>(fg.flow_edges.data() + fg.flow_start[f], fg.flow_start[f + 1] - fg.flow_start[f]);
  };
  auto flows_on = [&](std::size_t e) {
    return std::span<const int>(fg.edge_flows.data() + fg.edge_start[e], fg.edge_start[e + 1] - fg.edge_start[e]);
  };

  std::vector<double> remaining(n), rate(n, 0), finish(n, 0);
  std::vector<char> active(n, 0);
  std::size_t left = 0;
  for (std::size_t i = 0; i < n; ++i) {
    remaining[i] = flows[i].bytes;
    if (flows[i].bytes > 0 && !edges_of(i).empty()) {
      active[i] = 1;
      ++left;
    }
  }
  double now = 0;
  std::vector<double> bandwidth(m), cap(m);
  for (std::size_t e = 0; e < m; ++e) bandwidth[e] = cm.edge_bandwidth(fg.edge_ids[e]);
  std::vector<int> unfrozen(m);
  std::vector<char> frozen(n);
  using Item = std::pair<double, int>;  // fair share, edge
  std::vector<Item> heap;               // a min-heap, as std::priority_queue keeps one
  const auto later = std::greater<>();
  auto push = [&](Item x) {
    heap.push_back(x);
    std::push_heap(heap.begin(), heap.end(), later);
  };
  while (left > 0) {
    // Max-min fair rates by progressive filling: repeatedly saturate the edge with the smallest fair share.
    heap.clear();
    for (std::size_t e = 0; e < m; ++e) {
      cap[e] = bandwidth[e];
      unfrozen[e] = 0;
      for (int f : flows_on(e)) unfrozen[e] += active[f];
      if (unfrozen[e] > 0) heap.push_back({cap[e] / unfrozen[e], static_cast<int>(e)});
    }
    std::make_heap(heap.begin(), heap.end(),
                   later);  // (share, edge) orders every entry: pops do not depend on the layout
    for (std::size_t i = 0; i < n; ++i) frozen[i] = !active[i];
    while (!heap.empty()) {
      std::pop_heap(heap.begin(), heap.end(), later);
      const auto [share, e] = heap.back();
      heap.pop_back();
      if (unfrozen[e] == 0) continue;
      const double current = cap[e] / unfrozen[e];
      if (current != share) {  // stale entry
        push({current, e});
        continue;
      }
      for (int f : flows_on(e)) {
        if (frozen[f]) continue;
        frozen[f] = 1;
        rate[f] = share;
        // The other edges' shares only grow as flows freeze at the smallest share, so their entries stay
        // lower bounds: each is brought up to date when it comes to the top (the stale check above).
        for (int other : edges_of(f)) {
          cap[other] = std::max(0.0, cap[other] - share);
          --unfrozen[other];
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

// Flows sharing no edge with the rest of a step are a problem of their own: their rates never depend on the
// others'. Components by union-find over shared edges, each in ascending flow order.
std::vector<std::vector<int>> components(const std::vector<Flow>& flows, int cluster_edges) {
  thread_local std::vector<int> owner;  // cluster edge -> a flow on it, -1 none
  if (owner.size() != static_cast<std::size_t>(cluster_edges)) owner.assign(cluster_edges, -1);
  std::vector<int> parent(flows.size());
  for (std::size_t i = 0; i < flows.size(); ++i) parent[i] = static_cast<int>(i);
  auto find = [&](int x) {
    while (parent[x] != x) x = parent[x] = parent[parent[x]];
    return x;
  };
  for (std::size_t i = 0; i < flows.size(); ++i)
    for (int e : flows[i].path->edges) {
      if (owner[e] < 0) {
        owner[e] = static_cast<int>(i);
        continue;
      }
      const int a = find(static_cast<int>(i)), b = find(owner[e]);
      if (a != b) parent[std::max(a, b)] = std::min(a, b);
    }
  for (const Flow& f : flows)
    for (int e : f.path->edges) owner[e] = -1;  // clean for the next step
  std::vector<std::vector<int>> out;
  std::vector<int> slot(flows.size(), -1);
  for (std::size_t i = 0; i < flows.size(); ++i) {
    const int r = find(static_cast<int>(i));
    if (slot[r] < 0) {
      slot[r] = static_cast<int>(out.size());
      out.emplace_back();
    }
    out[slot[r]].push_back(static_cast<int>(i));
  }
  return out;
}

// What a component's result depends on, exactly: each flow's bytes, latencies and edges (numbered by first
// appearance) and each edge's bandwidth. Components with equal keys (a node's flows in every node alike)
// are solved once.
std::string component_key(const std::vector<Flow>& flows, const std::vector<int>& members, const CommModel& cm) {
  thread_local std::vector<int> local;  // cluster edge -> its number in the component, -1 none yet
  if (local.size() != static_cast<std::size_t>(cm.edge_count())) local.assign(cm.edge_count(), -1);
  std::string key;
  auto put = [&](const auto& v) { key.append(reinterpret_cast<const char*>(&v), sizeof v); };
  int numbered = 0;
  for (int i : members) {
    const Flow& f = flows[i];
    put(f.bytes);
    put(f.path->latency);
    put(f.extra_latency);
    put(f.path->edges.size());
    for (int e : f.path->edges) {
      const bool fresh = local[e] < 0;
      if (fresh) local[e] = numbered++;
      put(local[e]);
      if (fresh) put(cm.edge_bandwidth(e));
    }
  }
  for (int i : members)
    for (int e : flows[i].path->edges) local[e] = -1;  // clean for the next component
  return key;
}
}  // namespace

double flows_duration(const std::vector<Flow>& flows, const CommModel& cm) {
  constexpr std::size_t kSplitFrom = 64;  // fewer flows: one problem is cheaper than finding components
  if (flows.size() < kSplitFrom) return max_min_end(flows, cm);
  const auto parts = components(flows, cm.edge_count());
  if (parts.size() == 1) return max_min_end(flows, cm);
  std::unordered_map<std::string, double> solved;
  std::vector<Flow> part;
  double end = 0;
  for (const auto& members : parts) {
    auto [it, fresh] = solved.emplace(component_key(flows, members, cm), 0.0);
    if (fresh) {
      part.clear();
      for (int i : members) part.push_back(flows[i]);
      it->second = max_min_end(part, cm);
    }
    end = std::max(end, it->second);
  }
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
        flows.push_back({&p, CommModel::wire_bytes(p, b, size, c.protocol),
                         CommModel::message_overhead(p, b, size, c.protocol) - p.overhead, b});
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

}  // namespace ringsim
