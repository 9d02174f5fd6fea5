// The scenario's communication section: strategy, parameter servers, framework and buffers, library,
// protocol and channels, and which strategies the cluster and library can run.
#include "load/scenario_communication.h"

#include <algorithm>
#include <cctype>
#include <string>
#include <vector>

#include "load/catalog_values.h"
#include "load/units.h"

namespace ringsim {

namespace scenario_detail {

namespace {

// Digits only: a count given where a word (`unlimited`, `auto`) could also stand.
bool is_whole_number(const std::string& v) {
  return !v.empty() && std::all_of(v.begin(), v.end(), [](unsigned char c) { return std::isdigit(c); });
}

}  // namespace

// communication: the strategy, and the hierarchical allreduce's cross-node algorithm.
void parse_strategy(const YamlField& co, Scenario& s) {
  if (auto f = co.find("strategy")) {
    const std::string v = f->choice(
        {"ring", "tree", "auto", "hierarchical", "halving_doubling", "parameter_server", "nvls", "nvls_tree"});
    s.communication.strategy = v == "ring"               ? Strategy::Ring
                               : v == "tree"             ? Strategy::Tree
                               : v == "auto"             ? Strategy::Auto
                               : v == "hierarchical"     ? Strategy::Hierarchical
                               : v == "halving_doubling" ? Strategy::HalvingDoubling
                               : v == "nvls"             ? Strategy::Nvls
                               : v == "nvls_tree"        ? Strategy::NvlsTree
                                                         : Strategy::ParameterServer;
  }
  if (auto f = co.find("cross_node")) {
    if (s.communication.strategy != Strategy::Hierarchical) f->fail("applies only to strategy: hierarchical");
    s.communication.cross_node = f->choice({"ring", "halving_doubling"}) == "ring"
                                     ? collective::CrossNode::Ring
                                     : collective::CrossNode::HalvingDoubling;
  }
}

// communication: strategy nvls reduces in the NVSwitch of one node (NCCL's NVLS), with NCCL.
void check_nvls(const YamlField& co, const Catalog& catalog, const Scenario& s) {
  const Strategy st = s.communication.strategy;
  if (st != Strategy::Nvls && st != Strategy::NvlsTree) return;
  const std::string why = st == Strategy::Nvls ? nvls_unavailable(catalog, s) : nvls_tree_unavailable(catalog, s);
  if (!why.empty()) co.get("strategy").fail(why);
}

// communication: a library that orders its one ring by device index (NCCL 1.x) runs rings only.
void check_ring_only(const YamlField& co, const Catalog& catalog, const Scenario& s) {
  const std::string lib(to_string(s.communication.library));
  if (s.communication.strategy == Strategy::Tree && catalog.library(lib).ring_order == RingOrder::Device)
    co.get("strategy")
        .fail("library " + lib + " runs rings only (NCCL's trees came with 2.4): use ring, or library nccl");
}

// communication: strategy auto picks ring or tree by the library's own tuning model (libraries.yaml tuning).
void check_auto(const YamlField& co, const Catalog& catalog, const Scenario& s) {
  if (s.communication.strategy != Strategy::Auto) return;
  const std::string lib(to_string(s.communication.library));
  if (!catalog.library(lib).tuning)
    co.get("strategy")
        .fail("auto picks ring or tree as NCCL's tuning model does, and library " + lib +
              " has no tuning in libraries.yaml: set communication.library: nccl, or strategy ring");
}

// communication.protocol: one of the library's tuning protocols for every message (as NCCL_PROTO), or auto.
void parse_protocol(const YamlField& co, const Catalog& catalog, Scenario& s) {
  const auto f = co.find("protocol");
  if (!f) return;
  const std::string v = f->choice({"auto", "ll", "ll128", "simple"});
  if (v == "auto") return;
  const Strategy st = s.communication.strategy;
  if (st != Strategy::Ring && st != Strategy::Tree && st != Strategy::Auto)
    f->fail("a protocol applies only to strategy: ring, tree or auto (NCCL's algorithms that have protocols)");
  const std::string lib(to_string(s.communication.library));
  if (!catalog.library(lib).tuning)
    f->fail("library " + lib + " has no protocols (no tuning in libraries.yaml): set communication.library: nccl");
  s.communication.protocol = v;
}

// communication: the library's release and its default strategy. NCCL's tuning model picks ring, tree or
// NVLS per message (auto) from the release that brought trees (2.4); before it, and in libraries without a
// tuning model, rings. A release refuses the algorithms it did not have yet.
void library_defaults(const std::optional<YamlField>& co, const Catalog& catalog, Scenario& s) {
  const std::string name(to_string(s.communication.library));
  const LibraryProfile& lib = catalog.library(name);
  CommunicationConfig& c = s.communication;
  c.library_version = lib.version;
  if (auto f = co ? co->find("library_version") : std::nullopt) {
    if (lib.version.empty())
      f->fail("library " + name + " has no releases in libraries.yaml; library_version applies to library nccl");
    c.library_version = catalog_detail::release_version(*f);
    if (compare_versions(c.library_version, lib.version) > 0)
      f->fail("the catalog models " + name + " up to " + lib.version + " (libraries.yaml); use " + lib.version +
              " or older");
  }
  const bool trees = lib.tuning && lib.has_algorithm("tree", c.library_version);
  if (!co || !co->find("strategy")) {
    c.strategy = trees ? Strategy::Auto : Strategy::Ring;
    return;
  }
  const YamlField strategy = co->get("strategy");
  if ((c.strategy == Strategy::Tree || c.strategy == Strategy::Auto) && lib.tuning && !trees)
    strategy.fail(name + "'s trees, and its choice between algorithms, came with " + lib.algorithms_since.at("tree") +
                  "; library_version " + c.library_version + " runs rings: use ring");
  check_nvls(*co, catalog, s);
}

// communication: the parameter servers' keys (they apply to that strategy only).
void parse_parameter_server_keys(const YamlField& co, Scenario& s) {
  const bool ps = s.communication.strategy == Strategy::ParameterServer;
  if (auto f = co.find("parameter_servers")) {
    if (!ps) f->fail("applies only to strategy: parameter_server");
    s.communication.parameter_servers = static_cast<int>(f->integer(1, 1 << 20));
  }
  if (auto f = co.find("parameter_server_placement")) {
    if (!ps) f->fail("applies only to strategy: parameter_server");
    const std::string v = f->choice({"colocated", "dedicated", "gpus"});
    s.communication.ps_placement = v == "colocated"   ? PsPlacement::Colocated
                                   : v == "dedicated" ? PsPlacement::Dedicated
                                                      : PsPlacement::Gpus;
  }
  if (auto f = co.find("parameter_server_assignment")) {
    if (!ps) f->fail("applies only to strategy: parameter_server");
    s.communication.ps_assignment = f->choice({"greedy", "round_robin"}) == "greedy"
                                        ? collective::ServerAssignment::Greedy
                                        : collective::ServerAssignment::RoundRobin;
  }
  if (auto f = co.find("parameter_server_aggregation")) {
    if (!ps) f->fail("applies only to strategy: parameter_server");
    s.communication.ps_aggregation = f->choice({"none", "node"}) == "none" ? PsAggregation::None : PsAggregation::Node;
    if (s.communication.ps_aggregation == PsAggregation::Node && s.communication.ps_placement == PsPlacement::Gpus)
      f->fail(
          "node aggregation pushes to servers in host memory; it does not apply to parameter_server_placement: gpus");
  }
  if (auto f = co.find("parameter_server_transport")) {
    if (!ps) f->fail("applies only to strategy: parameter_server");
    s.communication.ps_transport =
        f->choice({"in_process", "rpc"}) == "rpc" ? PsTransport::Rpc : PsTransport::InProcess;
    if (s.communication.ps_transport == PsTransport::Rpc && s.communication.ps_placement == PsPlacement::Gpus)
      f->fail("rpc is between server processes in host memory; it does not apply to parameter_server_placement: gpus");
  }
}

namespace {

// DeepSpeed's zero_optimization: the stage, and whether the gradients' reduction overlaps backward
// (DeepSpeed's DeepSpeedZeroConfig: overlap_comm true by default at stage 3 only).
void parse_zero(const YamlField& co, Scenario& s, bool deepspeed) {
  if (auto f = co.find("zero_stage")) {
    if (!deepspeed) f->fail("applies to framework: deepspeed");
    s.communication.zero_stage = std::stoi(f->choice({"1", "2", "3"}));
  } else if (deepspeed) {
    co.get("framework")
        .fail(
            "deepspeed needs communication.zero_stage: 1, 2 or 3 (DeepSpeed's own default, 0, is plain data "
            "parallelism: framework pytorch_ddp)");
  }
  s.communication.overlap_comm = s.communication.zero_stage == 3;
  if (auto f = co.find("overlap_comm")) {
    if (!deepspeed) f->fail("applies to framework: deepspeed");
    s.communication.overlap_comm = f->boolean();
  }
}

// communication.framework: Horovod's keys (fusion_threshold, cycle_time) or DDP's (bucket sizes), FSDP's sharding
// or DeepSpeed's ZeRO stage.
void parse_framework(const YamlField& co, Scenario& s) {
  if (auto f = co.find("framework")) {
    const std::string v = f->choice({"horovod", "pytorch_ddp", "fsdp", "deepspeed"});
    s.communication.framework = v == "horovod"       ? Framework::Horovod
                                : v == "pytorch_ddp" ? Framework::PytorchDdp
                                : v == "fsdp"        ? Framework::Fsdp
                                                     : Framework::Deepspeed;
  }
  const bool ddp = s.communication.framework == Framework::PytorchDdp;
  const bool fsdp = s.communication.framework == Framework::Fsdp;
  const bool deepspeed = s.communication.framework == Framework::Deepspeed;
  for (const char* k : {"fusion_threshold", "cycle_time"})
    if (auto f = co.find(k); f && (ddp || fsdp || deepspeed))
      f->fail(std::string(k) + " is Horovod's; " +
              (ddp    ? "pytorch_ddp buckets gradients by bucket_size and first_bucket_size"
               : fsdp ? "fsdp reduces each unit's gradients as its backward pass ends"
                      : "deepspeed reduces its gradients in buckets of reduce_bucket_size elements"));
  if (auto f = co.find("sharding")) {
    if (!fsdp) f->fail(deepspeed ? "is FSDP's; deepspeed shards by zero_stage" : "applies to framework: fsdp");
    const std::string v = f->choice({"full_shard", "shard_grad_op", "hybrid_shard", "no_shard"});
    s.communication.sharding = v == "full_shard"      ? Sharding::FullShard
                               : v == "shard_grad_op" ? Sharding::ShardGradOp
                               : v == "hybrid_shard"  ? Sharding::HybridShard
                                                      : Sharding::NoShard;
  }
  parse_zero(co, s, deepspeed);
  if (fsdp || deepspeed) s.communication.cycle_time_s = 0;  // a collective starts when its gradients are in
  for (const char* k : {"bucket_size", "first_bucket_size", "gradient_as_bucket_view"})
    if (auto f = co.find(k); f && !ddp) f->fail(std::string(k) + " applies to framework: pytorch_ddp");
  if (auto f = co.find("gradient_precision")) {  // a compression: DDP's comm hooks, Horovod's Compression.fp16
    s.communication.gradient_precision = f->choice({"fp32", "fp16", "bf16"});
    s.model.gradient_bytes = gradient_element_bytes(s.communication.gradient_precision);
  } else if (deepspeed) {  // DeepSpeed reduces in the model's type (engine.py, communication_data_type)
    const std::string& p = s.model.precision;
    s.communication.gradient_precision = p == "amp" ? "fp16" : p == "bf16" || p == "fp8" ? "bf16" : "fp32";
    s.model.gradient_bytes = gradient_element_bytes(s.communication.gradient_precision);
  }
  if (!ddp) return;
  s.communication.cycle_time_s = 0;  // a bucket's allreduce starts when it is full, no negotiation
  if (auto f = co.find("bucket_size"))
    s.communication.bucket_bytes = f->quantity_between(Quantity::Bytes, 1, 1099511627776.0);
  if (auto f = co.find("first_bucket_size"))
    s.communication.first_bucket_bytes = f->quantity_between(Quantity::Bytes, 1, 1099511627776.0);
  if (auto f = co.find("gradient_as_bucket_view")) s.communication.gradient_as_bucket_view = f->boolean();
}

}  // namespace

// communication: fusion, cycle, collectives in flight, library and rings; returns the rings asked for (0: auto).
int parse_buffers(const YamlField& co, Scenario& s) {
  parse_framework(co, s);
  int channels = 0;
  if (auto f = co.find("fusion_threshold"))  // up to 1 TiB: buffers are sized from it in whole bytes
    s.communication.fusion_threshold_bytes = f->quantity_between(Quantity::Bytes, 0, 1099511627776.0);
  if (auto f = co.find("cycle_time")) s.communication.cycle_time_s = f->nonnegative_quantity(Quantity::Time);
  if (auto f = co.find("concurrent_collectives")) {
    const std::string v = f->str();
    if (v == "unlimited")
      s.communication.concurrent_collectives = 0;
    else if (is_whole_number(v))
      s.communication.concurrent_collectives = static_cast<int>(f->integer(1, 1 << 20));
    else
      f->fail(
          "expected a whole number of collectives in flight at once (1: one at a time, as Horovod) or "
          "'unlimited', got '" +
          v + "'");
  }
  if (auto f = co.find("library")) {
    const std::string v = f->choice({"nccl", "nccl1", "mpi"});
    s.communication.library = v == "nccl" ? CommLibrary::Nccl : v == "nccl1" ? CommLibrary::Nccl1 : CommLibrary::Mpi;
  }
  if (auto f = co.find("channels")) {  // `auto` suits every strategy, a number a ring or a tree
    const std::string v = f->str();
    if (v != "auto") {
      if (!is_whole_number(v))
        f->fail("expected 'auto' or a whole number of rings or trees run at once (1 to 64), got '" + v + "'");
      const Strategy st = s.communication.strategy;
      if (st != Strategy::Ring && st != Strategy::Tree && st != Strategy::Auto)
        f->fail("a number of channels applies only to strategy: ring, tree or auto");
      channels = static_cast<int>(f->integer(1, kMaxChannels));
    }
  }
  return channels;
}

// communication: how many parameter servers, which follows from the placement where it can.
void parse_parameter_server_count(const YamlField& co, Scenario& s) {
  const bool ps = s.communication.strategy == Strategy::ParameterServer;
  if (ps && s.communication.ps_placement == PsPlacement::Gpus) {
    // One server per worker GPU: the count follows from the cluster.
    const int gpus = s.cluster.total_gpus();
    if (auto f = co.find("parameter_servers"); f && s.communication.parameter_servers != gpus)
      f->fail("with parameter_server_placement: gpus every GPU is a server: " + std::to_string(gpus) +
              " on this cluster (leave parameter_servers out)");
    s.communication.parameter_servers = gpus;
  }
  if (ps && s.communication.parameter_servers == 0) s.communication.parameter_servers = 1;
  if (ps && s.communication.ps_placement == PsPlacement::Colocated &&
      s.communication.parameter_servers > s.cluster.nodes) {
    co.get("parameter_servers")
        .fail("colocated parameter servers run one per node at most: " +
              std::to_string(s.communication.parameter_servers) + " servers on " + std::to_string(s.cluster.nodes) +
              " node(s)");
  }
}

// Rings run at once where the scenario leaves it to `auto`: one per rail a node's GPUs leave by for a device
// ring across InfiniBand nodes, else one. Trees: the double binary tree's two per rail, a pair entering
// every node at the same GPU, so that its NIC carries what the node sends in one tree and in the other.
// Auto: the rings' count (its trees run twice as many).
void default_channels(const Catalog& catalog, const SkuSpec& sku, Scenario& s) {
  const Strategy st = s.communication.strategy;
  const bool device = catalog.library(std::string(to_string(s.communication.library))).data_path == DataPath::Device;
  // The rails the node's GPUs leave by: GPUs 0 and 1 of a DGX-1 share one NIC, four GPUs use two.
  const int rails = catalog.layout(sku.layout).rails_of_first(s.cluster.gpus_per_node);
  const NodeLayout& layout = catalog.layout(sku.layout);
  const bool searched =
      catalog.library(std::string(to_string(s.communication.library))).ring_order == RingOrder::Searched;
  int per_rail = device && s.cluster.nodes > 1 && s.cluster.fabric == FabricKind::InfiniBand ? std::max(1, rails) : 1;
  // One node of a mesh: the rings its library's search finds there (NCCL on a DGX-1, RCCL on MI300X). Across
  // nodes a ring per rail, as NCCL runs its network rings one per NIC.
  if (device && searched && st != Strategy::Tree && s.cluster.nodes == 1) per_rail = std::max(per_rail, layout.rings);
  // Across rack-scale NVLink domains (GB200 NVL72) the rings leave each domain by all of its nodes' NICs, one
  // ring per NIC (RingSearch::ring_orders), up to NCCL's 64 channels (MAXCHANNELS, src/include/device.h).
  const int domain = layout.nvswitch ? layout.nvswitch->domain_nodes : 1;
  if (per_rail > 1 && domain > 1 && s.cluster.nodes > domain && st != Strategy::Tree)
    per_rail = std::min(kMaxChannels, per_rail * domain);
  s.communication.channels = st == Strategy::Tree                           ? 2 * per_rail
                             : st == Strategy::Ring || st == Strategy::Auto ? per_rail
                                                                            : 1;
}

void check_sharded(const YamlField& root, Scenario& s) {
  if (!sharded_framework(s)) return;
  const auto co = root.find("communication");
  const std::string name(to_string(s.communication.framework));
  const Strategy st = s.communication.strategy;
  if (st != Strategy::Ring && st != Strategy::Auto)
    co->get("strategy")
        .fail(name +
              " runs NCCL's all-gather and reduce-scatter (the ring) and, for no_shard, its "
              "allreduce: use strategy ring or auto, or leave it out");
  if (auto f = co->find("concurrent_collectives"))
    f->fail(name + " runs its all-gathers and its reduce-scatters each on a stream of their own; leave it out");
  if (auto f = co->find("shard_group")) {
    if (s.communication.sharding != Sharding::HybridShard) f->fail("applies to sharding: hybrid_shard");
    const int gpn = s.cluster.gpus_per_node, gpus = s.cluster.total_gpus();
    const auto g = static_cast<int>(f->integer(1, 1 << 20));
    if (g % gpn != 0 || gpus % g != 0)
      f->fail("a shard group spans whole nodes and divides the cluster: a multiple of " + std::to_string(gpn) +
              " GPUs that divides " + std::to_string(gpus) + ", got " + std::to_string(g));
    s.communication.shard_group = g;
  }
  if (s.training.gradient_accumulation != 1)
    root.get("training")
        .get("gradient_accumulation")
        .fail(name +
              " is modelled one micro-batch a step (each micro-batch gathers and reduces every unit): set it to 1 "
              "and model.batch_per_gpu to the micro-batch");
}

}  // namespace scenario_detail

std::string nvls_unavailable(const Catalog& catalog, const Scenario& s) {
  const SkuSpec& sku = catalog.sku(s.cluster.sku);
  const auto& sw = catalog.layout(sku.layout).nvswitch;
  if (!sw || !sw->reduction)
    return sku.name + " has no NVSwitch that reduces in the switch (NVLink SHARP: H100/H200 sizes); use ring";
  // One NVLink domain: a node, or a rack whose nodes share the switch (GB200 NVL72: NCCL's multi-node NVLink
  // treats its clique as one node).
  if (s.cluster.nodes > sw->domain_nodes)
    return "nvls runs inside one NVLink domain (" + std::to_string(sw->domain_nodes) + " node" +
           (sw->domain_nodes == 1 ? "" : "s") + " of " + sku.name +
           "); across nodes NCCL pairs it with a tree (NVLSTree), which strategy auto weighs: use auto, ring "
           "or hierarchical, or cluster.nodes: " +
           std::to_string(sw->domain_nodes) + " at most";
  const LibraryProfile& lib = catalog.library(std::string(to_string(s.communication.library)));
  if (lib.data_path != DataPath::Device || lib.nvls_efficiency <= 0)
    return "nvls is NCCL's (2.17 on): set communication.library: nccl";
  if (!lib.has_algorithm("nvls", s.communication.library_version))
    return "NCCL's NVLS came with " + lib.algorithms_since.at("nvls") + "; library_version " +
           s.communication.library_version + " has none";
  return "";
}

std::string nvls_tree_unavailable(const Catalog& catalog, const Scenario& s) {
  const SkuSpec& sku = catalog.sku(s.cluster.sku);
  const auto& sw = catalog.layout(sku.layout).nvswitch;
  if (s.cluster.nodes < 2) return "nvls_tree (NCCL's NVLSTree) runs across nodes; on one node use nvls";
  if (!sw || !sw->reduction || sw->domain_nodes != 1)
    return sku.name +
           " has no NVSwitch of its own that reduces (NVLink SHARP in every node: H100/H200 sizes); use ring";
  if (s.cluster.fabric != FabricKind::InfiniBand) return "nvls_tree runs over InfiniBand (cluster.fabric: infiniband)";
  const LibraryProfile& lib = catalog.library(std::string(to_string(s.communication.library)));
  if (lib.data_path != DataPath::Device || lib.nvls_efficiency <= 0 || !lib.tuning ||
      lib.tuning->nvls_tree_latency <= 0)
    return "nvls_tree is NCCL's NVLSTree (2.18 on): set communication.library: nccl";
  if (!lib.has_algorithm("nvls_tree", s.communication.library_version))
    return "NCCL's NVLSTree came with " + lib.algorithms_since.at("nvls_tree") + "; library_version " +
           s.communication.library_version + " has none";
  return "";
}

}  // namespace ringsim
