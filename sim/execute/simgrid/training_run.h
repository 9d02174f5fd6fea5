// Internal to the SimGrid executor (training_sim.cpp, training_data.cpp): the simulated run, TrainingRun, and
// the collective factory it builds its buffers' collectives with. Its input pipeline (storage section) is in
// training_data.cpp, the rest in training_sim.cpp.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <simgrid/s4u.hpp>
#include <string>
#include <utility>
#include <vector>

#include "collective/fusion.h"
#include "collective/horovod_cycle.h"
#include "execute/analytic/step_model.h"
#include "execute/buffer_collective.h"
#include "execute/comm_model.h"
#include "execute/simgrid/data_loader.h"
#include "execute/simgrid/data_pipeline.h"
#include "execute/simgrid/platform_builder.h"
#include "execute/simgrid/training_sim.h"
#include "graph/topology_graph.h"
#include "schedule/compute_model.h"
#include "train/framework.h"
#include "train/iteration.h"

namespace sg4 = simgrid::s4u;

namespace ringsim::training_detail {

using collective::Collective;
using collective::RankStep;
using collective::Space;
using collective::Transfer;

// Builds the collective for one fusion buffer.
class CollectiveFactory {
 public:
  CollectiveFactory(const Scenario& s, const ModelSpec& model, CommModel& cm) : s_(s) {
    for (const auto& t : model.tensors)
      tensor_bytes_.push_back(static_cast<std::uint64_t>(t.numel) * s.model.gradient_bytes);
    if (s.communication.strategy == Strategy::ParameterServer) server_of_ = tensor_servers(s, tensor_bytes_);
    // Rings follow the fastest links inside a node, the same in every node, nodes in index order.
    layout_ = buffer_collective_layout(s, cm.data_space(), cm);
  }
  // `op`: the framework's gradient collective, or an all-gather of sharded parameters.
  std::unique_ptr<Collective> make(const collective::FusionBuffer& b,
                                   collective::BusOp op = collective::BusOp::AllReduce) const {
    if (op != collective::BusOp::AllReduce) return make_sharded_collective(s_, layout_, op, b.bytes, b.element_bytes);
    BufferShards shards;
    if (s_.communication.strategy == Strategy::ParameterServer)
      shards = buffer_shards(s_, server_of_, tensor_bytes_, b.tensors);
    return make_buffer_collective(s_, layout_, b.bytes, b.element_bytes, shards);
  }
  // What make(b, op) depends on: buffers with equal keys get the same collective.
  std::vector<std::uint64_t> key(const collective::FusionBuffer& b, collective::BusOp op) const {
    std::vector<std::uint64_t> k{b.bytes, static_cast<std::uint64_t>(b.element_bytes), static_cast<std::uint64_t>(op)};
    if (s_.communication.strategy != Strategy::ParameterServer) return k;
    const BufferShards shards = buffer_shards(s_, server_of_, tensor_bytes_, b.tensors);
    k.push_back(static_cast<std::uint64_t>(shards.aggregator));
    k.insert(k.end(), shards.bytes.begin(), shards.bytes.end());
    return k;
  }
  const std::vector<std::uint64_t>& tensor_bytes() const { return tensor_bytes_; }
  // Every collective make(b) may return for a buffer like b: under auto the ring, the tree and NVLS (NVLSTree).
  std::vector<std::unique_ptr<Collective>> alternatives(const collective::FusionBuffer& b) const {
    std::vector<std::unique_ptr<Collective>> out;
    if (s_.communication.strategy != Strategy::Auto) {
      out.push_back(make(b));
      return out;
    }
    for (Strategy st : {Strategy::Ring, Strategy::Tree}) {
      Scenario one = s_;
      one.communication.strategy = st;
      one.communication.channels = st == Strategy::Tree ? 2 * s_.communication.channels : s_.communication.channels;
      out.push_back(make_buffer_collective(one, layout_, b.bytes, b.element_bytes, {}));
    }
    if (auto nvls = make_nvls_candidate(s_, layout_, b.bytes, b.element_bytes)) out.push_back(std::move(nvls));
    return out;
  }

