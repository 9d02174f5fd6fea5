#include "execute/analytic/step_model.h"

#include <algorithm>
#include <bit>
#include <functional>
#include <limits>
#include <optional>
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
// others'. Components by union-find over shared edges: component k is flows order[start[k], start[k + 1]), in
// ascending flow order.
struct Components {
  std::vector<int> order, start;
  std::size_t size() const { return start.empty() ? 0 : start.size() - 1; }
  std::span<const int> operator[](std::size_t k) const {
    return {order.data() + start[k], static_cast<std::size_t>(start[k + 1] - start[k])};
  }
};

// A step's flows' edges and path latencies side by side, in flow order: the grouping and the keys walk
// them at memory speed instead of chasing each flow's path.
struct FlowEdges {
  std::vector<int> start{0}, list;  // flow i's edges: list[start[i], start[i + 1])
  std::vector<double> bandwidth;    // each edge's in list, the model's edge_bandwidth
  std::vector<double> latency;      // flow i's path latency
  void clear() {
    start.assign(1, 0);
    list.clear();
    bandwidth.clear();
    latency.clear();
  }
  void add(std::span<const int> edges, std::span<const double> bandwidths, double path_latency) {
    list.insert(list.end(), edges.begin(), edges.end());
    bandwidth.insert(bandwidth.end(), bandwidths.begin(), bandwidths.end());
    start.push_back(static_cast<int>(list.size()));
    latency.push_back(path_latency);
  }
  void add_all(const std::vector<Flow>& flows, const CommModel& cm) {
    clear();
    std::vector<double> bw;
    for (const Flow& f : flows) {
      bw.clear();
      for (int e : f.path->edges) bw.push_back(cm.edge_bandwidth(e));
      add(f.path->edges, bw, f.path->latency);
    }
  }
  std::span<const int> of(std::size_t i) const {
    return {list.data() + start[i], static_cast<std::size_t>(start[i + 1] - start[i])};
  }
};

// Per cluster edge, a number set in the current round (-1: none); a new round clears only the edges the last
// one set.
class EdgeMarks {
 public:
  void next_round(int edges) {
    if (marks_.size() != static_cast<std::size_t>(edges))
      marks_.assign(edges, -1);  // another cluster: the marks set were another graph's
    else
      for (int e : set_) marks_[e] = -1;
    set_.clear();
  }
  int get(int e) const { return marks_[e]; }
  void set(int e, int v) {
    if (marks_[e] < 0) set_.push_back(e);
    marks_[e] = v;
  }

 private:
  std::vector<int> marks_, set_;
};

void components(const FlowEdges& flows, int cluster_edges, Components& out) {
  thread_local EdgeMarks owner;  // cluster edge -> a flow on it
  owner.next_round(cluster_edges);
  thread_local std::vector<int> parent, slot;
  const std::size_t n = flows.latency.size();
  parent.resize(n);
  for (std::size_t i = 0; i < n; ++i) parent[i] = static_cast<int>(i);
  auto find = [&](int x) {
    while (parent[x] != x) x = parent[x] = parent[parent[x]];
    return x;
  };
  for (std::size_t i = 0; i < n; ++i)
    for (int e : flows.of(i)) {
      const int o = owner.get(e);
      if (o < 0) {
        owner.set(e, static_cast<int>(i));
        continue;
      }
      const int a = find(static_cast<int>(i)), b = find(o);
      if (a != b) parent[std::max(a, b)] = std::min(a, b);
    }
  // Components numbered by their first flow; counted, then filled in flow order.
  slot.assign(n, -1);
  out.start.assign(1, 0);
  for (std::size_t i = 0; i < n; ++i) {
    const int r = find(static_cast<int>(i));
    if (slot[r] < 0) {
      slot[r] = static_cast<int>(out.start.size()) - 1;
      out.start.push_back(0);
    }
    ++out.start[slot[r] + 1];
  }
  for (std::size_t k = 1; k < out.start.size(); ++k) out.start[k] += out.start[k - 1];
  thread_local std::vector<int> fill;
  fill.assign(out.start.begin(), out.start.end() - 1);
  out.order.resize(n);
  for (std::size_t i = 0; i < n; ++i) out.order[fill[slot[find(static_cast<int>(i))]]++] = static_cast<int>(i);
}

