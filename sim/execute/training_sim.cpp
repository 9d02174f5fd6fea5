#include "execute/training_sim.h"

#include <xbt/log.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <set>
#include <simgrid/s4u.hpp>
#include <stdexcept>

#include "collective/fusion.h"
#include "collective/transport.h"
#include "execute/buffer_collective.h"
#include "execute/comm_model.h"
#include "execute/platform_builder.h"
#include "execute/step_model.h"
#include "graph/topology_graph.h"
#include "schedule/compute_model.h"

namespace sg4 = simgrid::s4u;

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

namespace {

using collective::Collective;
using collective::RankStep;
using collective::Space;
using collective::Transfer;

// Builds the collective for one fusion buffer.
class CollectiveFactory {
 public:
  CollectiveFactory(const Scenario& s, const ModelSpec& model, CommModel& cm) : s_(s), cm_(cm) {
    for (const auto& t : model.tensors)
      tensor_bytes_.push_back(static_cast<std::uint64_t>(t.numel) * model.dtype_bytes());
    if (s.communication.strategy == Strategy::ParameterServer)
      server_of_ = collective::assign_to_servers(tensor_bytes_, s.communication.parameter_servers);
    // Rings follow the fastest links inside a node, the same in every node, nodes in index order.
    local_order_ = cm.local_ring_order();
    ring_order_ = cm.ring_order();
  }
  std::unique_ptr<Collective> make(const collective::FusionBuffer& b) const {
    std::vector<std::uint64_t> shards;
    if (s_.communication.strategy == Strategy::ParameterServer) {
      shards.assign(s_.communication.parameter_servers, 0);
      for (int t : b.tensors) shards[server_of_[t]] += tensor_bytes_[t];
    }
    return make_buffer_collective(s_, {cm_.workers(), cm_.data_space(), ring_order_, local_order_}, b.bytes,
                                  b.element_bytes, shards);
  }
  const std::vector<std::uint64_t>& tensor_bytes() const { return tensor_bytes_; }

 private:
  const Scenario& s_;
  CommModel& cm_;
  std::vector<std::uint64_t> tensor_bytes_;
  std::vector<int> server_of_;
  std::vector<int> local_order_, ring_order_;
};

// Per-collective shared state of the flow fidelity: which messages of which step have arrived.
struct FlowRendezvous {
  int steps = 0;
  std::vector<int> arrived;  // member x step
  sg4::MutexPtr mutex = sg4::Mutex::create();
  sg4::ConditionVariablePtr cv = sg4::ConditionVariable::create();
};

class SimgridTransport final : public collective::Transport {
 public:
  SimgridTransport(int member, CommModel& cm, FlowRendezvous& rv, const std::vector<sg4::Host*>& host_of_vertex,
                   std::int64_t& activities)
      : me_(member), cm_(cm), rv_(rv), hosts_(host_of_vertex), activities_(activities) {}

  void post(int, const RankStep& step) override {
    double overhead = 0;
    for (const auto& t : step.sends) overhead = std::max(overhead, cm_.path(t).overhead);
    if (overhead > 0) sleep(overhead);
    comms_.clear();
    for (const auto& t : step.sends) {
      sg4::Host* from = hosts_[cm_.endpoint(t.src, t.src_space)];
      sg4::Host* to = hosts_[cm_.endpoint(t.dst, t.dst_space)];
      comms_.push_back(sg4::Comm::sendto_async(from, to, t.bytes));
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
  }
  void reduce(const Transfer& r) override { sleep(cm_.reduce_time(me_, r.dst_space, r.bytes)); }
  void update(std::uint64_t bytes) override { sleep(cm_.update_time(me_, bytes)); }

 private:
  void sleep(double s) {
    if (s <= 0) return;
    sg4::this_actor::sleep_for(s);
    ++activities_;
  }
  int me_;
  CommModel& cm_;
  FlowRendezvous& rv_;
  const std::vector<sg4::Host*>& hosts_;
  std::int64_t& activities_;
  std::vector<sg4::CommPtr> comms_;
};

class TrainingRun {
 public:
  TrainingRun(const Catalog& catalog, const Scenario& s, Fidelity fidelity)
      : catalog_(catalog),
        s_(s),
        fidelity_(fidelity),
        model_(catalog.model(s.model.name)),
        compute_(build_compute_model(catalog, s)),
        topo_(Topology::build(catalog, simulated_shape(s))),
        cm_(catalog, s, topo_),
        factory_(s, model_, cm_) {
    if (s.communication.strategy == Strategy::ParameterServer) place_servers();
    std::vector<collective::FusionTensor> ft;
    for (auto b : factory_.tensor_bytes()) ft.push_back({b, model_.dtype_bytes()});
    const int announcing = fidelity == Fidelity::Flow ? s.cluster.total_gpus() : 1;
    planner_ = std::make_unique<collective::FusionPlanner>(
        ft, static_cast<std::uint64_t>(s.communication.fusion_threshold_bytes), announcing);
    edge_bytes_.assign(cm_.edge_count(), 0);
  }

