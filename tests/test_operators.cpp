// The operator model (schedule/operators.h) and its check against single-GPU rates (validate/single_gpu.h).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <numeric>

#include "load/uncertain.h"
#include "schedule/compute_model.h"
#include "schedule/operators.h"
#include "test_support.h"
#include "validate/single_gpu.h"

using namespace ringsim;

namespace {

const OperatorSpec& ops() { return test::catalog().compute().operators; }
const StackSpec& stack(const std::string& name) { return ops().stacks.at(name); }

double matmul_flops(const std::vector<Kernel>& ks) {
  double f = 0;
  for (const auto& k : ks)
    if (k.matmul) f += k.flops;
  return f;
}
double forward_flops(const StepKernels& s) {
  double f = 0;
  for (const auto& l : s.layers) f += matmul_flops(l.forward);
  return f;
}
double backward_flops(const StepKernels& s) {
  double f = 0;
  for (const auto& l : s.layers) f += matmul_flops(l.backward);
  return f;
}

}  // namespace

TEST_CASE("the operator model's forward matmuls carry the model's forward FLOPs", "[operators]") {
  const Catalog& c = test::catalog();
  for (const char* name : {"bert_large", "gpt2", "resnet50", "vit_b16"}) {
    const ModelSpec& m = c.model(name);
    const StepKernels s = step_kernels(m, 8, m.default_tokens, "bf16", stack("eager"), ops());
    CHECK(forward_flops(s) == Approx(8 * m.forward_flops(m.default_tokens)).epsilon(1e-9));
  }
}

TEST_CASE("backward runs two products per weight, none for the first weight's input", "[operators]") {
  const ModelSpec& m = test::catalog().model("resnet50");
  const StepKernels s = step_kernels(m, 4, 1, "tf32", stack("tuned"), ops());
  const Kernel& conv1 = s.layers.front().forward.front();
  CHECK(backward_flops(s) == Approx(2 * forward_flops(s) - conv1.flops).epsilon(1e-9));
  // FP32 runs 3 x 3 stride-1 convolutions by Winograd: less arithmetic than the same step in TF32
  const StepKernels fp32 = step_kernels(m, 4, 1, "fp32", stack("tuned"), ops());
  CHECK(forward_flops(fp32) < 0.8 * forward_flops(s));
}

TEST_CASE("flash attention recomputes the scores backward, and without it the scores go through memory",
          "[operators]") {
  const ModelSpec& m = test::catalog().model("bert_large");
  StackSpec flash = stack("eager"), plain = flash;
  flash.flash_attention = true;
  plain.flash_attention = false;
  const StepKernels f = step_kernels(m, 8, 512, "bf16", flash, ops());
  const StepKernels p = step_kernels(m, 8, 512, "bf16", plain, ops());
  CHECK(forward_flops(f) == Approx(forward_flops(p)).epsilon(1e-9));
  CHECK(backward_flops(f) > backward_flops(p));
  auto bytes = [](const StepKernels& s) {
    double b = 0;
    for (const auto& l : s.layers)
      for (const auto* ks : {&l.forward, &l.backward})
        for (const auto& k : *ks) b += k.bytes;
    return b;
  };
  // each of 24 layers: 8 x 16 heads x 512^2 BF16 scores, through memory some 16 times forward and backward
  const double scores = 8 * 16 * 512.0 * 512 * 2;
  CHECK(bytes(p) - bytes(f) > 24 * 12 * scores);
}

TEST_CASE("a kernel costs its arithmetic, its bytes or the stack's issue cost, whichever is largest", "[operators]") {
  GpuRates r;
  r.matmul_flops = 100e12;
  r.memory_bytes = 1e12;
  r.tile = 128;
  r.kernel_s = 5e-6;
  Kernel big{true, 4096, 4096, 4096, 1, 2.0 * 4096 * 4096 * 4096, 3 * 4096.0 * 4096 * 2, 1};
  CHECK(kernel_time(big, r) == Approx(big.flops / 100e12));
  Kernel stream{false, 0, 0, 0, 1, 0, 1e9, 1};
  CHECK(kernel_time(stream, r) == Approx(1e-3));
  Kernel tiny{false, 0, 0, 0, 1, 0, 1e3, 3};
  CHECK(kernel_time(tiny, r) == Approx(15e-6));
  // one row past a tile wastes most of the next tile: 4097 rows take 33 tiles of 128, not 32
  Kernel ragged = big;
  ragged.m = 4097;
  ragged.flops = 2.0 * 4097 * 4096 * 4096;
  CHECK(kernel_time(ragged, r) == Approx(kernel_time(big, r) * 33 / 32).epsilon(1e-6));
}

