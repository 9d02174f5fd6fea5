// The per-GPU memory estimate (schedule/memory.h): its parts from closed forms, and what `check`, `predict`
// and `plan` do with a job that does not fit.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "schedule/compute_model.h"
#include "schedule/memory.h"
#include "test_support.h"

using namespace ringsim;

namespace {

Scenario job(const std::string& model, int batch, const std::string& extra = "") {
  return load_scenario_text("cluster: {sku: ND96isr_H100_v5, nodes: 2}\nmodel: {name: " + model +
                                ", batch_per_gpu: " + std::to_string(batch) + extra +
                                "}\ntraining: {epochs: 1}\ncommunication: {framework: pytorch_ddp}\n",
                            "test.yaml", test::catalog());
}

test::CommandResult run_ringsim(const std::string& args) {
  return test::run_command(std::string(RINGSIM_TEST_BINARY) + " --catalog " + RINGSIM_TEST_CATALOG + " " + args +
                           " 2>&1");
}

double part(const MemoryEstimate& m, const std::string& name) {
  for (const auto& i : m.breakdown)
    if (i.name == name) return i.bytes;
  FAIL("no part " << name);
  return 0;
}

}  // namespace

TEST_CASE("memory: FP32 parameters and gradients, the optimizer's state, DDP's bucket copy", "[memory]") {
  const Catalog& c = test::catalog();
  const double n = static_cast<double>(c.model("llama3_8b").total_params);
  const MemoryEstimate m = estimate_memory(c, job("llama3_8b", 1, ", precision: bf16"));
  CHECK(part(m, "parameters") == n * 4);
  CHECK(part(m, "gradients") == n * 4);
  CHECK(part(m, "optimizer_state") == n * 8);  // AdamW's two moments
  CHECK(part(m, "buffers") == n * 4);          // DDP's buckets, gradient_as_bucket_view false
  CHECK(m.capacity_bytes == 80e9);
  // 16 B a parameter alone exceed 80 GB: no micro-batch helps, sharding does.
  CHECK_FALSE(m.fits());
  CHECK(m.advice.find("shard them over the GPUs") != std::string::npos);
  // The ZeRO paper (Rajbhandari et al., arXiv:1910.02054, section 3.1): mixed-precision Adam holds 16 bytes a
  // parameter, "at least 24 GB" for GPT-2's 1.5 billion.
  const MemoryEstimate xl = estimate_memory(c, job("gpt2_xl", 1, ", precision: bf16"));
  const double states = part(xl, "parameters") + part(xl, "gradients") + part(xl, "optimizer_state");
  CHECK(states == 16.0 * static_cast<double>(c.model("gpt2_xl").total_params));
  CHECK(states > 24e9);
  // gradient_as_bucket_view: the buckets are the gradients themselves.
  const MemoryEstimate view =
      estimate_memory(c, load_scenario_text("cluster: {sku: ND96isr_H100_v5, nodes: 2}\nmodel: {name: llama3_8b, "
                                            "batch_per_gpu: 1, precision: bf16}\ntraining: {epochs: 1}\n"
                                            "communication: {framework: pytorch_ddp, gradient_as_bucket_view: true}\n",
                                            "v.yaml", c));
  CHECK(part(view, "buffers") == 0);
}

TEST_CASE("memory: a transformer layer keeps Korthikanti et al.'s 34 s b h bytes, and the scores without flash",
          "[memory]") {
  const Catalog& c = test::catalog();
  // GPT-2 XL in 16-bit with dropout, GeLU at 4h, flash attention (the tuned stack): 34 h bytes a token a
  // layer; the logits and the loss's FP32 copy besides.
  const auto& a = c.model("gpt2_xl").architecture;
  const double h = a.hidden, L = a.layers, s = 1024, V = 50257;
  const MemoryEstimate one = estimate_memory(c, job("gpt2_xl", 1, ", precision: bf16"));
  const MemoryEstimate two = estimate_memory(c, job("gpt2_xl", 2, ", precision: bf16"));
  const double per_sample = s * (L * 34 * h + V * (2 + 4));
  CHECK(one.activation_bytes_per_sample == Approx(per_sample).epsilon(1e-12));
  CHECK(part(two, "activations") == Approx(2 * per_sample).epsilon(1e-12));
  // Llama 3 8B: grouped-query K and V (1024 wide), SwiGLU's four ff-wide tensors, no dropout.
  const auto& l = c.model("llama3_8b").architecture;
  const double per_token = 2 * (2.0 * l.hidden) + 2 * (3.0 * l.hidden + 2 * l.kv_width) + 2 * (l.hidden + 4.0 * l.ff);
  const MemoryEstimate llama = estimate_memory(c, job("llama3_8b", 1, ", precision: bf16"));
  CHECK(llama.activation_bytes_per_sample == Approx(8192 * (32 * per_token + 128256 * 6.0)).epsilon(1e-12));
}

