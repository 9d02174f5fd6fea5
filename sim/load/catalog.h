// The hardware and model catalog: data loaded from topologies/*.yaml (every number there carries a
// source comment). Nothing about specific hardware is written in code.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "load/size_curve.h"

namespace ringsim {

enum class LinkKind { Pcie, NvLink, SocketInterconnect, Memory, Ethernet, InfiniBand };
std::string_view to_string(LinkKind kind);

enum class FabricKind { InfiniBand, Ethernet };
std::string_view to_string(FabricKind kind);

struct GpuSpec {
  std::string name;  // e.g. "V100-PCIe-16GB"
  std::string description;
  double fp32_peak_flops = 0;
  // Dense peaks of the other arithmetics (`peaks:` tf32, fp16, bf16), FLOP/s; absent where the GPU has none.
  std::map<std::string, double> peaks;
  double peak_flops(const std::string& arithmetic) const;  // fp32 or a `peaks` key; 0 when absent
  double memory_bandwidth = 0;                             // bytes/s
  double memory_bytes = 0;
  int gpus_per_board = 1;         // K80/M60 boards carry two GPUs behind an on-board PCIe switch
  int multiprocessors = 0;        // SMs; 0 where not known (a collective's kernels then take none of them)
  double compute_capability = 0;  // CUDA's (7.0 Volta, 8.0 Ampere, 9.0 Hopper); 0 where none (not NVIDIA)
  // A CPU-only host's rank: an MPI process on a core, its buffers in host memory, reductions on the CPU.
  // Its layout attaches it with a memory-kind link (the process's copies through shared memory).
  bool cpu_process = false;
  // CPU processes: what a message costs more for each further process sharing its core (seconds), and
  // what it costs more again, for each, when the processes are spread over several cores: its sender too
  // waits for its turn on a shared core.
  double core_handoff = 0;
  double cross_core_handoff = 0;
  // Measured memory copies (a calibration overlay's `copy_rates`): bytes copied per second by size, a
  // Geometric curve (caches' effects change gradually); none: 2 x bytes / memory_bandwidth (a copy reads
  // and writes each byte).
  SizeCurve copy_rates{{}, SizeCurve::Shape::Geometric};
  double copy_time(double bytes) const;
};

struct LinkClass {
  std::string name;  // e.g. "pcie3_x16"
  LinkKind kind = LinkKind::Pcie;
  std::string description;
  double bandwidth = 0;  // bytes/s, per direction
  double latency = 0;    // seconds, one way
  // Socket links: whether GPUs on its two sides reach each other peer to peer. Without, a library moves their
  // data through host memory, at its paths.cross_socket figures.
  bool gpu_peer_access = false;
};

struct FabricSpec {
  FabricKind kind = FabricKind::InfiniBand;
  std::string description;
  double switch_latency = 0;  // seconds per switch traversal
  int default_nodes_per_leaf = 0;
};

struct DatasetSpec {
  std::string name;
  std::int64_t training_images = 0;  // samples of an image data set
  std::int64_t training_tokens = 0;  // a text data set's tokens: an epoch is tokens / seq_len sequences
  double training_bytes = 0;         // bytes in storage; 0: not in the catalog
  std::int64_t samples(int tokens_per_sample) const {
    return training_tokens ? std::max<std::int64_t>(1, training_tokens / tokens_per_sample) : training_images;
  }
};

// storage.yaml: one storage backend's read limits (issue 8).
enum class StorageKind { Local, Network };
enum class StorageScaling { PerNode, Shared, PerServer };
std::string_view to_string(StorageScaling s);
struct StorageBackendSpec {
  std::string name;
  std::string description;
  StorageKind kind = StorageKind::Network;
  StorageScaling scaling = StorageScaling::Shared;
  double bandwidth = 0;        // bytes/s per scaling unit
  double iops = 0;             // requests/s per scaling unit
  double request_latency = 0;  // seconds per request
  int default_servers = 0;     // per_server only
  std::string cache;           // backend serving epochs >= 2 when cached; empty: no cache
  bool cache_default = false;
  // Checkpoints (issue 55): write throughput per scaling unit, and what one writing process reaches; 0: the
  // catalog gives none (the backend cannot hold checkpoints; no per-writer limit).
  double write_bandwidth = 0;
  double writer_bandwidth = 0;
};

// A figure of reliability.yaml: its value, the range the evidence leaves it, and where it comes from.
struct RangedFigure {
  double value = 0, low = 0, high = 0;
  std::string source;  // reliability.yaml:LINE and its reference
};
// reliability.yaml (issue 55): how often nodes fail and are evicted, and what an interruption costs.
struct ReliabilitySpec {
  struct ByPattern {
    std::vector<std::string> patterns;  // GPU (failures) or SKU (evictions) names, shell patterns
    RangedFigure rate;
  };
  std::vector<ByPattern> failures;   // per 1000 node-days of a reference node; the first match applies
  int reference_gpus = 8;            // the nodes the failure rates were counted on
  double gpu_share = 0;              // of those failures, the share the GPUs cause (scaled by GPUs a node)
  std::vector<ByPattern> evictions;  // low-priority VMs: evictions per node-day; the first match applies
  RangedFigure restart_s;            // from an interruption to training again, a node at hand
  RangedFigure replacement_s;        // a new node where none is spare
  RangedFigure node_loss_fraction;   // of the failures, those that take their node out of service
  RangedFigure host_copy_fraction;   // an asynchronous checkpoint's copy to host memory: of the GPU's PCIe link
  std::string checkpoint_storage;    // where checkpoints go when a scenario does not say
  // The figure of the first entry whose pattern matches `name`; nullptr where none does.
  static const RangedFigure* match(const std::vector<ByPattern>& list, const std::string& name);
};

// Where a device hangs in a node's PCIe/CPU tree. `parent` is "cpu<N>" or a PCIe switch name.
struct Attachment {
  std::string parent;
  std::string link;  // link class name
};

struct PcieSwitchSpec {
  std::string name;
  Attachment uplink;
};

struct NvLinkSpec {
  int gpu_a = 0;
  int gpu_b = 0;
  int links = 1;
};

struct NodeLayout {
  std::string name;
  std::string description;
  int sockets = 1;
  std::vector<PcieSwitchSpec> pcie_switches;
  std::vector<Attachment> gpus;  // GPU index order
  std::optional<Attachment> ethernet_nic;
  // InfiniBand NICs, one per rail (a DGX-1 has four); empty when the layout has none.
  std::vector<Attachment> infiniband_nics;
  // Per GPU, the InfiniBand NIC closest to it on the PCIe tree (fewest hops to their common parent; on a
  // tie the one fewest GPUs before it use, then the first), as NCCL pairs a GPU with a NIC: the rail its traffic leaves
  // by. Empty without NICs.
  std::vector<int> gpu_rail;
  // Distinct rails of GPUs [0, gpus): how many NICs that many GPUs of a node use.
  int rails_of_first(int gpus) const;
  // A device's way up the PCIe tree from its parent: the parent, the parent's uplink, ... to its cpu<k>.
  std::vector<std::string> pcie_chain(const std::string& parent) const;
  std::string nvlink_class;  // link class of one NVLink brick, when nvlinks is not empty
  std::vector<NvLinkSpec> nvlinks;
  // NVSwitch systems: every GPU's NVLinks go to the node's switches, modelled as one non-blocking switch
  // that each GPU reaches by `links_per_gpu` bricks of class `link` (its port, both directions).
  struct NvSwitch {
    std::string link;
    int links_per_gpu = 0;
    bool reduction = false;  // reduces and multicasts in the switch (NVLink SHARP): strategy nvls
    int domain_nodes = 1;    // nodes (VMs) whose GPUs share the switch: 18 in a GB200 NVL72 rack
  };
  std::optional<NvSwitch> nvswitch;
  // The rings a searched-ring library (NCCL, RCCL) runs at once on one node where one ring uses few of its
  // GPU links (NVLink or xGMI meshes): `channels: auto` on one node takes at least this many. 0: one.
  int rings = 0;
};

struct SkuSpec {
  std::string name;        // "NC24rs_v3"
  std::string azure_name;  // "Standard_NC24rs_v3"
  std::string series;      // "NCv3"
  std::string quota_family;
  std::string gpu;  // GpuSpec name
  int gpus = 0;
  int vcpus = 0;
  double memory_bytes = 0;
  double local_ssd_bytes = 0;
  std::string cpu;
  std::string layout;                          // NodeLayout name
  std::string socket_link;                     // link class between sockets (when the layout has > 1)
  std::string memory_link;                     // link class CPU <-> its host memory
  double ethernet_bandwidth = 0;               // bytes/s of the VM's Ethernet (per-size NIC speed)
  std::string ethernet_link;                   // link class for latency of the Ethernet NIC-to-switch hop
  std::optional<std::string> infiniband_link;  // link class of the RDMA NIC; absent: no InfiniBand
};

// How a 2-D weight computes (a model file's third tensor element): on every token of a sample (the default;
// one token per image for CNNs), as an embedding table that is only looked up, once per sample (a head on
// the class token), or per token and then as its layer's attention (QK^T and AV over the tokens).
enum class TensorUse { PerToken, Lookup, PerSample, Attention };

struct TensorSpec {
  std::string name;
  std::vector<std::int64_t> shape;
  std::int64_t numel = 0;
  int out_h = 0, out_w = 0;  // convolution output size per image; 0 for other tensors
  TensorUse use = TensorUse::PerToken;
  // Forward FLOPs per sample of `tokens` tokens: 2 x numel x out_h x out_w for convolutions; for 2-D weights
  // 2 x numel x tokens (per sample: x 1, lookup: 0), attention adds 2 x 2 x tokens^2 x width; 0 for other
  // tensors (biases, norm scales, position tables).
  double forward_flops(double tokens = 1) const;
};

struct ModelSpec {
  std::string name;
  std::string display_name;
  std::string dataset;
  std::vector<int> input_shape;
  std::string dtype;
  std::int64_t total_params = 0;
  std::vector<TensorSpec> tensors;  // registration (forward) order
  std::string file;
  // Tokens per sample (`tokens:`): 1 for CNNs; a fixed count (ViT's patches), or the default and the most
  // (position embeddings) of model.seq_len for text models.
  int default_tokens = 1, max_tokens = 1;
  bool seq_len_settable = false;
  int head_dim = 64;  // attention's head size (`head_dim:`; BERT, GPT-2 and ViT-B: 64)
  // A transformer's shape (`architecture:`), for its activation memory; layers 0: not given.
  struct Architecture {
    int layers = 0, hidden = 0, heads = 0, kv_width = 0, ff = 0;
    bool dropout = false;
    std::string mlp;  // the feed-forward's activation: gelu, gelu_tanh (GPT-2's approximation), swiglu
  } architecture;
  double gradient_bytes() const;           // total_params x dtype size
  int dtype_bytes() const;                 // 4 for float32, 2 for float16
  double forward_flops(int tokens) const;  // per sample, summed over tensors
  double forward_flops() const { return forward_flops(default_tokens); }
  bool transformer() const;  // it has attention
  // The largest 2-D per-token weight's rows, at least 8,192: a text model's vocabulary (its output layer); else 0.
  double vocabulary() const;
  std::string sample_noun() const { return seq_len_settable ? "sequences" : "images"; }
};

// compute.yaml: single-GPU training speed.
struct MeasuredRate {
  std::string gpu, model;
  std::string precision = "fp32";
  int batch_per_gpu = 0;
  int seq_len = 0;            // tokens per sample the rate was measured at; 0: the model's default
  double images_per_sec = 0;  // samples per second (images_per_sec or samples_per_sec in the file)
  std::string source;         // "compute.yaml:LINE"
};
// model.precision (compute.yaml precisions): the GPU peak its passes run at, the type of gradients on the wire, and the
// roofline's achieved fraction of that peak for CNNs and for transformers.
struct PrecisionSpec {
  std::string name;  // fp32 | tf32 | amp | bf16 | fp8
  std::string peak;  // fp32 | tf32 | fp16 | bf16: GpuSpec::peak_flops
  // The arithmetic of the linear layers' matmuls where it is not `peak`'s (fp8: Transformer Engine's and
  // torchao's recipes run them in FP8, the rest in BF16); empty: `peak`'s.
  std::string linear;
  std::string gradient = "fp32";  // fp32 | fp16 | bf16: the gradients' type on the wire
  // the roofline's; 0 where the roofline has none (fp8: the operator model prices it)
  double cnn_efficiency = 0, transformer_efficiency = 0;
  const std::string& linear_peak() const { return linear.empty() ? peak : linear; }
  std::string source;  // "compute.yaml:LINE"
};
// How a stack runs the optimizer's update: one fused kernel pass, PyTorch's multi-tensor (foreach) kernels
// one operation at a time, or each operation on each tensor.
enum class OptimizerImpl { Fused, Foreach, ForLoop };
// compute.yaml operators.stacks: how a software stack runs a model's kernels (schedule/operators.h).
struct StackSpec {
  std::string name;     // eager | compiled | tuned
  double kernel_s = 0;  // the CPU's cost of issuing one kernel: no kernel takes less
  // Element-wise kernels per normalisation (activation, residual, dropout, casts), each reading and writing
  // its activation, by model family.
  struct PerFamily {
    double cnn = 0, transformer = 0;
    double& of(bool is_transformer) { return is_transformer ? transformer : cnn; }
    double of(bool is_transformer) const { return is_transformer ? transformer : cnn; }
  } elementwise_kernels;
  bool flash_attention = false;  // attention in one fused kernel: its score matrix never reaches memory
  OptimizerImpl optimizer = OptimizerImpl::ForLoop;
  // Kernels of a transformer block's feed-forward activation, by architecture mlp, over its hidden width.
  std::map<std::string, double> activation_kernels;
  std::string evidence;                    // what it was measured on
  std::vector<std::string> evidence_gpus;  // GPU types with single-GPU rates behind its figures
  std::string source;                      // "compute.yaml:LINE"
};
// compute.yaml operators.optimizers: the update a model family's recipes run.
struct OptimizerSpec {
  std::string name;
  double bytes_per_param = 0;          // read and written, FP32 state, by a fused kernel
  double state_bytes_per_param = 0;    // held between steps (momentum; Adam's two moments)
  double kernels_per_tensor = 0;       // unfused: its operations, each a kernel per tensor (foreach: over all)
  double foreach_bytes_per_param = 0;  // read and written by those operations, each a pass of its own
  double foreach_tensors = 0;          // tensors one multi-tensor launch takes at most (by its operands)
};
// compute.yaml operators: what GPUs achieve per kernel kind.
struct OperatorSpec {
  double matmul_efficiency = 0;           // of the precision's peak, large matmuls, where the GPU has no figure
  double attention_efficiency = 0;        // of that peak, fused (flash) attention forward and backward, likewise
  double memory_efficiency = 0;           // of the GPU's memory bandwidth, streaming kernels, likewise
  double tile = 128;                      // matmul output dimensions are rounded up to tiles of this size
  double winograd_reduction = 1;          // FP32 3 x 3 stride-1 convolutions' arithmetic divided by this (Winograd)
  double fp8_cast_bytes_per_element = 4;  // an FP8 operand's quantisation: 16-bit read, FP8 written twice
  // PyTorch's multi-tensor launches: elements a block takes, blocks a launch takes at most.
  double multi_tensor_chunk = 65536, multi_tensor_blocks = 320;
  std::map<std::string, std::pair<double, double>> norm_passes;  // by family: forward, backward passes
  struct GpuFigures {
    double matmul = 0, attention = 0, memory = 0;  // 0: the defaults
    std::string source;
  };
  std::map<std::string, GpuFigures> gpus;
  std::map<std::string, OptimizerSpec> optimizers;  // "cnn", "transformer"
  std::map<std::string, StackSpec> stacks;
  std::vector<std::string> stack_order;
  std::string default_stack;
  // A scenario's model.stack (empty: the default stack).
  const StackSpec& stack_for(const std::string& name) const { return stacks.at(name.empty() ? default_stack : name); }
};
struct ComputeSpec {
  std::map<std::string, PrecisionSpec> precisions;
  std::vector<std::string> precision_order;
  double backward_to_forward = 2;  // backward FLOPs / forward FLOPs
  // A factor on every precision's roofline efficiency: 1 is the tuned stacks the efficiencies come from;
  // another framework or version reaches less (only a band or a calibration moves it).
  double roofline_efficiency_scale = 1;
  // A factor on the operator model's step time: 1 is the model; only a band or a calibration moves it.
  double operator_time_scale = 1;
  // A factor on what FP8 matmuls reach: 1, the fraction of the FP8 peak BF16 matmuls reach of theirs.
  double fp8_matmul_scale = 1;
  // A factor on what fused (flash) attention kernels reach: 1, compute.yaml operators' figure.
  double attention_scale = 1;
  // One rank's per-step compute time varies: its standard deviation over its mean. A synchronous step
  // waits for the slowest rank (ComputeModel::straggler_s).
  double step_time_cv = 0;
  // GPUs of one type differ in speed (manufacturing and power management): the standard deviation of
  // their rates over the mean. It adds to the step's variation in the slowest rank (independent of it).
  double gpu_to_gpu_cv = 0;
  // Where the GPU that gave the single-GPU rate stands among the run's GPUs, in units of gpu_to_gpu_cv
  // above their mean (0: the given rate is theirs). Only the band moves it: the rate came from one GPU.
  double reference_gpu_score = 0;
  // Each GPU of a node whose other GPUs are busy too runs this fraction slower than the lone GPU that gave
  // the single-GPU rate: they share the node's power, cooling, CPU cores and memory (ComputeModel::co_run_s).
  // Not for cpu_process ranks.
  double co_run_slowdown = 0;
  double straggler_cv() const { return std::hypot(step_time_cv, gpu_to_gpu_cv); }
  std::vector<MeasuredRate> measured;
  OperatorSpec operators;
  // compute.yaml memory: what a GPU holds besides the model's own states and activations.
  struct Memory {
    double master_bytes_per_param = 4, gradient_bytes_per_param = 4;
    double reserve_bytes = 0;       // CUDA context, library workspaces, NCCL's buffers
    double allocator_overhead = 0;  // the caching allocator's reserved bytes over those allocated
    std::pair<double, double> reserve_range, allocator_overhead_range;  // assumptions: the band's ends
    std::string source;
  } memory;
  // The row for this GPU, model, batch and precision at `tokens` tokens per sample (`default_tokens`: the
  // model's, which rows without seq_len were measured at).
  const MeasuredRate* find(const std::string& gpu, const std::string& model, int batch, const std::string& precision,
                           int tokens = 1, int default_tokens = 1) const;
};

// libraries.yaml: what a collective library achieves on each kind of path.
enum class DataPath { Device, Host };
// How the library orders a ring's members: by its own search over the topology (NCCL 2), or in device
// (NVML) index order whatever the links (NCCL 1.x: one ring, src/core.cu orders ranks by NVML index).
enum class RingOrder { Searched, Device };
// Messages of at least `from_bytes` behave differently (a protocol switch, buffers outgrowing the caches):
// their effective bandwidth is the path's times `bandwidth_scale`, their overhead `message_overhead`.
// Calibration writes these, as SMPI's piecewise factors do.
struct SizeRegime {
  double from_bytes = 0;
  double bandwidth_scale = 1;
  double message_overhead = 0;
  bool operator==(const SizeRegime&) const = default;
};
// What picks a message's regime: its own size (protocol switches: eager, rendezvous), the size of the
// collective buffer it is a part of, or the collective's footprint: the bytes that the collective's
// processes on one host hold while it runs (caches: a ring streams its buffers through them, and the
// processes of a host share its last-level cache, while a ping-pong of the same size streams only its
// message). `regimes_by: message | buffer | footprint` in an overlay.
enum class RegimeKey { Message, Buffer, Footprint };
// A collective's sizes that regimes may be keyed by (CommModel::collective_size).
struct CollectiveSize {
  double buffer = 0;     // bytes of the collective's buffer, per member
  double footprint = 0;  // bytes its members on one host hold: buffers and receive scratch
};
inline double regime_size(RegimeKey k, double message_bytes, const CollectiveSize& c) {
  switch (k) {
    case RegimeKey::Buffer:
      return std::max(message_bytes, c.buffer);
    case RegimeKey::Footprint:
      return std::max(message_bytes, c.footprint);
    case RegimeKey::Message:
      break;
  }
  return message_bytes;
}
inline double GpuSpec::copy_time(double bytes) const {
  if (copy_rates.empty()) return 2.0 * bytes / memory_bandwidth;
  return bytes / copy_rates.at(bytes, copy_rates.front().second);
}
// Regimes keyed by footprint are a measured curve (one regime per size measured) of cache effects, which
// change gradually with the bytes held: between two regimes' sizes, their figures are interpolated in
// log(size). The others are steps (protocol switches).
inline SizeCurve::Shape regime_shape(RegimeKey k, SizeCurve::Shape interpolated) {
  return k == RegimeKey::Footprint ? interpolated : SizeCurve::Shape::Steps;
}
struct PathProfile {
  double bandwidth_fraction = 1;  // of the nominal link bandwidth
  double message_overhead = 0;    // seconds per message (one transfer of one collective step)
  // Size regimes (none: one regime for all sizes): from each size on, the path's effective bandwidth times
  // `regime_scale` and the overhead `regime_overhead`, keyed by `regimes_by` (set_regimes keeps them apart).
  SizeCurve regime_scale, regime_overhead;
  RegimeKey regimes_by = RegimeKey::Message;
  // What a message costs more by its own size, whatever its regimes are keyed by: the library's protocol
  // (eager, rendezvous handshakes). Calibration writes these where the regimes are the caches'
  // (footprint), whose per-byte costs must not carry them.
  SizeCurve protocol_overheads;
  double protocol_overhead(double message_bytes) const { return protocol_overheads.at(message_bytes, 0); }