TEST_CASE("the stack's figures move a step the way they should", "[operators]") {
  const Catalog& c = test::catalog();
  SingleGpuRate r{"H100-SXM5-80GB", "bert_base", "bf16", "eager", "test", 64, 128, 1, 1000, 0};
  StackSpec st = stack("eager");
  const double base = operator_prediction(c, r, st);
  st.kernel_s *= 4;
  CHECK(operator_prediction(c, r, st) < base);
  st = stack("eager");
  st.elementwise_kernels.transformer += 2;
  CHECK(operator_prediction(c, r, st) < base);
  st = stack("eager");
  st.elementwise_kernels.cnn += 2;  // a transformer has no CNN's element-wise kernels
  CHECK(operator_prediction(c, r, st) == base);
  st = stack("eager");
  st.optimizer = OptimizerImpl::Fused;
  CHECK(operator_prediction(c, r, st) > base);
  st.optimizer = OptimizerImpl::ForLoop;  // the foreach operations a tensor at a time: a kernel floor each
  CHECK(operator_prediction(c, r, st) < base);
}

TEST_CASE("a block's feed-forward activation: GPT-2's tanh GELU is 8 kernels in eager PyTorch, 1 fused",
          "[operators]") {
  // compute.yaml [act]: once per block, over the MLP's hidden width (batch x tokens x ff elements).
  const Catalog& c = test::catalog();
  const ModelSpec& m = c.model("gpt2");
  REQUIRE(m.architecture.mlp == "gelu_tanh");
  auto kernels = [&](const char* name, double k) {
    StackSpec st = stack(name);
    const int with =
        step_time(step_kernels(m, 2, 1024, "bf16", st, c.compute().operators), GpuRates{1, 1, 128, 0}).kernels;
    st.activation_kernels["gelu_tanh"] = k;
    return with -
           step_time(step_kernels(m, 2, 1024, "bf16", st, c.compute().operators), GpuRates{1, 1, 128, 0}).kernels;
  };
  CHECK(kernels("eager", 0) == 2 * 8 * m.architecture.layers);  // forward and backward, each block
  CHECK(kernels("tuned", 0) == 2 * 1 * m.architecture.layers);
  CHECK(c.model("llama3_8b").architecture.mlp == "swiglu");
  CHECK(c.model("bert_large").architecture.mlp == "gelu");
}

TEST_CASE("the foreach optimizer: its passes over all parameters in multi-tensor launches", "[operators]") {
  // AdamW's 8 operations, 80 bytes a parameter in all, each launched once per 320 blocks of 64 Ki elements
  // or per 48 tensors, whichever needs more launches (compute.yaml [optim], [mta]).
  const Catalog& c = test::catalog();
  const ModelSpec& m = c.model("bert_large");
  StackSpec st = stack("eager");
  const auto step = step_kernels(m, 8, 128, "bf16", st, c.compute().operators);
  REQUIRE(step.optimizer.size() == 8);
  double chunks = 0, bytes = 0;
  for (const auto& t : m.tensors) chunks += std::ceil(static_cast<double>(t.numel) / 65536);
  const double launches = std::ceil(std::max(chunks / 320, m.tensors.size() / 48.0));
  for (const auto& k : step.optimizer) {
    CHECK(k.repeat == launches);
    bytes += k.bytes;
  }
  CHECK(bytes == Approx(80.0 * static_cast<double>(m.total_params)));
  st.optimizer = OptimizerImpl::Fused;
  const auto fused = step_kernels(m, 8, 128, "bf16", st, c.compute().operators);
  REQUIRE(fused.optimizer.size() == 1);
  CHECK(fused.optimizer[0].bytes == Approx(28.0 * static_cast<double>(m.total_params)));
}

