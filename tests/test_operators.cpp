// The operator model (schedule/operators.h) and its check against single-GPU rates (validate/single_gpu.h).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <numeric>

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