  void set_regimes(const std::vector<SizeRegime>& regimes, RegimeKey by) {
    regimes_by = by;
    regime_scale = {{}, regime_shape(by, SizeCurve::Shape::Geometric)};
    regime_overhead = {{}, regime_shape(by, SizeCurve::Shape::Linear)};
    for (const SizeRegime& r : regimes) {
      regime_scale.points.emplace_back(r.from_bytes, r.bandwidth_scale);
      regime_overhead.points.emplace_back(r.from_bytes, r.message_overhead);
    }
  }
  std::vector<SizeRegime> regimes() const {
    std::vector<SizeRegime> out;
    for (std::size_t i = 0; i < regime_scale.size(); ++i)
      out.push_back({regime_scale.points[i].first, regime_scale.points[i].second, regime_overhead.points[i].second});
    return out;
  }
  // The regime of a message whose key (regime_size) is `bytes`; false where no regime applies.
  bool regime(double bytes, SizeRegime& out) const {
    if (regime_scale.empty() || bytes < regime_scale.front().first) return false;
    out = {bytes, regime_scale.at(bytes, 1), regime_overhead.at(bytes, 0)};
    return true;
  }
};
// A figure NCCL's tuning tables give by GPU architecture: the value listed at the highest compute
// capability at or below the GPU's (the first value below the first listed).
struct ByCapability {
  std::vector<std::pair<double, double>> points;  // (compute capability, value), ascending
  double at(double capability) const {
    double v = points.empty() ? 0 : points.front().second;
    for (const auto& [cc, value] : points)
      if (cc <= capability) v = value;
    return v;
  }
};

// One protocol of NCCL's tuning model (src/graph/tuning.cc): LL, LL128 or Simple. Its latency per call
// and per step (ring) or tree level, by the hardware a step crosses, and the share of the Simple protocol's
// bandwidth it reaches.
struct ProtocolTuning {
  struct Latency {
    double base = 0, nvlink = 0, pci = 0, network = 0;  // seconds: per call, then per step or level
  };
  std::string name;
  Latency ring, tree;
  double ring_bandwidth = 1, tree_bandwidth = 1;  // of the Simple protocol's
  double tree_bandwidth_one_node = 0;             // a one-node tree's instead; 0: tree_bandwidth
  double ring_bandwidth_gather_one_node = 0;      // a one-node ring's all-gather or reduce-scatter; 0: ring_bandwidth
  double network_post = 0;  // across nodes, each ring step costs at least this (NCCL's netOverhead)
  // The bus bandwidth the protocol reaches at most (LL): on one node by GPU architecture, on two nodes, on
  // more; 0: no limit.
  ByCapability max_bus_one_node;
  double max_bus_two_nodes = 0, max_bus_more_nodes = 0;
  bool needs_nvlink = false;            // only where a node's GPUs talk over NVLink (LL128)
  bool needs_gpudirect = false;         // across nodes, only with NICs the GPUs reach directly (InfiniBand)
  std::vector<double> capabilities;     // only on GPUs of these compute capabilities; empty: all
  std::vector<double> tree_correction;  // tree bandwidth x this, by log2(bytes / 64); beyond the list: 1
  double max_bus_bandwidth(int nodes, double capability) const {
    return nodes == 1 ? max_bus_one_node.at(capability) : nodes == 2 ? max_bus_two_nodes : max_bus_more_nodes;
  }
};

// NCCL's own cost model for picking an algorithm and a protocol per message (src/graph/tuning.cc), which
// strategy auto follows (and ring and tree, for the protocol): a choice's time is its latency plus bytes
// over its bandwidth.
struct AlgorithmTuning {
  std::vector<ProtocolTuning> protocols;
  ByCapability ring_plateau;     // Simple ring latency x this across nodes from ranks x channels x 64 B up
  double tree_bandwidth = 1;     // tree bus bandwidth over the ring's
  double nvls_latency = 0;       // strategy nvls: seconds per call; 0: the library's collective_overhead
  double nvls_tree_latency = 0;  // NVLSTree: seconds per network hop, 2 (nodes - 1) of them a call; 0: none
  const ProtocolTuning* protocol(const std::string& name) const {
    for (const auto& p : protocols)
      if (p.name == name) return &p;
    return nullptr;
  }
};

// Orders release versions ("2.4", "2.18.5") part by part: < 0, 0 or > 0 as a is older, the same or newer.
int compare_versions(const std::string& a, const std::string& b);

struct LibraryProfile {
  std::string name;
  std::string description;
  // The release whose behaviour the entry models (NCCL: its tuning), and the release each of its algorithms
  // came with ("tree": "2.4"); a scenario's communication.library_version picks an older release's set.
  std::string version;
  std::map<std::string, std::string> algorithms_since;
  // Whether `algorithm` runs in release `version` (an algorithm without a release listed always does).
  bool has_algorithm(const std::string& algorithm, const std::string& release) const {
    const auto it = algorithms_since.find(algorithm);
    return it == algorithms_since.end() || release.empty() || compare_versions(release, it->second) >= 0;
  }
  DataPath data_path = DataPath::Device;
  double collective_overhead = 0;  // seconds per collective call
  double host_reduction_rate = 0;  // bytes/s of input a reduction on the host CPU consumes
  // One core's memcpy, bytes/s (host data path only; 0 elsewhere): the fusion buffer's copies on Horovod's
  // background thread, and the shared-memory copy of each message between ranks of one node.
  double host_copy_rate = 0;
  // Parameter servers as processes of their own (communication.parameter_server_transport: rpc): each
  // server's exchanges pass through its RPC stack at this rate, bytes/s each way; 0: no such limit.
  double rpc_rate = 0;
  // Device data path: the thread blocks a collective's kernels keep while they run, one SM each, which
  // compute kernels cannot use meanwhile (NCCL's channels; 0 for a host data path).
  double kernel_channels = 0;
  // Device data path: the library's kernels reduce what they receive as it arrives, one slice at a time
  // (NCCL's recvReduceSend): of a received message's reduction only its last slice's remains after the
  // receive. 0: the reduction runs after the receive, on all of it.
  double reduce_slice = 0;
  // Strategy nvls: the share of the NVLink's effective bandwidth that transfers to and from an NVSwitch that
  // reduces in the switch reach (NCCL's nvlsEfficiency); 0: the library has no NVLS.
  double nvls_efficiency = 0;
  std::map<std::string, double> nvls_efficiency_by_gpu;  // NCCL tunes it per GPU architecture
  double nvls_efficiency_for(const std::string& gpu) const {
    const auto it = nvls_efficiency_by_gpu.find(gpu);
    return it == nvls_efficiency_by_gpu.end() ? nvls_efficiency : it->second;
  }
  double nvls_channels = 0;               // strategy nvls: the SMs its kernels hold instead of kernel_channels
  std::optional<AlgorithmTuning> tuning;  // how the library picks algorithm and protocol
  // Calibrated rates by size (below the first: host_reduction_rate), keyed by host_reduction_regimes_by.
  SizeCurve host_reduction_regimes;
  RegimeKey host_reduction_regimes_by = RegimeKey::Message;
  double host_reduction_rate_for(double bytes) const { return host_reduction_regimes.at(bytes, host_reduction_rate); }
  RingOrder ring_order = RingOrder::Searched;
  PathProfile intra_node, infiniband, ethernet;
  // GPU-to-GPU data of the library's collectives between sockets whose link gives no peer access
  // (paths.cross_socket): it goes through host memory; without one, intra_node's figures.
  std::optional<PathProfile> cross_socket;
  const PathProfile& fabric(FabricKind kind) const { return kind == FabricKind::InfiniBand ? infiniband : ethernet; }
  const PathProfile& socket_path() const { return cross_socket ? *cross_socket : intra_node; }
  // A path by its libraries.yaml key: intra_node, cross_socket, infiniband or ethernet. Writing cross_socket
  // where the library has none starts it from intra_node's figures.
  const PathProfile& path(std::string_view key) const {
    return key == "intra_node"     ? intra_node
           : key == "cross_socket" ? socket_path()
           : key == "infiniband"   ? infiniband
                                   : ethernet;
  }
  PathProfile& path(std::string_view key) {
    if (key == "cross_socket" && !cross_socket) cross_socket = intra_node;
    return key == "intra_node"     ? intra_node
           : key == "cross_socket" ? *cross_socket
           : key == "infiniband"   ? infiniband
                                   : ethernet;
  }
};

// Whether a library's collectives move GPU-to-GPU data across a socket link through host memory, at its
// paths.cross_socket figures: not where the link gives peer access, not for GPUs that are CPU processes
// (their data is in host memory already), not for parameter servers' copies.
inline bool gpu_pairs_through_host(const LibraryProfile& lib, const GpuSpec& gpu, bool parameter_servers,
                                   const LinkClass& socket_link) {
  return lib.cross_socket && !gpu.cpu_process && !parameter_servers && !socket_link.gpu_peer_access;
}

class YamlField;
struct CatalogOverlay;
// A figure the catalog assumes rather than measures, and the range evidence leaves it (load/uncertain.h).
struct UncertainParameter {
  std::string name;  // "nccl_socket_fraction"
  std::string
      figure;  // "libraries.nccl.paths.ethernet.bandwidth_fraction"; "skus.N*.ethernet_bandwidth" (a shell pattern)
  double low = 0, high = 0;
  bool scale = false;  // low and high are factors of the catalog's figure, not values
  std::string source;  // uncertain.yaml:LINE and its reference
};

// One public single-GPU training rate (single_gpu_rates.yaml): the compute models' evidence.
struct SingleGpuRate {
  std::string gpu, model, precision, stack, source;
  int batch_per_gpu = 0, tokens = 1;
  int gradient_accumulation = 1;  // micro-batches per optimizer step
  double samples_per_sec = 0;
  int line = 0;
};

class Catalog {
 public:
  // Loads every catalog file under `dir`; throws InputError with file:line:col on bad data.
  static Catalog load(const std::string& dir);
  // The directory used when none is given: $RINGSIM_CATALOG, else the install/source default.
  static std::string default_dir();

