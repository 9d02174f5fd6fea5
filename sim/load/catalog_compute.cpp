// The catalog's compute figures: compute.yaml (the roofline's precisions, the operator model's figures, the
// GPUs' variation and the measured single-GPU rates).
#include <filesystem>

#include "load/catalog.h"
#include "load/catalog_values.h"
#include "load/input_error.h"
#include "load/yaml_reader.h"

namespace ringsim {

namespace fs = std::filesystem;
using catalog_detail::open_root;

// compute.yaml: the roofline and measured single-GPU rates.
// compute.yaml precisions: fp32, tf32, amp, bf16 and fp8, each with its peak, gradient bytes and the roofline's
// efficiencies; fp8 with the linear layers' arithmetic and no roofline (the operator model prices it).
void Catalog::load_precisions(const YamlField& list) {
  list.require_map({"fp32", "tf32", "amp", "bf16", "fp8"});
  for (const char* name : {"fp32", "tf32", "amp", "bf16", "fp8"}) {
    YamlField f = list.get(name);
    const bool fp8 = std::string(name) == "fp8";
    if (fp8)
      f.require_map({"peak", "linear", "gradient"});
    else
      f.require_map({"peak", "gradient", "efficiency"});
    PrecisionSpec p;
    p.name = name;
    p.peak = f.get("peak").choice({"fp32", "tf32", "fp16", "bf16"});
    if (fp8) p.linear = f.get("linear").choice({"fp8"});
    p.gradient = f.get("gradient").choice({"fp32", "fp16", "bf16"});
    if (!fp8) {
      YamlField e = f.get("efficiency");
      e.require_map({"cnn", "transformer"});
      p.cnn_efficiency = e.get("cnn").number(0.001, 1);
      p.transformer_efficiency = e.get("transformer").number(0.001, 1);
    }
    p.source = "compute.yaml:" + std::to_string(f.location().line);
    compute_.precisions.emplace(name, p);
    compute_.precision_order.push_back(name);
  }
}

namespace {
StackSpec read_stack(const std::string& name, const YamlField& f) {
  f.require_map({"kernel_s", "elementwise_kernels", "activation_kernels", "flash_attention", "optimizer", "evidence",
                 "evidence_gpus"});
  StackSpec st;
  st.name = name;
  st.kernel_s = f.get("kernel_s").number(0, 1e-3);
  YamlField e = f.get("elementwise_kernels");
  e.require_map({"cnn", "transformer"});
  st.elementwise_kernels = {e.get("cnn").number(0, 40), e.get("transformer").number(0, 40)};
  YamlField act = f.get("activation_kernels");
  act.require_map({"gelu", "gelu_tanh", "swiglu"});
  for (const char* k : {"gelu", "gelu_tanh", "swiglu"}) st.activation_kernels[k] = act.get(k).number(0, 40);
  st.flash_attention = f.get("flash_attention").boolean();
  const std::string opt = f.get("optimizer").choice({"fused", "foreach", "for_loop"});
  st.optimizer = opt == "fused"     ? OptimizerImpl::Fused
                 : opt == "foreach" ? OptimizerImpl::Foreach
                                    : OptimizerImpl::ForLoop;
  st.evidence = f.get("evidence").str();
  for (const auto& g : f.get("evidence_gpus").items()) st.evidence_gpus.push_back(g.str());
  st.source = "compute.yaml:" + std::to_string(f.location().line);
  return st;
}

// [low, high] around `value`, each end read by `read`.
template <typename Read>
std::pair<double, double> range_around(const YamlField& f, double value, Read read) {
  const auto items = f.items();
  if (items.size() != 2) f.fail("expected [low, high]");
  const std::pair<double, double> r{read(items[0]), read(items[1])};
  if (!(r.first <= value && value <= r.second)) f.fail("the range must hold the value it is given for");
  return r;
}

}  // namespace

// compute.yaml operators: the operator model's figures per kernel kind, GPU, optimizer and software stack.
void Catalog::load_operators(const YamlField& f) {
  f.require_map({"matmul_efficiency", "attention_efficiency", "memory_efficiency", "tile", "winograd_reduction",
                 "fp8_cast_bytes", "multi_tensor", "norm_passes", "gpus", "optimizers", "default_stack", "stacks"});
  OperatorSpec& o = compute_.operators;
  o.matmul_efficiency = f.get("matmul_efficiency").number(0.01, 1);
  o.attention_efficiency = f.get("attention_efficiency").number(0.01, 1);
  o.memory_efficiency = f.get("memory_efficiency").number(0.01, 1);
  o.tile = static_cast<double>(f.get("tile").integer(1, 1024));
  o.winograd_reduction = f.get("winograd_reduction").number(1, 4);
  o.fp8_cast_bytes_per_element = f.get("fp8_cast_bytes").number(0, 16);
  YamlField mt = f.get("multi_tensor");
  mt.require_map({"chunk_elements", "blocks_per_launch"});
  o.multi_tensor_chunk = static_cast<double>(mt.get("chunk_elements").integer(1, 1 << 30));
  o.multi_tensor_blocks = static_cast<double>(mt.get("blocks_per_launch").integer(1, 1 << 20));
  for (const auto& family : {"cnn", "transformer"}) {
    YamlField n = f.get("norm_passes").get(family);
    n.require_map({"forward", "backward"});
    o.norm_passes[family] = {n.get("forward").number(0, 20), n.get("backward").number(0, 20)};
    YamlField opt = f.get("optimizers").get(family);
    opt.require_map({"name", "bytes_per_param", "state_bytes_per_param", "kernels_per_tensor",
                     "foreach_bytes_per_param", "foreach_tensors"});
    o.optimizers[family] = {opt.get("name").str(),
                            opt.get("bytes_per_param").number(0, 1000),
                            opt.get("state_bytes_per_param").number(0, 1000),
                            opt.get("kernels_per_tensor").number(0, 100),
                            opt.get("foreach_bytes_per_param").number(0, 1000),
                            static_cast<double>(opt.get("foreach_tensors").integer(1, 1000))};
  }
  f.get("gpus").require_map();
  for (const auto& [name, g] : f.get("gpus").entries()) {
    if (!gpus_.count(name)) g.fail("unknown GPU '" + name + "'" + suggestion_suffix(name, gpu_order_));
    g.require_map({"matmul", "attention", "memory"});
    OperatorSpec::GpuFigures fig;
    if (auto m = g.find("matmul")) fig.matmul = m->number(0.01, 1);
    if (auto m = g.find("attention")) fig.attention = m->number(0.01, 1);
    if (auto m = g.find("memory")) fig.memory = m->number(0.01, 1);
    fig.source = "compute.yaml:" + std::to_string(g.location().line);
    o.gpus[name] = fig;
  }
  f.get("stacks").require_map();
  for (const auto& [name, st] : f.get("stacks").entries()) {
    o.stacks[name] = read_stack(name, st);
    for (const auto& g : st.get("evidence_gpus").items())
      if (!gpus_.count(g.str())) g.fail("unknown GPU '" + g.str() + "'" + suggestion_suffix(g.str(), gpu_order_));
    o.stack_order.push_back(name);
  }
  o.default_stack = f.get("default_stack").choice(o.stack_order);
}

// compute.yaml: the roofline and measured single-GPU rates.
void Catalog::load_compute(const fs::path& base) {
  YamlField root =
      open_root(base / "compute.yaml", {"roofline", "precisions", "variation", "operators", "memory", "measured"});
  if (auto v = root.find("variation")) {
    v->require_map({"step_time_cv", "gpu_to_gpu_cv", "co_run_slowdown"});
    compute_.step_time_cv = v->get("step_time_cv").number(0, 1);
    if (auto g = v->find("gpu_to_gpu_cv")) compute_.gpu_to_gpu_cv = g->number(0, 1);
    if (auto g = v->find("co_run_slowdown")) compute_.co_run_slowdown = g->number(0, 1);
  }
  YamlField roof = root.get("roofline");
  roof.require_map({"backward_to_forward", "efficiency_scale"});
  compute_.backward_to_forward = roof.get("backward_to_forward").number(0, 100);
  if (auto e = roof.find("efficiency_scale")) compute_.roofline_efficiency_scale = e->number(0.01, 10);
  load_precisions(root.get("precisions"));
  load_operators(root.get("operators"));
  YamlField mem = root.get("memory");
  mem.require_map({"master_bytes_per_param", "gradient_bytes_per_param", "reserve", "reserve_range",
                   "allocator_overhead", "allocator_overhead_range"});
  auto& m = compute_.memory;
  m.master_bytes_per_param = mem.get("master_bytes_per_param").number(0, 16);
  m.gradient_bytes_per_param = mem.get("gradient_bytes_per_param").number(0, 16);
  m.reserve_bytes = mem.get("reserve").quantity_between(Quantity::Bytes, 0, 1e12);
  m.allocator_overhead = mem.get("allocator_overhead").number(0, 1);
  m.reserve_range = range_around(mem.get("reserve_range"), m.reserve_bytes,
                                 [](const YamlField& f) { return f.quantity_between(Quantity::Bytes, 0, 1e12); });
  m.allocator_overhead_range = range_around(mem.get("allocator_overhead_range"), m.allocator_overhead,
                                            [](const YamlField& f) { return f.number(0, 1); });
  m.source = "compute.yaml:" + std::to_string(mem.location().line);
  for (auto& item : root.get("measured").items()) {
    item.require_map({"gpu", "model", "batch_per_gpu", "precision", "seq_len", "images_per_sec", "samples_per_sec"});
    MeasuredRate m;
    m.gpu = item.get("gpu").str();
    if (!gpus_.count(m.gpu)) item.get("gpu").fail("unknown GPU '" + m.gpu + "'" + suggestion_suffix(m.gpu, gpu_order_));
    m.model = item.get("model").str();
    if (!model_files_.count(m.model))
      item.get("model").fail("unknown model '" + m.model + "'" + suggestion_suffix(m.model, model_order_));
    m.batch_per_gpu = static_cast<int>(item.get("batch_per_gpu").integer(1, 1 << 20));
    if (auto p = item.find("precision")) m.precision = p->choice(compute_.precision_order);
    if (auto q = item.find("seq_len")) m.seq_len = static_cast<int>(q->integer(1, 1 << 20));
    const auto images = item.find("images_per_sec"), samples = item.find("samples_per_sec");
    if (images && samples) samples->fail("give images_per_sec or samples_per_sec, not both");
    if (!images && !samples) item.fail("a measured rate needs samples_per_sec (or images_per_sec)");
    m.images_per_sec = (images ? images : samples)->positive_number();
    const SourceLocation at = item.location();
    m.source = fs::path(at.file).filename().string() + ":" + std::to_string(at.line);
    for (const auto& o : compute_.measured)
      if (o.gpu == m.gpu && o.model == m.model && o.batch_per_gpu == m.batch_per_gpu && o.precision == m.precision &&
          o.seq_len == m.seq_len)
        item.fail("duplicate measured rate for " + m.gpu + " / " + m.model + " / batch " +
                  std::to_string(m.batch_per_gpu) + " / " + m.precision);
    compute_.measured.push_back(m);
  }
}

}  // namespace ringsim
