#include "schedule/memory.h"

#include <algorithm>
#include <cmath>

#include "load/units.h"
#include "train/sharding.h"

namespace ringsim {

namespace {

// One transformer layer's saved tensors per token ([actmem]): the two norms' inputs; the QKV projection's
// input, Q, K and V (grouped-query: K and V at kv_width), the output projection's input; the feed-forward's
// input and its activation's tensors (GeLU: its input and output; SwiGLU: gate, silu(gate), up and their
// product); 1-byte dropout masks after attention and the feed-forward. Without flash attention (and without
// selective recomputation) the scores: softmax's output, dropout's output and mask per head and key.
double layer_bytes_per_token(const ModelSpec::Architecture& a, double w, double tokens, bool keeps_scores) {
  const double h = a.hidden, kv = a.kv_width, ff = a.ff;
  double bytes = w * (2 * h) + w * (3 * h + 2 * kv) + w * (h + (a.mlp == "swiglu" ? 4 : 2) * ff);
  if (a.dropout) bytes += 2 * h;
  if (keeps_scores) bytes += a.heads * tokens * (2 * w + (a.dropout ? 1 : 0));
  return bytes;
}

// A transformer's activations per sample: its layers, and the output layer's logits with the loss's FP32 copy.
// Full checkpointing keeps each layer's input and, while one layer is recomputed, that layer's tensors.
double transformer_activations(const ModelSpec& m, double w, double tokens, bool flash, double vocab,
                               const std::string& checkpointing) {
  const auto& a = m.architecture;
  const bool scores = !flash && checkpointing == "none";
  const double layer = layer_bytes_per_token(a, w, tokens, scores);
  const double layers = checkpointing == "full" ? a.layers * w * a.hidden + layer : a.layers * layer;
  return tokens * (layers + vocab * (w + 4));
}

// A CNN's activations per image: every convolution's output kept twice (for its normalisation's backward
// pass, and normalised and rectified as the next convolution's input), and the input image.
double cnn_activations(const ModelSpec& m, double w) {
  double elems = 0;
  for (const auto& t : m.tensors) {
    if (t.out_h <= 0) continue;
    const bool keras = t.name.size() >= 6 && t.name.compare(t.name.size() - 6, 6, "kernel") == 0;
    elems += static_cast<double>(keras ? t.shape[3] : t.shape[0]) * t.out_h * t.out_w;
  }
  double input = 1;
  for (int d : m.input_shape) input *= d;
  return w * (2 * elems + input);
}

// What would make a job that does not fit fit: a micro-batch that does, else sharding the model's states.
// `fixed`: the bytes that do not grow with the micro-batch; a sample adds its activations and the allocator's
// overhead on them.
std::string advice(const MemoryEstimate& m, const Scenario& s, double fixed, double overhead) {
  const double room = m.capacity_bytes - fixed;
  const int batch =
      room > 0 ? static_cast<int>(std::floor(room / (m.activation_bytes_per_sample * (1 + overhead)))) : 0;
  if (batch >= 1 && batch < s.model.batch_per_gpu)
    return "it fits with model.batch_per_gpu " + std::to_string(batch) +
           (sharded_framework(s) ? "" : " (training.gradient_accumulation keeps the batch)");
  const std::string room_for = "the parameters, gradients, optimizer state and buffers alone (" + format_bytes(fixed) +
                               " with the reserve) leave no room for " + (batch < 1 ? "one sample" : "the batch");
  const std::string checkpointing =
      s.model.activation_checkpointing == "full" ? "" : "model.activation_checkpointing: full, ";
  const bool deepspeed = s.communication.framework == Framework::Deepspeed;
  if (deepspeed && s.communication.zero_stage < 3 && state_shards(s) > 1)
    return room_for + ": a higher communication.zero_stage (3 shards the parameters too), " + checkpointing +
           "a GPU with more memory, or a smaller model";
  if (state_shards(s) > 1 || deepspeed)
    return room_for + ": more GPUs (each keeps 1/GPUs of the states), " + checkpointing +
           "a GPU with more memory, or a smaller model";
  const bool fsdp = s.communication.framework == Framework::Fsdp;
  return room_for + ": shard them over the GPUs (" +
         (fsdp ? "communication.sharding: full_shard" : "communication.framework: fsdp") +
         "), a GPU with more memory, or a smaller model";
}

// FSDP's gathered parameters and unsharded gradients: full_shard holds the root and at most two blocks
// gathered at once (limit_all_gathers), shard_grad_op every unit from the forward pass to the backward pass;
// a block's gradients unsharded, in the parameters' type and in the reduction's, until its reduce-scatter.
// The root's parameters and the largest block's.
std::pair<double, double> root_and_largest_block(const ModelSpec& model) {
  double root = 0, largest = 0;
  for (const auto& u : shard_units(model))
    (u.name.empty() ? root : largest) = std::max(u.name.empty() ? root : largest, static_cast<double>(u.params));
  return {root, largest};
}

MemoryItem sharded_buffers(const ModelSpec& model, const Scenario& s) {
  const double param = compute_element_bytes(s.model.precision);
  const auto [root, largest] = root_and_largest_block(model);
  const double grads = largest * (param + s.model.gradient_bytes);
  if (s.communication.sharding == Sharding::ShardGradOp)
    return {"buffers", static_cast<double>(model.total_params) * param + grads,
            "every unit gathered from forward to backward (" + format_number(param) +
                " B a parameter), and a block's gradients unsharded"};
  return {"buffers", (root + 2 * largest) * param + grads,
          "the root and two blocks gathered (" + format_number(param) +
              " B a parameter, limit_all_gathers), and a block's gradients unsharded"};
}

// DeepSpeed ZeRO's model states ([zero] sec. 5, with K = the master copy and the optimizer's state): the
// parameters in the compute type (sharded at stage 3) and, under mixed precision, their FP32 master copy
// (sharded from stage 1); the gradients in the compute type (sharded from stage 2); the optimizer's state
// (sharded from stage 1). Buffers: at stages 1 and 2 a reduce bucket (contiguous_gradients), two with
// overlap_comm (stage_1_and_2.py's double ipg_buffer), at stage 3 one and the root and two blocks gathered.
std::vector<MemoryItem> zero_states(const Catalog& catalog, const Scenario& s, const OptimizerSpec& opt) {
  const ModelSpec& model = catalog.model(s.model.name);
  const auto& mem = catalog.compute().memory;
  const double n = static_cast<double>(model.total_params), gpus = state_shards(s);
  const double w = compute_element_bytes(s.model.precision);
  const int stage = s.communication.zero_stage;
  const double param_shards = stage == 3 ? gpus : 1, grad_shards = stage >= 2 ? gpus : 1;
  const double master = w < mem.master_bytes_per_param ? mem.master_bytes_per_param : 0;
  const std::string over = " over " + format_number(gpus) + " GPUs";
  auto placed = [&](double shards) { return shards > 1 ? "sharded" + over : std::string("replicated"); };
  MemoryItem params{
      "parameters", n * w / param_shards + n * master / gpus,
      format_number(w) + " B x " + format_number(n) + " (" + placed(param_shards) + ")" +
          (master > 0 ? " + an FP32 master copy, " + format_number(master) + " B a parameter sharded" + over : "")};
  const double bucket = std::min(n, static_cast<double>(kZeroReduceBucketElements)) * w;
  const bool two = stage < 3 && s.communication.overlap_comm;
  MemoryItem buffers{"buffers", two ? 2 * bucket : bucket,
                     (two ? "two reduce buckets of " : "a reduce bucket of ") + format_bytes(bucket)};
  if (stage == 3) {  // prefetching a block ahead, as FSDP's limit_all_gathers
    const auto [root, largest] = root_and_largest_block(model);
    buffers.bytes += (root + 2 * largest) * w;
    buffers.detail += ", the root and two blocks gathered";
  }
  return {params,
          {"gradients", n * w / grad_shards, format_number(w) + " B a parameter, " + placed(grad_shards)},
          {"optimizer_state", n * opt.state_bytes_per_param / gpus,
           opt.name + ", " + format_number(opt.state_bytes_per_param) + " B a parameter, sharded" + over},
          buffers};
}

}  // namespace

MemoryEstimate estimate_memory(const Catalog& catalog, const Scenario& s) {
  const ModelSpec& model = catalog.model(s.model.name);
  const GpuSpec& gpu = catalog.gpu(catalog.sku(s.cluster.sku).gpu);
  const ComputeSpec& cs = catalog.compute();
  const auto& mem = cs.memory;
  const double n = static_cast<double>(model.total_params);
  const OptimizerSpec& opt = cs.operators.optimizers.at(model.transformer() ? "transformer" : "cnn");
  const double w = compute_element_bytes(s.model.precision);
  MemoryEstimate m;
  m.capacity_bytes = gpu.memory_bytes;
  const bool flash = cs.operators.stack_for(s.model.stack).flash_attention;
  if (model.architecture.layers > 0)
    m.activation_bytes_per_sample =
        transformer_activations(model, w, s.model.tokens, flash, model.vocabulary(), s.model.activation_checkpointing);
  else if (!model.transformer())
    m.activation_bytes_per_sample = cnn_activations(model, w);
  const double activations = m.activation_bytes_per_sample * s.model.batch_per_gpu;
  const double shards = state_shards(s);
  const std::string placed = shards > 1 ? "sharded over " + format_number(shards) + " GPUs" : "replicated";
  double buffers = 0;
  std::string buffer_detail = "none";
  if (shards > 1 && s.communication.framework == Framework::Fsdp) {
    const MemoryItem b = sharded_buffers(model, s);
    buffers = b.bytes;
    buffer_detail = b.detail;
  } else if (ddp_copies_buckets(s)) {
    buffers = n * mem.gradient_bytes_per_param;
    buffer_detail = "DDP's gradient buckets, a copy of every gradient";
  } else if (s.communication.framework == Framework::Horovod && s.cluster.total_gpus() > 1) {
    buffers = s.communication.fusion_threshold_bytes;
    buffer_detail = "Horovod's fusion buffer";
  }
  const std::string act_detail =
      format_bytes(m.activation_bytes_per_sample) + " a sample x " + std::to_string(s.model.batch_per_gpu) +
      (model.transformer() ? (flash                                        ? ", flash attention"
                              : s.model.activation_checkpointing == "none" ? ", attention scores kept"
                                                                           : ", attention scores recomputed")
                           : "") +
      (s.model.activation_checkpointing != "none" ? ", " + s.model.activation_checkpointing + " checkpointing" : "");
  m.breakdown = {
      {"parameters", n * mem.master_bytes_per_param / shards,
       format_number(mem.master_bytes_per_param) + " B x " + format_number(n) + " (FP32, " + placed + ")"},
      {"gradients", n * mem.gradient_bytes_per_param / shards,
       format_number(mem.gradient_bytes_per_param) + " B a parameter" + (shards > 1 ? ", " + placed : "")},
      {"optimizer_state", n * opt.state_bytes_per_param / shards,
       opt.name + ", " + format_number(opt.state_bytes_per_param) + " B a parameter" +
           (shards > 1 ? ", " + placed : "")},
      {"activations", activations, act_detail},
      {"buffers", buffers, buffer_detail},
  };
  if (s.communication.framework == Framework::Deepspeed) {
    auto z = zero_states(catalog, s, opt);
    m.breakdown = {z[0], z[1], z[2], {"activations", activations, act_detail}, z[3]};
  }
  double allocated = 0;
  for (const auto& i : m.breakdown) allocated += i.bytes;
  m.per_gpu_bytes_low = allocated * (1 + mem.allocator_overhead_range.first) + mem.reserve_range.first;
  m.per_gpu_bytes_high = allocated * (1 + mem.allocator_overhead_range.second) + mem.reserve_range.second;
  m.breakdown.push_back({"reserve", mem.reserve_bytes + allocated * mem.allocator_overhead,
                         format_bytes(mem.reserve_bytes) + " (context, workspaces) + " +
                             format_number(mem.allocator_overhead * 100) + " % allocator overhead (" + mem.source +
                             ")"});
  for (const auto& i : m.breakdown) m.per_gpu_bytes += i.bytes;
  if (!m.fits())
    m.advice = advice(m, s, m.per_gpu_bytes - activations * (1 + mem.allocator_overhead), mem.allocator_overhead);
  return m;
}

std::string memory_summary(const MemoryEstimate& m) {
  std::string text = format_bytes(m.per_gpu_bytes) + " (band " + format_bytes(m.per_gpu_bytes_low) + " to " +
                     format_bytes(m.per_gpu_bytes_high) + ") of " + format_bytes(m.capacity_bytes) + " (" +
                     format_number(std::round(100 * m.per_gpu_bytes / m.capacity_bytes)) + " %)";
  if (m.fits() && m.per_gpu_bytes_high > m.capacity_bytes)
    return text + "; fits, but not at the band's high end: leave room (a smaller micro-batch)";
  if (m.fits()) return text;
  text = "does not fit: needs " + text;
  if (!m.advice.empty()) text += "; " + m.advice;
  return text;
}

}  // namespace ringsim