  Prediction run();
  CollectiveTiming run_alone(const Collective& c);

 private:
  void place_servers() { cm_.set_servers(parameter_server_places(s_, topo_)); }
  // The input pipeline beside the simulated iteration (data_pipeline.h): the same analytical model in both
  // fidelities, fed with the gradient bytes this run put on each node's Ethernet NIC.
  void apply_data_pipeline(Prediction& p, double images) {
    const TopologyGraph& g = topo_.graph();
    NicShare nic;
    nic.bandwidth = catalog_.sku(s_.cluster.sku).ethernet_bandwidth;
    nic.shared = s_.cluster.fabric == FabricKind::Ethernet && topo_.nodes() > 1;
    if (nic.shared) {
      std::set<VertexId> eth(topo_.fabric_nics().begin(), topo_.fabric_nics().end());
      for (int e = 0; e < cm_.edge_count(); ++e) {
        const EdgeId edge = cm_.edge(e);
        if (eth.count(boost::target(edge, g)) && g[boost::source(edge, g)].kind == DeviceKind::FabricSwitch)
          nic.gradient_bytes = std::max(nic.gradient_bytes, edge_bytes_[e]);
      }
    }
    p.data_pipeline = evaluate_data_pipeline(catalog_, s_, p.iteration_time_s, nic, p.iterations_per_epoch);
    const DataPipeline& d = p.data_pipeline;
    p.iteration_time_s = d.steady.iteration_s;
    p.images_per_sec = images / p.iteration_time_s;
    p.images_per_sec_per_gpu = p.images_per_sec / p.gpus;
    p.scaling_efficiency = p.images_per_sec_per_gpu / p.single_gpu_images_per_sec;
    p.epoch_time_s = d.steady.epoch_time_s;
    p.time_to_train_s = d.first.epoch_time_s + (s_.training.epochs - 1) * d.steady.epoch_time_s;
  }
  void build_platform(const Collective* probe);  // probe: the pattern to route (default: a whole-model buffer)
  void start_engine(sg4::Engine& engine);
  void run_members(const Collective& c, int tag);
  void compute_actor(int rank);
  void coordinator();
  void run_buffer(const collective::FusionBuffer& b);
  void sleep(double s) {
    if (s <= 0) return;
    sg4::this_actor::sleep_for(s);
    ++activities_;
  }

