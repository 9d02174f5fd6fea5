#include "load/scenario.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <memory>
#include <sstream>

#include "load/input_file.h"
#include "load/overlay.h"
#include "load/scenario_communication.h"
#include "load/scenario_reliability.h"
#include "load/units.h"
#include "load/yaml_reader.h"

namespace ringsim {

std::string_view to_string(FabricTopology v) {
  return v == FabricTopology::Star ? "star" : v == FabricTopology::FatTree ? "fat_tree" : "rail_optimized";
}
FabricTopology fabric_topology_named(const std::string& name) {
  return name == "star"       ? FabricTopology::Star
         : name == "fat_tree" ? FabricTopology::FatTree
                              : FabricTopology::RailOptimized;
}
std::string_view to_string(Framework v) {
  return v == Framework::Horovod      ? "horovod"
         : v == Framework::PytorchDdp ? "pytorch_ddp"
         : v == Framework::Fsdp       ? "fsdp"
                                      : "deepspeed";
}

std::string_view to_string(Sharding v) {
  return v == Sharding::FullShard     ? "full_shard"
         : v == Sharding::ShardGradOp ? "shard_grad_op"
         : v == Sharding::HybridShard ? "hybrid_shard"
                                      : "no_shard";
}

std::string_view to_string(Strategy v) {
  switch (v) {
    case Strategy::Ring:
      return "ring";
    case Strategy::Hierarchical:
      return "hierarchical";
    case Strategy::HalvingDoubling:
      return "halving_doubling";
    case Strategy::ParameterServer:
      return "parameter_server";
    case Strategy::Nvls:
      return "nvls";
    case Strategy::Tree:
      return "tree";
    case Strategy::Auto:
      return "auto";
    case Strategy::NvlsTree:
      return "nvls_tree";
  }
  return "?";
}
std::string_view to_string(PsPlacement v) {
  switch (v) {
    case PsPlacement::Colocated:
      return "colocated";
    case PsPlacement::Dedicated:
      return "dedicated";
    case PsPlacement::Gpus:
      return "gpus";
  }
  return "?";
}
std::string_view to_string(PsAggregation v) { return v == PsAggregation::None ? "none" : "node"; }
std::string_view to_string(PsTransport v) { return v == PsTransport::InProcess ? "in_process" : "rpc"; }
std::string_view to_string(CommLibrary v) {
  return v == CommLibrary::Nccl ? "nccl" : v == CommLibrary::Nccl1 ? "nccl1" : "mpi";
}
std::string_view to_string(DataFormat v) { return v == DataFormat::Files ? "files" : "records"; }
std::string_view to_string(collective::ServerAssignment v) {
  return v == collective::ServerAssignment::Greedy ? "greedy" : "round_robin";
}

namespace {

using namespace scenario_detail;

const std::vector<std::string> kTopKeys = {
    "name",    "description", "cluster",     "model", "training", "communication",
    "storage", "reliability", "calibration", "sweep", "plan"};  // sweep, plan: read by those commands
const std::vector<std::string> kClusterKeys = {
    "sku", "nodes", "gpus_per_node", "fabric", "fabric_topology", "nodes_per_leaf", "oversubscription", "low_priority"};
const std::vector<std::string> kModelKeys = {
    "name",    "batch_per_gpu", "images_per_sec_single_gpu", "samples_per_sec_single_gpu", "precision",
    "seq_len", "stack",         "activation_checkpointing"};
const std::vector<std::string> kTrainingKeys = {"epochs", "tokens", "dataset_images", "dataset_samples",
                                                "gradient_accumulation"};
const std::vector<std::string> kCommKeys = {"strategy",
                                            "library_version",
                                            "parameter_servers",
                                            "parameter_server_placement",
                                            "parameter_server_assignment",
                                            "parameter_server_aggregation",
                                            "parameter_server_transport",
                                            "cross_node",
                                            "protocol",
                                            "fusion_threshold",
                                            "cycle_time",
                                            "concurrent_collectives",
                                            "channels",
                                            "library",
                                            "framework",
                                            "bucket_size",
                                            "first_bucket_size",
                                            "gradient_as_bucket_view",
                                            "sharding",
                                            "shard_group",
                                            "zero_stage",
                                            "overlap_comm",
                                            "gradient_precision"};

const std::vector<std::string> kStorageKeys = {
    "backend",        "servers",        "cache",        "format",
    "file_size",      "record_size",    "dataset_size", "decode_cpu_per_image",
    "prefetch_depth", "reader_threads", "bandwidth",    "iops",
    "request_latency"};

const std::vector<std::pair<std::string, const std::vector<std::string>*>> kSections = {
    {"cluster", &kClusterKeys},    {"model", &kModelKeys},     {"training", &kTrainingKeys},
    {"communication", &kCommKeys}, {"storage", &kStorageKeys}, {"reliability", &reliability_keys()}};

// Largest cluster accepted: far beyond any Azure quota, small enough that later stages can size their work.
constexpr std::int64_t kMaxNodes = 65536;

void apply_override(YamlDocument& doc, const Override& o) {
  SourceLocation where{doc.file, 0, 0, o.text};
  const auto dot = o.path.find('.');
  std::vector<std::string> all = scenario_keys();
  auto unknown = [&]() { throw InputError(where, "unknown key '" + o.path + "'" + suggestion_suffix(o.path, all)); };
  YAML::Node value;
  try {
    value = YAML::Load(o.value);
  } catch (const YAML::ParserException& e) {
    throw InputError(where, o.path + ": value is not valid YAML: " + e.msg);
  }
  if (!doc.root.IsDefined() || doc.root.IsNull()) doc.root = YAML::Node(YAML::NodeType::Map);
  if (!doc.root.IsMap()) return;  // the loader reports the malformed document itself
  if (dot == std::string::npos) {
    if (o.path != "name" && o.path != "description" && o.path != "calibration") unknown();
    doc.root[o.path] = value;
  } else {
    const std::string section = o.path.substr(0, dot), key = o.path.substr(dot + 1);
    bool known = false;
    for (const auto& [s, keys] : kSections)
      if (s == section && std::find(keys->begin(), keys->end(), key) != keys->end()) known = true;
    if (!known) unknown();
    YAML::Node sec = doc.root[section];
    if (!sec.IsDefined() || sec.IsNull()) {
      doc.root[section] = YAML::Node(YAML::NodeType::Map);
      sec = doc.root[section];
    }
    if (!sec.IsMap())
      throw InputError(where, section + ": cannot set '" + key + "' because '" + section + "' is not a mapping");
    sec[key] = value;
  }
  doc.overrides[o.path] = o.text;
}

// storage: the input pipeline (issue 8). Needs the cluster, model and training sections resolved.
StorageConfig parse_storage(const YamlField& st, const Scenario& s, const SkuSpec& sku, const ModelSpec& model,
                            const Catalog& catalog) {
  st.require_map(kStorageKeys);
  StorageConfig c;
  YamlField backend_field = st.get("backend");
  c.backend = backend_field.str();
  const StorageBackendSpec* b = catalog.find_storage_backend(c.backend);
  if (!b)
    backend_field.fail("unknown storage backend '" + c.backend + "'" +
                       suggestion_suffix(c.backend, catalog.storage_backend_names()));
  if (auto f = st.find("servers")) {
    if (b->scaling != StorageScaling::PerServer)
      f->fail("applies only to backends with storage servers (scaling per_server in storage.yaml), not '" + c.backend +
              "'");
    c.servers = static_cast<int>(f->integer(1, 65536));
  } else if (b->scaling == StorageScaling::PerServer) {
    c.servers = b->default_servers;
  }
  c.cacheable = !b->cache.empty();
  if (auto f = st.find("cache")) {
    if (b->cache.empty()) f->fail("applies only to a backend with a local cache (blobfuse), not '" + c.backend + "'");
    c.cache = f->boolean();
  } else {
    c.cache = !b->cache.empty() && b->cache_default;
  }
  if (auto f = st.find("format"))
    c.format = f->choice({"files", "records"}) == "files" ? DataFormat::Files : DataFormat::Records;
  const double images = static_cast<double>(s.training.dataset_images);
  if (auto f = st.find("dataset_size")) {
    c.dataset_bytes = f->positive_quantity(Quantity::Bytes);
  } else if (auto fs = st.find("file_size"); fs && c.format == DataFormat::Files) {
    c.dataset_bytes = 0;  // from file_size below
  } else {
    c.dataset_bytes = catalog.dataset(model.dataset).training_bytes;
    if (c.dataset_bytes <= 0)
      backend_field.fail("the catalog gives no size in bytes for dataset '" + model.dataset +
                         "' (datasets.yaml training_bytes); give storage.dataset_size");
  }
  if (c.format == DataFormat::Files) {
    if (auto f = st.find("record_size")) f->fail("applies only to format: records");
    if (auto f = st.find("file_size")) {
      if (st.has("dataset_size"))
        f->fail("give file_size or dataset_size, not both (the data set is one file per image: " +
                std::to_string(s.training.dataset_images) + " x file_size)");
      c.file_size = f->positive_quantity(Quantity::Bytes);
      c.dataset_bytes = c.file_size * images;
    } else {
      c.file_size = c.dataset_bytes / images;
    }
  } else {
    if (auto f = st.find("file_size")) f->fail("applies only to format: files");
    YamlField rf = st.get("record_size");
    c.record_size = rf.positive_quantity(Quantity::Bytes);
    if (c.record_size < c.dataset_bytes / images)
      rf.fail("a record file holds at least one image, and an image takes " + format_bytes(c.dataset_bytes / images));
  }
  if (auto f = st.find("decode_cpu_per_image")) c.decode_cpu_per_image_s = f->nonnegative_quantity(Quantity::Time);
  if (auto f = st.find("prefetch_depth")) c.prefetch_depth = static_cast<int>(f->integer(0, 1 << 20));
  c.reader_threads = sku.vcpus;
  if (auto f = st.find("reader_threads")) c.reader_threads = static_cast<int>(f->integer(1, 1 << 20));
  c.bandwidth = b->bandwidth;
  c.iops = b->iops;
  c.request_latency = b->request_latency;
  // At least a byte per second: below, a batch's read outlasts what the simulated clock can count.
  if (auto f = st.find("bandwidth")) c.bandwidth = f->quantity_between(Quantity::Bandwidth, 1, 1e18);
  if (auto f = st.find("iops")) c.iops = f->positive_number();
  if (auto f = st.find("request_latency")) c.request_latency = f->nonnegative_quantity(Quantity::Time);
  // Every node reads its own shard of the data set in every epoch (per-node sharding, shuffled within the
  // shard): a node-local copy or cache must hold that shard.
  const double shard = c.dataset_bytes / s.cluster.nodes;
  const bool local = b->kind == StorageKind::Local;
  if ((local || c.cache) && shard > sku.local_ssd_bytes) {
    const YamlField at = c.cache && st.has("cache") ? st.get("cache") : backend_field;
    at.fail("each node's shard of the data set (" + format_bytes(shard) + ") does not fit " + sku.name +
            "'s local SSD (" + format_bytes(sku.local_ssd_bytes) + ")");
  }
  return c;
}

// calibration: an overlay (ringsim calibrate), relative to the scenario file.
void parse_calibration(const YamlField& root, const YamlDocument& doc, Scenario& s) {
  if (auto f = root.find("calibration")) {
    namespace fs = std::filesystem;
    fs::path p = f->str();
    if (p.is_relative() && !doc.file.empty() && !doc.overrides.count("calibration"))
      p = fs::path(doc.file).parent_path() / p;
    std::error_code ec;
    if (!fs::exists(p, ec))
      f->fail(ec ? "cannot access calibration file: " + ec.message() : "no calibration file '" + p.string() + "'");
    if (!fs::is_regular_file(p, ec))
      f->fail("'" + p.string() + "' " + (fs::is_directory(p, ec) ? "is a folder" : "is not a regular file") +
              "; expected a calibration overlay (written by `ringsim calibrate -o FILE`)");
    s.calibration = p.string();
  }
}

// cluster: the SKU, nodes, processes per node and fabric; returns the SKU.
const SkuSpec& parse_cluster(const YamlField& root, const Catalog& catalog, Scenario& s) {
  YamlField cl = root.get("cluster");
  cl.require_map(kClusterKeys);
  YamlField sku_field = cl.get("sku");
  const std::string sku_name = sku_field.str();
  const SkuSpec* sku = catalog.find_sku(sku_name);
  if (!sku) sku_field.fail("unknown SKU '" + sku_name + "'" + suggestion_suffix(sku_name, catalog.sku_names()));
  s.cluster.sku = sku->name;
  s.cluster.nodes = static_cast<int>(cl.get("nodes").integer(1, kMaxNodes));
  if (auto f = cl.find("gpus_per_node")) {
    const auto n = f->integer(1, 1 << 20);
    if (n > sku->gpus)
      f->fail("the scenario places " + std::to_string(n) + " processes per node but " + sku->name + " has only " +
              std::to_string(sku->gpus) + " GPU" + (sku->gpus == 1 ? "" : "s"));
    s.cluster.gpus_per_node = static_cast<int>(n);
  } else {
    s.cluster.gpus_per_node = sku->gpus;
  }
  if (auto f = cl.find("fabric")) {
    s.cluster.fabric =
        f->choice({"infiniband", "ethernet"}) == "infiniband" ? FabricKind::InfiniBand : FabricKind::Ethernet;
    if (s.cluster.fabric == FabricKind::InfiniBand && !sku->infiniband_link) {
      std::vector<std::string> rdma;
      for (const auto& n : catalog.sku_names())
        if (catalog.sku(n).infiniband_link && catalog.sku(n).series == sku->series) rdma.push_back(n);
      f->fail(sku->name + " has no InfiniBand (RDMA) NIC; use fabric: ethernet" +
              (rdma.empty() ? std::string() : " or an RDMA size of its series: " + rdma.front()));
    }
  } else {
    s.cluster.fabric = sku->infiniband_link ? FabricKind::InfiniBand : FabricKind::Ethernet;
  }
  if (auto f = cl.find("fabric_topology"))
    s.cluster.fabric_topology = fabric_topology_named(f->choice({"star", "fat_tree", "rail_optimized"}));
  const FabricSpec& fabric = catalog.fabric(s.cluster.fabric);
  if (auto f = cl.find("low_priority")) s.cluster.low_priority = f->boolean();
  if (s.cluster.fabric_topology != FabricTopology::Star) {
    s.cluster.nodes_per_leaf = fabric.default_nodes_per_leaf;
    if (auto f = cl.find("nodes_per_leaf")) s.cluster.nodes_per_leaf = static_cast<int>(f->integer(1, 4096));
    if (auto f = cl.find("oversubscription")) s.cluster.oversubscription = f->number(1, 64);
  } else {
    for (const char* k : {"nodes_per_leaf", "oversubscription"})
      if (auto f = cl.find(k)) f->fail(std::string(k) + " applies only to fabric_topology: fat_tree or rail_optimized");
  }

  return *sku;
}

// model.samples_per_sec_single_gpu, or its older name images_per_sec_single_gpu: from a thousandth of a
// sample per second (batch 2^20: 33 years an iteration, the simulated clock's limit in sight) to a billion.
// Either one rate (for the scenario's GPU) or a map by GPU type, of which the scenario's GPU's entry applies
// (none: the catalog's rates), so a plan over GPU types uses each one's measurement.
void parse_single_gpu_rate(const YamlField& mo, const Catalog& catalog, Scenario& s) {
  if (mo.has("images_per_sec_single_gpu") && mo.has("samples_per_sec_single_gpu"))
    mo.get("samples_per_sec_single_gpu")
        .fail("give samples_per_sec_single_gpu or its synonym images_per_sec_single_gpu, not both");
  const std::string gpu = catalog.sku(s.cluster.sku).gpu;
  for (const char* key : {"images_per_sec_single_gpu", "samples_per_sec_single_gpu"}) {
    const auto f = mo.find(key);
    if (!f) continue;
    const SourceLocation at = f->location();
    s.model.single_gpu_rate_from = at.origin.empty() ? "in " + at.file : "from " + at.origin;
    if (!f->is_map()) {
      s.model.images_per_sec_single_gpu = f->number(1e-3, 1e9);
      continue;
    }
    f->require_map();
    const std::vector<std::string> gpus = catalog.gpu_names();
    for (const auto& [name, rate] : f->entries()) {
      if (std::find(gpus.begin(), gpus.end(), name) == gpus.end())
        rate.fail("unknown GPU type '" + name + "'" + suggestion_suffix(name, gpus));
      s.model.single_gpu_rates[name] = rate.number(1e-3, 1e9);
    }
    if (const auto it = s.model.single_gpu_rates.find(gpu); it != s.model.single_gpu_rates.end())
      s.model.images_per_sec_single_gpu = it->second;
  }
}

// model.precision: one the GPU has the peaks for.
void parse_precision(const YamlField& mo, const Catalog& catalog, Scenario& s) {
  const auto f = mo.find("precision");
  if (!f) return;
  const ComputeSpec& cs = catalog.compute();
  s.model.precision = f->choice(cs.precision_order);
  const PrecisionSpec& p = cs.precisions.at(s.model.precision);
  s.communication.gradient_precision = p.gradient;
  s.model.gradient_bytes = gradient_element_bytes(p.gradient);
  const GpuSpec& gpu = catalog.gpu(catalog.sku(s.cluster.sku).gpu);
  auto runs = [&gpu](const PrecisionSpec& q) {
    return gpu.peak_flops(q.peak) > 0 && gpu.peak_flops(q.linear_peak()) > 0;
  };
  if (runs(p)) return;
  std::vector<std::string> usable;
  for (const auto& name : cs.precision_order)
    if (runs(cs.precisions.at(name))) usable.push_back(name);
  const std::string& missing = gpu.peak_flops(p.peak) > 0 ? p.linear_peak() : p.peak;
  const std::string in = missing == p.name ? "" : " (" + p.name + " computes in " + missing + ")";
  f->fail(s.cluster.sku + "'s " + gpu.name + " has no " + missing + " peak in gpus.yaml" + in + "; it runs " +
          join_alternatives(usable, " or "));
}

std::vector<std::string> text_models(const Catalog& catalog) {
  std::vector<std::string> names;
  for (const auto& n : catalog.model_names())
    if (catalog.model(n).seq_len_settable) names.push_back(n);
  return names;
}

// A text the reports print (name, description): control characters (terminal escape sequences) and
// invisible ones are refused; a description may run over several lines.
std::string shown_text(const YamlField& f, bool lines = false) {
  const std::string v = f.str();
  std::string one_line = v;
  if (lines) std::replace(one_line.begin(), one_line.end(), '\n', ' ');
  if (printable(one_line, std::string::npos) != one_line)
    f.fail("holds control or invisible characters ('" + printable(v, 60) + "'); reports print it on terminals");
  return v;
}

// An optimizer step must fit in an epoch: a global batch beyond the data set is a mistake (a batch meant
// for the whole cluster given per GPU), not a run to predict.
void check_global_batch(const YamlField& mo, const ModelSpec& model, const Scenario& s) {
  const double global = static_cast<double>(s.cluster.total_gpus()) * s.samples_per_gpu_step();
  if (global <= static_cast<double>(s.training.dataset_images)) return;
  mo.get("batch_per_gpu")
      .fail("a global batch of " + std::to_string(static_cast<std::int64_t>(global)) + " " + model.sample_noun() +
            " (" + std::to_string(s.cluster.total_gpus()) + " GPUs x " + std::to_string(s.model.batch_per_gpu) +
            (s.training.gradient_accumulation > 1
                 ? " x " + std::to_string(s.training.gradient_accumulation) + " micro-batches"
                 : std::string()) +
            ") is larger than the data set's " + std::to_string(s.training.dataset_images) +
            " (training.dataset_samples): an epoch would be less than one step; batch_per_gpu is per GPU");
}

// model and training; returns the model.
// training.tokens: a count with an optional decimal suffix (K, M, B or G, T: 1e3 to 1e12), e.g. 2T.
double token_count(const YamlField& f) {
  const std::string v = f.str();
  const std::map<char, double> suffix = {{'K', 1e3}, {'M', 1e6}, {'B', 1e9}, {'G', 1e9}, {'T', 1e12}};
  std::string digits = v;
  double scale = 1;
  if (!v.empty() && suffix.count(static_cast<char>(std::toupper(static_cast<unsigned char>(v.back()))))) {
    scale = suffix.at(static_cast<char>(std::toupper(static_cast<unsigned char>(v.back()))));
    digits.pop_back();
  }
  std::size_t used = 0;
  double n = 0;
  try {
    n = std::stod(digits, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (digits.empty() || used != digits.size() || !std::isfinite(n) || n * scale < 1 || n * scale > 1e16)
    f.fail("expected a token count from 1 to 1e16, with an optional K, M, B or T suffix (e.g. 2T, 300B), got '" + v +
           "'");
  return n * scale;
}

const ModelSpec& parse_model(const YamlField& root, const Catalog& catalog, Scenario& s) {
  YamlField mo = root.get("model");
  mo.require_map(kModelKeys);
  YamlField model_field = mo.get("name");
  const std::string model_name = model_field.str();
  const ModelSpec* model = catalog.find_model(model_name);
  if (!model)
    model_field.fail("unknown model '" + model_name + "'" + suggestion_suffix(model_name, catalog.model_names()));
  s.model.name = model->name;
  s.model.batch_per_gpu = static_cast<int>(mo.get("batch_per_gpu").integer(1, 1 << 20));
  parse_single_gpu_rate(mo, catalog, s);
  parse_precision(mo, catalog, s);
  if (auto f = mo.find("stack")) s.model.stack = f->choice(catalog.compute().operators.stack_order);
  // The roofline has one efficiency a precision: FP8's linear layers beside BF16's rest are the operator
  // model's, on the catalog's default stack unless the scenario names one.
  if (!catalog.compute().precisions.at(s.model.precision).linear.empty() && s.model.stack.empty())
    s.model.stack = catalog.compute().operators.default_stack;
  if (auto f = mo.find("activation_checkpointing")) {
    s.model.activation_checkpointing = f->choice({"none", "selective", "full"});
    if (s.model.activation_checkpointing != "none" && model->architecture.layers == 0)
      f->fail(
          "activation checkpointing is modelled for the transformers with an architecture: in their model "
          "file (" +
          model->name + " has none)");
  }
  s.model.tokens = model->default_tokens;
  s.model.text = model->seq_len_settable;
  if (auto f = mo.find("seq_len")) {
    if (!model->seq_len_settable)
      f->fail((model->default_tokens > 1
                   ? model->name + " takes a fixed " + std::to_string(model->default_tokens) + " tokens a sample"
                   : model->name + " is not a text model") +
              "; seq_len applies to " + join_alternatives(text_models(catalog), " and "));
    s.model.tokens = static_cast<int>(f->integer(1, 1 << 20));
    if (s.model.tokens > model->max_tokens)
      f->fail(model->name + "'s position embeddings hold " + std::to_string(model->max_tokens) + " tokens; got " +
              std::to_string(s.model.tokens));
  }

  YamlField tr = root.get("training");
  tr.require_map(kTrainingKeys);
  if (auto f = tr.find("tokens")) {  // a token budget: its sequences, once
    if (!s.model.text)
      f->fail(model->name + " is not a text model; tokens applies to " +
              join_alternatives(text_models(catalog), " and "));
    for (const char* k : {"epochs", "dataset_images", "dataset_samples"})
      if (tr.has(k)) tr.get(k).fail(std::string("give tokens (a budget, trained once) or ") + k + ", not both");
    s.training.epochs = 1;
    s.training.tokens = token_count(*f);
    s.training.dataset_images = static_cast<std::int64_t>(std::ceil(s.training.tokens / s.model.tokens));
  } else {
    s.training.epochs = static_cast<int>(tr.get("epochs").integer(1, 100000));
    if (tr.has("dataset_images") && tr.has("dataset_samples"))
      tr.get("dataset_samples").fail("give dataset_images or its synonym dataset_samples, not both");
    if (auto f = tr.has("dataset_samples") ? tr.find("dataset_samples") : tr.find("dataset_images"))
      s.training.dataset_images = f->integer(1, std::int64_t(1) << 40);
    else
      s.training.dataset_images = catalog.dataset(model->dataset).samples(s.model.tokens);
  }
  if (auto f = tr.find("gradient_accumulation"))
    s.training.gradient_accumulation = static_cast<int>(f->integer(1, 4096));
  check_global_batch(mo, *model, s);

  return *model;
}

Scenario parse(std::shared_ptr<YamlDocument> doc, const Catalog& catalog, const std::vector<Override>& overrides) {
  for (const auto& o : overrides) apply_override(*doc, o);
  YamlField root = YamlField::root(doc);
  if (!root.node().IsDefined() || root.node().IsNull())
    root.fail("the scenario is empty; expected the sections cluster, model, training, communication");
  root.require_map(kTopKeys);

  Scenario s;
  s.file = doc->file;
  if (auto f = root.find("name")) s.name = shown_text(*f);
  if (auto f = root.find("description")) s.description = shown_text(*f, true);
  if (s.name.empty()) s.name = std::filesystem::path(doc->file).stem().string();  // named after its file
  parse_calibration(root, *doc, s);
  const SkuSpec& sku = parse_cluster(root, catalog, s);
  const ModelSpec& model = parse_model(root, catalog, s);
  // communication (the whole section may be omitted: Horovod's defaults)
  int channels = 0;  // 0: auto
  if (auto co = root.find("communication")) {
    co->require_map(kCommKeys);
    parse_strategy(*co, s);
    parse_parameter_server_keys(*co, s);
    channels = parse_buffers(*co, s);
    parse_parameter_server_count(*co, s);
    check_nvls(*co, catalog, s);
    check_auto(*co, catalog, s);
    parse_protocol(*co, catalog, s);
    check_ring_only(*co, catalog, s);
  }
  library_defaults(root.find("communication"), catalog, s);
  check_sharded(root, s);
  s.communication.channels = channels;
  if (channels == 0) default_channels(catalog, sku, s);
  if (auto st = root.find("storage")) s.storage = parse_storage(*st, s, sku, model, catalog);
  s.reliability = parse_reliability(root.find("reliability"), s, catalog);
  return s;
}

}  // namespace

const std::vector<std::string>& scenario_keys() {
  static const std::vector<std::string> keys = [] {
    std::vector<std::string> k = {"name", "description", "calibration"};
    for (const auto& [section, names] : kSections)
      for (const auto& n : *names) k.push_back(section + "." + n);
    return k;
  }();
  return keys;
}

Override parse_override(const std::string& arg) {
  const auto eq = arg.find('=');
  SourceLocation where{"", 0, 0, "--set " + arg};
  if (eq == std::string::npos || eq == 0) throw InputError(where, "expected KEY=VALUE, e.g. --set cluster.nodes=8");
  Override o{arg.substr(0, eq), arg.substr(eq + 1), "--set " + arg};
  if (o.value.empty()) throw InputError(where, o.path + ": the value after '=' is empty");
  return o;
}

Scenario load_scenario(const std::string& path, const Catalog& catalog, const std::vector<Override>& overrides) {
  return parse(std::make_shared<YamlDocument>(YamlDocument::load_file(path, "scenario")), catalog, overrides);
}

Scenario load_scenario_text(const std::string& text, const std::string& name, const Catalog& catalog,
                            const std::vector<Override>& overrides) {
  return parse(std::make_shared<YamlDocument>(YamlDocument::load_string(text, name)), catalog, overrides);
}

namespace {
// The key's value as a scenario spells it: a count, or `unlimited` (0).
std::string concurrent_collectives_value(int c) { return c == 0 ? "unlimited" : std::to_string(c); }
}  // namespace

std::string real_run_refusal(const Scenario& s) {
  if (s.communication.strategy == Strategy::Nvls || s.communication.strategy == Strategy::NvlsTree)
    return "strategy " + std::string(to_string(s.communication.strategy)) +
           " reduces in the NVSwitch (multicast objects), which ringsim-real's transports do not use; run it with "
           "NCCL itself (NCCL_ALGO=" +
           (s.communication.strategy == Strategy::Nvls ? "NVLS" : "NVLSTree") + ") or choose strategy ring";
  if (s.model.gradient_bytes != 4)
    return "ringsim-real moves FP32 gradients; communication.gradient_precision " + s.communication.gradient_precision +
           " sends " + std::to_string(s.model.gradient_bytes) +
           "-byte ones (--set communication.gradient_precision=fp32)";
  if (s.training.gradient_accumulation != 1)
    return "ringsim-real runs one micro-batch a step (--set training.gradient_accumulation=1)";
  const int c = s.communication.concurrent_collectives;
  if (c == 1) return "";
  return "ringsim-real runs one collective at a time; communication.concurrent_collectives is " +
         concurrent_collectives_value(c) +
         " in this scenario (--set communication.concurrent_collectives=1 to run it one at a time)";
}

namespace {
// The communication section's framework keys: its loop's settings, as each framework has them.
void framework_yaml(YAML::Emitter& out, const Scenario& s) {
  const CommunicationConfig& c = s.communication;
  out << YAML::Key << "framework" << YAML::Value << std::string(to_string(c.framework));
  out << YAML::Key << "gradient_precision" << YAML::Value << c.gradient_precision;
  if (c.framework == Framework::PytorchDdp) {
    out << YAML::Key << "bucket_size" << YAML::Value << format_bytes(c.bucket_bytes);
    out << YAML::Key << "first_bucket_size" << YAML::Value << format_bytes(c.first_bucket_bytes);
    out << YAML::Key << "gradient_as_bucket_view" << YAML::Value << c.gradient_as_bucket_view;
  } else if (c.framework == Framework::Fsdp) {
    out << YAML::Key << "sharding" << YAML::Value << std::string(to_string(c.sharding));
    if (c.sharding == Sharding::HybridShard) out << YAML::Key << "shard_group" << YAML::Value << state_shards(s);
  } else if (c.framework == Framework::Deepspeed) {
    out << YAML::Key << "zero_stage" << YAML::Value << c.zero_stage;
    out << YAML::Key << "overlap_comm" << YAML::Value << c.overlap_comm;
  } else {
    out << YAML::Key << "fusion_threshold" << YAML::Value << format_bytes(c.fusion_threshold_bytes);
    out << YAML::Key << "cycle_time" << YAML::Value << format_time(c.cycle_time_s);
  }
  if (!sharded_framework(s))
    out << YAML::Key << "concurrent_collectives" << YAML::Value
        << concurrent_collectives_value(c.concurrent_collectives);
}

// The reliability section, every figure resolved (absent where the catalog models no goodput).
void reliability_yaml(YAML::Emitter& out, const Scenario& s) {
  const ReliabilityConfig& r = s.reliability;
  if (!r.modelled) return;
  out << YAML::Key << "reliability" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "failures_per_1000_node_days" << YAML::Value
      << format_number(r.failures_per_1000_node_days.value);
  if (s.cluster.low_priority)
    out << YAML::Key << "evictions_per_node_day" << YAML::Value << format_number(r.evictions_per_node_day.value);
  out << YAML::Key << "restart_time" << YAML::Value << format_time(r.restart_s.value);
  out << YAML::Key << "node_replacement_time" << YAML::Value << format_time(r.replacement_s.value);
  out << YAML::Key << "checkpoint_interval" << YAML::Value
      << (r.checkpoint_interval_s ? format_time(*r.checkpoint_interval_s) : std::string("auto"));
  out << YAML::Key << "checkpoint_storage" << YAML::Value << r.checkpoint_storage;
  if (r.checkpoint_write_bandwidth > 0)
    out << YAML::Key << "checkpoint_write_bandwidth" << YAML::Value << format_bandwidth(r.checkpoint_write_bandwidth);
  out << YAML::Key << "checkpoint_async" << YAML::Value << r.checkpoint_async;
  out << YAML::Key << "spare_nodes" << YAML::Value << r.spare_nodes;
  out << YAML::EndMap;
}

}  // namespace

std::string to_yaml(const Scenario& s) {
  YAML::Emitter out;
  out << YAML::BeginMap;
  if (!s.name.empty()) out << YAML::Key << "name" << YAML::Value << s.name;
  if (!s.description.empty()) out << YAML::Key << "description" << YAML::Value << s.description;
  if (!s.calibration.empty()) out << YAML::Key << "calibration" << YAML::Value << s.calibration;
  out << YAML::Key << "cluster" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "sku" << YAML::Value << s.cluster.sku;
  out << YAML::Key << "nodes" << YAML::Value << s.cluster.nodes;
  out << YAML::Key << "gpus_per_node" << YAML::Value << s.cluster.gpus_per_node;
  out << YAML::Key << "fabric" << YAML::Value << std::string(to_string(s.cluster.fabric));
  out << YAML::Key << "fabric_topology" << YAML::Value << std::string(to_string(s.cluster.fabric_topology));
  if (s.cluster.fabric_topology != FabricTopology::Star) {
    out << YAML::Key << "nodes_per_leaf" << YAML::Value << s.cluster.nodes_per_leaf;
    out << YAML::Key << "oversubscription" << YAML::Value << s.cluster.oversubscription;
  }
  out << YAML::Key << "low_priority" << YAML::Value << s.cluster.low_priority;
  out << YAML::EndMap;
  out << YAML::Key << "model" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "name" << YAML::Value << s.model.name;
  out << YAML::Key << "batch_per_gpu" << YAML::Value << s.model.batch_per_gpu;
  if (!s.model.single_gpu_rates.empty()) {
    out << YAML::Key << "samples_per_sec_single_gpu" << YAML::Value << YAML::BeginMap;
    for (const auto& [gpu, rate] : s.model.single_gpu_rates) out << YAML::Key << gpu << YAML::Value << rate;
    out << YAML::EndMap;
  } else if (s.model.images_per_sec_single_gpu) {
    out << YAML::Key << "samples_per_sec_single_gpu" << YAML::Value << *s.model.images_per_sec_single_gpu;
  }
  out << YAML::Key << "precision" << YAML::Value << s.model.precision;
  if (!s.model.stack.empty()) out << YAML::Key << "stack" << YAML::Value << s.model.stack;
  out << YAML::Key << "activation_checkpointing" << YAML::Value << s.model.activation_checkpointing;
  if (s.model.text) out << YAML::Key << "seq_len" << YAML::Value << s.model.tokens;
  out << YAML::EndMap;
  out << YAML::Key << "training" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "epochs" << YAML::Value << s.training.epochs;
  out << YAML::Key << "dataset_samples" << YAML::Value << s.training.dataset_images;
  out << YAML::Key << "gradient_accumulation" << YAML::Value << s.training.gradient_accumulation;
  out << YAML::EndMap;
  out << YAML::Key << "communication" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "strategy" << YAML::Value << std::string(to_string(s.communication.strategy));
  if (s.communication.strategy == Strategy::ParameterServer) {
    out << YAML::Key << "parameter_servers" << YAML::Value << s.communication.parameter_servers;
    out << YAML::Key << "parameter_server_placement" << YAML::Value
        << std::string(to_string(s.communication.ps_placement));
    out << YAML::Key << "parameter_server_assignment" << YAML::Value
        << std::string(to_string(s.communication.ps_assignment));
    out << YAML::Key << "parameter_server_aggregation" << YAML::Value
        << std::string(to_string(s.communication.ps_aggregation));
    out << YAML::Key << "parameter_server_transport" << YAML::Value
        << std::string(to_string(s.communication.ps_transport));
  }
  if (s.communication.strategy == Strategy::Hierarchical)
    out << YAML::Key << "cross_node" << YAML::Value
        << (s.communication.cross_node == collective::CrossNode::Ring ? "ring" : "halving_doubling");
  framework_yaml(out, s);
  const Strategy st = s.communication.strategy;
  if (st == Strategy::Ring || st == Strategy::Tree || st == Strategy::Auto)
    out << YAML::Key << "channels" << YAML::Value << s.communication.channels;
  out << YAML::Key << "library" << YAML::Value << std::string(to_string(s.communication.library));
  if (!s.communication.library_version.empty())
    out << YAML::Key << "library_version" << YAML::Value << s.communication.library_version;
  out << YAML::EndMap;
  if (s.storage) {
    const StorageConfig& st = *s.storage;
    out << YAML::Key << "storage" << YAML::Value << YAML::BeginMap;
    out << YAML::Key << "backend" << YAML::Value << st.backend;
    if (st.servers > 0) out << YAML::Key << "servers" << YAML::Value << st.servers;
    if (st.cacheable) out << YAML::Key << "cache" << YAML::Value << st.cache;
    out << YAML::Key << "format" << YAML::Value << std::string(to_string(st.format));
    // Files: the data set is one file per image, so file_size alone says its size (both would be refused).
    if (st.format == DataFormat::Files) {
      out << YAML::Key << "file_size" << YAML::Value << format_bytes(st.file_size)
          << YAML::Comment("data set " + format_bytes(st.dataset_bytes));
    } else {
      out << YAML::Key << "record_size" << YAML::Value << format_bytes(st.record_size);
      out << YAML::Key << "dataset_size" << YAML::Value << format_bytes(st.dataset_bytes);
    }
    out << YAML::Key << "decode_cpu_per_image" << YAML::Value << format_time(st.decode_cpu_per_image_s);
    out << YAML::Key << "prefetch_depth" << YAML::Value << st.prefetch_depth;
    out << YAML::Key << "reader_threads" << YAML::Value << st.reader_threads;
    out << YAML::Key << "bandwidth" << YAML::Value << format_bandwidth(st.bandwidth);
    out << YAML::Key << "iops" << YAML::Value << st.iops;
    out << YAML::Key << "request_latency" << YAML::Value << format_time(st.request_latency);
    out << YAML::EndMap;
  }
  reliability_yaml(out, s);
  out << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

void apply_calibration(Catalog& catalog, Scenario& s) {
  if (s.calibration.empty()) return;
  const CatalogOverlay o = catalog.read_overlay(s.calibration);
  if (!o.measured_on.empty() && o.measured_on != s.cluster.sku) {
    s.calibration_left_out = s.calibration + " was measured on " + o.measured_on + ", not " + s.cluster.sku +
                             ": left out (the catalog's figures and their ranges instead)";
    s.calibration.clear();
    return;
  }
  catalog.apply(o);
}

}  // namespace ringsim
