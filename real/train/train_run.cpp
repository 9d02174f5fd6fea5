#include "train/train_run.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <functional>
#include <iomanip>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "collective/collective.h"
#include "collective/fusion.h"
#include "collective/horovod_cycle.h"
#include "collective/transport.h"
#include "execute/buffer_collective.h"
#include "execute/comm_model.h"
#include "execute/prediction.h"
#include "graph/topology_graph.h"
#include "load/catalog.h"
#include "load/scenario.h"
#include "load/units.h"
#include "placement/core_to_core.h"
#include "report/output_file.h"
#include "report/prediction_report.h"
#include "report/stats.h"
#include "schedule/compute_model.h"
#include "train/framework.h"
#include "train/iteration.h"
#include "train/train_runtime.h"
#include "transport/backend.h"

namespace ringsim::real {

namespace {

// State shared by a rank's compute thread and its communication (main) thread.
struct IterationState {
  std::vector<std::atomic<std::uint8_t>> ready;  // per tensor, this rank's gradient is computed
  std::vector<double> ready_at;
  explicit IterationState(std::size_t n) : ready(n), ready_at(n, 0) {}
};

// The gradients: one host allocation (from the backend: SMPI-shared under emulation), a span per tensor.
class Gradients {
 public:
  Gradients(Backend& b, const std::vector<std::uint64_t>& bytes) : backend_(b) {
    std::uint64_t total = 0;
    for (auto x : bytes) total += x;
    base_ = static_cast<char*>(b.allocate_host(total));
    for (auto x : bytes) {
      spans_.push_back({base_ + offset_, x});
      offset_ += x;
    }
  }
  ~Gradients() { backend_.release_host(base_); }
  Gradients(const Gradients&) = delete;
  Gradients& operator=(const Gradients&) = delete;
  float* data(std::size_t t) const { return reinterpret_cast<float*>(spans_[t].first); }
  std::size_t count(std::size_t t) const { return spans_[t].second / sizeof(float); }
  void fill(float v) {
    for (std::size_t t = 0; t < spans_.size(); ++t) std::fill(data(t), data(t) + count(t), v);
  }

 private:
  Backend& backend_;
  char* base_ = nullptr;
  std::uint64_t offset_ = 0;
  std::vector<std::pair<char*, std::uint64_t>> spans_;
};

// One rank's training: its compute thread (train/iteration.h's compute program), the gradients and fusion
// buffer, and Horovod's cycle (collective/horovod_cycle.h) run over the backend's transport, by the
// framework's rules (train/framework.h). The cycle's runtime: where the framework agrees on readiness
// (Horovod), ranks agree on the ready gradients with an allreduce of flags (servers count as always ready)
// and wait by the clock; elsewhere (DDP) a rank announces its own gradients and waits for the next.
class TrainLoop final : public collective::CycleRuntime, public collective::BufferRunner, public BufferExecutor {
 public:
  TrainLoop(const TrainOptions& o, MPI_Comm comm, const Catalog& catalog, const Scenario& s);
  TrainLoop(const TrainLoop&) = delete;
  TrainLoop& operator=(const TrainLoop&) = delete;
  ~TrainLoop() override;

  // One iteration (`last`: the one whose records and spans are kept); returns the slowest rank's time.
  double iteration(int it, bool last);
  void stop() { runtime_->stop_compute(); }
  double comm_time() const { return comm_time_; }
  int negotiations() const { return negotiation_; }  // readiness allreduces in the last iteration
  bool agrees_readiness() const { return framework_->agrees_readiness(); }
  std::int64_t wrong() const { return wrong_; }
  const Backend& backend() const { return *backend_; }
  // Rank 0's result from the timed iterations, in predict's schema.
  Prediction result(std::vector<double> iteration_times, std::vector<double> comm_times) const;

  double now() override { return runtime_->now() - iteration_start_; }
  void agree_ready(collective::FusionPlanner& planner, double tick) override;
  void wait_next_cycle(collective::FusionPlanner&, double tick, double cycle_s, bool idle) override;
  void start(const collective::FusionBuffer& b) override;
  void finish() override {}  // each buffer ran to its end in start()

