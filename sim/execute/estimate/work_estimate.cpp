#include "execute/estimate/work_estimate.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>

#include "collective/collective.h"
#include "collective/fusion.h"
#include "execute/buffer_collective.h"
#include "execute/comm_model.h"
#include "graph/topology_graph.h"
#include "load/input_error.h"
#include "load/units.h"
#include "schedule/compute_model.h"
#include "train/sharding.h"

namespace ringsim {

namespace {

// Costs per unit of work, fitted to bench/ runs (bench/README.md, "Work estimates"; sim/HISTORY.md).
constexpr double kFlowSecondsPerTransfer = 1e-5;        // ResNet-50 ring, 64-512 GPUs: 3.6-26 us
constexpr double kEmulatedSecondsPerTransfer = 1e-5;    // ResNet-50 ring, 256 ranks: about 9.6 us
constexpr double kStepSecondsPerElement = 2.7e-6;       // ND40rs_v2, 8,192-65,536 nodes: 2.5-2.8 us
constexpr double kStepSecondsPerRankBuffer = 5e-6;      // NC24rs_v3, 16,384-262,144 GPUs, 161 buffers: 3.7-5 us
constexpr double kStepSecondsPerStepTransfer = 2.5e-7;  // by node class: 0.1-0.26 us, 64-2,048 VMs (bench/)
constexpr double kBaseBytes = 40e6;                     // the program, catalog and SimGrid
constexpr double kBytesPerElement = 330;                // a graph vertex or directed edge, its routes, paths
constexpr double kFlowBytesPerRank = 30e3;              // a SimGrid actor and its in-flight activities
constexpr double kEmulatedBytesPerRank = 2.1e6;         // PSS of an SMPI rank (bench: 256 ranks, 542 MB)

std::int64_t graph_elements(const Topology& t) {
  return static_cast<std::int64_t>(boost::num_vertices(t.graph()) + boost::num_edges(t.graph()));
}

double physical_memory_bytes() {
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? static_cast<double>(pages) * static_cast<double>(page) : 0;
}

std::string about_time(double s) {
  char buf[64];
  if (s < 60)
    std::snprintf(buf, sizeof buf, "about %.0f s", std::max(1.0, s));
  else if (s < 3600)
    std::snprintf(buf, sizeof buf, "about %.0f min", s / 60);
  else if (s < 48 * 3600)
    std::snprintf(buf, sizeof buf, "about %.1f h", s / 3600);
  else
    std::snprintf(buf, sizeof buf, "about %.0f days", s / 86400);
  return buf;
}

std::string sci(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, v < 1e6 ? "%.0f" : "%.2g", v);
  return buf;
}

std::string_view fidelity_name(Fidelity f) {
  switch (f) {
    case Fidelity::Flow:
      return "the flow fidelity";
    case Fidelity::Step:
      return "the step fidelity";
    case Fidelity::Emulated:
      return "the emulation";
    case Fidelity::Measured:
      return "the real run";
  }
  return "";
}

// The smallest latency of a link in the cluster: no negotiation round is faster.
double min_link_latency(const Topology& t) {
  double lo = 0;
  for (auto [e, end] = boost::edges(t.graph()); e != end; ++e)
    if (const double l = t.graph()[*e].latency; l > 0 && (lo == 0 || l < lo)) lo = l;
  return lo > 0 ? lo : 1e-6;
}

// Negotiation cycles an iteration runs. The simulation negotiates in a cycle only when a gradient became
// ready since the last one (at most once per tensor and buffer); the emulation, as Horovod, every cycle
// from the forward pass to the last buffer, each cycle lasting at least its allreduce's log2(p) rounds.
double negotiations(const Catalog& catalog, const Scenario& s, Fidelity fidelity, const WorkEstimate& e) {
  const auto& c = s.communication;
  const double tensors = static_cast<double>(catalog.model(s.model.name).tensors.size());
  if (fidelity != Fidelity::Emulated || c.cycle_time_s <= 0) return tensors + e.fusion_buffers;
  const ComputeModel compute = build_compute_model(catalog, s);
  ClusterShape shape = cluster_shape(s.cluster);
  shape.nodes = std::min(shape.nodes, 2);
  const double round = min_link_latency(Topology::build(catalog, shape));
  const double allreduce = round * std::ceil(std::log2(std::max<double>(2, static_cast<double>(e.ranks))));
  return std::ceil((compute.forward_s + compute.backward_s) / std::max(c.cycle_time_s, allreduce)) + e.fusion_buffers;
}

// Every member's sends in every step of `coll` (transfers_per_buffer), and those the step fidelity evaluates
// in its distinct steps (step_transfers_per_buffer). By node class (the step fidelity's way where nodes are
// alike and their GPUs talk inside the VM, not through a rack's switch), a member sends as many as its twin
// in its class's first node, and the step fidelity takes the first nodes' sends and the others' to other nodes.
void count_transfers(const Catalog& catalog, const Scenario& s, const collective::Collective& coll, WorkEstimate& e) {
  const collective::NodeClasses classes = coll.node_classes();
  const auto& gpu_switch = catalog.layout(catalog.sku(s.cluster.sku).layout).nvswitch;
  const bool classed = classes.count() > 0 && classes.count() < classes.nodes() &&
                       classes.members() == coll.members() && (!gpu_switch || gpu_switch->domain_nodes <= 1);
  collective::RankStep st;
  std::vector<collective::Transfer> remote;
  std::vector<std::size_t> sent(coll.members(), 0);  // this step's, by member (a twin's before its own)
  for (const auto& run : coll.runs()) {
    double sends = 0, evaluated = 0;
    for (int m = 0; m < coll.members(); ++m) {
      if (classed && !classes.leads(m)) {
        sends += static_cast<double>(sent[classes.twin(m)]);
        coll.remote_sends(m, run.first, classes, remote);
        evaluated += static_cast<double>(remote.size());
        continue;
      }
      coll.rank_step(m, run.first, st);
      sent[m] = st.sends.size();
      sends += static_cast<double>(sent[m]);
      evaluated += static_cast<double>(sent[m]);
    }
    e.transfers_per_buffer += sends * run.count;
    e.step_transfers_per_buffer += evaluated;
  }
}

// Fusion buffers: at least the gradients over the threshold, and a buffer per negotiation cycle during the
// backward pass; never more than one per tensor. Sharded frameworks: their gathers and reductions.
void count_buffers(const Catalog& catalog, const Scenario& s, const ModelSpec& model, WorkEstimate& e) {
  const auto& c = s.communication;
  const int tensors = static_cast<int>(model.tensors.size());
  if (c.framework == Framework::Deepspeed) {
    // Buckets of reduce_bucket_size elements, and a whole-model all-gather (stages 1, 2) or two a block (stage 3).
    const auto units = static_cast<int>(shard_units(model).size());
    e.fusion_buffers =
        static_cast<int>(std::ceil(static_cast<double>(model.total_params) / kZeroReduceBucketElements)) +
        (state_shards(s) == 1 ? 0
         : c.zero_stage == 3  ? 2 * units
                              : 1);
    e.distinct_buffers = std::min(e.fusion_buffers, 4);
  } else if (c.framework == Framework::Fsdp) {
    // A collective a unit for its gradients, and one or two all-gathers a unit (full_shard: forward and
    // backward) where the states are sharded.
    const auto units = static_cast<int>(shard_units(model).size());
    const int gathers = state_shards(s) == 1 ? 0 : c.sharding == Sharding::FullShard ? 2 : 1;
    e.fusion_buffers = units * (1 + gathers);
    e.distinct_buffers = std::min(e.fusion_buffers, 4);  // the root's and a block's, of each kind
  } else if (c.framework == Framework::PytorchDdp) {
    std::vector<collective::FusionTensor> ft;
    for (const auto& t : model.tensors)
      ft.push_back({static_cast<std::uint64_t>(t.numel) * s.model.gradient_bytes, s.model.gradient_bytes});
    std::set<std::uint64_t> sizes;
    for (const auto& bucket : collective::ddp_buckets(ft, static_cast<std::uint64_t>(c.first_bucket_bytes),
                                                      static_cast<std::uint64_t>(c.bucket_bytes))) {
      std::uint64_t bytes = 0;
      for (int t : bucket) bytes += ft[t].bytes;
      sizes.insert(bytes);
      ++e.fusion_buffers;
    }
    e.distinct_buffers = static_cast<int>(sizes.size());
  } else if (c.fusion_threshold_bytes <= 0) {
    e.fusion_buffers = tensors;
  } else {
    const double backward = build_compute_model(catalog, s).backward_s;
    const double cycles = c.cycle_time_s > 0 ? std::ceil(backward / c.cycle_time_s) : 0;
    const double grad = static_cast<double>(model.total_params) * s.model.gradient_bytes;
    e.fusion_buffers = static_cast<int>(std::min<double>(tensors, std::ceil(grad / c.fusion_threshold_bytes) + cycles));
  }
}

}  // namespace

