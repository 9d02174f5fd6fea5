#include "train/train_run.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <iostream>
#include <optional>
#include <string>

#include "collective/collective.h"
#include "collective/fusion.h"
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
#include "schedule/compute_model.h"
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

}  // namespace

int run_train(const TrainOptions& o, MPI_Comm comm) {
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  Catalog catalog = Catalog::load(o.catalog_dir);
  std::vector<Override> overrides;
  for (const auto& s : o.sets) overrides.push_back(parse_override(s));
  const Scenario s = load_scenario(o.scenario, catalog, overrides);
  // The scenario's calibration, as predict and emulate apply it: the compute stand-ins last what the
  // calibrated model says (the optimizer update streams at the calibrated memory rate).
  if (!s.calibration.empty()) catalog.apply_overlay(s.calibration);
  const auto& comm_cfg = s.communication;
  const bool ps = comm_cfg.strategy == Strategy::ParameterServer;
  const int workers = s.cluster.total_gpus();
  const int servers = comm_cfg.server_members();
  const int needed = workers + servers;
  if (size != needed)
    throw UsageError("the scenario needs " + std::to_string(needed) + " processes (" + std::to_string(workers) +
                     " GPUs" + (servers > 0 ? " + " + std::to_string(servers) + " parameter servers" : "") + "), but " +
                     std::to_string(size) + " were launched");
  const bool worker = rank < workers;
  const ModelSpec& model = catalog.model(s.model.name);
  ComputeModel cm = build_compute_model(catalog, s);
  const DataType type = model.dtype_bytes() == 4 ? DataType::Float32 : DataType::Float64;
  if (model.dtype_bytes() != 4) throw UsageError("ringsim-real trains float32 models only");
  if (const std::string why = real_run_refusal(s); !why.empty()) throw UsageError(why);
  auto backend = make_backend(o.transport, comm, type, o.timeout_s);
  if (o.compute_stand_in == "sleep") {
    if (o.transport != "host")
      throw UsageError(
          "--compute-stand-in sleep applies to the host transport (a GPU transport's stand-in is a "
          "timed kernel on the GPU)");
    backend->set_stand_in(ComputeStandIn::Mode::Sleep);
  }

  const std::size_t n = model.tensors.size();
  std::vector<std::uint64_t> tensor_bytes(n);
  for (std::size_t t = 0; t < n; ++t) tensor_bytes[t] = static_cast<std::uint64_t>(model.tensors[t].numel) * 4;
  std::vector<int> server_of;
  if (ps) server_of = tensor_servers(s, tensor_bytes);
  // Rings follow the fastest links inside a node, as predict's do (the same search, on the same graph).
  const Topology topology = Topology::build(catalog, cluster_shape(s.cluster));
  CommModel comm_model(catalog, s, topology);
  BufferCollectiveLayout layout = buffer_collective_layout(s, comm_model);

  // Gradients, values that make the allreduce checkable (servers hold none).
  std::vector<std::uint64_t> own_bytes(n, 0);
  if (worker) own_bytes = tensor_bytes;
  Gradients grads(*backend, own_bytes);
  std::uint64_t largest = 0;
  for (auto b : tensor_bytes) largest = std::max(largest, b);
  const std::uint64_t fusion_bytes =
      std::max<std::uint64_t>(largest, static_cast<std::uint64_t>(comm_cfg.fusion_threshold_bytes));
  MemberBuffers fusion = backend->allocate(fusion_bytes);
  // Where MEMCPY_IN_FUSION_BUFFER writes and MEMCPY_OUT reads: the fusion buffer itself where the backend
  // keeps it in host memory (one copy each way, as Horovod on CPUs), else host staging that is uploaded.
  char* const direct = static_cast<char*>(backend->host_address(fusion));
  char* const staging = direct ? direct : static_cast<char*>(backend->allocate_host(fusion_bytes));
  const collective::Space space = backend->collective_space();
  layout.space = space;  // the transport's data path (host-staged CUDA, NCCL, host)

  IterationState st(n);
  std::vector<ComputeSpan> spans;
  std::vector<CollectiveRecord> records;
  auto runtime = make_train_runtime();
  double iteration_start = 0;
  auto since_start = [&] { return runtime->now() - iteration_start; };
  const double scale = o.compute_scale;
  std::atomic<bool> recording{false};  // the pass being timed is the last iteration's, whose spans are kept
  if (worker) {
    runtime->start_compute([&](int) {
      const bool record = recording.load() && rank == 0;
      auto span = [&](const std::string& name, double secs) {
        const double b = since_start();
        backend->compute_stand_in(secs);
        if (record) spans.push_back({rank, name, b, since_start()});
      };
      span("FORWARD", cm.forward_s * scale);
      for (auto l = cm.layers.rbegin(); l != cm.layers.rend(); ++l) {
        if (l->backward_s > 0) span(l->name, l->backward_s * scale);
        const double now = since_start();
        for (int t : l->tensors) {
          st.ready_at[t] = now;
          st.ready[t].store(1, std::memory_order_release);
        }
      }
    });
  }

  std::vector<collective::FusionTensor> fusion_tensors;
  for (auto b : tensor_bytes) fusion_tensors.push_back({b, 4});
  // The placement probe: each iteration between two core-to-core probes, and again when they show the CPUs
  // farther apart than they have been (placement/core_to_core.h).
  std::optional<CoreToCoreProbe> probe;
  if (o.probe_cores) {
    if (backend->emulated()) throw UsageError("--probe-cores: an emulated run has no CPUs to probe");
    probe.emplace(comm, o.core_to_core_nearest_ns);
  }
  std::vector<double> iteration_times, comm_times;
  std::vector<std::uint8_t> flags(n);
  std::int64_t wrong = 0;
  const int total_iterations = o.warmup + o.iterations;
  int pass = 0;  // iterations run, retaken ones included: the compute thread's count
  double comm_time = 0;
  // One iteration; returns its time (the slowest rank's).
  auto iteration = [&](int it) {
    runtime->barrier(comm, o.timeout_s, rank, "the barrier before iteration " + std::to_string(it));
    for (auto& r : st.ready) r.store(0);
    if (!backend->emulated()) grads.fill(1.0f + rank);
    const bool last = it == total_iterations - 1;
    recording = last;
    if (last) {
      records.clear();
      spans.clear();
    }
    iteration_start = runtime->now();
    runtime->open(pass++);

    collective::FusionPlanner planner(fusion_tensors, static_cast<std::uint64_t>(comm_cfg.fusion_threshold_bytes), 1);
    std::vector<std::uint8_t> announced(n, 0);
    comm_time = 0;
    int negotiation = 0;
    while (!planner.all_planned()) {
      const double tick_s = since_start();
      // Negotiate: a tensor is ready when every rank has it (servers count as always ready).
      for (std::size_t t = 0; t < n; ++t) flags[t] = worker ? st.ready[t].load(std::memory_order_acquire) : 1;
      runtime->allreduce_min(flags.data(), static_cast<int>(n), comm, o.timeout_s, rank,
                             "negotiation " + std::to_string(negotiation++));
      for (std::size_t t = n; t-- > 0;)  // backward order: the same on every rank
        if (flags[t] && !announced[t]) {
          announced[t] = 1;
          planner.announce(static_cast<int>(t), tick_s);
        }
      for (const auto& b : planner.negotiate(tick_s)) {
        CollectiveRecord rec;
        rec.index = static_cast<int>(records.size());
        rec.bytes = b.bytes;
        rec.tensors = b.tensors;
        rec.negotiated_at = tick_s;
        rec.start = since_start();
        const bool fused = b.tensors.size() > 1;
        std::uint64_t off = 0;
        if (worker) {
          for (int t : b.tensors) {  // MEMCPY_IN_FUSION_BUFFER
            backend->host_copy(staging + off, grads.data(t), tensor_bytes[t]);
            off += tensor_bytes[t];
          }
          if (fused) backend->charge_fusion_copy(b.bytes);
        } else if (!backend->emulated()) {
          // A server sums into its host buffer (the exchange's home space for servers): start from zero.
          std::memset(fusion.host, 0, b.bytes);
        }
        if (!direct) backend->upload(fusion, staging, b.bytes);
        backend->charge_collective_call();
        rec.comm_start = since_start();
        // The exchange's buffer is laid out shard by shard; the fusion buffer is in tensor order, so
        // the server-side layout differs but every rank agrees on it and sizes match.
        const BufferShards shards = ps ? buffer_shards(s, server_of, tensor_bytes, b.tensors) : BufferShards{};
        const auto c = make_buffer_collective(s, layout, b.bytes, 4, shards);
        rec.algorithm = std::string(c->algorithm());
        FaultyTransport t(backend->transport(fusion), o.fault, rank);
        collective::run_member(*c, rank, t);
        backend->synchronize();
        rec.comm_end = since_start();
        if (!direct) backend->download(fusion, staging, b.bytes);
        off = 0;
        if (worker) {
          for (int tix : b.tensors) {  // MEMCPY_OUT_FUSION_BUFFER
            backend->host_copy(grads.data(tix), staging + off, tensor_bytes[tix]);
            off += tensor_bytes[tix];
          }
          if (fused) backend->charge_fusion_copy(b.bytes);
        }
        rec.end = since_start();
        comm_time += rec.end - rec.start;
        if (last) records.push_back(rec);
      }
      if (planner.all_planned()) break;
      runtime->sleep_until(iteration_start + tick_s + comm_cfg.cycle_time_s);
    }
    if (worker && !ps) backend->compute_stand_in(cm.update_s * scale);  // optimizer step
    // Check: every gradient is now the sum over workers of (1 + rank).
    if (worker && last && !backend->emulated()) {
      const float want = workers * (workers + 1) / 2.0f;
      wrong = 0;
      for (std::size_t t = 0; t < n; ++t)
        for (std::size_t i = 0; i < grads.count(t); ++i) wrong += grads.data(t)[i] != want;
    }
    double t = since_start();
    MPI_Allreduce(MPI_IN_PLACE, &t, 1, MPI_DOUBLE, MPI_MAX, comm);
    return t;
  };
  int retakes = 0, far = 0;
  for (int it = 0; it < total_iterations; ++it) {
    const ProbedSample sample = probed(probe ? &*probe : nullptr, [&] { return iteration(it); });
    if (it >= o.warmup) {
      iteration_times.push_back(sample.seconds);
      comm_times.push_back(comm_time);
      retakes += sample.retakes;
      if (probe && (!probe->near(sample.before_ns) || !probe->near(sample.after_ns))) ++far;
    }
  }
  runtime->stop_compute();
  backend->release(fusion);
  if (!direct) backend->release_host(staging);
  MPI_Allreduce(MPI_IN_PLACE, &wrong, 1, MPI_INT64_T, MPI_SUM, comm);

  if (rank == 0) {
    std::sort(iteration_times.begin(), iteration_times.end());
    const double median = iteration_times[iteration_times.size() / 2];
    Prediction p;
    p.scenario = s;
    p.fidelity = backend->emulated() ? Fidelity::Emulated : Fidelity::Measured;
    p.library = std::string(backend->name());
    p.gpus = workers;
    p.worker_nodes = s.cluster.nodes;
    p.server_nodes = ps && comm_cfg.ps_placement == PsPlacement::Dedicated ? comm_cfg.parameter_servers : 0;
    p.nodes = p.worker_nodes + p.server_nodes;
    p.iteration_time_s = median;
    p.forward_s = cm.forward_s * scale;
    p.backward_s = cm.backward_s * scale;
    p.update_s = ps ? 0 : cm.update_s * scale;
    p.compute_time_s = p.forward_s + p.backward_s + p.update_s;
    std::sort(comm_times.begin(), comm_times.end());
    p.communication_time_s = comm_times[comm_times.size() / 2];
    p.exposed_communication_s = std::max(0.0, median - p.compute_time_s);
    const double images = static_cast<double>(workers) * s.model.batch_per_gpu;
    p.images_per_sec = images / median;
    p.images_per_sec_per_gpu = p.images_per_sec / workers;
    p.single_gpu_images_per_sec = p.compute_time_s > 0 ? s.model.batch_per_gpu / p.compute_time_s : 0;
    p.scaling_efficiency = p.single_gpu_images_per_sec > 0 ? p.images_per_sec_per_gpu / p.single_gpu_images_per_sec : 0;
    p.iterations_per_epoch = static_cast<std::int64_t>(std::ceil(s.training.dataset_images / images));
    p.epoch_time_s = p.iterations_per_epoch * median;
    p.time_to_train_s = s.training.epochs * p.epoch_time_s;
    p.compute_source = cm.source;
    p.compute_source_detail = cm.source_detail + (scale != 1 ? " x compute scale " + std::to_string(scale) : "");
    for (std::size_t t = 0; t < n; ++t) {
      p.tensor_names.push_back(model.tensors[t].name);
      p.tensor_bytes.push_back(tensor_bytes[t]);
      p.tensor_ready_s.push_back(st.ready_at[t]);
    }
    p.collectives = records;
    p.compute_spans = spans;
    const std::string json = o.json_file ? result_json(p, backend->emulated() ? "emulated" : "real") : "";
    const std::string trace = o.trace_file ? timeline_json(p) : "";
    if (o.json_file) write_file_atomically(*o.json_file, json);
    if (o.trace_file) write_file_atomically(*o.trace_file, trace);
    std::cout << "ringsim-real train: " << s.name << ", " << workers << " ranks, transport " << backend->name() << ", "
              << o.iterations << " timed iterations\n"
              << "  iteration time (median)     " << format_time(median) << "\n"
              << "  images/s (total)            " << format_number(p.images_per_sec) << "\n"
              << "  communication time          " << format_time(p.communication_time_s) << " in " << records.size()
              << " fusion buffers\n"
              << (probe ? "  core-to-core probe          CPUs " + std::to_string(probe->cpu(0)) + " and " +
                              std::to_string(probe->cpu(1)) + ", nearest " + format_number(probe->nearest()) + " ns; " +
                              std::to_string(retakes) + " iterations retaken, " + std::to_string(far) +
                              " kept with the CPUs farther apart, " + format_number(probe->waited_s()) +
                              " s waited for them to be near\n"
                        : std::string())
              << "  wrong gradient elements     "
              << (backend->emulated() ? std::string("not checked (emulated: buffers are shared between ranks)")
                                      : std::to_string(wrong))
              << "\n";
  }
  return wrong == 0 ? 0 : 1;
}

}  // namespace ringsim::real
