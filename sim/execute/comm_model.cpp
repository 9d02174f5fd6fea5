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
  // The library's profile: regimes keyed by footprint make collective_size compute it.
  footprint_keyed_ = lib_.host_reduction_regimes_by == RegimeKey::Footprint;
  // Allreduces run in the library's kernels; parameter servers' exchanges are copies (copy engines).
  kernel_channels_ = s.communication.strategy == Strategy::ParameterServer ? 0 : lib_.kernel_channels;
  // A switch that reduces (NVLS): strategy nvls runs on it, and auto may pick it (NCCL's tuning model
  // weighs NVLS beside the ring and the tree inside one NVLink domain, NVLSTree across nodes).
  const bool tuned = s.communication.strategy == Strategy::Auto && lib_.tuning && lib_.tuning->nvls_latency > 0;
  if (s.communication.strategy == Strategy::Nvls || (tuned && nvls_unavailable(catalog, s).empty()))
    switch_members_ = 1;
  else if (s.communication.strategy == Strategy::NvlsTree || (tuned && nvls_tree_unavailable(catalog, s).empty()))
    switch_members_ = s.cluster.nodes;
  reduce_slice_ = s.communication.strategy == Strategy::ParameterServer ? 0 : lib_.reduce_slice;
  for (const PathProfile* p : {&lib_.intra_node, &lib_.infiniband, &lib_.ethernet})
    footprint_keyed_ = footprint_keyed_ || p->regimes_by == RegimeKey::Footprint;
  // Routes: GPUs leave by their rails on InfiniBand fabrics; routes inside a node follow node 0's.
  if (topo.shape().fabric == FabricKind::InfiniBand)
    gpu_rail_ = catalog.layout(catalog.sku(topo.shape().sku).layout).gpu_rail;
  find_templates();
  // Path costs: effective bandwidths, with CPU processes' share of their cores.
  if (gpu_.cpu_process) process_.emplace(catalog, s);
  index_edges(catalog, s);
  rpc_ = s.communication.strategy == Strategy::ParameterServer && s.communication.ps_transport == PsTransport::Rpc &&
         lib_.rpc_rate > 0;
  rpc_endpoint_base_ = boost::num_vertices(topo.graph());
  place_workers(s);
}

void CommModel::index_edges(const Catalog& catalog, const Scenario& s) {
  const TopologyGraph& g = topo_.graph();
  for (auto e : boost::make_iterator_range(boost::edges(g))) {
    edge_index_.emplace(e.get_property(), static_cast<int>(edges_.size()));
    edges_.push_back(e);
    const Link& l = g[e];
    const PathProfile& p = is_fabric(l.kind) ? lib_.fabric(topo_.shape().fabric) : lib_.intra_node;
    const double bandwidth = l.bandwidth * p.bandwidth_fraction;
    edge_bw_.push_back(process_ ? process_->link_bandwidth(g, e, bandwidth) : bandwidth);
  }
  link_edges_ = static_cast<int>(edges_.size());
  // GPU pairs across a socket link without peer access: the library's collectives pass through host memory,
  // a path of their own beside the link's other traffic (NICs, host buffers, parameter servers' copies).
  gpu_pair_twin_.assign(link_edges_, -1);
  const bool servers = s.communication.strategy == Strategy::ParameterServer;
  for (int i = 0; i < link_edges_; ++i) {
    const Link& l = g[edges_[i]];
    if (l.kind != LinkKind::SocketInterconnect ||
        !gpu_pairs_through_host(lib_, gpu_, servers, catalog.link(l.link_class)))
      continue;
    gpu_pair_twin_[i] = static_cast<int>(edges_.size());
    edges_.push_back(edges_[i]);
    edge_bw_.push_back(l.bandwidth * lib_.cross_socket->bandwidth_fraction);
  }
  pair_edges_end_ = static_cast<int>(edges_.size());
}

void CommModel::find_templates() {
  // Node templates: vertices of node n are contiguous and laid out like node 0's.
  const TopologyGraph& g = topo_.graph();
  node_base_.assign(topo_.nodes(), 0);
  std::vector<std::size_t> count(topo_.nodes(), 0);
  for (auto v : boost::make_iterator_range(boost::vertices(g))) {
    const int n = g[v].node;
    if (n < 0) continue;
    if (count[n]++ == 0) node_base_[n] = v;
  }
  node_size_ = count.empty() ? 0 : count[0];
  uniform_nodes_ = true;
  for (int n = 0; n < topo_.nodes() && uniform_nodes_; ++n) {
    if (count[n] != node_size_) uniform_nodes_ = false;
    for (std::size_t i = 0; i < count[n] && uniform_nodes_; ++i) {
      const Device& a = g[node_base_[0] + i];
      const Device& b = g[node_base_[n] + i];
      if (a.kind != b.kind || a.local_index != b.local_index || b.node != n) uniform_nodes_ = false;
    }
  }
}