// What a component's result depends on, exactly: each flow's bytes, latencies and edges (numbered by first
// appearance) and each edge's bandwidth, as words. Components with equal keys (a node's flows in every node
// alike) are solved once.
void component_key(const std::vector<Flow>& flows, const FlowEdges& edges, std::span<const int> members,
                   const CommModel& cm, std::vector<std::uint64_t>& key) {
  thread_local EdgeMarks local;  // cluster edge -> its number in the component
  local.next_round(cm.edge_count());
  key.clear();
  auto word = [](double v) { return std::bit_cast<std::uint64_t>(v); };
  int numbered = 0;
  for (int i : members) {
    const Flow& f = flows[i];
    const std::span<const int> path = edges.of(i);
    key.insert(key.end(), {word(f.bytes), word(edges.latency[i]), word(f.extra_latency), path.size()});
    for (std::size_t j = 0; j < path.size(); ++j) {
      const int e = path[j];
      int l = local.get(e);
      const bool fresh = l < 0;
      if (fresh) local.set(e, l = numbered++);
      key.push_back(static_cast<std::uint64_t>(l));
      if (fresh) key.push_back(word(edges.bandwidth[edges.start[i] + j]));
    }
  }
}

struct KeyHash {  // four independent lanes: a long key hashes at the multiplier's throughput, not its latency
  std::size_t operator()(const std::vector<std::uint64_t>& key) const {
    constexpr std::uint64_t kMix = 0x9E3779B97F4A7C15ull;
    std::array<std::uint64_t, 4> h{key.size(), 1, 2, 3};
    std::size_t i = 0;
    for (; i + 4 <= key.size(); i += 4)
      for (int l = 0; l < 4; ++l) h[l] = (h[l] ^ key[i + l]) * kMix + (h[l] >> 29);
    for (; i < key.size(); ++i) h[0] = (h[0] ^ key[i]) * kMix + (h[0] >> 29);
    return static_cast<std::size_t>(((h[0] * kMix ^ h[1]) * kMix ^ h[2]) * kMix ^ h[3]);
  }
};
// Components solved so far, by key: kept over a collective's steps, whose components repeat.
using Solved = std::unordered_map<std::vector<std::uint64_t>, double, KeyHash>;
}  // namespace