WorkEstimate estimate_work(const Catalog& catalog, const Scenario& s, Fidelity fidelity) {
  WorkEstimate e;
  const auto& c = s.communication;
  const int workers = s.cluster.total_gpus();
  const int servers = c.server_members();
  e.ranks = workers + servers;

  // Past two nodes (the first with a fabric switch) the graph grows by the same devices and links per
  // node: build two and three nodes and extrapolate.
  ClusterShape shape = cluster_shape(s.cluster);
  const int nodes = shape.nodes + (servers > 0 && c.ps_placement == PsPlacement::Dedicated ? servers : 0);
  shape.nodes = std::min(nodes, 2);
  const std::int64_t base = graph_elements(Topology::build(catalog, shape));
  if (nodes > 2) {
    shape.nodes = 3;
    e.graph_elements = base + (graph_elements(Topology::build(catalog, shape)) - base) * (nodes - 2);
  } else {
    e.graph_elements = base;
  }

  const ModelSpec& model = catalog.model(s.model.name);
  const double grad = static_cast<double>(model.total_params) * s.model.gradient_bytes;
  count_buffers(catalog, s, model, e);
  e.fusion_buffers = std::max(1, e.fusion_buffers);

  // One collective of the mean buffer size: every member's sends in every step.
  const int elem = s.model.gradient_bytes;
  const auto bytes = static_cast<std::uint64_t>(grad / e.fusion_buffers / elem) * elem;
  const auto space = collective_data_space(catalog.library(std::string(to_string(c.library))),
                                           catalog.gpu(catalog.sku(s.cluster.sku).gpu));
  BufferShards shards;
  if (c.strategy == Strategy::ParameterServer)
    shards.bytes.assign(c.parameter_servers, bytes / elem / std::max(1, c.parameter_servers) * elem);
  // Index-order rings: the count of transfers does not depend on the order, only on the channels.
  // Auto: the ring (no choice given), which the estimate counts as it would the ring.
  const bool rings_run = c.strategy == Strategy::Ring || c.strategy == Strategy::Auto;
  const std::vector<std::vector<int>> rings(rings_run ? c.channels : 0);
  const std::vector<std::vector<int>> chains(c.strategy == Strategy::Tree ? c.channels : 0);
  const auto coll = make_buffer_collective(s, {workers, space, rings, {}, chains, std::nullopt}, bytes, elem, shards);
  count_transfers(catalog, s, *coll, e);
  e.transfers_per_iteration = e.transfers_per_buffer * e.fusion_buffers;
  e.negotiations_per_iteration = negotiations(catalog, s, fidelity, e);
  if (fidelity == Fidelity::Emulated) {
    // Each is an MPI allreduce of one flag per tensor: about 2 log2(p) messages per rank.
    const double p = static_cast<double>(e.ranks);
    e.transfers_per_iteration += e.negotiations_per_iteration * p * 2 * std::ceil(std::log2(std::max(2.0, p)));
  }
  if (fidelity != Fidelity::Emulated) e.iterations = simulated_iterations(catalog, s);
  if (e.distinct_buffers == 0) e.distinct_buffers = e.fusion_buffers * e.iterations;

  e.memory_bytes = kBaseBytes + kBytesPerElement * static_cast<double>(e.graph_elements);
  switch (fidelity) {
    case Fidelity::Flow:
      e.memory_bytes += kFlowBytesPerRank * static_cast<double>(e.ranks);
      e.seconds = kFlowSecondsPerTransfer * e.transfers_per_iteration * e.iterations;
      break;
    case Fidelity::Emulated:
      e.memory_bytes += kEmulatedBytesPerRank * static_cast<double>(e.ranks);
      e.seconds = kEmulatedSecondsPerTransfer * e.transfers_per_iteration;
      break;
    case Fidelity::Step:
    case Fidelity::Measured:
      e.seconds = kStepSecondsPerElement * static_cast<double>(e.graph_elements) +
                  kStepSecondsPerRankBuffer * static_cast<double>(e.ranks) * e.distinct_buffers +
                  kStepSecondsPerStepTransfer * e.step_transfers_per_buffer * e.distinct_buffers;
      break;
  }
  return e;
}