 private:
  void start_compute();
  // The buffer's steps (train/iteration.h's BufferExecutor) on the backend: MEMCPY_IN_FUSION_BUFFER (a server
  // zeroes its sums), the collective over the transport, MEMCPY_OUT_FUSION_BUFFER.
  void copy_in(const collective::FusionBuffer& b, bool fused) override;
  void copy_out(const collective::FusionBuffer& b, bool fused) override;
  std::unique_ptr<collective::Collective> collective(const collective::FusionBuffer& b) override;
  void exchange(const collective::FusionBuffer& b, const collective::Collective& c, CollectiveRecord& rec) override;
  void check_gradients();  // every gradient is the sum over workers of (1 + rank)
  // Sharded parameters (FSDP): the iteration's all-gathers and reduce-scatters in the order FSDP issues them
  // (sharded_order), each when its inputs are in; the compute thread waits for its units' gathers.
  struct ShardedOp {
    int gather = -1;                // an all-gather of the plan's; -1: a unit's gradient reduce-scatter
    collective::FusionBuffer unit;  // the reduce-scatter's gradients
  };
  std::vector<ShardedOp> sharded_order() const;
  // A sharded framework's gradient buckets, fixed (FSDP's units, DeepSpeed's reduce buckets), in its order.
  std::vector<collective::FusionBuffer> fixed_buckets() const;
  void run_sharded_ops();
  void run_gather(int g);
  void wait_gathered(int g) const;
  // PyTorch DDP's copies of the gradients into its buckets (in the compute thread, after each layer's backward
  // pass) and out of them (collective::bucket_copies_end), stood in for at the GPU's copy rate, as predict has
  // them; none for Horovod, whose fusion copies copy_in and copy_out charge.
  double bucket_copy_s(const std::vector<int>& tensors) const;
  void copy_out_of_buckets(bool last);

