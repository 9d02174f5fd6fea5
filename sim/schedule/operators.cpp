#include "schedule/operators.h"

#include <algorithm>
#include <bit>
#include <cmath>

#include "load/scenario.h"

namespace ringsim {

namespace {

std::string layer_name(const std::string& tensor) {
  const auto cut = tensor.find_last_of("./");
  return cut == std::string::npos ? tensor : tensor.substr(0, cut);
}
std::string leaf_name(const std::string& tensor) {
  const auto cut = tensor.find_last_of("./");
  return cut == std::string::npos ? tensor : tensor.substr(cut + 1);
}

Kernel matmul(double m, double n, double k, double bytes, double batch = 1) {
  return {true, m, n, k, batch, 2 * m * n * k * batch, bytes, 1};
}
Kernel memory(double bytes, double repeat = 1) { return {false, 0, 0, 0, 1, 0, bytes, repeat}; }

// What the builder carries from one tensor to the next.
struct Builder {
  const ModelSpec& model;
  double batch, tokens, width;  // width: activation bytes per element
  const StackSpec& stack;
  std::pair<double, double> norm_passes;
  double spatial = 1;  // the last convolution's output positions per image
  bool first = true;   // the first weight needs no gradient with respect to its input
  StepKernels step;

  LayerKernels& layer(const std::string& tensor) {
    const std::string name = layer_name(tensor);
    if (step.layers.empty() || step.layers.back().layer != name) step.layers.push_back({name, {}, {}});
    return step.layers.back();
  }

  // A product of rows x k by k x n (the weight's numel n x k): forward, and backward's two products, the
  // gradient with respect to the input (not for the first weight) and to the weight (FP32).
  void gemm(LayerKernels& l, double rows, double n, double k, double in_elems) {
    const double w = n * k;
    l.forward.push_back(matmul(rows, n, k, width * (in_elems + rows * n + w)));
    if (!first) l.backward.push_back(matmul(rows, k, n, width * (rows * n + in_elems + w)));
    l.backward.push_back(matmul(n, k, rows, width * (rows * n + in_elems) + 4 * w));
    first = false;
  }

  // A block's linear layer in FP8 (Transformer Engine, torchao float8): its three products read 1-byte
  // operands at the FP8 rate, and cast kernels quantise each operand from 16 bits, writing it row- and
  // column-wise for the transposed products (compute.yaml [fp8]): the input and the weight forward, the
  // output's gradient backward.
  void fp8_gemm(LayerKernels& l, double rows, double n, double k) {
    const double w = n * k, cast = ops.fp8_cast_bytes_per_element;
    const std::size_t f = l.forward.size(), b = l.backward.size();
    l.forward.push_back(matmul(rows, n, k, rows * k + w + width * rows * n));
    if (!first) l.backward.push_back(matmul(rows, k, n, rows * n + w + width * rows * k));
    l.backward.push_back(matmul(n, k, rows, rows * n + rows * k + 4 * w));
    first = false;
    for (auto i = f; i < l.forward.size(); ++i) l.forward[i].linear = true;
    for (auto i = b; i < l.backward.size(); ++i) l.backward[i].linear = true;
    l.forward.push_back(memory(cast * (rows * k + w), 2));
    l.backward.push_back(memory(cast * rows * n));
  }

  void conv(const TensorSpec& t) {
    // PyTorch [out, in, kh, kw]; Keras kernels [kh, kw, in, out]
    const bool keras = leaf_name(t.name) == "kernel";
    const double out = static_cast<double>(keras ? t.shape[3] : t.shape[0]);
    const double window = static_cast<double>(keras ? t.shape[0] * t.shape[1] : t.shape[2] * t.shape[3]);
    const double k = static_cast<double>(t.numel) / out;
    const bool same_size = static_cast<double>(t.out_h) * t.out_w == spatial;
    spatial = static_cast<double>(t.out_h) * t.out_w;
    const double rows = batch * spatial;
    LayerKernels& l = layer(t.name);
    const std::size_t f = l.forward.size(), b = l.backward.size();
    gemm(l, rows, out, k, rows * k / window);
    // A 3 x 3 convolution that keeps its input's size (stride 1), in FP32: cuDNN's Winograd algorithm.
    if (window == 9 && same_size && winograd > 1) {
      for (auto i = f; i < l.forward.size(); ++i) l.forward[i].flops /= winograd;
      for (auto i = b; i < l.backward.size(); ++i) l.backward[i].flops /= winograd;
    }
  }

