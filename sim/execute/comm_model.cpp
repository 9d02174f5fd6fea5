#include "execute/comm_model.h"

#include <algorithm>
#include <limits>
#include <optional>
#include <stdexcept>

namespace ringsim {

namespace {
bool is_fabric(LinkKind k) { return k == LinkKind::Ethernet || k == LinkKind::InfiniBand; }
}  // namespace

CommModel::CommModel(const Catalog& catalog, const Scenario& s, const Topology& topo)
    : topo_(topo),
      lib_(catalog.library(std::string(to_string(s.communication.library)))),
      gpu_(catalog.gpu(catalog.sku(s.cluster.sku).gpu)),
      router_(topo) {
  footprint_keyed_ = lib_.host_reduction_regimes_by == RegimeKey::Footprint;
  for (const PathProfile* p : {&lib_.intra_node, &lib_.infiniband, &lib_.ethernet})
    footprint_keyed_ = footprint_keyed_ || p->regimes_by == RegimeKey::Footprint;
  if (topo.shape().fabric == FabricKind::InfiniBand)
    gpu_rail_ = catalog.layout(catalog.sku(topo.shape().sku).layout).gpu_rail;
  const TopologyGraph& g = topo.graph();
  for (auto e : boost::make_iterator_range(boost::edges(g))) {
    edge_index_.emplace(e.get_property(), static_cast<int>(edges_.size()));
    edges_.push_back(e);
    const Link& l = g[e];
    const PathProfile& p = is_fabric(l.kind) ? lib_.fabric(topo.shape().fabric) : lib_.intra_node;
    edge_bw_.push_back(l.bandwidth * p.bandwidth_fraction);
  }
  // Node templates: vertices of node n are contiguous and laid out like node 0's.
  node_base_.assign(topo.nodes(), 0);
  std::vector<std::size_t> count(topo.nodes(), 0);
  for (auto v : boost::make_iterator_range(boost::vertices(g))) {
    const int n = g[v].node;
    if (n < 0) continue;
    if (count[n]++ == 0) node_base_[n] = v;
  }
  node_size_ = count.empty() ? 0 : count[0];
  uniform_nodes_ = true;
  for (int n = 0; n < topo.nodes() && uniform_nodes_; ++n) {
    if (count[n] != node_size_) uniform_nodes_ = false;
    for (std::size_t i = 0; i < count[n] && uniform_nodes_; ++i) {
      const Device& a = g[node_base_[0] + i];
      const Device& b = g[node_base_[n] + i];
      if (a.kind != b.kind || a.local_index != b.local_index || b.node != n) uniform_nodes_ = false;
    }
  }

  // Worker ranks: GPUs node-major; each with the host memory of the socket nearest to it.
  const int gpn = s.cluster.gpus_per_node;
  ranks_per_node_ = gpn;
  workers_ = s.cluster.nodes * gpn;
  std::vector<VertexId> nearest(gpn);
  for (int i = 0; i < gpn; ++i) {
    const VertexId gv = topo.gpu(0, i);
    double best = 0;
    bool found = false;
    for (int sock = 0; sock < topo.sockets(); ++sock) {
      const VertexId mem = topo.host_memory(0, sock);
      const double lat = router_.route(gv, mem).latency;
      if (!found || lat < best) {
        best = lat;
        nearest[i] = mem;
        found = true;
      }
    }
    if (!found) throw std::runtime_error("node has no host memory");
  }
  for (int r = 0; r < workers_; ++r) {
    const int node = r / gpn, local = r % gpn;
    const VertexId dev = topo.gpu(node, local);
    // A CPU process keeps its buffers in its own (host) memory: both spaces are the process.
    places_.push_back(gpu_.cpu_process ? MemberPlace{dev, dev, false}
                                       : MemberPlace{dev, from_template(nearest[local], node), true});
  }
  if (gpu_.cpu_process) {
    // More processes than cores: every rank of a collective step is busy at once, and a step ends when
    // its slowest rank is done. The scheduler keeps processes on their cores over a step's milliseconds,
    // so the busiest core runs ceil(processes / cores) of them and each of those copies and reduces at
    // that fraction of one core's rate (3 processes on 2 cores: 1/2, not 2/3; see validate/README.md).
    const int vcpus = std::max(1, catalog.sku(s.cluster.sku).vcpus);
    const int per_core = (gpn + vcpus - 1) / vcpus;
    cpu_share_ = 1.0 / per_core;
    // A message is received when its receiver runs: with k processes on a core, its turn comes after the
    // scheduler has handed the core over to it from up to k - 1 others (measured with 2 processes on one
    // core: ringsim-real calibrate's sendrecv_one_core). Processes spread over several shared cores wait at
    // both ends: a step's slowest message crosses cores, and its sender had to get its turn on its own
    // core first (sendrecv_shared_cores: two cores, each shared with a yielding thread; sim/HISTORY.md).
    const double per_turn = gpu_.core_handoff + (vcpus > 1 ? gpu_.cross_core_handoff : 0.0);
    handoff_ = (per_core - 1) * per_turn;
    for (int i = 0; i < edge_count(); ++i) {
      const EdgeId e = edges_[i];
      if (g[boost::source(e, g)].kind == DeviceKind::Gpu || g[boost::target(e, g)].kind == DeviceKind::Gpu)
        edge_bw_[i] *= cpu_share_;
    }
  }
}

void CommModel::set_servers(const std::vector<MemberPlace>& servers) {
  places_.resize(workers_);
  places_.insert(places_.end(), servers.begin(), servers.end());
}

VertexId CommModel::to_template(VertexId v) const {
  const int n = topo_.device(v).node;
  return v - node_base_[n] + node_base_[0];
}
VertexId CommModel::from_template(VertexId v, int node) const { return v - node_base_[0] + node_base_[node]; }

const Route& CommModel::intra(VertexId a, VertexId b) {
  auto key = std::make_pair(a, b);
  if (auto it = intra_routes_.find(key); it != intra_routes_.end()) return it->second;
  const int node = topo_.device(a).node;
  if (!uniform_nodes_ || node == 0) return intra_routes_.emplace(key, router_.route(a, b)).first->second;
  auto tkey = std::make_pair(to_template(a), to_template(b));
  auto tit = template_routes_.find(tkey);
  if (tit == template_routes_.end()) tit = template_routes_.emplace(tkey, router_.route(tkey.first, tkey.second)).first;
  const TopologyGraph& g = topo_.graph();
  Route r = tit->second;
  r.src = a;
  r.dst = b;
  for (auto& e : r.edges) {
    auto [ne, ok] = boost::edge(from_template(boost::source(e, g), node), from_template(boost::target(e, g), node), g);
    if (!ok) throw std::logic_error("node template translation failed");
    e = ne;
  }
  return intra_routes_.emplace(key, std::move(r)).first->second;
}

const Route& CommModel::fabric(VertexId nic_a, VertexId nic_b, int node_b) {
  const auto key = std::make_pair(nic_a, nic_b);
  if (auto it = fabric_routes_.find(key); it != fabric_routes_.end()) return it->second;
  const TopologyGraph& g = topo_.graph();
  // The NIC's one link into the fabric, if it has exactly one.
  auto uplink = [&](VertexId nic) -> std::optional<EdgeId> {
    std::optional<EdgeId> up;
    for (auto e : boost::make_iterator_range(boost::out_edges(nic, g)))
      if (topo_.device(boost::target(e, g)).kind == DeviceKind::FabricSwitch) {
        if (up) return std::nullopt;
        up = e;
      }
    return up;
  };
  const auto up_a = uplink(nic_a), up_b = uplink(nic_b);
  if (!up_a || !up_b) return fabric_routes_.emplace(key, router_.route(nic_a, nic_b)).first->second;
  // Routes whose ends hang off the same two switches (and, in a fat tree, cross the same spine: the
  // destination node's) differ only in their first and last hop. A star of N nodes then needs one
  // search instead of one per node pair, each of which would scan the switch's N ports.
  const VertexId sw_a = boost::target(*up_a, g), sw_b = boost::target(*up_b, g);
  const auto ckey = std::make_tuple(sw_a, sw_b, topo_.spines() > 0 ? node_b % topo_.spines() : -1);
  auto cit = fabric_classes_.find(ckey);
  if (cit == fabric_classes_.end()) cit = fabric_classes_.emplace(ckey, router_.route(nic_a, nic_b)).first;
  Route r = cit->second;
  const auto [down_b, ok] = boost::edge(sw_b, nic_b, g);
  if (!ok || r.edges.size() < 2 || boost::target(r.edges.front(), g) != sw_a ||
      boost::source(r.edges.back(), g) != sw_b)
    return fabric_routes_.emplace(key, router_.route(nic_a, nic_b)).first->second;
  r.src = nic_a;
  r.dst = nic_b;
  r.edges.front() = *up_a;
  r.edges.back() = down_b;
  r.latency = 0;
  r.bottleneck_bandwidth = std::numeric_limits<double>::infinity();
  for (auto e : r.edges) {
    r.latency += g[e].latency;
    r.bottleneck_bandwidth = std::min(r.bottleneck_bandwidth, g[e].bandwidth);
  }
  return fabric_routes_.emplace(key, std::move(r)).first->second;
}

Path CommModel::make_path(const Route& r) const {
  Path p;
  p.latency = r.latency;
  for (auto e : r.edges) {
    p.edges.push_back(edge_index_.at(e.get_property()));
    if (is_fabric(topo_.link(e).kind)) p.crosses_fabric = true;
  }
  p.profile = p.crosses_fabric ? &lib_.fabric(topo_.shape().fabric) : &lib_.intra_node;
  p.handoff = r.src == r.dst ? 0 : handoff_;
  p.overhead = p.profile->message_overhead + p.handoff;
  p.latency += p.overhead;
  return p;
}

const Path& CommModel::path(VertexId src, VertexId dst) {
  const std::uint64_t key = (static_cast<std::uint64_t>(src) << 32) | static_cast<std::uint64_t>(dst);
  if (auto it = paths_.find(key); it != paths_.end()) return it->second;
  const TopologyGraph& g = topo_.graph();
  Route r;
  if (src == dst) {
    // A copy within one memory: out through its link to the CPU and back.
    r.src = r.dst = src;
    for (auto e : boost::make_iterator_range(boost::out_edges(src, g))) {
      auto [back, ok] = boost::edge(boost::target(e, g), src, g);
      if (!ok) continue;
      r.edges = {e, back};
      r.latency = g[e].latency + g[back].latency;
      break;
    }
  } else {
    const int na = topo_.device(src).node, nb = topo_.device(dst).node;
    if (na == nb) {
      r = intra(src, dst);
    } else {
      // Each end leaves or enters its node by its rail: a GPU by the NIC closest to it on the PCIe tree
      // (NodeLayout::gpu_rail, as NCCL pairs them), any other endpoint by the NIC of lowest latency
      // (ties: the first).
      auto nearest = [&](VertexId end, int node, auto&& route_to) -> const Route& {
        const auto nics = topo_.fabric_nics(node);
        const Device& d = topo_.device(end);
        if (nics.size() > 1 && d.kind == DeviceKind::Gpu && d.local_index < static_cast<int>(gpu_rail_.size()))
          return route_to(nics[gpu_rail_[d.local_index]]);
        const Route* best = nullptr;
        for (VertexId nic : nics) {
          const Route& r = route_to(nic);
          if (!best || r.latency < best->latency * (1 - 1e-12)) best = &r;
        }
        return *best;
      };
      const Route& first = nearest(src, na, [&](VertexId nic) -> const Route& { return intra(src, nic); });
      const Route& last = nearest(dst, nb, [&](VertexId nic) -> const Route& { return intra(nic, dst); });
      const VertexId nic_a = first.dst, nic_b = last.src;
      const Route& mid = fabric(nic_a, nic_b, nb);
      r.src = src;
      r.dst = dst;
      for (const Route* part : {&first, &mid, &last}) {
        r.edges.insert(r.edges.end(), part->edges.begin(), part->edges.end());
        r.latency += part->latency;
      }
    }
  }
  return paths_.emplace(key, make_path(r)).first->second;
}

std::vector<int> CommModel::local_ring_order() {
  if (!local_ring_.empty()) return local_ring_;  // searched once
  const int n = ranks_per_node_;
  std::vector<int> order(n);
  for (int i = 0; i < n; ++i) order[i] = i;
  if (n <= 2 || n > 10) return local_ring_ = order;
  std::vector<std::vector<double>> bw(n, std::vector<double>(n)), lat(n, std::vector<double>(n));
  const collective::Space space = data_space();
  for (int a = 0; a < n; ++a)
    for (int b = 0; b < n; ++b) {
      if (a == b) continue;
      const Path& p = path(endpoint(a, space), endpoint(b, space));
      double slowest = 1e300;
      for (int e : p.edges) slowest = std::min(slowest, edge_bw_[e]);
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

std::vector<int> CommModel::ring_order() {
  const std::vector<int> local = local_ring_order();
  std::vector<int> order;
  if (static_cast<int>(local.size()) != ranks_per_node_ || workers_ % ranks_per_node_ != 0) {
    for (int i = 0; i < workers_; ++i) order.push_back(i);
    return order;
  }
  for (int node = 0; node < workers_ / ranks_per_node_; ++node)
    for (int l : local) order.push_back(node * ranks_per_node_ + l);
  return order;
}

std::vector<std::vector<int>> CommModel::ring_orders(int channels) {
  if (channels < 1) throw std::invalid_argument("ring channels: at least one");
  std::vector<std::vector<int>> rings{ring_order()};
  if (channels == 1) return rings;
  const std::vector<int> local = local_ring_order();
  const int n = ranks_per_node_;
  if (static_cast<int>(local.size()) != n || workers_ % n != 0) {  // index order: the same ring each channel
    rings.assign(channels, rings.front());
    return rings;
  }
  const int nodes = workers_ / n, sampled = std::min(nodes, 2);
  const collective::Space space = data_space();
  // Candidate rings inside a node: every cycle through the node's ranks (up to 8 of them), else the
  // local ring and its reverse; each entered at any of its ranks.
  std::vector<std::vector<int>> cycles;
  if (n <= 8) {
    std::vector<int> cur(n);
    for (int i = 0; i < n; ++i) cur[i] = i;
    do cycles.push_back(cur);
    while (std::next_permutation(cur.begin() + 1, cur.end()));
  } else {
    cycles = {local, std::vector<int>(local.rbegin(), local.rend())};
  }
  auto entered_at = [&](const std::vector<int>& cycle, int r) {
    std::vector<int> l(cycle.begin() + r, cycle.end());
    l.insert(l.end(), cycle.begin(), cycle.begin() + r);
    return l;
  };
  auto ring_of = [&](const std::vector<int>& l, int node_count) {
    std::vector<int> order;
    for (int node = 0; node < node_count; ++node)
      for (int r : l) order.push_back(node * n + r);
    return order;
  };
  // Per-step load of every edge: transfers over effective bandwidth, over `sampled` nodes' worth of ring.
  std::vector<double> load(edges_.size(), 0), delta(edges_.size(), 0);
  std::vector<int> touched;
  double max_load = 0, sum_sq = 0;
  auto stage = [&](const std::vector<int>& order) {  // the ring's loads into delta / touched
    for (std::size_t i = 0; i < order.size(); ++i) {
      const int a = order[i], b = order[(i + 1) % order.size()];
      if (a == b) continue;
      for (int e : path(endpoint(a, space), endpoint(b, space)).edges) {
        if (delta[e] == 0) touched.push_back(e);
        delta[e] += 1 / edge_bw_[e];
      }
    }
  };
  auto evaluate = [&](double& mx, double& sq) {  // with the staged ring added; clears the stage
    mx = max_load;
    sq = sum_sq;
    for (int e : touched) {
      const double after = load[e] + delta[e];
      mx = std::max(mx, after);
      sq += after * after - load[e] * load[e];
      delta[e] = 0;
    }
    touched.clear();
  };
  auto commit = [&](const std::vector<int>& order) {
    stage(order);
    for (int e : touched) {
      sum_sq += (load[e] + delta[e]) * (load[e] + delta[e]) - load[e] * load[e];
      load[e] += delta[e];
      max_load = std::max(max_load, load[e]);
      delta[e] = 0;
    }
    touched.clear();
  };
  commit(ring_of(local, sampled));
  for (int c = 1; c < channels; ++c) {
    std::vector<int> best;
    double best_max = 0, best_sq = 0;
    for (const auto& cycle : cycles)
      for (int r = 0; r < (sampled > 1 ? n : 1); ++r) {
        const std::vector<int> l = entered_at(cycle, r);
        stage(ring_of(l, sampled));
        double mx = 0, sq = 0;
        evaluate(mx, sq);
        if (best.empty() || mx < best_max * (1 - 1e-9) || (mx <= best_max * (1 + 1e-9) && sq < best_sq * (1 - 1e-9))) {
          best = l;
          best_max = mx;
          best_sq = sq;
        }
      }
    commit(ring_of(best, sampled));
    rings.push_back(ring_of(best, nodes));
  }
  return rings;
}

std::string CommModel::edge_name(int i) const {
  const TopologyGraph& g = topo_.graph();
  const EdgeId e = edges_[i];
  return g[boost::source(e, g)].name + "->" + g[boost::target(e, g)].name;
}

CollectiveSize CommModel::collective_size(const collective::Collective& c) const {
  const double buffer = static_cast<double>(c.bytes());
  if (!footprint_keyed_) return {buffer, 0};
  std::uint64_t most_received = 0;  // of a member in one step, to be reduced
  collective::RankStep st;
  for (const auto& run : c.runs())
    for (int m = 0; m < c.members(); ++m) {
      c.rank_step(m, run.first, st);
      std::uint64_t received = 0;
      for (const auto& r : st.recvs)
        if (r.reduce && r.src != r.dst) received += r.bytes;  // into scratch; other receives land in the buffer
      most_received = std::max(most_received, received);
    }
  const int on_node = std::max(1, std::min(c.members(), ranks_per_node_));
  return {buffer, on_node * (buffer + static_cast<double>(most_received))};
}

double CommModel::reduce_time(int m, collective::Space space, std::uint64_t bytes, const CollectiveSize& c) const {
  const bool on_gpu = space == collective::Space::Device && places_.at(m).gpu;
  if (on_gpu) return 3.0 * static_cast<double>(bytes) / gpu_.memory_bandwidth;
  const double b = static_cast<double>(bytes);
  const double key = regime_size(lib_.host_reduction_regimes_by, b, c);
  return b / (lib_.host_reduction_rate_for(key) * (places_.at(m).gpu ? 1.0 : cpu_share_));
}

double CommModel::update_time(int m, std::uint64_t bytes) const {
  return reduce_time(m, places_.at(m).gpu ? collective::Space::Device : collective::Space::Host, bytes);
}

double CommModel::device_copy_time(std::uint64_t bytes) const { return gpu_.copy_time(static_cast<double>(bytes)); }

}  // namespace ringsim
