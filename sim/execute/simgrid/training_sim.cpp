#include "execute/simgrid/training_sim.h"

#include <xbt/log.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <simgrid/s4u.hpp>
#include <stdexcept>
#include <string_view>
#include <tuple>

#include "collective/horovod_cycle.h"
#include "collective/transport.h"
#include "execute/analytic/step_model.h"
#include "execute/buffer_collective.h"
#include "execute/comm_model.h"
#include "execute/simgrid/data_loader.h"
#include "execute/simgrid/platform_builder.h"
#include "execute/simgrid/training_run.h"
#include "graph/topology_graph.h"
#include "load/input_error.h"
#include "schedule/compute_model.h"
#include "train/framework.h"
#include "train/iteration.h"

namespace ringsim {

Fidelity default_fidelity(const Scenario& s) {
  return s.cluster.total_gpus() <= kFlowFidelityMaxGpus ? Fidelity::Flow : Fidelity::Step;
}

ClusterShape simulated_shape(const Scenario& s) {
  ClusterShape shape = cluster_shape(s.cluster);
  if (s.communication.strategy == Strategy::ParameterServer && s.communication.ps_placement == PsPlacement::Dedicated)
    shape.nodes += s.communication.parameter_servers;
  return shape;
}

void share_layout(const Catalog& catalog, const Scenario& s) {
  const Topology topo = Topology::build(catalog, simulated_shape(s));
  CommModel cm(catalog, s, topo);
  buffer_collective_layout(s, cm.data_space(), cm);
}

namespace training_detail {

namespace {

// Per-collective shared state of the flow fidelity: which messages of which step have arrived.
struct FlowRendezvous {
  int steps = 0;
  std::vector<int> arrived;  // member x step
  sg4::MutexPtr mutex = sg4::Mutex::create();
  sg4::ConditionVariablePtr cv = sg4::ConditionVariable::create();
};

class SimgridTransport final : public collective::Transport {
 public:
  // `size`: the collective's sizes, which pick size regimes keyed by buffer or footprint; `protocol`: its
  // protocol's costs.
  SimgridTransport(int member, const CollectiveSize& size, const collective::Protocol& protocol, CommModel& cm,
                   FlowRendezvous& rv, const std::vector<sg4::Host*>& host_of_vertex, std::int64_t& activities)
      : me_(member),
        size_(size),
        protocol_(protocol),
        cm_(cm),
        rv_(rv),
        hosts_(host_of_vertex),
        activities_(activities) {}

  // Each message leaves after its own overhead (the shortest first), so one message's overhead does not
  // delay the member's others.
  void post(int, const RankStep& step) override {
    order_.clear();
    for (std::size_t i = 0; i < step.sends.size(); ++i) {
      const auto& t = step.sends[i];
      order_.emplace_back(CommModel::message_overhead(cm_.path(t), static_cast<double>(t.bytes), size_, protocol_), i);
    }
    std::stable_sort(order_.begin(), order_.end());
    comms_.clear();
    double waited = 0;
    for (const auto& [overhead, i] : order_) {
      if (overhead > waited) sleep(overhead - waited);
      waited = std::max(waited, overhead);
      const auto& t = step.sends[i];
      sg4::Host* from = hosts_[cm_.endpoint(t.src, t.src_space)];
      sg4::Host* to = hosts_[cm_.endpoint(t.dst, t.dst_space)];
      comms_.push_back(sg4::Comm::sendto_async(
          from, to, CommModel::wire_bytes(cm_.path(t), static_cast<double>(t.bytes), size_, protocol_)));
      ++activities_;
    }
  }
  void wait(int index, const RankStep& step) override {
    sg4::Comm::wait_all(comms_);
    for (const auto& t : step.sends) ++rv_.arrived[static_cast<std::size_t>(t.dst) * rv_.steps + index];
    rv_.cv->notify_all();
    std::unique_lock<sg4::Mutex> lock(*rv_.mutex);
    const std::size_t slot = static_cast<std::size_t>(me_) * rv_.steps + index;
    while (rv_.arrived[slot] < static_cast<int>(step.recvs.size())) rv_.cv->wait(lock);
    lock.unlock();
    double copies = 0;
    for (const auto& r : step.recvs) copies += cm_.receive_copy_time(r);
    sleep(copies);
  }
  void reduce(const Transfer& r) override { sleep(cm_.received_reduce_time(me_, r.dst_space, r.bytes, size_)); }
  void update(std::uint64_t bytes) override { sleep(cm_.update_time(me_, bytes)); }