std::string describe(const WorkEstimate& e, Fidelity fidelity) {
  std::string out = std::string(fidelity_name(fidelity)) + ": ";
  if (fidelity == Fidelity::Step)
    out += sci(static_cast<double>(e.graph_elements)) + " graph vertices and edges, " +
           sci(e.step_transfers_per_buffer * e.distinct_buffers) + " transfers in distinct steps";
  else
    out += sci(e.transfers_per_iteration) + " transfers per iteration (" + std::to_string(e.fusion_buffers) +
           " fusion buffers x " + sci(e.transfers_per_buffer) + ", " + sci(e.negotiations_per_iteration) +
           " negotiations)" + (e.iterations > 1 ? ", " + std::to_string(e.iterations) + " iterations" : "");
  return out + ", " + format_bytes(e.memory_bytes) + ", " + about_time(e.seconds) +
         (fidelity == Fidelity::Emulated ? " per iteration" : "");
}

namespace {

// "; the band's 17 runs are 48 s of it (--no-band leaves them out)", or "" without a band.
std::string band_share(const WorkEstimate& e) {
  if (e.band_seconds <= 0) return "";
  return "; the band's " + std::to_string(e.band_runs) + " runs are " + about_time(e.band_seconds) +
         " of it (--no-band leaves them out)";
}

}  // namespace

