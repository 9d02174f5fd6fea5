// A what-if scenario (scenarios/*.yaml): cluster, model, training, communication. Every key, its unit
// and its default is documented in scenarios/README.md; `ringsim check` prints the resolved values.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "collective/collective.h"
#include "load/catalog.h"
#include "load/input_error.h"

namespace ringsim {

enum class FabricTopology { Star, FatTree, RailOptimized };
enum class Strategy { Ring, Hierarchical, HalvingDoubling, ParameterServer, Nvls, Tree, Auto, NvlsTree };
enum class PsPlacement { Colocated, Dedicated, Gpus };
enum class PsAggregation { None, Node };
enum class PsTransport { InProcess, Rpc };
enum class CommLibrary { Nccl, Nccl1, Mpi };  // libraries.yaml: nccl, nccl1 (NCCL 1.x), mpi
enum class Framework { Horovod, PytorchDdp, Fsdp, Deepspeed };
// FSDP's ShardingStrategy: parameters, gradients and optimizer state sharded and the parameters freed after
// each use (full_shard, ZeRO-3); freed only after the backward pass (shard_grad_op, ZeRO-2); replicated, the
// gradients allreduced (no_shard, DDP); sharded inside each node and replicated across nodes (hybrid_shard,
// HSDP: gradients reduce-scattered in the node, then each shard allreduced across the nodes).
enum class Sharding { FullShard, ShardGradOp, NoShard, HybridShard };
std::string_view to_string(Sharding v);

std::string_view to_string(FabricTopology v);
FabricTopology fabric_topology_named(const std::string& name);  // star, fat_tree or rail_optimized
std::string_view to_string(Strategy v);
std::string_view to_string(PsPlacement v);
std::string_view to_string(PsAggregation v);
std::string_view to_string(PsTransport v);
std::string_view to_string(collective::ServerAssignment v);
std::string_view to_string(CommLibrary v);
std::string_view to_string(Framework v);

struct ClusterConfig {
  std::string sku;  // catalog SKU name (canonical, e.g. "NC24rs_v3")
  int nodes = 1;
  int gpus_per_node = 0;  // processes per node, one GPU each
  FabricKind fabric = FabricKind::InfiniBand;
  FabricTopology fabric_topology = FabricTopology::Star;
  int nodes_per_leaf = 0;       // fat_tree only
  double oversubscription = 1;  // fat_tree only: leaf downlink : uplink bandwidth
  bool low_priority = false;    // low-priority (spot) VMs: evicted at the catalog's rates (reliability.yaml)
  int total_gpus() const { return nodes * gpus_per_node; }
};

struct ModelConfig {
  std::string name;
  int batch_per_gpu = 0;
  std::optional<double> images_per_sec_single_gpu;  // samples (images or sequences) per second
  std::string single_gpu_rate_from;                 // where that rate was given: "in FILE" or "from --set ..."
  std::map<std::string, double> single_gpu_rates;   // given per GPU type (a map): every entry, by GPU name
  std::string precision = "fp32";                   // compute.yaml precisions: fp32 | tf32 | amp | bf16
  // compute.yaml operators.stacks: the software stack the operator model runs the model with; empty: none
  // (the single-GPU rate from a measurement or the roofline).
  std::string stack;
  // What the backward pass recomputes instead of keeping (Korthikanti et al., arXiv:2205.05198): none;
  // selective (the attention scores); full (each layer from its input).
  std::string activation_checkpointing = "none";
  int gradient_bytes = 4;  // bytes of a gradient element on the wire (precision, communication.gradient_precision)
  int tokens = 1;          // per sample: model.seq_len, or the model's fixed count
  bool text = false;       // a text model: model.seq_len sets `tokens`
};

struct TrainingConfig {
  int epochs = 1;
  std::int64_t dataset_images = 0;  // samples in an epoch (images or sequences)
  int gradient_accumulation = 1;    // micro-batches (of batch_per_gpu) per optimizer step
  double tokens = 0;                // training.tokens as given (its sequences: dataset_images); 0: in epochs
};

// The most channels NCCL runs (MAXCHANNELS, src/include/device.h of v2.26): `communication.channels` at most.
inline constexpr int kMaxChannels = 64;

struct CommunicationConfig {
  Strategy strategy = Strategy::Ring;
  int parameter_servers = 0;                          // parameter_server only
  PsPlacement ps_placement = PsPlacement::Colocated;  // gpus: the servers are the worker GPUs themselves
  collective::ServerAssignment ps_assignment = collective::ServerAssignment::Greedy;
  PsAggregation ps_aggregation = PsAggregation::None;  // node: a node's GPUs sum before they push
  // rpc: the servers are processes of their own, each exchange through the library's RPC (rpc_rate)
  PsTransport ps_transport = PsTransport::InProcess;
  collective::CrossNode cross_node = collective::CrossNode::Ring;  // hierarchical only: among the node roots
  // NCCL's protocol for every message (ll, ll128, simple), as NCCL_PROTO sets it; empty: the library's tuning
  // model picks one per message (ring, tree and auto with a library that has one).
  std::string protocol;
  // The library's release (communication.library_version; the catalog's own by default): which algorithms
  // it has, and so the default strategy.
  std::string library_version;
  double fusion_threshold_bytes = 64.0 * 1024 * 1024;  // 0 disables fusion
  double cycle_time_s = 5e-3;                          // pytorch_ddp: 0 (no negotiation)
  // The framework's gradient loop: Horovod's negotiated fusion, or PyTorch DDP's fixed buckets (in reverse
  // registration order: the first `first_bucket_bytes`, then `bucket_bytes` each).
  Framework framework = Framework::Horovod;
  Sharding sharding = Sharding::FullShard;  // fsdp only
  // deepspeed only: ZeRO's stage (1: optimizer state sharded, 2: and gradients, 3: and parameters); 0 unset.
  int zero_stage = 0;
  // deepspeed only: zero_optimization.overlap_comm, gradients reduced on a side stream as backward fills
  // each bucket; off, they are reduced with the compute stalled (DeepSpeed's default at stages 1 and 2).
  bool overlap_comm = false;
  int shard_group = 0;  // hybrid_shard: the GPUs a shard group spans (0: a node's)
  double bucket_bytes = 25.0 * 1024 * 1024;
  double first_bucket_bytes = 1024.0 * 1024;
  // DDP's gradient_as_bucket_view: gradients are views of the buckets. False (PyTorch's default): each gradient
  // is copied into its bucket as backward produces it, and back out after the allreduces (Reducer).
  bool gradient_as_bucket_view = false;
  // The gradients' type on the wire: the precision's (FP32 for all four) or a compression to fp16/bf16.
  std::string gradient_precision = "fp32";
  CommLibrary library = CommLibrary::Nccl;
  // Collectives in flight at once: 1 as Horovod's background thread runs them; 0 = unlimited, as a dataflow
  // framework (TensorFlow's parameter-server modes) sends every variable as soon as its gradient exists.
  int concurrent_collectives = 1;
  // Rings a ring allreduce (trees a tree allreduce) runs at once, each on its share of the buffer (NCCL's
  // channels). `auto` in a scenario resolves at load: an NCCL-style (device data path) ring across
  // InfiniBand nodes gets one per rail its GPUs use (NodeLayout::gpu_rail), everything else one; a tree
  // twice as many, both of the double binary tree's per rail.
  int channels = 1;
  // Collective members that are servers of their own (parameter servers not on the worker GPUs).
  int server_members() const {
    return strategy == Strategy::ParameterServer && ps_placement != PsPlacement::Gpus ? parameter_servers : 0;
  }
};

// Bytes of an activation or a cast parameter under a precision: 16-bit under autocast (amp, bf16, and fp8,
// whose FP8 linear layers take and give BF16), else 32.
inline int compute_element_bytes(const std::string& precision) {
  return precision == "amp" || precision == "bf16" || precision == "fp8" ? 2 : 4;
}

// Bytes of one gradient element of type fp32, fp16 or bf16.
inline int gradient_element_bytes(const std::string& type) { return type == "fp32" ? 4 : 2; }

// Where the training data comes from (issue 8). Absent: synthetic data (no input pipeline modelled).
enum class DataFormat { Files, Records };
std::string_view to_string(DataFormat v);
struct StorageConfig {
  std::string backend;     // catalog storage backend name
  int servers = 0;         // per_server backends: storage servers
  bool cache = false;      // backends with a cache: epochs >= 2 read the cache backend
  bool cacheable = false;  // the backend has a cache (the `cache` key applies)
  DataFormat format = DataFormat::Files;
  double file_size = 0;               // files: bytes of one image file (mean)
  double record_size = 0;             // records: bytes of one record file (TFRecord, parquet, ...)
  double dataset_bytes = 0;           // the training set in storage
  double decode_cpu_per_image_s = 0;  // CPU-seconds to decode and augment one image
  int prefetch_depth = 2;             // batches the loader may run ahead; 0: no overlap with compute
  int reader_threads = 0;             // concurrent read requests per node
  // The backend's limits (catalog values unless overridden in the scenario).
  double bandwidth = 0;        // bytes/s per scaling unit
  double iops = 0;             // requests/s per scaling unit
  double request_latency = 0;  // seconds
};

// reliability: failures, evictions and checkpoints (issue 55), every figure resolved (the catalog's where the
// scenario gives none) with the range the band samples (a figure the scenario gives: its value alone).
struct ReliabilityConfig {
  bool modelled = false;                     // the catalog has reliability.yaml
  RangedFigure failures_per_1000_node_days;  // of this cluster's nodes (the catalog's, scaled to their GPUs)
  RangedFigure evictions_per_node_day;       // 0 unless cluster.low_priority
  RangedFigure restart_s, replacement_s, node_loss_fraction, host_copy_fraction;
  std::optional<double> checkpoint_interval_s;  // training time between checkpoints; empty: auto
  SourceLocation interval_at;                   // where the scenario gives it
  std::string checkpoint_storage;               // a storage.yaml backend with a write_bandwidth
  double checkpoint_write_bandwidth = 0;        // bytes/s, the cluster's together; 0: the backend's limits
  bool checkpoint_async = false;                // training stops only to copy the checkpoint to host memory
  int spare_nodes = 0;                          // nodes held ready to replace a failed or evicted one
};

struct Scenario {
  std::string file;
  std::string name;
  std::string description;
  std::string calibration;  // calibration overlay file (resolved path), empty: none
  // Why the scenario's calibration overlay was left out (measured on another SKU); empty: applied or none.
  std::string calibration_left_out;
  ClusterConfig cluster;
  ModelConfig model;
  TrainingConfig training;
  CommunicationConfig communication;
  std::optional<StorageConfig> storage;
  ReliabilityConfig reliability;
  // Samples one GPU trains on per optimizer step: its batch times the micro-batches accumulated.
  double samples_per_gpu_step() const {
    return static_cast<double>(model.batch_per_gpu) * training.gradient_accumulation;
  }
};

// "--set key.path=value" as given on the command line.
struct Override {
  std::string path;
  std::string value;
  std::string text;  // the original argument, for error messages
};
Override parse_override(const std::string& arg);  // throws InputError naming the argument

// Applies the scenario's calibration overlay to `catalog`, unless it was measured on another SKU: then the
// scenario keeps the catalog's figures, its `calibration` is cleared and `calibration_left_out` says why.
void apply_calibration(Catalog& catalog, Scenario& s);

// Loads, applies overrides, validates against the catalog. Throws InputError (file:line:col or the
// --set argument) on the first problem.
Scenario load_scenario(const std::string& path, const Catalog& catalog, const std::vector<Override>& overrides = {});
Scenario load_scenario_text(const std::string& text, const std::string& name, const Catalog& catalog,
                            const std::vector<Override>& overrides = {});

// The resolved scenario as YAML text (every key, defaults filled in), in the documented key order.
std::string to_yaml(const Scenario& s);

// Whether PyTorch DDP copies each gradient into its bucket and back out (Reducer, gradient_as_bucket_view
// false, its default): on several GPUs (one GPU trains without DDP).
inline bool ddp_copies_buckets(const Scenario& s) {
  return s.communication.framework == Framework::PytorchDdp && !s.communication.gradient_as_bucket_view &&
         s.cluster.total_gpus() > 1;
}

// Over how many GPUs the parameters, gradients and optimizer state are sharded: every GPU's under fsdp's
// full_shard and shard_grad_op and under deepspeed (each ZeRO stage shards some of them over every GPU), a
// shard group's under hybrid_shard (a node's by default), else none (1).
inline int state_shards(const Scenario& s) {
  if (s.communication.framework == Framework::Deepspeed) return s.cluster.total_gpus();
  if (s.communication.framework != Framework::Fsdp || s.communication.sharding == Sharding::NoShard) return 1;
  if (s.communication.sharding != Sharding::HybridShard) return s.cluster.total_gpus();
  return s.communication.shard_group > 0 ? s.communication.shard_group : s.cluster.gpus_per_node;
}

// Whether the framework shards the model's states and so all-gathers parameters (fsdp, deepspeed).
inline bool sharded_framework(const Scenario& s) {
  return s.communication.framework == Framework::Fsdp || s.communication.framework == Framework::Deepspeed;
}

// Why ringsim-real (train, and the job script and emulation that run it) cannot run `s`; empty when it can.
// It runs one collective at a time.
std::string real_run_refusal(const Scenario& s);

// Why NCCL's NVLS cannot run this scenario's allreduces (no switch that reduces, more than one NVLink domain,
// a library without NVLS); empty where it can. Strategy nvls refuses such a scenario; auto leaves NVLS out.
std::string nvls_unavailable(const Catalog& catalog, const Scenario& s);
// Why NCCL's NVLSTree (NVLS inside each node, the tree across) cannot run this scenario's allreduces: one
// node, a node without its own switch that reduces, no InfiniBand between the nodes, a library without NVLS
// or without its NVLSTree latency; empty where it can. Auto weighs it where it can.
std::string nvls_tree_unavailable(const Catalog& catalog, const Scenario& s);

// All valid scenario keys as dotted paths ("cluster.nodes", ...), for docs and suggestions.
const std::vector<std::string>& scenario_keys();

}  // namespace ringsim