  const std::string& dir() const { return dir_; }
  const GpuSpec& gpu(const std::string& name) const;
  const LinkClass& link(const std::string& name) const;
  const FabricSpec& fabric(FabricKind kind) const;
  const SkuSpec& sku(const std::string& name) const;
  const NodeLayout& layout(const std::string& name) const;
  const ModelSpec& model(const std::string& name) const;
  const DatasetSpec& dataset(const std::string& name) const;
  const LibraryProfile& library(const std::string& name) const;
  const StorageBackendSpec* find_storage_backend(const std::string& name) const;
  std::vector<std::string> storage_backend_names() const { return storage_order_; }
  const ComputeSpec& compute() const { return compute_; }
  const ReliabilitySpec& reliability() const { return reliability_; }
  // The figures the catalog assumes, with their ranges (uncertain.yaml; none where the file is absent).
  const std::vector<UncertainParameter>& uncertain() const { return uncertain_; }
  // The public single-GPU rates the compute models are checked against and banded by (single_gpu_rates.yaml;
  // none where the file is absent), and a file of them read against this catalog's names (InputError on bad data).
  const std::vector<SingleGpuRate>& single_gpu_rates() const { return single_gpu_rates_; }
  std::vector<SingleGpuRate> read_single_gpu_rates(const std::string& file) const;