TEST_CASE("memory: a CNN fits where its published recipe ran, and a batch that does not fit says which does",
          "[memory]") {
  const Catalog& c = test::catalog();
  // NVIDIA DeepLearningExamples trains ResNet-50 in FP32 at batch 112 on a 16 GB V100 (its README's table).
  const Scenario v100 = load_scenario_text(
      "cluster: {sku: NC24rs_v3, nodes: 1}\nmodel: {name: resnet50, batch_per_gpu: 112}\ntraining: {epochs: 1}\n",
      "v.yaml", c);
  CHECK(estimate_memory(c, v100).fits());
  const MemoryEstimate big = estimate_memory(c, job("gpt2_xl", 64, ", precision: bf16"));
  REQUIRE_FALSE(big.fits());
  const auto at = big.advice.find("model.batch_per_gpu ");
  REQUIRE(at != std::string::npos);
  const int fits_with = std::stoi(big.advice.substr(at + 20));
  CHECK(estimate_memory(c, job("gpt2_xl", fits_with, ", precision: bf16")).fits());
  CHECK_FALSE(estimate_memory(c, job("gpt2_xl", fits_with + 1, ", precision: bf16")).fits());
}

TEST_CASE("memory: check prints the breakdown, predict's JSON has it, plan leaves out what does not fit",
          "[memory][cli]") {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("ringsim_memory_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string f = (dir / "gpt.yaml").string(), json = (dir / "p.json").string();
  std::ofstream(f) << "cluster: {sku: ND96isr_H100_v5, nodes: 1}\nmodel: {name: gpt2_xl, batch_per_gpu: 64, "
                      "precision: bf16}\ntraining: {epochs: 1}\ncommunication: {framework: pytorch_ddp}\nplan: "
                      "{deadline: 1000 h, region: eastus, skus: [ND96isr_H100_v5], nodes: [1]}\n";
  const auto check = run_ringsim("check " + f);
  CHECK(check.status == 0);
  CHECK_THAT(check.output, Catch::Contains("# Memory per GPU: does not fit: needs") &&
                               Catch::Contains("#   optimizer_state ") && Catch::Contains("adamw, 8 B a parameter"));
  const auto predict = run_ringsim("predict " + f + " --no-band --json " + json);
  CHECK(predict.status == 0);
  CHECK_THAT(predict.output, Catch::Contains("memory per GPU              does not fit"));
  const auto j = nlohmann::json::parse(std::ifstream(json));
  CHECK(j["memory"]["fits"] == false);
  CHECK(j["memory"]["capacity_bytes"].get<double>() == 80e9);
  // The band: the reserve's and the allocator's ranges (compute.yaml memory).
  CHECK(j["memory"]["per_gpu_bytes_low"].get<double>() < j["memory"]["per_gpu_bytes"].get<double>());
  CHECK(j["memory"]["per_gpu_bytes_high"].get<double>() > j["memory"]["per_gpu_bytes"].get<double>());
  CHECK(j["memory"]["breakdown"]["activations"].get<double>() > 0);
  const auto plan = run_ringsim("plan " + f);
  CHECK(plan.status == 2);
  CHECK_THAT(plan.output, Catch::Contains("no configuration of the search space is a valid scenario") &&
                              Catch::Contains("it fits with model.batch_per_gpu"));
  std::filesystem::remove_all(dir);
}

TEST_CASE("activation checkpointing: full keeps each layer's input and recomputes its forward pass", "[memory]") {
  const Catalog& c = test::catalog();
  auto one_gpu = [&](const std::string& mode, const std::string& stack) {
    return load_scenario_text(
        "cluster: {sku: ND96isr_H100_v5, nodes: 1, gpus_per_node: 1}\nmodel: {name: gpt2_xl, "
        "batch_per_gpu: 8, precision: bf16, stack: " +
            stack + ", activation_checkpointing: " + mode + "}\ntraining: {epochs: 1}\n",
        "t.yaml", c);
  };
  const auto& a = c.model("gpt2_xl").architecture;
  const double h = a.hidden, L = a.layers, s = 1024, V = 50257;
  const MemoryEstimate full = estimate_memory(c, one_gpu("full", "tuned"));
  CHECK(full.activation_bytes_per_sample == Approx(s * (L * 2 * h + 34 * h + V * 6)).epsilon(1e-12));
  const ComputeModel none = build_compute_model(c, one_gpu("none", "tuned"), false);
  const ComputeModel again = build_compute_model(c, one_gpu("full", "tuned"), false);
  CHECK(again.forward_s == Approx(none.forward_s).epsilon(1e-12));
  CHECK(again.backward_s == Approx(none.backward_s + none.forward_s).epsilon(1e-9));
  CHECK(again.recompute_s == Approx(none.forward_s).epsilon(1e-9));
  // Selective recomputes the scores' products, which flash attention's backward pass already does: nothing
  // more with flash; without it (a stack with no flash attention) the attention's share of the forward FLOPs.
  CHECK(build_compute_model(c, one_gpu("selective", "tuned"), false).recompute_s == 0);
  CHECK(estimate_memory(c, one_gpu("selective", "tuned")).activation_bytes_per_sample ==
        estimate_memory(c, one_gpu("none", "tuned")).activation_bytes_per_sample);
  // A CNN has no architecture: refused with where.
  const std::string e = test::input_error_of([&] {
    load_scenario_text(
        "cluster: {sku: ND96isr_H100_v5, nodes: 1}\nmodel: {name: resnet50, batch_per_gpu: 8, "
        "activation_checkpointing: full}\ntraining: {epochs: 1}\n",
        "r.yaml", c);
  });
  CHECK_THAT(e, Catch::Contains("r.yaml:2:") && Catch::Contains("resnet50 has none"));
}