TEST_CASE("fit_stack recovers the figures that produced the rates", "[operators]") {
  const Catalog& c = test::catalog();
  StackSpec truth = stack("eager");
  truth.kernel_s = 12e-6;
  truth.elementwise_kernels = {2.5, 9};
  std::vector<SingleGpuRate> rates;
  for (const char* gpu : {"A100-SXM4-80GB", "H100-SXM5-80GB"})
    for (const char* model : {"resnet50", "bert_base", "gpt2"})
      for (const int scale : {1, 8}) {  // small and large batches tell the kernels' cost from their bytes
        const ModelSpec& m = c.model(model);
        SingleGpuRate r{gpu, model, "bf16", "eager", "synthetic", (m.transformer() ? 2 : 16) * scale, m.default_tokens,
                        1,   0};
        r.samples_per_sec = operator_prediction(c, r, truth);
        rates.push_back(r);
      }
  std::vector<const SingleGpuRate*> ptrs;
  for (const auto& r : rates) ptrs.push_back(&r);
  const StackSpec fit = fit_stack(c, stack("eager"), ptrs);
  CHECK(fit.kernel_s == Approx(12e-6).epsilon(0.05));
  CHECK(fit.elementwise_kernels.cnn == Approx(2.5).epsilon(0.05));
  CHECK(fit.elementwise_kernels.transformer == Approx(9).epsilon(0.05));
}

TEST_CASE("validate --single-gpu reads its file, refusing unknown names where they are", "[operators]") {
  const std::string path = "/tmp/ringsim-test-single-gpu.yaml";
  {
    std::ofstream f(path);
    f << "rates:\n"
         "  - {gpu: H100-SXM5-80GB, model: resnet50, batch_per_gpu: 256, precision: bf16, stack: eager, "
         "samples_per_sec: 3959, source: a}\n"
         "  - {gpu: H100-SXM5-80GB, model: bert_large, batch_per_gpu: 64, precision: bf16, seq_len: 128, "
         "stack: eager, samples_per_sec: 730, source: a}\n"
         "  - {gpu: H200-SXM-141GB, model: gpt2, batch_per_gpu: 8, precision: bf16, seq_len: 1024, stack: eager, "
         "samples_per_sec: 130, source: a}\n";
  }
  const ValidationReport rep = validate_single_gpu(test::catalog(), path);
  REQUIRE(rep.cases.size() == 3);
  for (const auto& vc : rep.cases) {
    CHECK(vc.predicted > 0);
    CHECK(vc.has_band());
    CHECK(vc.low <= vc.predicted);
    CHECK(vc.high >= vc.predicted);
    CHECK(vc.high > vc.low);
  }
  {
    std::ofstream f(path);
    f << "rates:\n  - {gpu: H100-SXM5-80G, model: resnet50, batch_per_gpu: 256, precision: bf16, stack: eager, "
         "samples_per_sec: 3959, source: a}\n";
  }
  const std::string err = test::input_error_of([&] { test::catalog().read_single_gpu_rates(path); });
  CHECK(err.find(path + ":2:") != std::string::npos);
  CHECK(err.find("H100-SXM5-80GB") != std::string::npos);
  std::remove(path.c_str());
}

namespace {

// Of a step's matmuls, the FLOPs of those run in the linear arithmetic, and of the others.
std::pair<double, double> linear_flops(const StepKernels& s) {
  double linear = 0, other = 0;
  for (const auto& l : s.layers)
    for (const auto* ks : {&l.forward, &l.backward})
      for (const auto& k : *ks)
        if (k.matmul) (k.linear ? linear : other) += k.flops;
  return {linear, other};
}

Scenario llm(const std::string& model, int seq, const std::string& precision, const std::string& sku) {
  return load_scenario_text("cluster: {sku: " + sku + ", nodes: 1}\nmodel: {name: " + model +
                                ", batch_per_gpu: 2, seq_len: " + std::to_string(seq) + ", precision: " + precision +
                                "}\ntraining: {epochs: 1}\n",
                            "test.yaml", test::catalog());
}

}  // namespace