  const TrainOptions& o_;
  MPI_Comm comm_;
  int rank_ = 0;
  const Scenario& s_;
  std::unique_ptr<TrainingFramework> framework_;
  const ModelSpec& model_;
  ComputeModel cm_;
  bool ps_ = false, worker_ = false;
  int workers_ = 0;
  std::unique_ptr<Backend> backend_;
  std::vector<std::uint64_t> tensor_bytes_;
  std::vector<int> server_of_;
  BufferCollectiveLayout layout_;
  std::unique_ptr<Gradients> grads_;
  MemberBuffers fusion_;
  char* direct_ = nullptr;   // the fusion buffer itself where the backend keeps it in host memory
  char* staging_ = nullptr;  // where MEMCPY_IN writes and MEMCPY_OUT reads: direct_, or host staging
  IterationState st_;
  std::vector<ComputeSpan> spans_;
  std::vector<CollectiveRecord> records_;
  std::unique_ptr<TrainRuntime> runtime_;
  std::vector<collective::FusionTensor> fusion_tensors_;
  std::vector<std::uint8_t> flags_, announced_;
  std::atomic<bool> recording_{false};  // the pass being timed is the last iteration's, whose spans are kept
  double iteration_start_ = 0, comm_time_ = 0;
  int pass_ = 0;           // iterations run, retaken ones included: the compute thread's count
  int negotiation_ = 0;    // this iteration's, for the coordination's timeout messages
  long signals_seen_ = 0;  // the compute thread's signals before the last announcement (no agreement)
  bool last_ = false;
  std::int64_t wrong_ = 0;
  const GpuSpec& gpu_;
  bool bucket_copies_ = false;     // ddp_copies_buckets, on a worker
  BucketCopyOut bucket_copy_out_;  // this iteration's buckets
  GatherPlan plan_;                // empty: replicated parameters
  BufferCollectiveLayout gather_layout_;
  MemberBuffers gathered_buf_;
  std::vector<std::atomic<std::uint8_t>> gathered_, released_;  // per gather, this iteration
  // The check: elements that hold what the op leaves this rank alone (its own value where it owns the
  // all-gather's chunk, the sum over ranks where it owns the reduce-scatter's share or holds the allreduce's),
  // and the ops' elements, sharded (one owner a shard group) and allreduced (every rank) apart. Over the ranks
  // the first adds up to what the others expect exactly when every element went where it belongs.
  std::int64_t sharded_owned_ = 0, sharded_count_ = 0, sharded_whole_ = 0;
};

TrainLoop::TrainLoop(const TrainOptions& o, MPI_Comm comm, const Catalog& catalog, const Scenario& s)
    : o_(o),
      comm_(comm),
      s_(s),
      framework_(make_framework(s, catalog.model(s.model.name))),
      model_(catalog.model(s.model.name)),
      cm_(build_compute_model(catalog, s, false)),
      st_(model_.tensors.size()),
      gpu_(catalog.gpu(catalog.sku(s.cluster.sku).gpu)) {
  MPI_Comm_rank(comm, &rank_);
  ps_ = s.communication.strategy == Strategy::ParameterServer;
  workers_ = s.cluster.total_gpus();
  worker_ = rank_ < workers_;
  bucket_copies_ = worker_ && framework_->bucket_copies();
  const DataType type = model_.dtype_bytes() == 4 ? DataType::Float32 : DataType::Float64;
  if (model_.dtype_bytes() != 4) throw UsageError("ringsim-real trains float32 models only");
  if (const std::string why = real_run_refusal(s); !why.empty()) throw UsageError(why);
  backend_ = make_backend(o.transport, comm, type, o.timeout_s);
  // A real run has its own stragglers; an emulated one models them as predict does.
  if (backend_->emulated()) cm_ = build_compute_model(catalog, s);
  if (o.compute_stand_in == "sleep") {
    if (o.transport != "host")
      throw UsageError(
          "--compute-stand-in sleep applies to the host transport (a GPU transport's stand-in is a "
          "timed kernel on the GPU)");
    backend_->set_stand_in(ComputeStandIn::Mode::Sleep);
  }
  const std::size_t n = model_.tensors.size();
  for (std::size_t t = 0; t < n; ++t) tensor_bytes_.push_back(static_cast<std::uint64_t>(model_.tensors[t].numel) * 4);
  if (ps_) server_of_ = tensor_servers(s, tensor_bytes_);
  // Rings follow the fastest links inside a node, as predict's do: the same ring search over the same path
  // costs (CommModel's, on the same graph); the data space is the transport's (host-staged CUDA, NCCL, host).
  const Topology topology = Topology::build(catalog, cluster_shape(s.cluster));
  CommModel path_costs(catalog, s, topology);
  layout_ = buffer_collective_layout(s, backend_->collective_space(), path_costs, false);  // no multicast here
  plan_ = framework_->gathers(model_, cm_.layers);
  if (!plan_.empty()) {
    if (backend_->emulated())
      throw UsageError(
          "ringsim-real emulate runs replicated parameters; FSDP and DeepSpeed run for real (ringsim-real train)");
    gather_layout_ =
        buffer_collective_layout(gather_layout_scenario(s), backend_->collective_space(), path_costs, false);
    std::uint64_t largest_gather = 4;
    for (const auto& g : plan_.gathers) largest_gather = std::max(largest_gather, g.bytes);
    gathered_buf_ = backend_->allocate(largest_gather);
    gathered_ = std::vector<std::atomic<std::uint8_t>>(plan_.gathers.size());
    released_ = std::vector<std::atomic<std::uint8_t>>(plan_.gathers.size());
  }
  // Gradients, values that make the allreduce checkable (servers hold none).
  grads_ = std::make_unique<Gradients>(*backend_, worker_ ? tensor_bytes_ : std::vector<std::uint64_t>(n, 0));
  std::uint64_t largest = 0;
  for (auto b : tensor_bytes_) largest = std::max(largest, b);
  for (auto b : tensor_bytes_) fusion_tensors_.push_back({b, 4});
  if (sharded_framework(s))
    for (const auto& b : fixed_buckets()) largest = std::max(largest, b.bytes);
  const std::uint64_t fusion_bytes =
      std::max<std::uint64_t>(largest, static_cast<std::uint64_t>(s.communication.fusion_threshold_bytes));
  fusion_ = backend_->allocate(fusion_bytes);
  // One copy each way where the backend keeps the fusion buffer in host memory (as Horovod on CPUs), else
  // host staging that is uploaded.
  direct_ = static_cast<char*>(backend_->host_address(fusion_));
  staging_ = direct_ ? direct_ : static_cast<char*>(backend_->allocate_host(fusion_bytes));
  runtime_ = make_train_runtime();
  if (worker_) start_compute();
  flags_.assign(n, 0);
}

TrainLoop::~TrainLoop() {
  backend_->release(fusion_);
  if (!plan_.empty()) backend_->release(gathered_buf_);
  if (!direct_) backend_->release_host(staging_);
}

void TrainLoop::start_compute() {
  runtime_->start_compute([this](int) {
    const bool record = recording_.load() && rank_ == 0;
    const ComputeHooks hooks{[&](const std::string& name, double secs) {
                               const double b = now();
                               backend_->compute_stand_in(secs);
                               if (record) spans_.push_back({rank_, name, b, now()});
                             },
                             [&](const std::vector<int>& tensors) {
                               const double at = now();
                               for (int t : tensors) {
                                 st_.ready_at[t] = at;
                                 st_.ready[t].store(1, std::memory_order_release);
                               }
                               runtime_->signal();
                             },
                             [&](int g) { wait_gathered(g); },
                             [&](int g) {
                               released_[g].store(1, std::memory_order_release);
                               runtime_->signal();
                             }};
    run_compute_program(
        cm_, *framework_, o_.compute_scale, [&](const std::vector<int>& t) { return bucket_copy_s(t); }, hooks, plan_);
  });
}

void TrainLoop::agree_ready(collective::FusionPlanner& planner, double tick) {
  const std::size_t n = flags_.size();
  signals_seen_ = runtime_->signals();  // before the flags are read: a later signal means more are ready
  for (std::size_t t = 0; t < n; ++t) flags_[t] = worker_ ? st_.ready[t].load(std::memory_order_acquire) : 1;
  if (framework_->agrees_readiness())
    runtime_->allreduce_min(flags_.data(), static_cast<int>(n), comm_, o_.timeout_s, rank_,
                            "negotiation " + std::to_string(negotiation_++));
  for (std::size_t t = n; t-- > 0;)  // backward order: the same on every rank
    if (flags_[t] && !announced_[t]) {
      announced_[t] = 1;
      planner.announce(static_cast<int>(t), tick);
    }
}

void TrainLoop::wait_next_cycle(collective::FusionPlanner&, double tick, double cycle_s, bool idle) {
  if (framework_->agrees_readiness()) {
    runtime_->sleep_until(iteration_start_ + tick + cycle_s);
  } else if (idle) {  // nothing new of this rank's own: wait for its compute thread's next gradients
    runtime_->wait_signal(signals_seen_, o_.timeout_s, rank_, "the next ready gradient");
  }
}

void TrainLoop::copy_in(const collective::FusionBuffer& b, bool fused) {
  if (worker_) {
    std::uint64_t off = 0;
    for (int t : b.tensors) {
      backend_->host_copy(staging_ + off, grads_->data(t), tensor_bytes_[t]);
      off += tensor_bytes_[t];
    }
    if (fused) backend_->charge_fusion_copy(b.bytes);
  } else if (!backend_->emulated()) {
    // A server sums into its host buffer (the exchange's home space for servers): start from zero.
    std::memset(fusion_.host, 0, b.bytes);
  }
  if (!direct_) backend_->upload(fusion_, staging_, b.bytes);
}

void TrainLoop::copy_out(const collective::FusionBuffer& b, bool fused) {
  if (!direct_) backend_->download(fusion_, staging_, b.bytes);
  if (!worker_) return;
  std::uint64_t off = 0;
  for (int t : b.tensors) {
    backend_->host_copy(grads_->data(t), staging_ + off, tensor_bytes_[t]);
    off += tensor_bytes_[t];
  }
  if (fused) backend_->charge_fusion_copy(b.bytes);
}

double TrainLoop::bucket_copy_s(const std::vector<int>& tensors) const {
  double bytes = 0;
  for (int t : tensors) bytes += static_cast<double>(tensor_bytes_[t]);
  return gpu_.copy_time(bytes);
}

void TrainLoop::copy_out_of_buckets(bool last) {
  double backward_end = 0;
  for (double t : st_.ready_at) backward_end = std::max(backward_end, t);
  const double end = bucket_copy_out_.finish(backward_end).end;
  // The copies that fit beside the last allreduces ran on the GPU then; what is left runs now.
  const double b = now();
  if (end <= b) return;
  backend_->compute_stand_in(end - b);
  if (last && rank_ == 0) spans_.push_back({rank_, std::string(kBucketCopyOut), b, now()});
}

std::unique_ptr<collective::Collective> TrainLoop::collective(const collective::FusionBuffer& b) {
  // The exchange's buffer is laid out shard by shard; the fusion buffer is in tensor order, so the
  // server-side layout differs but every rank agrees on it and sizes match.
  if (framework_->gradient_op() != collective::BusOp::AllReduce)
    return make_sharded_collective(s_, gather_layout_, framework_->gradient_op(), b.bytes, 4);
  const BufferShards shards = ps_ ? buffer_shards(s_, server_of_, tensor_bytes_, b.tensors) : BufferShards{};
  return make_buffer_collective(s_, layout_, b.bytes, 4, shards);
}

void TrainLoop::exchange(const collective::FusionBuffer&, const collective::Collective& c, CollectiveRecord&) {
  backend_->charge_collective_call(c.protocol);
  FaultyTransport t(backend_->transport(fusion_), o_.fault, rank_);
  collective::run_member(c, rank_, t);
  backend_->synchronize();
}

void TrainLoop::start(const collective::FusionBuffer& b) {
  const CollectiveRecord rec = run_buffer(b, static_cast<int>(records_.size()), *framework_, *this);
  if (bucket_copies_) bucket_copy_out_.allreduce_done(rec.end, bucket_copy_s(b.tensors));
  comm_time_ += rec.end - rec.start;
  if (last_) records_.push_back(rec);
}

std::vector<collective::FusionBuffer> TrainLoop::fixed_buckets() const {
  collective::FusionPlanner planner = framework_->planner(fusion_tensors_, 1);
  for (int t = 0; t < planner.tensor_count(); ++t) planner.announce(t, 0);
  return planner.negotiate(0);
}

std::vector<TrainLoop::ShardedOp> TrainLoop::sharded_order() const {
  // FSDP's order, as its hooks issue them on every rank alike: each unit's forward gather; then the first
  // backward gather, and before each bucket of gradients is reduced (the framework's buckets, in its order)
  // the backward gathers of its units and one more (BACKWARD_PRE prefetch). A bucket a unit (FSDP) follows its
  // unit's gather and the next; a bucket of many units (DeepSpeed's) follows all of theirs.
  std::vector<ShardedOp> ops;
  std::vector<int> backward;
  std::vector<int> needs(fusion_tensors_.size(), -1);  // tensor -> its unit's place among the backward gathers
  for (int g = 0; g < static_cast<int>(plan_.gathers.size()); ++g) {
    if (!plan_.gathers[g].backward) {
      ops.push_back({g, {}});
      continue;
    }
    for (int t : plan_.units[plan_.gathers[g].unit].tensors) needs[t] = static_cast<int>(backward.size());
    backward.push_back(g);
  }
  std::size_t next = 0;
  auto gather_through = [&](std::size_t count) {
    for (; next < std::min(count, backward.size()); ++next) ops.push_back({backward[next], {}});
  };
  gather_through(1);
  for (auto& b : fixed_buckets()) {
    int last = -1;
    for (int t : b.tensors) last = std::max(last, needs[t]);
    gather_through(static_cast<std::size_t>(last + 2));
    ops.push_back({-1, std::move(b)});
  }
  gather_through(backward.size());
  return ops;
}

void TrainLoop::run_sharded_ops() {
  sharded_owned_ = sharded_count_ = sharded_whole_ = 0;
  // Waits until `in` holds, for the compute thread's signals (a release, gradients ready).
  auto wait = [&](const std::function<bool()>& in, const std::string& what) {
    for (;;) {
      const long seen = runtime_->signals();
      if (!worker_ || in()) return;
      runtime_->wait_signal(seen, o_.timeout_s, rank_, what);
    }
  };
  for (const auto& op : sharded_order()) {
    if (op.gather >= 0) {
      const int after = plan_.gathers[op.gather].waits_for;
      if (after >= 0)
        wait([&] { return released_[after].load(std::memory_order_acquire) != 0; },
             "the release before gather " + std::to_string(op.gather));
      run_gather(op.gather);
      continue;
    }
    wait(
        [&] {
          return std::all_of(op.unit.tensors.begin(), op.unit.tensors.end(),
                             [&](int t) { return st_.ready[t].load(std::memory_order_acquire) != 0; });
        },
        "a unit's gradients");
    start(op.unit);
    if (!worker_ || backend_->emulated()) continue;
    // After the reduce-scatter its share holds the sum over the ranks of (1 + rank).
    const float sum = workers_ * (workers_ + 1) / 2.0f;
    const auto count = static_cast<std::size_t>(op.unit.bytes / 4);
    const auto* reduced = reinterpret_cast<const float*>(staging_);
    sharded_owned_ += std::count(reduced, reduced + count, sum);
    (framework_->gradient_op() == collective::BusOp::AllReduce ? sharded_whole_ : sharded_count_) +=
        static_cast<std::int64_t>(count);
  }
}

void TrainLoop::run_gather(int g) {
  const std::uint64_t bytes = plan_.gathers[g].bytes;
  const auto count = static_cast<std::size_t>(bytes / 4);
  // Every element this rank's value: after the all-gather each holds its owner's.
  std::vector<float> host(count, 1.0f + rank_);
  const double start = now();
  backend_->upload(gathered_buf_, host.data(), count * 4);
  const auto c = make_sharded_collective(s_, gather_layout_, collective::BusOp::AllGather, count * 4, 4);
  backend_->charge_collective_call(c->protocol);
  FaultyTransport t(backend_->transport(gathered_buf_), o_.fault, rank_);
  collective::run_member(*c, rank_, t);
  backend_->synchronize();
  backend_->download(gathered_buf_, host.data(), count * 4);
  gathered_[g].store(1, std::memory_order_release);
  comm_time_ += now() - start;
  if (last_) {
    CollectiveRecord rec;
    rec.index = static_cast<int>(records_.size());
    rec.algorithm = std::string(c->algorithm());
    rec.protocol = std::string(c->protocol.name);
    rec.bytes = count * 4;
    rec.tensors = plan_.units[plan_.gathers[g].unit].tensors;
    rec.start = rec.comm_start = start;
    rec.comm_end = rec.end = now();
    records_.push_back(std::move(rec));
  }
  if (!backend_->emulated()) {
    sharded_owned_ += std::count(host.begin(), host.end(), 1.0f + rank_);
    sharded_count_ += static_cast<std::int64_t>(count);
  }
}

void TrainLoop::wait_gathered(int g) const {
  const Deadline deadline(o_.timeout_s);
  while (!gathered_[g].load(std::memory_order_acquire) && !deadline.passed())
    std::this_thread::sleep_for(std::chrono::microseconds(20));
}

void TrainLoop::check_gradients() {
  const float want = workers_ * (workers_ + 1) / 2.0f;
  wrong_ = 0;
  for (std::size_t t = 0; t < tensor_bytes_.size(); ++t)
    for (std::size_t i = 0; i < grads_->count(t); ++i) wrong_ += grads_->data(t)[i] != want;
}

double TrainLoop::iteration(int it, bool last) {
  runtime_->barrier(comm_, o_.timeout_s, rank_, "the barrier before iteration " + std::to_string(it));
  for (auto& r : st_.ready) r.store(0);
  if (!backend_->emulated()) grads_->fill(1.0f + rank_);
  last_ = last;
  recording_ = last;
  if (last) {
    records_.clear();
    spans_.clear();
  }
  for (auto& g : gathered_) g.store(0);  // before the compute thread starts the iteration
  for (auto& g : released_) g.store(0);
  iteration_start_ = runtime_->now();
  runtime_->open(pass_++);
  collective::FusionPlanner planner = framework_->planner(fusion_tensors_, 1);
  announced_.assign(flags_.size(), 0);
  comm_time_ = 0;
  negotiation_ = 0;
  if (plan_.empty())
    collective::run_horovod_cycles(planner, *this, *this, s_.communication.cycle_time_s);
  else
    run_sharded_ops();
  if (bucket_copies_) copy_out_of_buckets(last);
  if (worker_ && framework_->optimizer_step()) backend_->compute_stand_in(cm_.update_s * o_.compute_scale);
  if (worker_ && last && !backend_->emulated()) {
    if (plan_.empty()) {
      check_gradients();
    } else {  // every element of every op where it belongs, over the ranks: on each rank of its shard group
      std::int64_t v[3] = {sharded_owned_, sharded_count_, sharded_whole_};
      MPI_Allreduce(MPI_IN_PLACE, v, 3, MPI_INT64_T, MPI_SUM, comm_);
      wrong_ = rank_ == 0 ? std::llabs(v[0] - v[1] / state_shards(s_) - v[2]) : 0;
    }
  }
  double t = now();
  MPI_Allreduce(MPI_IN_PLACE, &t, 1, MPI_DOUBLE, MPI_MAX, comm_);
  return t;
}

Prediction TrainLoop::result(std::vector<double> iteration_times, std::vector<double> comm_times) const {
  const auto& c = s_.communication;
  Prediction p;
  p.scenario = s_;
  p.fidelity = backend_->emulated() ? Fidelity::Emulated : Fidelity::Measured;
  p.library = std::string(backend_->name());
  p.gpus = workers_;
  p.worker_nodes = s_.cluster.nodes;
  p.server_nodes = ps_ && c.ps_placement == PsPlacement::Dedicated ? c.parameter_servers : 0;
  p.nodes = p.worker_nodes + p.server_nodes;
  p.iteration_time_s = upper_median(std::move(iteration_times));
  set_compute_fields(p, cm_, *framework_, o_.compute_scale);
  p.communication_time_s = upper_median(std::move(comm_times));
  for (const auto& sp : spans_)
    if (sp.name == kBucketCopyIn || sp.name == kBucketCopyOut) p.bucket_copy_s += sp.end - sp.start;
  p.single_gpu_images_per_sec = p.compute_time_s > 0 ? s_.model.batch_per_gpu / p.compute_time_s : 0;
  finish_result(p, s_);
  set_tensors(p, model_, tensor_bytes_, st_.ready_at);
  p.collectives = records_;
  p.compute_spans = spans_;
  return p;
}

}  // namespace

int run_train(const TrainOptions& o, MPI_Comm comm) {
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  Catalog catalog = Catalog::load(o.catalog_dir);
  std::vector<Override> overrides;
  for (const auto& s : o.sets) overrides.push_back(parse_override(s));
  const Scenario s = load_scenario(o.scenario, catalog, overrides);
  std::vector<NamedFile> out;
  add_file(out, "--json", o.json_file);
  add_file(out, "--trace", o.trace_file);
  check_outputs(run_inputs(o.catalog_dir, o.scenario, s.calibration), out);
  // The scenario's calibration, as predict and emulate apply it: the compute stand-ins last what the
  // calibrated model says (the optimizer update streams at the calibrated memory rate).
  if (!s.calibration.empty()) catalog.apply_overlay(s.calibration);
  const int workers = s.cluster.total_gpus();
  const int servers = s.communication.server_members();
  if (size != workers + servers)
    throw UsageError("the scenario needs " + std::to_string(workers + servers) + " processes (" +
                     std::to_string(workers) + " GPUs" +
                     (servers > 0 ? " + " + std::to_string(servers) + " parameter servers" : "") + "), but " +
                     std::to_string(size) + " were launched");
  TrainLoop loop(o, comm, catalog, s);
  // The placement probe: each iteration between two core-to-core probes, and again when they show the CPUs
  // farther apart than they have been (placement/core_to_core.h).
  std::optional<CoreToCoreProbe> probe;
  if (o.probe_cores) {
    if (loop.backend().emulated()) throw UsageError("--probe-cores: an emulated run has no CPUs to probe");
    probe.emplace(comm, o.core_to_core_nearest_ns);
  }
  std::vector<double> iteration_times, comm_times;
  const int total_iterations = o.warmup + o.iterations;
  int retakes = 0, far = 0;
  for (int it = 0; it < total_iterations; ++it) {
    const ProbedSample sample =
        probed(probe ? &*probe : nullptr, [&] { return loop.iteration(it, it == total_iterations - 1); });
    if (it < o.warmup) continue;
    iteration_times.push_back(sample.seconds);
    comm_times.push_back(loop.comm_time());
    retakes += sample.retakes;
    if (probe && (!probe->near(sample.before_ns) || !probe->near(sample.after_ns))) ++far;
  }
  loop.stop();
  std::int64_t wrong = loop.wrong();
  MPI_Allreduce(MPI_IN_PLACE, &wrong, 1, MPI_INT64_T, MPI_SUM, comm);
  if (rank != 0) return wrong == 0 ? 0 : 1;

  const Prediction p = loop.result(iteration_times, comm_times);
  const bool emulated = loop.backend().emulated();
  const std::string json = o.json_file ? result_json(p, emulated ? "emulated" : "real") : "";
  const std::string trace = o.trace_file ? timeline_json(p) : "";
  if (o.json_file) write_file_atomically(*o.json_file, json);
  if (o.trace_file) write_file_atomically(*o.trace_file, trace);
  std::cout << "ringsim-real train: " << s.name << ", " << workers << " ranks, transport " << loop.backend().name()
            << ", " << o.iterations << " timed iterations\n"
            << "  iteration time (median)     " << format_time(p.iteration_time_s) << "\n"
            << "  " << std::left << std::setw(28) << catalog.model(s.model.name).sample_noun() + "/s (total)"
            << std::right << format_number(p.images_per_sec) << "\n"
            << "  communication time          " << format_time(p.communication_time_s) << " in " << p.collectives.size()
            << " " << gradient_buffers_noun(p.scenario) << "\n"
            << "  readiness allreduces        " << loop.negotiations() << " in the last iteration ("
            << (loop.agrees_readiness() ? "Horovod's negotiations" : "none: each rank launches its own full buckets")
            << ")\n"
            << (probe ? "  core-to-core probe          CPUs " + std::to_string(probe->cpu(0)) + " and " +
                            std::to_string(probe->cpu(1)) + ", nearest " + format_number(probe->nearest()) + " ns; " +
                            std::to_string(retakes) + " iterations retaken, " + std::to_string(far) +
                            " kept with the CPUs farther apart, " + format_number(probe->waited_s()) +
                            " s waited for them to be near\n"
                      : std::string())
            << "  wrong gradient elements     "
            << (emulated ? std::string("not checked (emulated: buffers are shared between ranks)")
                         : std::to_string(wrong))
            << "\n";
  return wrong == 0 ? 0 : 1;
}

}  // namespace ringsim::real