 private:
  void sleep(double s) {
    if (s <= 0) return;
    sg4::this_actor::sleep_for(s);
    ++activities_;
  }
  int me_;
  CollectiveSize size_;
  collective::Protocol protocol_;
  CommModel& cm_;
  FlowRendezvous& rv_;
  const std::vector<sg4::Host*>& hosts_;
  std::int64_t& activities_;
  std::vector<sg4::CommPtr> comms_;
  std::vector<std::pair<double, std::size_t>> order_;  // (overhead, send) of the step posted
};

}  // namespace

void TrainingRun::build_platform(const Collective* c, bool with_loader) {
  const TopologyGraph& g = topo_.graph();
  auto* zone = sg4::create_full_zone("cluster");
  host_of_vertex_.assign(cm_.endpoint_count(), nullptr);  // the graph's vertices, then server processes
  const double gpu_speed = catalog_.gpu(catalog_.sku(s_.cluster.sku).gpu).fp32_peak_flops;
  auto host = [&](VertexId v) -> sg4::Host* {
    if (!host_of_vertex_[v]) {
      const bool gpu = v < boost::num_vertices(g) && topo_.device(v).kind == DeviceKind::Gpu;
      host_of_vertex_[v] = zone->create_host(cm_.endpoint_name(v), gpu ? gpu_speed : 1e9);
    }
    return host_of_vertex_[v];
  };
  // The step fidelity runs its actors on rank 0's GPU only; the flow fidelity needs every member's hosts
  // (a full zone keeps a route table of hosts squared, so the step fidelity must not create them all).
  host(cm_.member(0).device);
  if (fidelity_ == Fidelity::Step && !gathers_.empty()) fabric_ = zone->create_host("fabric", 1e9);
  PlatformBuilder builder(cm_, zone);
  if (fidelity_ == Fidelity::Flow) {
    const int members = cm_.workers() + s_.communication.server_members();
    for (int m = 0; m < members; ++m) {
      host(cm_.member(m).device);  // where its actor runs
      host(cm_.member(m).host);
      host(cm_.endpoint(m, collective::Space::Host));  // a server process's own endpoint
    }
    // Every (source, destination) pair any collective of this scenario uses: the pattern depends on the
    // algorithm and its members, not on the buffer size, so a template buffer of every tensor enumerates
    // them all; with node aggregation, one per GPU that can aggregate (a buffer's first tensor picks it).
    std::vector<std::unique_ptr<Collective>> own;
    std::vector<const Collective*> templates;
    if (c) {
      templates.push_back(c);
    } else {
      const int tensors = planners_.front()->tensor_count();
      const int firsts = s_.communication.strategy == Strategy::ParameterServer &&
                                 s_.communication.ps_aggregation == PsAggregation::Node
                             ? std::min(tensors, s_.cluster.gpus_per_node)
                             : 1;
      for (int first = 0; first < firsts; ++first) {
        collective::FusionBuffer probe;
        probe.element_bytes = s_.model.gradient_bytes;
        for (int t = first; t < tensors; ++t) probe.tensors.push_back(t);
        for (int t : probe.tensors) probe.bytes += factory_.tensor_bytes()[t];
        for (auto& one : factory_.alternatives(probe)) {
          own.push_back(std::move(one));
          templates.push_back(own.back().get());
        }
        if (framework_->gradient_op() != collective::BusOp::AllReduce)  // sharded: the ring's two halves
          for (const auto op : {collective::BusOp::ReduceScatter, collective::BusOp::AllGather}) {
            own.push_back(factory_.make(probe, op));
            templates.push_back(own.back().get());
          }
      }
    }
    std::set<std::pair<VertexId, VertexId>> pairs;
    RankStep st;
    for (const Collective* t : templates)
      for (int s = 0; s < t->steps(); ++s)
        for (int m = 0; m < t->members(); ++m) {
          t->rank_step(m, s, st);
          for (const auto& x : st.sends)
            pairs.insert({cm_.endpoint(x.src, x.src_space), cm_.endpoint(x.dst, x.dst_space)});
        }
    for (const auto& [a, b] : pairs) builder.add_route(host(a), host(b), cm_.path(a, b), false);
  }
  if (with_loader && s_.storage) add_loader(zone, builder, host);
  zone->seal();
}

void TrainingRun::compute_actor(int rank) {
  sg4::Host* h = sg4::this_actor::get_host();
  auto span = [&](const std::string& name, double start) {
    if (reported()) spans_.push_back({rank, name, start - reported_start_, sg4::Engine::get_clock() - reported_start_});
  };
  auto exec = [&](const std::string& name, double seconds) {
    const double start = sg4::Engine::get_clock();
    // The work, then what collectives took from the GPU meanwhile, until that is negligible.
    for (int k = 0; seconds > 1e-12 && k < 64; ++k) {
      const double before = taken(rank);
      sg4::this_actor::execute(seconds * h->get_speed());
      ++activities_;
      seconds = taken(rank) - before;
    }
    span(name, start);
  };
  const int node = fidelity_ == Fidelity::Flow ? rank / s_.cluster.gpus_per_node : 0;
  for (int k = 0; k < iterations(); ++k) {
    {
      std::unique_lock<sg4::Mutex> lock(*announce_mutex_);
      while (iteration_ < k) next_iteration_->wait(lock);
    }
    if (loader_ && k >= first_loaded_) {
      const double start = sg4::Engine::get_clock();
      const double wait = loader_->take(node, (k - first_loaded_) % per_phase_);
      if (rank == 0) data_wait_[k] = wait;
      if (wait > 0) span("DATA_WAIT", start);
    }
    collective::FusionPlanner& planner = *planners_[k];
    const ComputeHooks hooks{exec,
                             [&](const std::vector<int>& tensors) {
                               for (auto t = tensors.rbegin(); t != tensors.rend(); ++t)
                                 planner.announce(*t, sg4::Engine::get_clock());
                               announced_->notify_all();
                             },
                             [&](int g) { wait_gathered(g); }, [&](int g) { release_gather(g); }};
    run_compute_program(
        compute_, *framework_, 1,
        [&](const std::vector<int>& tensors) { return cm_.device_copy_time(bucket_bytes(tensors)); }, hooks, gathers_);
  }
}

const TrainingRun::StepCost& TrainingRun::step_cost(const collective::FusionBuffer& b, const Collective& c,
                                                    collective::BusOp op) {
  auto key = factory_.key(b, op);
  auto add_bytes = [this](const StepCost& cost) {
    for (const auto& [e, bytes] : cost.edge_bytes) edge_bytes_[e] += bytes;
  };
  if (auto it = step_costs_.find(key); it != step_costs_.end()) {
    add_bytes(it->second);
    return it->second;
  }
  StepCost cost;
  step_edge_bytes_.resize(edge_bytes_.size(), 0.0);
  cost.estimate = collective_duration(c, cm_, &step_edge_bytes_, &cost.runs);
  for (std::size_t e = 0; e < step_edge_bytes_.size(); ++e)
    if (step_edge_bytes_[e] != 0) {
      cost.edge_bytes.push_back({static_cast<int>(e), step_edge_bytes_[e]});
      step_edge_bytes_[e] = 0;
    }
  add_bytes(cost);
  cost.hold = cm_.compute_interference(c, cost.estimate);
  return step_costs_.emplace(std::move(key), std::move(cost)).first->second;
}

void TrainingRun::run_buffer(const collective::FusionBuffer& b) {
  CollectiveRecord rec = ringsim::run_buffer(b, started_++, *framework_, *this);
  if (bucket_copies()) bucket_copy_out_.allreduce_done(rec.end, cm_.device_copy_time(bucket_bytes(b.tensors)));
  if (!reported()) return;
  for (double* t : {&rec.negotiated_at, &rec.start, &rec.comm_start, &rec.comm_end, &rec.end}) *t -= reported_start_;
  records_.push_back(std::move(rec));
}

void TrainingRun::copy_in(const collective::FusionBuffer& b, bool fused) {
  // Horovod's fusion buffer, on every rank at once (DDP copies into its buckets on the compute stream:
  // compute_actor)
  if (fused) sleep(cm_.fusion_copy_time(b.bytes));
}

void TrainingRun::exchange(const collective::FusionBuffer& b, const Collective& c, CollectiveRecord& rec) {
  sleep(cm_.call_overhead(c));
  const int nic = loader_ && fidelity_ == Fidelity::Step ? nic_edge(0) : -1;
  const double nic_before = nic >= 0 ? edge_bytes_[nic] : 0;
  const StepCost& cost = step_cost(b, c, framework_->gradient_op());
  const double estimate = cost.estimate;
  for (const auto& r : cost.runs)
    rec.phases.push_back({std::string(collective::to_string(r.phase)), r.count, r.step_s, r.transfers, r.copy_s});
  const ComputeHold& hold = cost.hold;
  rec.compute_share = std::min(ComputeHold::kMost, hold.most());
  interfere(c, hold, true);
  if (fidelity_ == Fidelity::Step) {
    // Storage reads into node 0 share its Ethernet NIC with the collective's bytes into the node: the
    // collective ends when those bytes are in, which is later than the estimate where reads compete.
    sg4::CommPtr into_node = nic >= 0 ? loader_->gradient_traffic(0, edge_bytes_[nic] - nic_before, estimate) : nullptr;
    occupy(estimate);
    if (into_node) into_node->wait();
  } else {
    run_members(c, rec.index);
  }
  interfere(c, hold, false);
}

void TrainingRun::interfere(const Collective& c, const ComputeHold& hold, bool start) {
  const double now = sg4::Engine::get_clock();
  // The workers' GPUs (servers on GPUs compute no passes); in the step fidelity rank 0 computes for all.
  const int computing = fidelity_ == Fidelity::Step ? 1 : cm_.workers();
  for (int m = 0; hold.most() > 0 && m < std::min(c.members(), computing); ++m) {
    if (!cm_.member(m).gpu) continue;
    Hold& h = holds_.at(m);
    h.taken += h.held() * (now - h.since);
    h.since = now;
    h.sms += start ? hold.sms : -hold.sms;
    if (start)
      h.memory.insert(hold.memory[m]);
    else
      h.memory.erase(h.memory.find(hold.memory[m]));
  }
}

double TrainingRun::taken(int rank) const {
  const Hold& h = holds_.at(rank);
  return h.taken + h.held() * (sg4::Engine::get_clock() - h.since);
}

void TrainingRun::run_members(const Collective& c, int tag) {
  FlowRendezvous rv;
  rv.steps = c.steps();
  rv.arrived.assign(static_cast<std::size_t>(c.members()) * std::max(1, rv.steps), 0);
  std::vector<sg4::ActorPtr> actors;
  const CollectiveSize size = cm_.collective_size(c);
  for (int m = 0; m < c.members(); ++m) {
    sg4::Host* h = host_of_vertex_[cm_.member(m).device];
    actors.push_back(sg4::Actor::create("c" + std::to_string(tag) + "." + std::to_string(m), h, [&, m] {
      SimgridTransport t(m, size, c.protocol, cm_, rv, host_of_vertex_, activities_);
      collective::run_member(c, m, t);
    }));
  }
  for (auto& a : actors) a->join();
}

void TrainingRun::coordinator() {
  for (int k = 0; k < iterations(); ++k) {
    if (loader_ && k >= first_loaded_ && (k - first_loaded_) % per_phase_ == 0) {
      // A new epoch: the queue starts empty (once the last epoch's loads have stopped).
      const int phase = (k - first_loaded_) / per_phase_;
      if (phase > 0) loader_->end_phase();
      loader_->begin_phase(phase);
      phase_start_[phase] = sg4::Engine::get_clock();
    }
    if (k == reported_) {
      reported_start_ = sg4::Engine::get_clock();
      started_ = 0;
      std::fill(edge_bytes_.begin(), edge_bytes_.end(), 0.0);  // the reported iteration's link loads
    }
    {
      std::unique_lock<sg4::Mutex> lock(*announce_mutex_);
      begin_gathers();
      iteration_ = k;
      next_iteration_->notify_all();
    }
    run_iteration(k);
    iteration_end_[k] = sg4::Engine::get_clock();
  }
  if (loader_) loader_->finish();
  end_ = iteration_end_[reported_] - reported_start_;
}

void TrainingRun::run_iteration(int k) {
  if (!gathers_.empty())
    gatherer_ = sg4::Actor::create("gathers", host_of_vertex_[cm_.member(0).device], [this] { gather_actor(); });
  collective::run_horovod_cycles(*planners_[k], *this, *this, s_.communication.cycle_time_s);
  if (gatherer_) gatherer_->join();
  gatherer_ = nullptr;
  if (bucket_copies()) copy_out_of_buckets(*planners_[k]);
  if (framework_->optimizer_step()) sleep(compute_.update_s);
}

void TrainingRun::occupy(double s) {
  if (s <= 0) return;
  if (!fabric_) return sleep(s);
  sg4::this_actor::exec_init(s * fabric_->get_speed())->set_host(fabric_)->start()->wait();
  ++activities_;
}

void TrainingRun::begin_gathers() {
  gather_released_.assign(gathers_.gathers.size(), 0);
  gathered_.assign(gathers_.gathers.size(), 0);
}

void TrainingRun::wait_gathered(int g) {
  std::unique_lock<sg4::Mutex> lock(*announce_mutex_);
  while (!gathered_[g]) gather_cv_->wait(lock);
}

void TrainingRun::release_gather(int g) {
  std::unique_lock<sg4::Mutex> lock(*announce_mutex_);
  ++gather_released_[g];
  gather_cv_->notify_all();
}

void TrainingRun::gather_actor() {
  const int computing = fidelity_ == Fidelity::Flow ? cm_.workers() : 1;
  for (std::size_t g = 0; g < gathers_.gathers.size(); ++g) {
    if (const int w = gathers_.gathers[g].waits_for; w >= 0) {
      std::unique_lock<sg4::Mutex> lock(*announce_mutex_);
      while (gather_released_[w] < computing) gather_cv_->wait(lock);
    }
    run_gather(static_cast<int>(g));
    std::unique_lock<sg4::Mutex> lock(*announce_mutex_);
    gathered_[g] = 1;
    gather_cv_->notify_all();
  }
}

void TrainingRun::run_gather(int g) {
  const GatherPlan::Gather& gather = gathers_.gathers[g];
  collective::FusionBuffer b;
  b.tensors = gathers_.units[gather.unit].tensors;
  b.bytes = gather.bytes;
  b.element_bytes = static_cast<int>(gather.bytes / std::max<std::int64_t>(1, gathers_.units[gather.unit].params));
  const auto c = factory_.make(b, collective::BusOp::AllGather);
  CollectiveRecord rec;
  rec.index = started_++;
  rec.bytes = b.bytes;
  rec.tensors = b.tensors;
  rec.algorithm = std::string(c->algorithm());
  rec.protocol = std::string(c->protocol.name);
  rec.negotiated_at = rec.start = sg4::Engine::get_clock();
  sleep(cm_.call_overhead(*c));
  rec.comm_start = sg4::Engine::get_clock();
  const StepCost& cost = step_cost(b, *c, collective::BusOp::AllGather);
  for (const auto& r : cost.runs)
    rec.phases.push_back({std::string(collective::to_string(r.phase)), r.count, r.step_s, r.transfers, r.copy_s});
  rec.compute_share = std::min(ComputeHold::kMost, cost.hold.most());
  interfere(*c, cost.hold, true);
  if (fidelity_ == Fidelity::Step)
    occupy(cost.estimate);
  else
    run_members(*c, rec.index);
  interfere(*c, cost.hold, false);
  rec.comm_end = rec.end = sg4::Engine::get_clock();
  if (!reported()) return;
  for (double* t : {&rec.negotiated_at, &rec.start, &rec.comm_start, &rec.comm_end, &rec.end}) *t -= reported_start_;
  records_.push_back(std::move(rec));
}

std::uint64_t TrainingRun::bucket_bytes(const std::vector<int>& tensors) const {
  std::uint64_t bytes = 0;
  for (int t : tensors) bytes += static_cast<std::uint64_t>(model_.tensors[t].numel) * bucket_element_bytes_;
  return bytes;
}

void TrainingRun::copy_out_of_buckets(const collective::FusionPlanner& planner) {
  double backward_end = 0;  // the slowest rank's backward pass, its copies into the buckets included
  for (int i = 0; i < planner.tensor_count(); ++i) backward_end = std::max(backward_end, planner.ready_time(i));
  const BucketCopyOut::Tail tail = bucket_copy_out_.finish(backward_end);
  for (std::size_t i = 0; reported() && i < tail.starts.size(); ++i)
    spans_.push_back({0, std::string(kBucketCopyOut), tail.starts[i] - reported_start_,
                      tail.starts[i] + tail.copy_s[i] - reported_start_});
  sleep(tail.end - sg4::Engine::get_clock());
}

void TrainingRun::wait_next_cycle(collective::FusionPlanner& planner, double tick, double cycle, bool idle) {
  auto wait_for_ready = [&] {
    std::unique_lock<sg4::Mutex> lock(*announce_mutex_);
    while (!planner.has_ready()) announced_->wait(lock);
  };
  if (cycle <= 0) {  // no cycle: negotiate again as soon as another gradient is announced
    if (idle) wait_for_ready();
    return;
  }
  double next = tick + cycle;
  if (idle && !planner.has_ready()) {
    // An idle cycle negotiates nothing: wait for the next ready gradient, then for the first tick at or
    // after it, rather than simulate every empty cycle between (a 1 ns cycle over a backward pass).
    wait_for_ready();
    const double now = sg4::Engine::get_clock();
    if (now > next) next = tick + std::ceil((now - tick) / cycle) * cycle;
  }
  if (sg4::Engine::get_clock() < next) sleep(next - sg4::Engine::get_clock());
}

void TrainingRun::finish() {
  std::unique_lock<sg4::Mutex> lock(*announce_mutex_);
  while (in_flight_ > 0) collective_done_->wait(lock);
}

void TrainingRun::launch_buffer(const collective::FusionBuffer& b) {
  const int limit = s_.communication.concurrent_collectives;
  if (limit == 1) {
    run_buffer(b);
    return;
  }
  {
    std::unique_lock<sg4::Mutex> lock(*announce_mutex_);
    while (limit > 0 && in_flight_ >= limit) collective_done_->wait(lock);
    ++in_flight_;
  }
  sg4::Actor::create("buffer" + std::to_string(b.tensors.front()), host_of_vertex_[cm_.member(0).device], [this, b] {
    run_buffer(b);
    std::unique_lock<sg4::Mutex> lock(*announce_mutex_);
    --in_flight_;
    collective_done_->notify_all();
  });
}

void TrainingRun::start_engine(sg4::Engine& engine) {
  for (const auto& c : network_model_config()) engine.set_config(c);
}

namespace {
struct EngineArgs {
  int argc = 2;
  char arg0[8] = "ringsim";
  char arg1[32] = "--log=root.thres:critical";
  char* argv[3] = {arg0, arg1, nullptr};
};
}  // namespace

std::vector<LinkLoad> TrainingRun::link_loads(double iteration_s) const {
  std::vector<LinkLoad> links;
  for (int e = 0; e < cm_.edge_count(); ++e) {
    if (edge_bytes_[e] <= 0) continue;
    LinkLoad ll{cm_.edge_name(e), "rpc", "process", cm_.edge_bandwidth(e), edge_bytes_[e], 0};
    if (!cm_.rpc_edge(e)) {  // a server's RPC stack is no link of the graph
      const Link& l = topo_.link(cm_.edge(e));
      // A GPU-to-GPU path through host memory: loaded against the rate the library reaches on it.
      const bool pair = cm_.gpu_pair_edge(e);
      ll.link_class = l.link_class + (pair ? "/gpu-to-gpu" : "");
      ll.kind = std::string(to_string(l.kind));
      ll.bandwidth = pair ? cm_.edge_bandwidth(e) : l.bandwidth;
    }
    ll.utilisation = ll.bytes / (ll.bandwidth * iteration_s);
    links.push_back(std::move(ll));
  }
  std::stable_sort(links.begin(), links.end(), [](const LinkLoad& a, const LinkLoad& b) {
    return a.utilisation != b.utilisation ? a.utilisation > b.utilisation : a.name < b.name;
  });
  return links;
}

CollectiveTiming TrainingRun::run_alone(const Collective& c) {
  EngineArgs args;
  sg4::Engine engine(&args.argc, args.argv);
  start_engine(engine);
  build_platform(&c, false);
  CollectiveTiming out;
  sg4::Actor::create("driver", host_of_vertex_[cm_.member(0).device], [&] {
    const double start = sg4::Engine::get_clock();
    const double estimate = collective_duration(c, cm_, &edge_bytes_);
    if (fidelity_ == Fidelity::Step)
      sleep(estimate);
    else
      run_members(c, 0);
    out.duration_s = sg4::Engine::get_clock() - start;
  });
  engine.run();
  for (int e = 0; e < cm_.edge_count(); ++e)
    if (edge_bytes_[e] > 0) out.edge_bytes[cm_.edge_name(e)] = edge_bytes_[e];
  return out;
}

Prediction TrainingRun::run(bool links) {
  EngineArgs args;
  sg4::Engine engine(&args.argc, args.argv);
  start_engine(engine);
  build_platform(nullptr, true);
  announced_ = sg4::ConditionVariable::create();
  gather_cv_ = sg4::ConditionVariable::create();
  announce_mutex_ = sg4::Mutex::create();
  collective_done_ = sg4::ConditionVariable::create();
  next_iteration_ = sg4::ConditionVariable::create();
  iteration_end_.assign(iterations(), 0);
  holds_.assign(static_cast<std::size_t>(cm_.workers()), Hold{});
  data_wait_.assign(iterations(), 0);
  phase_start_.assign(phases_, 0);
  if (loader_) loader_->start();

  const int ranks = fidelity_ == Fidelity::Flow ? cm_.workers() : 1;
  for (int r = 0; r < ranks; ++r)
    sg4::Actor::create("rank" + std::to_string(r), host_of_vertex_[cm_.member(r).device],
                       [this, r] { compute_actor(r); });
  sg4::Actor::create("coordinator", host_of_vertex_[cm_.member(0).device], [this] { coordinator(); });
  engine.run();
  const collective::FusionPlanner& planner = *planners_[reported_];
  bool complete = records_.empty() == (planner.tensor_count() == 0);
  for (const auto& pl : planners_) complete = complete && pl->all_planned();
  if (!complete) throw std::logic_error("the simulated iteration did not complete (deadlock in the simulation)");

  Prediction p;
  p.scenario = s_;
  p.fidelity = fidelity_;
  p.library = cm_.library().name;
  p.gpus = s_.cluster.total_gpus();
  p.worker_nodes = s_.cluster.nodes;
  p.server_nodes = topo_.nodes() - s_.cluster.nodes;
  p.nodes = topo_.nodes();
  p.iteration_time_s = end_;
  set_compute_fields(p, compute_, *framework_, 1);
  p.straggler_s = compute_.straggler_s;
  p.co_run_s = compute_.co_run_s;
  // The time some collective is in flight (the sum of their durations when they run one at a time).
  std::vector<std::pair<double, double>> spans;
  for (const auto& r : records_) spans.push_back({r.start, r.end});
  std::sort(spans.begin(), spans.end());
  for (std::size_t i = 0; i < spans.size();) {
    double end = spans[i].second;
    const double start = spans[i].first;
    for (++i; i < spans.size() && spans[i].first < end; ++i) end = std::max(end, spans[i].second);
    p.communication_time_s += end - start;
  }
  double computed = 0;  // rank 0's forward and backward passes as they ran
  for (const auto& sp : spans_) {
    if (sp.rank != 0 || sp.name == "DATA_WAIT") continue;
    (sp.name == kBucketCopyIn || sp.name == kBucketCopyOut ? p.bucket_copy_s : computed) += sp.end - sp.start;
  }
  const double slowed = computed - p.forward_s - p.backward_s;
  p.compute_interference_s = slowed > 1e-9 ? slowed : 0;
  p.single_gpu_images_per_sec = compute_.single_gpu_images_per_sec;
  finish_result(p, s_);
  if (s_.storage) apply_data_pipeline(p, p.gpus * s_.samples_per_gpu_step());
  std::vector<double> ready;
  for (std::size_t t = 0; t < model_.tensors.size(); ++t)
    ready.push_back(planner.ready_time(static_cast<int>(t)) - reported_start_);
  set_tensors(p, model_, factory_.tensor_bytes(), ready);
  std::stable_sort(records_.begin(), records_.end(),
                   [](const CollectiveRecord& a, const CollectiveRecord& b) { return a.index < b.index; });
  p.collectives = std::move(records_);
  std::stable_sort(spans_.begin(), spans_.end(), [](const ComputeSpan& a, const ComputeSpan& b) {
    return a.rank != b.rank ? a.rank < b.rank : a.start < b.start;
  });
  p.compute_spans = std::move(spans_);
  if (links) p.links = link_loads(p.iteration_time_s);
  if (!p.links.empty()) p.bottleneck = p.links.front();
  p.simulated_activities = activities_ + (loader_ ? loader_->activities() : 0);
  for (const auto& r : p.collectives)
    for (const auto& ph : r.phases) p.represented_transfers += static_cast<std::int64_t>(ph.steps) * ph.transfers;
  return p;
}

}  // namespace training_detail

using training_detail::TrainingRun;

namespace {
void check_fidelity(const Scenario& scenario, Fidelity fidelity) {
  if (fidelity == Fidelity::Step && scenario.communication.concurrent_collectives != 1)
    throw InputError({},
                     "communication.concurrent_collectives other than 1 is simulated by the flow fidelity only "
                     "(the step fidelity's collective times assume each has the links to itself); this scenario "
                     "has " +
                         std::to_string(scenario.cluster.total_gpus()) +
                         " GPUs: pass --fidelity flow, or set concurrent_collectives: 1");
}
}  // namespace

Prediction predict(const Catalog& catalog, const Scenario& scenario, Fidelity fidelity) {
  check_fidelity(scenario, fidelity);
  TrainingRun run(catalog, scenario, fidelity);
  return run.run();
}

PreparedPrediction::PreparedPrediction(const Catalog& catalog, const Scenario& scenario, Fidelity fidelity)
    : scenario_(scenario), fidelity_(fidelity) {
  check_fidelity(scenario, fidelity);
  run_ = std::make_unique<TrainingRun>(catalog, scenario_, fidelity);
  run_->share_layout();
}

PreparedPrediction::~PreparedPrediction() = default;

Prediction PreparedPrediction::run() { return run_->run(); }

std::pair<double, double> predict_rates_and_exit(const Catalog& catalog, const Scenario& scenario, Fidelity fidelity) {
  // Reachable until the process exits, which a child does with _exit: no teardown, a seventh of a large
  // cluster's run (its graph, routes and paths freed piece by piece). Its catalog and scenario may be gone.
  check_fidelity(scenario, fidelity);
  static std::vector<std::unique_ptr<TrainingRun>> kept;
  kept.push_back(std::make_unique<TrainingRun>(catalog, scenario, fidelity));
  const Prediction p = kept.back()->run(false);
  return {p.images_per_sec, p.time_to_train_s};
}

CollectiveTiming simulate_collective(const Catalog& catalog, const Scenario& scenario, const collective::Collective& c,
                                     Fidelity fidelity) {
  TrainingRun run(catalog, scenario, fidelity);
  return run.run_alone(c);
}

CollectiveTiming simulate_allreduce(const Catalog& catalog, const Scenario& scenario, std::uint64_t bytes,
                                    int element_bytes, Fidelity fidelity) {
  if (scenario.communication.strategy == Strategy::ParameterServer)
    throw InputError({},
                     "an allreduce alone is simulated for strategy ring, hierarchical or halving_doubling; "
                     "parameter servers exchange a model's tensors (use predict)");
  TrainingRun run(catalog, scenario, fidelity);
  const auto c = run.buffer_collective(bytes, element_bytes);
  return run.run_alone(*c);
}

}  // namespace ringsim