namespace {
// The latest end over the step's components; alike components solved once.
double parts_duration(const std::vector<Flow>& flows, const FlowEdges& edges, const Components& parts,
                      const CommModel& cm, Solved& solved) {
  thread_local std::vector<std::uint64_t> key;
  std::vector<Flow> part;
  double end = 0;
  for (std::size_t k = 0; k < parts.size(); ++k) {
    component_key(flows, edges, parts[k], cm, key);
    auto it = solved.find(key);
    if (it == solved.end()) {
      part.clear();
      for (int i : parts[k]) part.push_back(flows[i]);
      it = solved.emplace(key, max_min_end(part, cm)).first;
    }
    end = std::max(end, it->second);
  }
  return end;
}

// One step's flows and its slowest member's own work (its copies, reductions and update).
struct StepFlows {
  std::vector<Flow> flows;
  FlowEdges edges;        // each flow's edges, side by side
  std::vector<int> pair;  // each flow's member pair (FlowMaker::pairs)
  std::vector<int> own;   // by node class: the node whose transfer among its own members it is; -1 between nodes
  int unlisted = 0;       // by node class: the other nodes' transfers among their own members
  double slowest_local = 0, most_copying = 0;
  void clear() {
    flows.clear();
    edges.clear();
    pair.clear();
    own.clear();
    unlisted = 0;
    slowest_local = most_copying = 0;
  }
};

// A collective's transfers as flows: each member pair's path (and spaces), found in an open-addressing table
// faster than in the model's map of every path, with the costs of the last message size it carried (a pair
// carries few sizes), and the bytes it carried over the collective's runs.
class FlowMaker {
 public:
  struct Pair {
    std::uint64_t key = 0;
    const Path* path = nullptr;
    int edges_at = 0, edge_count = 0;        // its path's edges in the arena (read there, not in the path)
    double bytes = -1, wire = 0, extra = 0;  // the last message size and its costs
    double carried = 0, carried_own = 0;     // over the runs: between nodes (or unclassed), within own_node
    int own_node = -1;
    double latency = 0;  // its path's
  };
  FlowMaker(CommModel& cm, const collective::Collective& c)
      : cm_(cm), c_(c), size_(cm.collective_size(c)), slots_(1024, -1) {}
  // The transfer's flow, its edges added to `edges`; `pair` its member pair's index in pairs().
  Flow operator()(const collective::Transfer& t, int& pair, FlowEdges& edges) {
    const std::uint64_t key = (static_cast<std::uint64_t>(t.src) << 32 | static_cast<std::uint64_t>(t.dst)) << 2 |
                              static_cast<std::uint64_t>(t.src_space) << 1 | static_cast<std::uint64_t>(t.dst_space);
    pair = find(key, t);
    Pair& k = pairs_[pair];
    const double b = static_cast<double>(t.bytes);
    if (b != k.bytes) {
      k.bytes = b;
      k.wire = CommModel::wire_bytes(*k.path, b, size_, c_.protocol);
      k.extra = CommModel::message_overhead(*k.path, b, size_, c_.protocol) - k.path->overhead;
    }
    const auto n = static_cast<std::size_t>(k.edge_count);
    edges.add({arena_.data() + k.edges_at, n}, {arena_bandwidth_.data() + k.edges_at, n}, k.latency);
    return {k.path, k.wire, k.extra, b};
  }
  std::vector<Pair>& pairs() { return pairs_; }
  CommModel& model() { return cm_; }
  const CollectiveSize& size() const { return size_; }