  // Attention's two products per head, QK^T and the scores times V: fused in one kernel (flash: the
  // backward pass recomputes the scores, 2.5x the forward's arithmetic), or through the scores in memory
  // with a softmax and a dropout kernel each way.
  void attention(LayerKernels& l) {
    const double head = model.head_dim, heads = width_of_attention / head, n = batch * heads, t = tokens;
    const double qkvo = 4 * batch * t * width_of_attention * width;
    if (stack.flash_attention) {
      Kernel f = matmul(t, t, head, qkvo, n);
      f.flops *= 2;  // QK^T and PV
      f.attention = true;
      l.forward.push_back(f);
      Kernel b = f;
      b.flops *= 2.5;
      b.bytes *= 2;
      l.backward.push_back(b);
      return;
    }
    const double scores = n * t * t * width;
    l.forward.push_back(matmul(t, t, head, qkvo / 2 + scores, n));
    l.forward.push_back(memory(4 * scores, 2));  // softmax, dropout: each reads and writes the scores
    l.forward.push_back(matmul(t, head, t, qkvo / 2 + scores, n));
    l.backward.push_back(memory(6 * scores, 2));  // each reads two, writes one
    for (int i = 0; i < 2; ++i) l.backward.push_back(matmul(t, t, head, qkvo / 2 + scores, n));
    for (int i = 0; i < 2; ++i) l.backward.push_back(matmul(t, head, t, qkvo / 2 + scores, n));
  }
  double width_of_attention = 0;

  // The feed-forward's activation over its hidden width, after the block's first hidden x ff weight: the
  // stack's kernels for the architecture's kind, each reading and writing it (backward: reading two).
  void activation(LayerKernels& l, double elems) {
    const auto it = stack.activation_kernels.find(model.architecture.mlp);
    const double k = it == stack.activation_kernels.end() ? 0 : it->second;
    if (k <= 0) return;
    l.forward.push_back(memory(width * elems * 2 * k, k));
    l.backward.push_back(memory(width * elems * 3 * k, k));
  }
  double winograd = 1;  // the arithmetic a 3 x 3 stride-1 convolution saves (1: none)
  double vocabulary = model.vocabulary();
  bool fp8 = false;  // the blocks' linear layers in FP8
  const OperatorSpec& ops;
  bool activation_due = false;  // a block's attention seen, its feed-forward's activation not yet

  void dense(const TensorSpec& t) {
    LayerKernels& l = layer(t.name);
    const double n = static_cast<double>(t.shape[0]), k = static_cast<double>(t.shape[1]);
    if (t.use == TensorUse::Lookup) {  // a gather forward; backward, a scatter into the whole table
      l.forward.push_back(memory(width * 2 * batch * tokens * k));
      l.backward.push_back(memory(width * batch * tokens * k + 4 * 2 * n * k, 2));
      return;
    }
    const double rows = t.use == TensorUse::PerSample ? batch : batch * tokens;
    // the recipes keep the output layer (the vocabulary's logits) and per-sample heads in 16 bits
    if (fp8 && t.use != TensorUse::PerSample && n != vocabulary)
      fp8_gemm(l, rows, n, k);
    else
      gemm(l, rows, n, k, rows * k);
    if (t.use == TensorUse::Attention) {
      width_of_attention = n;
      attention(l);
      activation_due = true;
    }
    if (activation_due && model.architecture.ff > 0 &&
        t.numel == std::int64_t(model.architecture.hidden) * model.architecture.ff) {
      activation(l, rows * model.architecture.ff);
      activation_due = false;
    }
    // A vocabulary's logits (not a feed-forward as wide): the loss's log-softmax over them in FP32, and its
    // gradient.
    if (t.use == TensorUse::PerToken && n == vocabulary) {
      l.forward.push_back(memory(4 * 2 * rows * n, 2));
      l.backward.push_back(memory(4 * 2 * rows * n));
    }
  }

  // A normalisation's scale (its bias follows it and adds nothing), with the stack's element-wise kernels
  // beside it: the activation, the residual add, dropout.
  void norm(const TensorSpec& t) {
    LayerKernels& l = layer(t.name);
    const double elems = batch * static_cast<double>(t.numel) * (model.transformer() ? tokens : spatial);
    l.forward.push_back(memory(width * elems * norm_passes.first));
    l.backward.push_back(memory(width * elems * norm_passes.second));
    if (const double k = stack.elementwise_kernels.of(model.transformer()); k > 0) {
      l.forward.push_back(memory(width * elems * 2 * k, k));
      l.backward.push_back(memory(width * elems * 3 * k, k));
    }
  }