 private:
  const Scenario& s_;
  std::vector<std::uint64_t> tensor_bytes_;
  std::vector<int> server_of_;
  BufferCollectiveLayout layout_;
};

// The simulated run. It is Horovod's cycle runtime (collective/horovod_cycle.h): its ranks announce their
// gradients to the planner as they compute, and an idle cycle waits for the next one ready; and the cycle's
// buffer runner, on SimGrid flows (flow fidelity) or the step model.
class TrainingRun final : public collective::CycleRuntime, public collective::BufferRunner, public BufferExecutor {
 public:
  TrainingRun(const Catalog& catalog, const Scenario& s, Fidelity fidelity)
      : catalog_(catalog),
        s_(s),
        fidelity_(fidelity),
        model_(catalog.model(s.model.name)),
        compute_(build_compute_model(catalog, s)),
        topo_(Topology::build(catalog, simulated_shape(s))),
        cm_(catalog, s, topo_),
        factory_(s, model_, cm_),
        framework_(make_framework(s, model_)) {
    if (s.communication.strategy == Strategy::ParameterServer) place_servers();
    if (s.storage) plan_data_pipeline();
    std::vector<collective::FusionTensor> ft;
    for (auto b : factory_.tensor_bytes()) ft.push_back({b, s.model.gradient_bytes});
    const int announcing = fidelity == Fidelity::Flow ? s.cluster.total_gpus() : 1;
    for (int k = 0; k < iterations(); ++k)
      planners_.push_back(std::make_unique<collective::FusionPlanner>(framework_->planner(ft, announcing)));
    gathers_ = framework_->gathers(model_, compute_.layers);
    edge_bytes_.assign(cm_.edge_count(), 0);
    if (auto p = catalog.compute().precisions.find(s.model.precision); p != catalog.compute().precisions.end())
      bucket_element_bytes_ = gradient_element_bytes(p->second.gradient);
  }

  // Makes the layout of the scenario's collectives on this run's cluster, for the SharedLayouts alive.
  void share_layout() { buffer_collective_layout(s_, cm_.data_space(), cm_); }
  // `links`: with each link's load (Prediction::links), which a band's sample does without.
  Prediction run(bool links = true);
  // Each edge that carried bytes, its load over an iteration of `iteration_s`: busiest first.
  std::vector<LinkLoad> link_loads(double iteration_s) const;
  CollectiveTiming run_alone(const Collective& c);

  double now() override { return sg4::Engine::get_clock(); }
  void agree_ready(collective::FusionPlanner&, double) override {}  // the ranks announce as they compute
  void wait_next_cycle(collective::FusionPlanner& planner, double tick, double cycle_s, bool idle) override;
  void start(const collective::FusionBuffer& b) override { launch_buffer(b); }
  void finish() override;
  // The collective this scenario runs for one fusion buffer of `bytes`.
  std::unique_ptr<Collective> buffer_collective(std::uint64_t bytes, int element_bytes) const {
    collective::FusionBuffer b;
    b.bytes = bytes;
    b.element_bytes = element_bytes;
    return factory_.make(b);
  }