 private:
  std::size_t slot(std::uint64_t key) const { return (key * 0x9E3779B97F4A7C15ull >> 20) & (slots_.size() - 1); }
  int find(std::uint64_t key, const collective::Transfer& t) {
    std::size_t i = slot(key);
    for (; slots_[i] >= 0; i = (i + 1) & (slots_.size() - 1))
      if (pairs_[slots_[i]].key == key) return slots_[i];
    const Path& p = cm_.path(t);
    pairs_.push_back({key, &p, static_cast<int>(arena_.size()), static_cast<int>(p.edges.size())});
    pairs_.back().latency = p.latency;
    arena_.insert(arena_.end(), p.edges.begin(), p.edges.end());
    for (int e : p.edges) arena_bandwidth_.push_back(cm_.edge_bandwidth(e));
    if (2 * pairs_.size() > slots_.size()) {
      grow();
      for (i = slot(key); slots_[i] >= 0;) i = (i + 1) & (slots_.size() - 1);
    }
    slots_[i] = static_cast<int>(pairs_.size()) - 1;
    return slots_[i];
  }
  void grow() {
    slots_.assign(slots_.size() * 2, -1);
    for (std::size_t k = 0; k + 1 < pairs_.size(); ++k) {  // all but the one being added
      std::size_t i = slot(pairs_[k].key);
      while (slots_[i] >= 0) i = (i + 1) & (slots_.size() - 1);
      slots_[i] = static_cast<int>(k);
    }
  }
  CommModel& cm_;
  const collective::Collective& c_;
  const CollectiveSize size_;
  std::vector<Pair> pairs_;              // in order of first use
  std::vector<int> arena_;               // the pairs' paths' edges, in the same order
  std::vector<double> arena_bandwidth_;  // and their bandwidths
  std::vector<int> slots_;               // indices into pairs_, -1 empty; a power of two, at most half used
};

// Member m's part of step s: its sends (with node classes, each marked as staying in its node or not), and
// its own work.
void add_member(const collective::Collective& c, FlowMaker& make, int m, int s, const collective::NodeClasses* k,
                StepFlows& out) {
  const CommModel& cm = make.model();
  const CollectiveSize& size = make.size();
  thread_local collective::RankStep st;
  c.rank_step(m, s, st);
  for (const auto& t : st.sends) {
    out.flows.push_back(make(t, out.pair.emplace_back(), out.edges));
    if (k) out.own.push_back(k->node(t.dst) == k->node(m) ? k->node(m) : -1);
  }
  double copying = 0, local_s = 0;
  for (const auto& r : st.recvs) {
    copying += cm.receive_copy_time(r);
    if (r.reduce) local_s += cm.received_reduce_time(m, r.dst_space, r.bytes, size);
  }
  local_s += copying;
  out.most_copying = std::max(out.most_copying, copying);
  if (st.update_bytes > 0) local_s += cm.update_time(m, st.update_bytes);
  out.slowest_local = std::max(out.slowest_local, local_s);
}

// All flows of a step at once, alike components solved once (and, over a collective's steps, `solved`).
double cached_flows_duration(const std::vector<Flow>& flows, const FlowEdges& edges, const CommModel& cm,
                             Solved& solved) {
  constexpr std::size_t kSplitFrom = 64;  // fewer flows: one problem is cheaper than finding components
  if (flows.size() < kSplitFrom) return max_min_end(flows, cm);
  thread_local Components parts;
  components(edges, cm.edge_count(), parts);
  if (parts.size() == 1) return max_min_end(flows, cm);
  return parts_duration(flows, edges, parts, cm, solved);
}

// Step s by node class: every member of each class's first node, and the other nodes' sends to other nodes.
// Their transfers among their own members are the first node's, translated, and cost the same provided the
// first node's stay on its own links and share none with another flow; where not, the step fails (nullopt).
std::optional<double> classed_step(const collective::Collective& c, const collective::NodeClasses& k, FlowMaker& make,
                                   int s, Solved& solved, StepFlows& out) {
  CommModel& cm = make.model();
  thread_local std::vector<collective::Transfer> sends;
  std::vector<int> own_count(k.count(), 0);  // per class, its first node's transfers among its members
  for (int n = 0; n < k.nodes(); ++n) {
    const bool whole = k.first[k.of_node[n]] == n;
    for (int i = 0; i < k.local + k.extra; ++i) {
      const int m = k.member(n, i);
      if (whole) {
        const std::size_t from = out.flows.size();
        add_member(c, make, m, s, &k, out);
        for (std::size_t f = from; f < out.flows.size(); ++f) own_count[k.of_node[n]] += out.own[f] >= 0;
        continue;
      }
      c.remote_sends(m, s, k, sends);
      for (const auto& t : sends) {
        out.flows.push_back(make(t, out.pair.emplace_back(), out.edges));
        out.own.push_back(-1);
      }
    }
    if (!whole) out.unlisted += own_count[k.of_node[n]];
  }
  for (std::size_t i = 0; i < out.flows.size(); ++i)
    for (int e : out.edges.of(i))
      if (out.own[i] >= 0 && cm.translated_edge(e, out.own[i], out.own[i]) != e) return std::nullopt;
  thread_local Components parts;
  components(out.edges, cm.edge_count(), parts);
  for (std::size_t p = 0; p < parts.size(); ++p)
    for (int i : parts[p])
      if (out.own[i] != out.own[parts[p].front()]) return std::nullopt;
  return parts_duration(out.flows, out.edges, parts, cm, solved);
}

// The loads inside the nodes evaluated through their class's first node: that node's (`first_bytes` on
// the edges of `touched`), translated. False where an edge has no counterpart.
bool add_translated(const collective::NodeClasses& k, CommModel& cm, const std::vector<double>& first_bytes,
                    const std::vector<std::pair<int, int>>& touched, std::vector<double>& edge_bytes) {
  for (int n = 0; n < k.nodes(); ++n) {
    const int rep = k.first[k.of_node[n]];
    if (rep == n) continue;
    for (const auto& [e, node] : touched) {
      if (node != rep) continue;
      const int there = cm.translated_edge(e, rep, n);
      if (there < 0) return false;
      edge_bytes[there] += first_bytes[e];
    }
  }
  return true;
}
}  // namespace