void CommModel::place_workers(const Scenario& s) {
  // Worker ranks: GPUs node-major; each with the host memory of the socket nearest to it.
  const int gpn = s.cluster.gpus_per_node;
  ranks_per_node_ = gpn;
  workers_ = s.cluster.nodes * gpn;
  std::vector<VertexId> nearest(gpn);
  for (int i = 0; i < gpn; ++i) {
    const VertexId gv = topo_.gpu(0, i);
    double best = 0;
    bool found = false;
    for (int sock = 0; sock < topo_.sockets(); ++sock) {
      const VertexId mem = topo_.host_memory(0, sock);
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
    const VertexId dev = topo_.gpu(node, local);
    // A CPU process keeps its buffers in its own (host) memory: both spaces are the process.
    places_.push_back(gpu_.cpu_process ? MemberPlace{dev, dev, false}
                                       : MemberPlace{dev, from_template(nearest[local], node), true});
  }
  // Strategy nvls (and auto where it may pick NVLS): the NVSwitch is the member after the GPUs; auto across
  // nodes where it may pick NVLSTree: each node's, in node order.
  for (int n = 0; n < switch_members_; ++n)
    places_.push_back({topo_.nvswitch(n), topo_.host_memory(n, 0), false, true});
}

void CommModel::set_servers(const std::vector<MemberPlace>& servers) {
  places_.resize(workers_);
  places_.insert(places_.end(), servers.begin(), servers.end());
  if (!rpc_) return;
  // Each server process's RPC stack: an edge in, an edge out, at the library's rate.
  edges_.resize(pair_edges_end_);
  edge_bw_.resize(pair_edges_end_);
  for (std::size_t j = 0; j < servers.size(); ++j) {
    places_[workers_ + j].rpc = true;
    for (int way = 0; way < 2; ++way) {
      edges_.push_back(EdgeId{});
      edge_bw_.push_back(lib_.rpc_rate);
    }
  }
  paths_.clear();
}

std::string CommModel::endpoint_name(VertexId v) const {
  if (v < rpc_endpoint_base_) return topo_.device(v).name;
  return "ps" + std::to_string(v - rpc_endpoint_base_) + "/rpc";
}

VertexId CommModel::to_template(VertexId v) const {
  const int n = topo_.device(v).node;
  return v - node_base_[n] + node_base_[0];
}
VertexId CommModel::from_template(VertexId v, int node) const {
  // The one vertex of a node's routes outside the node: its rack's NVLink switch (GB200 NVL72).
  if (topo_.device(v).node < 0) return topo_.nvswitch(node);
  return v - node_base_[0] + node_base_[node];
}

void CommModel::index_node_edges() {
  // An edge inside node n is placed by its ends' offsets in the node and, among parallel links, its rank;
  // a GPU pair's twin of a link by its link's place.
  const TopologyGraph& g = topo_.graph();
  std::map<std::tuple<std::size_t, std::size_t, int, bool>, int> slot_of;
  std::map<std::tuple<int, std::size_t, std::size_t>, int> parallel;
  std::vector<std::pair<int, int>> placed;  // (edge, node)
  edge_slot_.assign(edges_.size(), -1);
  auto place = [&](int i, int node, std::tuple<std::size_t, std::size_t, int, bool> key) {
    edge_slot_[i] = slot_of.emplace(key, static_cast<int>(slot_of.size())).first->second;
    placed.push_back({i, node});
  };
  for (int i = 0; i < link_edges_; ++i) {
    const VertexId u = boost::source(edges_[i], g), v = boost::target(edges_[i], g);
    const int n = topo_.device(u).node;
    if (n < 0 || topo_.device(v).node != n) continue;
    const std::size_t a = u - node_base_[n], b = v - node_base_[n];
    const int rank = parallel[{n, a, b}]++;
    place(i, n, {a, b, rank, false});
    if (gpu_pair_twin_[i] >= 0) place(gpu_pair_twin_[i], n, {a, b, rank, true});
  }
  node_slots_ = static_cast<int>(slot_of.size());
  node_edges_.assign(static_cast<std::size_t>(topo_.nodes()) * node_slots_, -1);
  for (const auto& [i, n] : placed) node_edges_[static_cast<std::size_t>(n) * node_slots_ + edge_slot_[i]] = i;
}

int CommModel::translated_edge(int i, int from, int to) {
  if (!uniform_nodes_) return -1;
  if (node_slots_ < 0) index_node_edges();
  const int slot = edge_slot_[i];
  if (slot < 0 || node_edges_[static_cast<std::size_t>(from) * node_slots_ + slot] != i) return -1;
  return node_edges_[static_cast<std::size_t>(to) * node_slots_ + slot];
}

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
  const Device &a = topo_.device(r.src), &b = topo_.device(r.dst);
  const bool gpu_pair = a.kind == DeviceKind::Gpu && b.kind == DeviceKind::Gpu && a.node == b.node;
  for (auto e : r.edges) {
    const int i = edge_index_.at(e.get_property());
    p.edges.push_back(i);
    if (gpu_pair && gpu_pair_twin_[i] >= 0) p.edges.push_back(gpu_pair_twin_[i]);
    if (is_fabric(topo_.link(e).kind)) p.crosses_fabric = true;
  }
  p.profile = p.crosses_fabric ? &lib_.fabric(topo_.shape().fabric) : &lib_.intra_node;
  for (VertexId end : {r.src, r.dst})
    if (topo_.device(end).kind == DeviceKind::NvSwitch && lib_.nvls_efficiency_for(gpu_.name) > 0)
      p.bytes_scale = 1 / lib_.nvls_efficiency_for(gpu_.name);
  p.handoff = process_ ? process_->message_handoff(r.src, r.dst) : 0;
  p.overhead = p.profile->message_overhead + p.handoff;
  p.latency += p.overhead;
  return p;
}