TEST_CASE("the loss's log-softmax follows the vocabulary's logits only, not a feed-forward as wide", "[operators]") {
  const ModelSpec& m = test::catalog().model("llama3_8b");
  const double rows = 2 * 1024.0;
  const StepKernels s = step_kernels(m, 2, 1024, "bf16", stack("tuned"), ops());
  int softmaxes = 0;
  for (const auto& l : s.layers)
    for (const auto& k : l.forward)
      if (!k.matmul && k.repeat == 2 && k.bytes >= 4 * 2 * rows * 14336) {
        ++softmaxes;
        CHECK(l.layer == "lm_head");
        CHECK(k.bytes == Approx(4 * 2 * rows * 128256));
      }
  CHECK(softmaxes == 1);  // Llama 3 8B's gate and up projections are 14,336 wide: none after them
}

TEST_CASE("fp8: the blocks' linear layers in FP8, attention and the output layer in BF16", "[operators]") {
  const Catalog& c = test::catalog();
  const ModelSpec& m = c.model("mpt_1b");
  const StepKernels b16 = step_kernels(m, 4, 2048, "bf16", stack("tuned"), ops());
  const StepKernels f8 = step_kernels(m, 4, 2048, "fp8", stack("tuned"), ops());
  const auto [none, all] = linear_flops(b16);
  const auto [linear, other] = linear_flops(f8);
  CHECK(none == 0);
  CHECK(linear + other == Approx(all).epsilon(1e-12));  // the same arithmetic, some of it in FP8
  // the blocks' weights (12 d^2 a layer) are FP8's, three products each; the tied output layer (the first
  // weight: no gradient to its input) stays BF16
  const double d = 2048, rows = 4 * 2048.0;
  CHECK(linear == Approx(24 * 12 * d * d * 2 * rows * 3));
  SECTION("on an H100 the FP8 step is faster, but not twice: attention, norms and casts stay") {
    const GpuSpec& h100 = c.gpu("H100-SXM5-80GB");
    const StackSpec& st = stack("tuned");
    auto seconds = [&](const std::string& precision, int seq) {
      const StepTime t =
          step_time(step_kernels(m, 4, seq, precision, st, ops()), gpu_rates(c.compute(), h100, precision, st));
      return t.forward_s + t.backward_s;
    };
    const double short_gain = seconds("bf16", 512) / seconds("fp8", 512);
    const double long_gain = seconds("bf16", 32768) / seconds("fp8", 32768);
    CHECK(short_gain > 1.2);
    CHECK(short_gain < 1.9);
    // LLM Foundry's MPT-1B on H100 (validate/README.md): 1.35x at 512 tokens, 1.05x at 32,768
    CHECK(long_gain < short_gain - 0.15);
    CHECK(long_gain > 1);
  }
  SECTION("the FP8 matmuls run at the GPU's matmul fraction of the FP8 peak, times fp8_matmul_scale") {
    const GpuRates r = gpu_rates(c.compute(), c.gpu("H100-SXM5-80GB"), "fp8", stack("tuned"));
    CHECK(r.linear_flops == Approx(1979.0 / 989 * r.matmul_flops));  // FP8's against BF16's dense peak
    Catalog slower = c;
    CatalogOverlay o;
    o.compute.fp8_matmul_scale = 0.75;
    slower.apply(o);
    const GpuRates q = gpu_rates(slower.compute(), slower.gpu("H100-SXM5-80GB"), "fp8", stack("tuned"));
    CHECK(q.linear_flops == Approx(0.75 * r.linear_flops));
    CHECK(q.matmul_flops == Approx(r.matmul_flops));
  }
}

