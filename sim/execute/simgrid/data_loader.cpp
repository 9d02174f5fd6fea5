#include "execute/simgrid/data_loader.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace sg4 = simgrid::s4u;

namespace ringsim {

DataLoaderSim::DataLoaderSim(const DataPipeline& demand, std::vector<StorageSource> sources, int prefetch_depth,
                             double decode_cpu_s_per_batch, double vcpus, double share)
    : demand_(demand),
      sources_(std::move(sources)),
      depth_(prefetch_depth),
      decode_s_cpu_(decode_cpu_s_per_batch),
      vcpus_(vcpus),
      share_(share) {}

void DataLoaderSim::build(sg4::NetZone* zone, std::vector<LoaderNode> nodes, bool gradient_source) {
  nodes_ = std::move(nodes);
  state_.assign(nodes_.size(), {});
  mutex_ = sg4::Mutex::create();
  changed_ = sg4::ConditionVariable::create();
  auto route = [&](sg4::Host* from, const LoaderNode& to, std::vector<sg4::LinkInRoute> links) {
    links.insert(links.end(), to.nic.begin(), to.nic.end());
    zone->add_route(from->get_netpoint(), to.host->get_netpoint(), nullptr, nullptr, links, false);
  };
  for (std::size_t p = 0; p < sources_.size(); ++p) {
    const StorageSource& src = sources_[p];
    const bool per_node = src.scaling == StorageScaling::PerNode;
    // Units shared by several nodes stand for their whole capacity only when every node is simulated.
    const double scale = per_node ? 1.0 : share_;
    const int count =
        per_node ? static_cast<int>(nodes_.size()) : (src.scaling == StorageScaling::PerServer ? src.servers : 1);
    std::vector<Unit> units;
    for (int u = 0; u < count; ++u) {
      const std::string name = "storage" + std::to_string(p) + "." + src.name + "." + std::to_string(u);
      Unit unit;
      unit.host = zone->create_host(name, src.iops * scale);
      unit.node = per_node ? u : -1;
      sg4::Link* link = zone->create_link(name, src.bandwidth * scale)->set_latency(0)->seal();
      for (std::size_t n = 0; n < nodes_.size(); ++n) {
        if (per_node && static_cast<int>(n) != u) continue;
        LoaderNode to = nodes_[n];
        if (!src.network) to.nic.clear();
        route(unit.host, to, {sg4::LinkInRoute(link)});
      }
      units.push_back(unit);
    }
    units_.push_back(std::move(units));
  }
  for (std::size_t n = 0; n < nodes_.size(); ++n)
    decode_hosts_.push_back(zone->create_host("node" + std::to_string(n) + ".decode_cpu", vcpus_));
  if (gradient_source) {
    gradient_host_ = zone->create_host("gradients", 1e9);
    for (const auto& n : nodes_) route(gradient_host_, n, {});
  }
}

void DataLoaderSim::start() {
  for (std::size_t n = 0; n < nodes_.size(); ++n) {
    // A daemon: it never outlives the training actors.
    sg4::Actor::create("loader" + std::to_string(n), nodes_[n].host, [this, n] {
      loader(static_cast<int>(n));
    })->daemonize();
  }
}

void DataLoaderSim::end_phase() {
  std::unique_lock<sg4::Mutex> lock(*mutex_);
  stopping_ = true;
  changed_->notify_all();
  while (idle_ < static_cast<int>(nodes_.size())) changed_->wait(lock);
}

void DataLoaderSim::begin_phase(int phase) {
  std::unique_lock<sg4::Mutex> lock(*mutex_);
  phase_ = phase;
  stopping_ = false;
  idle_ = 0;
  for (auto& s : state_) s = NodeState{};
  changed_->notify_all();
}

void DataLoaderSim::loader(int node) {
  for (int p = 0; p < static_cast<int>(sources_.size()); ++p) {
    {
      std::unique_lock<sg4::Mutex> lock(*mutex_);
      while (phase_ < p) changed_->wait(lock);
    }
    for (int b = 0;; ++b) {
      {
        std::unique_lock<sg4::Mutex> lock(*mutex_);
        const NodeState& s = state_[node];
        // With a prefetch queue the loader runs up to `depth` batches ahead of the GPUs; without one it
        // loads a batch when a GPU asks for it.
        while (!stopping_ && (depth_ > 0 ? b >= s.consumed + depth_ : b >= s.requested)) changed_->wait(lock);
        if (stopping_) {
          ++idle_;
          changed_->notify_all();
          break;
        }
      }
      load(p, node);
      std::unique_lock<sg4::Mutex> lock(*mutex_);
      state_[node].ready = b + 1;
      changed_->notify_all();
    }
  }
}

void DataLoaderSim::load(int phase, int node) {
  const StorageSource& src = sources_[phase];
  std::vector<sg4::ActivityPtr> running;
  if (decode_s_cpu_ > 0)
    running.push_back(sg4::this_actor::exec_init(decode_s_cpu_)->set_host(decode_hosts_[node])->start());
  const double latency = demand_.requests_per_batch_node * src.request_latency / std::max(1, demand_.reader_threads);
  if (latency > 0) {
    sg4::this_actor::sleep_for(latency);
    ++activities_;
  }
  std::vector<const Unit*> serving;
  for (const Unit& u : units_[phase])
    if (u.node < 0 || u.node == node) serving.push_back(&u);
  const double part = 1.0 / static_cast<double>(serving.size());
  for (const Unit* u : serving) {
    const double requests = demand_.requests_per_batch_node * part;
    if (requests > 0) running.push_back(sg4::this_actor::exec_init(requests)->set_host(u->host)->start());
    const auto bytes = static_cast<std::uint64_t>(std::llround(demand_.batch_bytes_per_node * part));
    if (bytes > 0) running.push_back(sg4::Comm::sendto_async(u->host, nodes_[node].host, bytes));
  }
  activities_ += static_cast<std::int64_t>(running.size());
  for (auto& a : running) a->wait();
}

double DataLoaderSim::take(int node, int batch) {
  std::unique_lock<sg4::Mutex> lock(*mutex_);
  NodeState& s = state_[node];
  s.requested = std::max(s.requested, batch + 1);
  changed_->notify_all();
  const double asked = sg4::Engine::get_clock();
  while (s.ready <= batch) changed_->wait(lock);
  const double wait = sg4::Engine::get_clock() - asked;
  if (static_cast<int>(s.takers.size()) <= batch) s.takers.resize(batch + 1, 0);
  if (++s.takers[batch] == nodes_[node].consumers) {
    s.consumed = batch + 1;
    changed_->notify_all();
  }
  return wait;
}

sg4::CommPtr DataLoaderSim::gradient_traffic(int node, double bytes, double seconds) {
  double latency = 0;
  for (const auto& l : nodes_[node].nic) latency += l.get_link()->get_latency();
  if (!gradient_host_ || bytes <= 0 || seconds <= latency) return nullptr;
  // Alone on the NIC the bytes arrive in exactly `seconds`, latency included. The rate first: a comm
  // whose two hosts are set has started.
  sg4::CommPtr c = sg4::Comm::sendto_init()
                       ->set_rate(bytes / (seconds - latency))
                       ->set_payload_size(static_cast<std::uint64_t>(std::llround(bytes)))
                       ->set_source(gradient_host_)
                       ->set_destination(nodes_[node].host);
  ++activities_;
  return c;
}

void DataLoaderSim::finish() { end_phase(); }

}  // namespace ringsim