  // A calibration overlay (load/overlay.h, written by `ringsim calibrate`): library profiles, link-class
  // figures, a rank kind's memory rate, copy rates and core handoffs, a SKU's cores (what `validate
  // --local` finds on the machine). read_overlay checks every name and value against this catalog and
  // throws InputError (file:line:col) on bad data; apply replaces the figures it sets.
  CatalogOverlay read_overlay(const std::string& file) const;
  void apply(const CatalogOverlay& overlay);
  void apply_overlay(const std::string& file);  // read_overlay, then apply

  // Accepts "NC24rs_v3" and "Standard_NC24rs_v3"; nullptr when unknown.
  const SkuSpec* find_sku(const std::string& name) const;
  const ModelSpec* find_model(const std::string& name) const;

  // Names in catalog file order (models: file-name order).
  std::vector<std::string> gpu_names() const { return gpu_order_; }
  std::vector<std::string> link_names() const { return link_order_; }
  std::vector<std::string> sku_names() const { return sku_order_; }
  std::vector<std::string> model_names() const { return model_order_; }
  std::vector<std::string> dataset_names() const { return dataset_order_; }

 private:
  std::map<std::string, std::pair<double, double>> read_fitted_ranges(const YamlField& f) const;
  // One reader per catalog file, in the order load() calls them (each may refer to what came before).
  void load_links(const std::filesystem::path& base);
  void load_gpus(const std::filesystem::path& base);
  void load_fabrics(const std::filesystem::path& base);
  void load_datasets(const std::filesystem::path& base);
  void load_layouts(const YamlField& layouts);
  void load_skus(const YamlField& skus);
  void load_libraries(const std::filesystem::path& base);
  void nvls_efficiency(const YamlField& e, LibraryProfile& l) const;
  void load_storage(const std::filesystem::path& base);
  void load_models(const std::filesystem::path& base);
  ModelSpec read_model(const std::filesystem::path& file) const;
  void load_precisions(const YamlField& list);
  void load_operators(const YamlField& root);
  void load_compute(const std::filesystem::path& base);
  void load_uncertain(const std::filesystem::path& base);
  void load_reliability(const std::filesystem::path& base);
  void load_single_gpu_rates(const std::filesystem::path& base);
  // A link class by name, of `kind` where given; fails at `f` otherwise.
  std::string require_link(const YamlField& f, std::optional<LinkKind> kind) const;

  std::string dir_;
  std::map<std::string, GpuSpec> gpus_;
  std::map<std::string, LinkClass> links_;
  std::map<FabricKind, FabricSpec> fabrics_;
  std::map<std::string, DatasetSpec> datasets_;
  std::map<std::string, NodeLayout> layouts_;
  std::map<std::string, SkuSpec> skus_;
  std::map<std::string, std::filesystem::path> model_files_;
  mutable std::map<std::string, ModelSpec> models_;  // read on first use (find_model)
  std::map<std::string, LibraryProfile> libraries_;
  std::vector<std::string> library_order_;
  std::map<std::string, StorageBackendSpec> storage_;
  std::vector<std::string> storage_order_;
  ComputeSpec compute_;
  ReliabilitySpec reliability_;
  std::vector<UncertainParameter> uncertain_;
  std::vector<SingleGpuRate> single_gpu_rates_;
  std::vector<std::string> gpu_order_, link_order_, sku_order_, model_order_, dataset_order_;
};

}  // namespace ringsim