void check_work_limits(const WorkEstimate& e, Fidelity fidelity, const WorkLimits& limits, const std::string& what) {
  const double max_transfers = limits.max_transfers;
  const double memory = physical_memory_bytes();
  if (memory > 0 && e.memory_bytes > 0.9 * memory)
    throw InputError({}, what + ": " + std::string(fidelity_name(fidelity)) + " of " + std::to_string(e.ranks) +
                             " ranks would need about " + format_bytes(e.memory_bytes) +
                             " of memory, more than this machine's " + format_bytes(memory) +
                             (fidelity == Fidelity::Emulated ? "; use `ringsim predict` for this size"
                              : fidelity == Fidelity::Flow   ? "; use --fidelity step"
                                                             : "; use fewer nodes"));
  if ((fidelity == Fidelity::Flow || fidelity == Fidelity::Emulated) && e.transfers_per_iteration > max_transfers)
    throw InputError({}, what + ": " + std::string(fidelity_name(fidelity)) + " of " + std::to_string(e.ranks) +
                             " ranks would run " + sci(e.transfers_per_iteration) + " transfers per iteration (" +
                             std::to_string(e.fusion_buffers) + " fusion buffers x " + sci(e.transfers_per_buffer) +
                             (fidelity == Fidelity::Emulated
                                  ? ", and " + sci(e.negotiations_per_iteration) + " negotiation allreduces"
                                  : "") +
                             "), " + about_time(e.seconds) + (fidelity == Fidelity::Emulated ? " per iteration" : "") +
                             "; the limit is " + sci(max_transfers) +
                             (fidelity == Fidelity::Flow
                                  ? ". Use --fidelity step (each collective step evaluated analytically, the default "
                                    "above 64 GPUs), or raise the limit with --max-transfers"
                                  : ". Use `ringsim predict` for this size, a longer communication.cycle_time, or "
                                    "raise the limit with --max-transfers"));
  if (e.seconds > limits.max_seconds)
    throw InputError({}, what + ": " + std::string(fidelity_name(fidelity)) + " of " + std::to_string(e.ranks) +
                             " ranks would take " + about_time(e.seconds) +
                             (fidelity == Fidelity::Emulated ? " per iteration" : "") + " (" +
                             std::to_string(e.fusion_buffers) + " fusion buffers" +
                             (e.iterations > 1 ? ", " + std::to_string(e.iterations) + " iterations" : "") + ")" +
                             band_share(e) + ", more than the limit of " + about_time(limits.max_seconds) + ". Use " +
                             (e.band_seconds > 0.5 * e.seconds ? "--no-band, " : "") +
                             "a larger communication.fusion_threshold (fewer buffers), fewer nodes, or raise "
                             "the limit with --max-seconds");
}

}  // namespace ringsim