  const Catalog& catalog_;
  const Scenario& s_;
  Fidelity fidelity_;
  const ModelSpec& model_;
  ComputeModel compute_;
  Topology topo_;
  CommModel cm_;
  CollectiveFactory factory_;
  std::unique_ptr<collective::FusionPlanner> planner_;
  std::vector<double> edge_bytes_;
  std::vector<sg4::Host*> host_of_vertex_;
  std::vector<CollectiveRecord> records_;
  std::vector<ComputeSpan> spans_;
  sg4::ConditionVariablePtr announced_;
  sg4::MutexPtr announce_mutex_;
  double end_ = 0;
  std::int64_t activities_ = 0;
};

void TrainingRun::build_platform(const Collective* c) {
  const TopologyGraph& g = topo_.graph();
  auto* zone = sg4::create_full_zone("cluster");
  host_of_vertex_.assign(boost::num_vertices(g), nullptr);
  const double gpu_speed = catalog_.gpu(catalog_.sku(s_.cluster.sku).gpu).fp32_peak_flops;
  auto host = [&](VertexId v) {
    if (!host_of_vertex_[v]) {
      const bool gpu = topo_.device(v).kind == DeviceKind::Gpu;
      host_of_vertex_[v] = zone->create_host(topo_.device(v).name, gpu ? gpu_speed : 1e9);
    }
    return host_of_vertex_[v];
  };
  // The step fidelity runs its actors on rank 0's GPU only; the flow fidelity needs every member's hosts
  // (a full zone keeps a route table of hosts squared, so the step fidelity must not create them all).
  host(cm_.member(0).device);
  if (fidelity_ == Fidelity::Flow) {
    const int members =
        cm_.workers() +
        (s_.communication.strategy == Strategy::ParameterServer ? s_.communication.parameter_servers : 0);
    for (int m = 0; m < members; ++m) {
      host(cm_.member(m).device);
      host(cm_.member(m).host);
    }
    // Every (source, destination) pair any collective of this scenario uses: the pattern depends on the
    // algorithm and its members, not on the buffer size, so one template buffer enumerates them all.
    std::unique_ptr<Collective> own;
    if (!c) {
      collective::FusionBuffer probe;
      probe.element_bytes = model_.dtype_bytes();
      for (int t = 0; t < planner_->tensor_count(); ++t) probe.tensors.push_back(t);
      for (int t : probe.tensors) probe.bytes += factory_.tensor_bytes()[t];
      own = factory_.make(probe);
      c = own.get();
    }
    std::set<std::pair<VertexId, VertexId>> pairs;
    RankStep st;
    for (int s = 0; s < c->steps(); ++s)
      for (int m = 0; m < c->members(); ++m) {
        c->rank_step(m, s, st);
        for (const auto& t : st.sends)
          pairs.insert({cm_.endpoint(t.src, t.src_space), cm_.endpoint(t.dst, t.dst_space)});
      }
    PlatformBuilder builder(cm_, zone);
    for (const auto& [a, b] : pairs) builder.add_route(host(a), host(b), cm_.path(a, b), false);
  }
  zone->seal();
}

void TrainingRun::compute_actor(int rank) {
  sg4::Host* h = sg4::this_actor::get_host();
  auto exec = [&](const std::string& name, double seconds) {
    const double start = sg4::Engine::get_clock();
    if (seconds > 0) {
      sg4::this_actor::execute(seconds * h->get_speed());
      ++activities_;
    }
    spans_.push_back({rank, name, start, sg4::Engine::get_clock()});
  };
  exec("FORWARD", compute_.forward_s);
  for (auto l = compute_.layers.rbegin(); l != compute_.layers.rend(); ++l) {
    if (l->backward_s > 0) exec(l->name, l->backward_s);
    for (auto t = l->tensors.rbegin(); t != l->tensors.rend(); ++t) planner_->announce(*t, sg4::Engine::get_clock());
    announced_->notify_all();
  }
}

void TrainingRun::run_buffer(const collective::FusionBuffer& b) {
  CollectiveRecord rec;
  rec.index = static_cast<int>(records_.size());
  rec.bytes = b.bytes;
  rec.tensors = b.tensors;
  rec.negotiated_at = b.negotiated_at;
  rec.start = sg4::Engine::get_clock();
  const bool fused = b.tensors.size() > 1;
  if (fused) sleep(cm_.device_copy_time(b.bytes));  // MEMCPY_IN_FUSION_BUFFER, on every GPU at once
  rec.comm_start = sg4::Engine::get_clock();
  auto c = factory_.make(b);
  rec.algorithm = std::string(c->algorithm());
  sleep(cm_.library().collective_overhead);
  std::vector<RunCost> runs;
  const double estimate = collective_duration(*c, cm_, &edge_bytes_, &runs);
  for (const auto& r : runs) rec.phases.push_back({std::string(r.phase), r.count, r.step_s, r.transfers});
  if (fidelity_ == Fidelity::Step) {
    sleep(estimate);
  } else {
    run_members(*c, rec.index);
  }
  rec.comm_end = sg4::Engine::get_clock();
  if (fused) sleep(cm_.device_copy_time(b.bytes));  // MEMCPY_OUT_FUSION_BUFFER
  rec.end = sg4::Engine::get_clock();
  records_.push_back(std::move(rec));
}

void TrainingRun::run_members(const Collective& c, int tag) {
  FlowRendezvous rv;
  rv.steps = c.steps();
  rv.arrived.assign(static_cast<std::size_t>(c.members()) * std::max(1, rv.steps), 0);
  std::vector<sg4::ActorPtr> actors;
  for (int m = 0; m < c.members(); ++m) {
    sg4::Host* h = host_of_vertex_[cm_.member(m).device];
    actors.push_back(sg4::Actor::create("c" + std::to_string(tag) + "." + std::to_string(m), h, [&, m] {
      SimgridTransport t(m, cm_, rv, host_of_vertex_, activities_);
      collective::run_member(c, m, t);
    }));
  }
  for (auto& a : actors) a->join();
}

void TrainingRun::coordinator() {
  const double cycle = s_.communication.cycle_time_s;
  while (!planner_->all_planned()) {
    const double tick = sg4::Engine::get_clock();
    auto buffers = planner_->negotiate(tick);
    for (const auto& b : buffers) run_buffer(b);
    if (planner_->all_planned()) break;
    if (cycle > 0) {
      const double next = tick + cycle;
      if (sg4::Engine::get_clock() < next) sleep(next - sg4::Engine::get_clock());
    } else if (buffers.empty()) {
      // No cycle: negotiate again as soon as another gradient is announced.
      std::unique_lock<sg4::Mutex> lock(*announce_mutex_);
      while (!planner_->has_ready()) announced_->wait(lock);
    }
  }
  if (s_.communication.strategy != Strategy::ParameterServer) sleep(compute_.update_s);  // optimizer step
  end_ = sg4::Engine::get_clock();
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

CollectiveTiming TrainingRun::run_alone(const Collective& c) {
  EngineArgs args;
  sg4::Engine engine(&args.argc, args.argv);
  start_engine(engine);
  build_platform(&c);
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

Prediction TrainingRun::run() {
  EngineArgs args;
  sg4::Engine engine(&args.argc, args.argv);
  start_engine(engine);
  build_platform(nullptr);
  announced_ = sg4::ConditionVariable::create();
  announce_mutex_ = sg4::Mutex::create();

  const int ranks = fidelity_ == Fidelity::Flow ? cm_.workers() : 1;
  for (int r = 0; r < ranks; ++r)
    sg4::Actor::create("rank" + std::to_string(r), host_of_vertex_[cm_.member(r).device],
                       [this, r] { compute_actor(r); });
  sg4::Actor::create("coordinator", host_of_vertex_[cm_.member(0).device], [this] { coordinator(); });
  engine.run();
  if (!planner_->all_planned() || records_.empty() != (planner_->tensor_count() == 0))
    throw std::logic_error("the simulated iteration did not complete (deadlock in the simulation)");

  Prediction p;
  p.scenario = s_;
  p.fidelity = fidelity_;
  p.library = cm_.library().name;
  p.gpus = s_.cluster.total_gpus();
  p.worker_nodes = s_.cluster.nodes;
  p.server_nodes = topo_.nodes() - s_.cluster.nodes;
  p.nodes = topo_.nodes();
  p.iteration_time_s = end_;
  p.forward_s = compute_.forward_s;
  p.backward_s = compute_.backward_s;
  p.update_s = s_.communication.strategy == Strategy::ParameterServer ? 0 : compute_.update_s;
  p.compute_time_s = p.forward_s + p.backward_s + p.update_s;
  for (const auto& r : records_) p.communication_time_s += r.end - r.start;
  p.exposed_communication_s = std::max(0.0, p.iteration_time_s - p.compute_time_s);
  const double images = static_cast<double>(p.gpus) * s_.model.batch_per_gpu;
  p.images_per_sec = images / p.iteration_time_s;
  p.images_per_sec_per_gpu = p.images_per_sec / p.gpus;
  p.single_gpu_images_per_sec = compute_.single_gpu_images_per_sec;
  p.scaling_efficiency = p.images_per_sec_per_gpu / p.single_gpu_images_per_sec;
  p.iterations_per_epoch = static_cast<std::int64_t>(std::ceil(s_.training.dataset_images / images));
  p.epoch_time_s = p.iterations_per_epoch * p.iteration_time_s;
  p.time_to_train_s = s_.training.epochs * p.epoch_time_s;
  if (s_.storage) apply_data_pipeline(p, images);
  p.compute_source = compute_.source;
  p.compute_source_detail = compute_.source_detail;
  for (std::size_t t = 0; t < model_.tensors.size(); ++t) {
    p.tensor_names.push_back(model_.tensors[t].name);
    p.tensor_bytes.push_back(factory_.tensor_bytes()[t]);
    p.tensor_ready_s.push_back(planner_->ready_time(static_cast<int>(t)));
  }
  p.collectives = std::move(records_);
  std::stable_sort(spans_.begin(), spans_.end(), [](const ComputeSpan& a, const ComputeSpan& b) {
    return a.rank != b.rank ? a.rank < b.rank : a.start < b.start;
  });
  p.compute_spans = std::move(spans_);
  for (int e = 0; e < cm_.edge_count(); ++e) {
    if (edge_bytes_[e] <= 0) continue;
    const Link& l = topo_.link(cm_.edge(e));
    LinkLoad ll{cm_.edge_name(e), l.link_class, std::string(to_string(l.kind)), l.bandwidth, edge_bytes_[e], 0};
    ll.utilisation = ll.bytes / (ll.bandwidth * p.iteration_time_s);
    p.links.push_back(std::move(ll));
  }
  std::stable_sort(p.links.begin(), p.links.end(), [](const LinkLoad& a, const LinkLoad& b) {
    return a.utilisation != b.utilisation ? a.utilisation > b.utilisation : a.name < b.name;
  });
  if (!p.links.empty()) p.bottleneck = p.links.front();
  p.simulated_activities = activities_;
  for (const auto& r : p.collectives)
    for (const auto& ph : r.phases) p.represented_transfers += static_cast<std::int64_t>(ph.steps) * ph.transfers;
  return p;
}

}  // namespace

Prediction predict(const Catalog& catalog, const Scenario& scenario, Fidelity fidelity) {
  TrainingRun run(catalog, scenario, fidelity);
  return run.run();
}

CollectiveTiming simulate_collective(const Catalog& catalog, const Scenario& scenario, const collective::Collective& c,
                                     Fidelity fidelity) {
  TrainingRun run(catalog, scenario, fidelity);
  return run.run_alone(c);
}

}  // namespace ringsim