  void add(const TensorSpec& t) {
    if (t.out_h > 0)
      conv(t);
    else if (t.shape.size() == 2)
      dense(t);
    else if (t.shape.size() == 1 && (leaf_name(t.name) == "weight" || leaf_name(t.name) == "gamma"))
      norm(t);
  }
};

// The update of every parameter: fused into the optimizer's few multi-tensor kernels over all of them; as
// PyTorch's foreach implementation, each operation a pass over all tensors in multi-tensor launches (as
// many as the blocks of 64 Ki elements, or the tensors, need); or each operation on each tensor.
std::vector<Kernel> optimizer_kernels(const ModelSpec& model, const OptimizerSpec& opt, const StackSpec& stack,
                                      const OperatorSpec& ops) {
  std::vector<Kernel> out;
  const double per = std::max(1.0, opt.kernels_per_tensor), params = static_cast<double>(model.total_params);
  switch (stack.optimizer) {
    case OptimizerImpl::Fused:
      out.push_back(memory(params * opt.bytes_per_param, per));
      break;
    case OptimizerImpl::Foreach: {
      double chunks = 0;
      for (const auto& t : model.tensors) chunks += std::ceil(static_cast<double>(t.numel) / ops.multi_tensor_chunk);
      const double launches = std::ceil(
          std::max(chunks / ops.multi_tensor_blocks, static_cast<double>(model.tensors.size()) / opt.foreach_tensors));
      for (int i = 0; i < static_cast<int>(per); ++i)
        out.push_back(memory(params * opt.foreach_bytes_per_param / per, std::max(1.0, launches)));
      break;
    }
    case OptimizerImpl::ForLoop:
      for (const auto& t : model.tensors)
        out.push_back(memory(static_cast<double>(t.numel) * opt.foreach_bytes_per_param, per));
      break;
  }
  return out;
}

// The share of a dimension's tiles that holds work: tiles no larger than the next power of two above it.
double tile_use(double d, double tile) {
  const double t = std::min(tile, static_cast<double>(std::bit_ceil(static_cast<unsigned long long>(std::ceil(d)))));
  return d / (std::ceil(d / t) * t);
}

}  // namespace

StepKernels step_kernels(const ModelSpec& model, int batch, int tokens, const std::string& precision,
                         const StackSpec& stack, const OperatorSpec& ops) {
  const std::string family = model.transformer() ? "transformer" : "cnn";
  const double width = compute_element_bytes(precision);
  Builder b{model,
            static_cast<double>(batch),
            static_cast<double>(tokens),
            width,
            stack,
            ops.norm_passes.at(family),
            1,
            true,
            {},
            0,
            precision == "fp32" ? ops.winograd_reduction : 1,
            model.vocabulary(),
            precision == "fp8",
            ops};
  for (const auto& t : model.tensors) b.add(t);
  b.step.optimizer = optimizer_kernels(model, ops.optimizers.at(family), stack, ops);
  return b.step;
}

GpuRates gpu_rates(const ComputeSpec& compute, const GpuSpec& gpu, const std::string& precision,
                   const StackSpec& stack) {
  const OperatorSpec& o = compute.operators;
  double mm = o.matmul_efficiency, mem = o.memory_efficiency, att = o.attention_efficiency;
  if (const auto it = o.gpus.find(gpu.name); it != o.gpus.end()) {
    if (it->second.matmul > 0) mm = it->second.matmul;
    if (it->second.attention > 0) att = it->second.attention;
    if (it->second.memory > 0) mem = it->second.memory;
  }
  GpuRates r;
  const PrecisionSpec& p = compute.precisions.at(precision);
  r.matmul_flops = gpu.peak_flops(p.peak) * mm;
  // [fp8]: FP8 matmuls reach the fraction of their peak BF16 matmuls reach of theirs, times the figure
  r.linear_flops = gpu.peak_flops(p.linear_peak()) * mm * (p.linear.empty() ? 1 : compute.fp8_matmul_scale);
  r.attention_flops = gpu.peak_flops(p.peak) * att * compute.attention_scale;  // [fa2], [fa3]: in 16 bits
  r.memory_bytes = gpu.memory_bandwidth * mem;
  r.tile = o.tile;
  r.kernel_s = stack.kernel_s;
  return r;
}

double kernel_time(const Kernel& k, const GpuRates& r) {
  double s = k.bytes / r.memory_bytes;
  const double rate = k.linear ? r.linear_flops : k.attention ? r.attention_flops : r.matmul_flops;
  if (k.matmul) s = std::max(s, k.flops / (rate * tile_use(k.m, r.tile) * tile_use(k.n, r.tile)));
  return k.repeat * std::max(r.kernel_s, s / k.repeat);
}

double kernels_time(const std::vector<Kernel>& ks, const GpuRates& r) {
  double s = 0;
  for (const auto& k : ks) s += kernel_time(k, r);
  return s;
}

StepTime step_time(const StepKernels& step, const GpuRates& rates) {
  StepTime t;
  for (const auto& l : step.layers) {
    t.layer_forward_s.push_back(kernels_time(l.forward, rates));
    t.layer_backward_s.push_back(kernels_time(l.backward, rates));
    t.forward_s += t.layer_forward_s.back();
    t.backward_s += t.layer_backward_s.back();
    for (const auto* ks : {&l.forward, &l.backward})
      for (const auto& k : *ks) t.kernels += static_cast<int>(std::ceil(k.repeat));
  }
  t.update_s = kernels_time(step.optimizer, rates);
  for (const auto& k : step.optimizer) t.kernels += static_cast<int>(std::ceil(k.repeat));
  return t;
}

double operator_samples_per_sec(const Catalog& catalog, const std::string& gpu, const std::string& model, int batch,
                                int tokens, const std::string& precision, const std::string& stack) {
  const ComputeSpec& cs = catalog.compute();
  const StackSpec& st = cs.operators.stacks.at(stack);
  const StepTime t = step_time(step_kernels(catalog.model(model), batch, tokens, precision, st, cs.operators),
                               gpu_rates(cs, catalog.gpu(gpu), precision, st));
  return batch / (t.forward_s + t.backward_s + t.update_s);
}

}  // namespace ringsim