bool CommModel::over_nvlink_domain(VertexId src, VertexId dst) const {
  // GPUs of two nodes in one rack-scale NVLink domain, or a GPU and that domain's switch.
  auto gpu_or_rack_switch = [&](const Device& d) {
    return d.kind == DeviceKind::Gpu || (d.kind == DeviceKind::NvSwitch && d.node < 0);
  };
  const Device &a = topo_.device(src), &b = topo_.device(dst);
  if (!gpu_or_rack_switch(a) || !gpu_or_rack_switch(b)) return false;
  auto domain = [&](const Device& d) { return d.node < 0 ? d.local_index : topo_.nvlink_domain(d.node); };
  return domain(a) >= 0 && domain(a) == domain(b);
}

const Path& CommModel::path(VertexId src, VertexId dst) {
  const std::uint64_t key = (static_cast<std::uint64_t>(src) << 32) | static_cast<std::uint64_t>(dst);
  if (auto it = paths_.find(key); it != paths_.end()) return it->second;
  if (src >= rpc_endpoint_base_ || dst >= rpc_endpoint_base_) {
    // A server process: the path between the memories, then out through its RPC stack or in.
    auto server = [&](VertexId v) { return static_cast<int>(v - rpc_endpoint_base_); };
    auto memory = [&](VertexId v) { return v < rpc_endpoint_base_ ? v : places_.at(workers_ + server(v)).host; };
    Path p = path(memory(src), memory(dst));
    if (src != dst && src >= rpc_endpoint_base_) p.edges.push_back(rpc_edge_of(server(src), true));
    if (src != dst && dst >= rpc_endpoint_base_) p.edges.push_back(rpc_edge_of(server(dst), false));
    return paths_.emplace(key, std::move(p)).first->second;
  }
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
    } else if (over_nvlink_domain(src, dst)) {
      r = router_.route(src, dst);
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

bool CommModel::gpus_on_nvlink() {
  if (ranks_per_node_ < 2) return false;
  for (auto e : intra(topo_.gpu(0, 0), topo_.gpu(0, 1)).edges)
    if (topo_.link(e).kind == LinkKind::NvLink) return true;
  return false;
}

PathCost::Hop CommModel::hop(int a, int b) {
  const collective::Space space = data_space();
  const Path& p = path(endpoint(a, space), endpoint(b, space));
  return {p.edges, p.latency};
}

std::string CommModel::edge_name(int i) const {
  if (rpc_edge(i)) {
    const int j = (i - pair_edges_end_) / 2;
    return endpoint_name(rpc_endpoint_base_ + j) + ((i - pair_edges_end_) % 2 ? "-out" : "-in");
  }
  const TopologyGraph& g = topo_.graph();
  const EdgeId e = edges_[i];
  return g[boost::source(e, g)].name + "->" + g[boost::target(e, g)].name + (gpu_pair_edge(i) ? "/gpu-to-gpu" : "");
}

ComputeHold CommModel::compute_interference(const collective::Collective& c, double duration) const {
  if (data_space() != collective::Space::Device || gpu_.cpu_process || duration <= 0) return {};
  using collective::Space;
  std::vector<double> bytes(static_cast<std::size_t>(c.members()), 0);  // through each member's GPU memory
  collective::RankStep st;
  collective::NodeClasses classes = c.node_classes();  // a member moves what its twin does
  if (!by_node_class(classes, c)) classes.clear();
  for (const auto& run : c.runs())
    for (int m = 0; m < c.members(); ++m) {
      if (!places_.at(m).gpu || (classes.count() > 0 && !classes.leads(m))) continue;
      c.rank_step(m, run.first, st);
      double b = 0;
      for (const auto& t : st.sends)
        if (t.src != t.dst && t.src_space == Space::Device) b += static_cast<double>(t.bytes);
      for (const auto& r : st.recvs)
        if (r.src != r.dst && r.dst_space == Space::Device) b += static_cast<double>(r.bytes) * (r.reduce ? 2 : 1);
      bytes[m] += b * run.count;
    }
  if (classes.count() > 0)
    for (int m = 0; m < c.members(); ++m) bytes[m] = bytes[classes.twin(m)];
  ComputeHold hold;
  const bool nvls = c.algorithm() == "nvls_allreduce" || c.algorithm() == "nvls_tree_allreduce";
  const double sms = nvls ? lib_.nvls_channels : kernel_channels_;
  hold.sms = gpu_.multiprocessors > 0 ? std::min(ComputeHold::kMost, sms / gpu_.multiprocessors) : 0;
  for (double b : bytes) hold.memory.push_back(std::min(ComputeHold::kMost, b / duration / gpu_.memory_bandwidth));
  return hold;
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
  if (places_.at(m).in_switch) return 0;
  const bool on_gpu = space == collective::Space::Device && places_.at(m).gpu;
  if (on_gpu) return 3.0 * static_cast<double>(bytes) / gpu_.memory_bandwidth;
  const double b = static_cast<double>(bytes);
  const double key = regime_size(lib_.host_reduction_regimes_by, b, c);
  return b / (lib_.host_reduction_rate_for(key) * (places_.at(m).gpu || !process_ ? 1.0 : process_->cpu_share));
}

std::uint64_t CommModel::reduced_after_receive(int m, collective::Space space, std::uint64_t bytes) const {
  const bool fused = reduce_slice_ > 0 && space == collective::Space::Device && places_.at(m).gpu;
  return fused ? std::min(bytes, static_cast<std::uint64_t>(reduce_slice_)) : bytes;
}

double CommModel::received_reduce_time(int m, collective::Space space, std::uint64_t bytes,
                                       const CollectiveSize& c) const {
  return reduce_time(m, space, reduced_after_receive(m, space, bytes), c);
}

double CommModel::update_time(int m, std::uint64_t bytes) const {
  return reduce_time(m, places_.at(m).gpu ? collective::Space::Device : collective::Space::Host, bytes);
}

double CommModel::device_copy_time(std::uint64_t bytes) const { return gpu_.copy_time(static_cast<double>(bytes)); }

double CommModel::fusion_copy_time(std::uint64_t bytes) const {
  if (data_space() == collective::Space::Host && lib_.host_copy_rate > 0)
    return static_cast<double>(bytes) / lib_.host_copy_rate;
  return device_copy_time(bytes);
}

double CommModel::receive_copy_rate(int m) const {
  const bool staged = data_space() == collective::Space::Host && places_.at(m).gpu;
  return staged ? lib_.host_copy_rate : 0;
}

double CommModel::receive_copy_time(const collective::Transfer& t) const {
  return shared_memory_copy_s(t, node_of(t.src), node_of(t.dst), receive_copy_rate(t.src), receive_copy_rate(t.dst));
}

}  // namespace ringsim