TEST_CASE("fp8 in a scenario: the operator model prices it, MFU of the FP8 peak, its band figure, bad input",
          "[operators]") {
  const Catalog& c = test::catalog();
  const Scenario s = llm("mpt_1b", 2048, "fp8", "ND96isr_H100_v5");
  CHECK(s.model.stack == c.compute().operators.default_stack);  // the roofline has no FP8 efficiency
  CHECK(s.model.gradient_bytes == 4);                           // FP32 gradients, as bf16's
  const ComputeModel cm = build_compute_model(c, s, false);
  CHECK(cm.source == "operators");
  CHECK(cm.peak_flops == Approx(1979e12));
  const ComputeModel bf = build_compute_model(c, llm("mpt_1b", 2048, "bf16", "ND96isr_H100_v5"), false);
  CHECK(bf.source == "roofline");
  CHECK(bf.peak_flops == Approx(989e12));
  const auto& u = c.uncertain();
  const auto fp8 = std::find_if(u.begin(), u.end(), [](const UncertainParameter& p) { return p.name == "fp8_matmul"; });
  REQUIRE(fp8 != u.end());
  CHECK(applies_to(*fp8, s, c));
  Scenario tuned_bf16 = llm("mpt_1b", 2048, "bf16", "ND96isr_H100_v5");
  tuned_bf16.model.stack = "tuned";
  CHECK_FALSE(applies_to(*fp8, tuned_bf16, c));
  const std::string e = test::input_error_of([] { llm("mpt_1b", 2048, "fp8", "ND96amsr_A100_v4"); });
  CHECK(e.find("A100-SXM4-80GB has no fp8 peak") != std::string::npos);
  CHECK(e.find("it runs fp32, tf32, amp or bf16") != std::string::npos);
  CHECK(test::input_error_of([] { llm("mpt_1b", 2048, "fp4", "ND96isr_H100_v5"); }).find("fp8") != std::string::npos);
}

TEST_CASE("fused attention runs at the GPU's rate for it, FlashAttention-2's on Hopper", "[operators]") {
  const Catalog& c = test::catalog();
  const StackSpec& st = stack("tuned");
  const GpuRates h100 = gpu_rates(c.compute(), c.gpu("H100-SXM5-80GB"), "bf16", st);
  const GpuRates a100 = gpu_rates(c.compute(), c.gpu("A100-SXM4-80GB"), "bf16", st);
  CHECK(h100.attention_flops == Approx(0.34 * 989e12));  // compute.yaml [fa2]
  CHECK(a100.attention_flops == Approx(0.6 * 312e12));
  CHECK(h100.attention_flops < h100.matmul_flops);
  // only the flash kernels: a step's attention time grows with the sequence, its linear layers' do not
  const ModelSpec& m = c.model("mpt_3b");
  for (int seq : {2048, 32768}) {
    const StepKernels k = step_kernels(m, 1, seq, "bf16", st, ops());
    double attention = 0;
    for (const auto& l : k.layers)
      for (const auto* ks : {&l.forward, &l.backward})
        for (const auto& kernel : *ks)
          if (kernel.attention) attention += kernel.flops;
    // 4 T^2 d a layer forward, 2.5 times that backward (flash recomputes the scores)
    CHECK(attention == Approx(32 * 4.0 * seq * seq * 2560 * 3.5));
  }
  Catalog faster = c;
  CatalogOverlay o;
  o.compute.attention_scale = 1.5;
  faster.apply(o);
  const GpuRates q = gpu_rates(faster.compute(), faster.gpu("H100-SXM5-80GB"), "bf16", st);
  CHECK(q.attention_flops == Approx(1.5 * h100.attention_flops));
  CHECK(q.matmul_flops == Approx(h100.matmul_flops));
  const auto& u = c.uncertain();
  const auto att = std::find_if(u.begin(), u.end(), [](const UncertainParameter& p) { return p.name == "attention"; });
  REQUIRE(att != u.end());
  Scenario s = llm("mpt_1b", 2048, "bf16", "ND96isr_H100_v5");
  CHECK_FALSE(applies_to(*att, s, c));  // the roofline's
  s.model.stack = "tuned";
  CHECK(applies_to(*att, s, c));
}