double flows_duration(const std::vector<Flow>& flows, const CommModel& cm) {
  Solved solved;
  FlowEdges edges;
  edges.add_all(flows, cm);
  return cached_flows_duration(flows, edges, cm, solved);
}

namespace {
// The bytes each member pair carried, onto its path's edges; a first node's own pairs' into `own_bytes`,
// whose edges `touched` lists with the node.
void add_carried(const std::vector<FlowMaker::Pair>& pairs, std::vector<double>& edge_bytes,
                 std::vector<double>& own_bytes, std::vector<std::pair<int, int>>& touched) {
  std::vector<char> marked;
  for (const FlowMaker::Pair& p : pairs)
    for (int e : p.path->edges) {
      if (p.carried != 0) edge_bytes[e] += p.carried;
      if (p.carried_own == 0) continue;
      if (own_bytes.empty()) {
        own_bytes.assign(edge_bytes.size(), 0);
        marked.assign(edge_bytes.size(), 0);
      }
      if (!marked[e]) {
        marked[e] = 1;
        touched.push_back({e, p.own_node});
      }
      own_bytes[e] += p.carried_own;
    }
}
}  // namespace

double collective_duration(const collective::Collective& c, CommModel& cm, std::vector<double>* edge_bytes,
                           std::vector<RunCost>* runs) {
  double total = 0;
  StepFlows step;
  // Nodes by class where the collective knows them; a step that fails the check ends their use.
  collective::NodeClasses classes = c.node_classes();
  if (!cm.by_node_class(classes, c)) classes.clear();
  const collective::NodeClasses used = classes;
  FlowMaker make(cm, c);
  Solved solved;
  std::vector<double> own_bytes;             // the first nodes' loads inside themselves
  std::vector<std::pair<int, int>> touched;  // (edge, node) of those loads, each once
  for (const auto& run : c.runs()) {
    step.clear();
    std::optional<double> moved;
    if (!classes.of_node.empty()) moved = classed_step(c, classes, make, run.first, solved, step);
    if (!moved) {
      classes.clear();
      step.clear();
      for (int m = 0; m < c.members(); ++m) add_member(c, make, m, run.first, nullptr, step);
      moved = cached_flows_duration(step.flows, step.edges, cm, solved);
    }
    const double step_s = *moved + step.slowest_local;
    total += step_s * run.count;
    if (edge_bytes)
      for (std::size_t i = 0; i < step.flows.size(); ++i) {
        FlowMaker::Pair& p = make.pairs()[step.pair[i]];
        const bool own = !step.own.empty() && step.own[i] >= 0;
        (own ? p.carried_own : p.carried) += step.flows[i].payload * run.count;
        if (own) p.own_node = step.own[i];
      }
    if (runs)
      runs->push_back({run.phase, run.count, step_s, static_cast<int>(step.flows.size()) + step.unlisted,
                       step.most_copying, !step.own.empty()});
  }
  if (edge_bytes) add_carried(make.pairs(), *edge_bytes, own_bytes, touched);
  if (!touched.empty()) {
    for (const auto& [e, node] : touched) (*edge_bytes)[e] += own_bytes[e];
    if (!add_translated(used, cm, own_bytes, touched, *edge_bytes))
      throw std::logic_error("step model: a node's link has no counterpart in a node of its class");
  }
  return total;
}

}  // namespace ringsim