 private:
  void place_servers() { cm_.set_servers(parameter_server_places(s_, topo_)); }
  // With a storage section the run simulates the iterations simulated_iterations() says (data_pipeline.h),
  // the loader beside all but the first (data_loader.h). Each phase's steady state is the mean of its last
  // kSteadyIterations iterations (Horovod's cycle makes single iterations differ by up to a cycle); the
  // trace shows the last iteration.
  int iterations() const { return first_loaded_ + phases_ * per_phase_; }
  void plan_data_pipeline();
  NicShare nic_share() const;
  // The fabric switch -> NIC edge of a node on an Ethernet fabric; -1: none (found once, in plan_data_pipeline).
  int nic_edge(int node) const { return nic_edges_.empty() ? -1 : nic_edges_[node]; }
  void add_loader(simgrid::s4u::NetZone* zone, PlatformBuilder& builder,
                  const std::function<sg4::Host*(VertexId)>& host);
  void apply_data_pipeline(Prediction& p, double images);
  // probe: the pattern to route (default: a whole-model buffer); with_loader: add the input pipeline
  void build_platform(const Collective* probe, bool with_loader);
  void start_engine(sg4::Engine& engine);
  void run_members(const Collective& c, int tag);
  void compute_actor(int rank);
  void coordinator();
  void run_iteration(int k);
  // PyTorch DDP without gradient_as_bucket_view (its default) copies each gradient into its bucket as backward
  // produces it (Reducer::mark_variable_ready_dense), and back out once the backward pass is over, bucket by
  // bucket in order as each allreduce is done (finalize_backward): GPU copies on the compute stream.
  bool bucket_copies() const { return framework_->bucket_copies(); }
  std::uint64_t bucket_bytes(const std::vector<int>& tensors) const;  // the gradients' own type (DDP's buckets)
  void copy_out_of_buckets(const collective::FusionPlanner& planner);
  // Runs the buffer's collective here, or (several collectives at once) in an actor of its own once fewer
  // than the scenario's limit are in flight.
  void launch_buffer(const collective::FusionBuffer& b);
  void run_buffer(const collective::FusionBuffer& b);
  // The buffer's steps (train/iteration.h's BufferExecutor): fusion copies at the GPU's copy rate, the
  // collective's call overhead, then its flows (flow fidelity) or its step-model estimate.
  void copy_in(const collective::FusionBuffer& b, bool fused) override;
  void copy_out(const collective::FusionBuffer& b, bool fused) override { copy_in(b, fused); }
  std::unique_ptr<Collective> collective(const collective::FusionBuffer& b) override {
    return factory_.make(b, framework_->gradient_op());
  }
  void exchange(const collective::FusionBuffer& b, const Collective& c, CollectiveRecord& rec) override;
  // A collective's step-model cost: its duration, runs and hold on the compute, evaluated once per kind of
  // buffer (equal CollectiveFactory keys; DDP's buckets and Horovod's full buffers repeat their sizes). Each
  // call adds the bytes it carries to edge_bytes_.
  struct StepCost {
    double estimate = 0;
    std::vector<RunCost> runs;
    ComputeHold hold;
    std::vector<std::pair<int, double>> edge_bytes;  // what one run of it adds to edge_bytes_, by edge
  };
  std::vector<double> step_edge_bytes_;  // zeros between evaluations, as large as edge_bytes_
  const StepCost& step_cost(const collective::FusionBuffer& b, const Collective& c, collective::BusOp op);
  std::map<std::vector<std::uint64_t>, StepCost> step_costs_;
  // While collective c runs it holds part of its GPUs' compute: interfere(c, hold, true) as it starts,
  // (c, hold, false) as it ends. taken(rank): the compute seconds collectives have taken from the rank's GPU
  // so far, which its passes make up for (their work runs at 1 - the shares held).
  void interfere(const Collective& c, const ComputeHold& hold, bool start);
  double taken(int rank) const;
  struct Hold {
    double sms = 0;  // collectives at once each hold their kernels' SMs
    // ...but share the links that feed the memory: the largest of their memory shares counts.
    std::multiset<double> memory;
    double taken = 0, since = 0;  // compute taken before `since`, when the shares last changed
    double held() const { return std::min(ComputeHold::kMost, sms + (memory.empty() ? 0 : *memory.rbegin())); }
  };
  std::vector<Hold> holds_;  // per worker
  // The reported iteration's records are kept, with times from its start.
  bool reported() const { return iteration_ == reported_; }
  void sleep(double s) {
    if (s <= 0) return;
    sg4::this_actor::sleep_for(s);
    ++activities_;
  }
  // The step fidelity's collective of `s` seconds. Sharded frameworks run their all-gathers and their
  // gradients' collectives on two streams at once: there they share one bandwidth (the fabric host's
  // processor sharing), each at half its rate while both run; one at a time it is a sleep.
  void occupy(double s);
  // Sharded parameters (gathers_ non-empty): the iteration's all-gathers in their order, each once the gather
  // it waits for has been released by every computing rank, on an actor of its own (gather_actor).
  void begin_gathers();
  void gather_actor();
  void run_gather(int g);
  void wait_gathered(int g);
  void release_gather(int g);
  GatherPlan gathers_;
  std::vector<int> gather_released_;  // per gather: the computing ranks done with it
  std::vector<char> gathered_;        // per gather: arrived
  sg4::ConditionVariablePtr gather_cv_;
  sg4::ActorPtr gatherer_;
  sg4::Host* fabric_ = nullptr;  // the step fidelity's shared bandwidth (sharded frameworks)

  const Catalog& catalog_;
  const Scenario& s_;
  Fidelity fidelity_;
  const ModelSpec& model_;
  ComputeModel compute_;
  Topology topo_;
  CommModel cm_;
  CollectiveFactory factory_;
  std::unique_ptr<TrainingFramework> framework_;
  std::vector<std::unique_ptr<collective::FusionPlanner>> planners_;  // one per iteration
  std::vector<double> edge_bytes_;
  std::vector<sg4::Host*> host_of_vertex_;
  std::vector<CollectiveRecord> records_;
  std::vector<ComputeSpan> spans_;
  sg4::ConditionVariablePtr announced_;
  sg4::MutexPtr announce_mutex_;
  int in_flight_ = 0;  // collectives running in actors of their own
  sg4::ConditionVariablePtr collective_done_;
  int started_ = 0;                // collectives started since the reported iteration began (their record's index)
  BucketCopyOut bucket_copy_out_;  // DDP: this iteration's buckets, in the order their allreduces ended
  int bucket_element_bytes_ = 4;   // the gradients' type before any compression
  // Iterations: phases x iterations per phase; iteration_ is the one running (ranks wait for their turn).
  int first_loaded_ = 0, phases_ = 1, per_phase_ = 1;  // first_loaded_: the first iteration with a loader
  int iteration_ = 0, reported_ = 0;
  sg4::ConditionVariablePtr next_iteration_;
  std::vector<double> iteration_end_, data_wait_;  // per iteration; data_wait_: rank 0's wait
  std::vector<double> phase_start_;
  double reported_start_ = 0;
  std::unique_ptr<DataLoaderSim> loader_;
  DataPipeline demand_;
  std::vector<StorageSource> sources_;  // epoch 1's storage, then the cache's
  std::vector<int> nic_edges_;          // per node (Ethernet fabrics with several nodes)
  double end_ = 0;
  std::int64_t activities_ = 0;
};

}  // namespace ringsim::training_detail
