// DeepSpeed's ZeRO (framework deepspeed, zero_stage 1-3): each stage's model states against the ZeRO paper's
// counts, what an iteration moves on both fidelities, and what it refuses.
#include <algorithm>
#include <nlohmann/json.hpp>

#include "execute/estimate/child_process.h"
#include "execute/simgrid/training_sim.h"
#include "load/scenario.h"
#include "report/prediction_report.h"
#include "schedule/compute_model.h"
#include "schedule/memory.h"
#include "sharded_support.h"
#include "test_support.h"
#include "train/sharding.h"

using namespace ringsim;
using test::part;
using test::predicted;

namespace {

// `model` under DeepSpeed ZeRO-`stage` on `nodes` x ND96isr_H100_v5, bf16, one 2,048-token sequence a GPU.
// `overlap` sets communication.overlap_comm ("": DeepSpeed's default for the stage).
Scenario zero(int stage, int nodes, const std::string& model = "llama2_7b", int gpus_per_node = 8,
              const std::string& overlap = "true") {
  return load_scenario_text("cluster: {sku: ND96isr_H100_v5, nodes: " + std::to_string(nodes) +
                                ", gpus_per_node: " + std::to_string(gpus_per_node) + "}\nmodel: {name: " + model +
                                ", batch_per_gpu: 1, precision: bf16, seq_len: 2048}\ntraining: {epochs: "
                                "1}\ncommunication: {framework: deepspeed, zero_stage: " +
                                std::to_string(stage) + (overlap.empty() ? "" : ", overlap_comm: " + overlap) + "}\n",
                            "zero.yaml", test::catalog());
}

// The model states' bytes a parameter: parameters, gradients and optimizer state.
double states_per_param(const Scenario& s) {
  const MemoryEstimate m = estimate_memory(test::catalog(), s);
  const double n = static_cast<double>(test::catalog().model(s.model.name).total_params);
  return (part(m, "parameters") + part(m, "gradients") + part(m, "optimizer_state")) / n;
}

}  // namespace

TEST_CASE("deepspeed: each ZeRO stage's model states, as the ZeRO paper counts them", "[deepspeed]") {
  // Rajbhandari et al. (SC'20) Figure 1: mixed-precision Adam (K = 12), 7.5B parameters on 64 GPUs take
  // 120 GB replicated, 31.4 GB with P_os (stage 1), 16.6 GB with P_os+g (stage 2), 1.88 GB with P_os+g+p.
  const double psi = 7.5e9;
  CHECK(states_per_param(zero(1, 8)) * psi / 1e9 == Approx(31.4).epsilon(0.005));
  CHECK(states_per_param(zero(2, 8)) * psi / 1e9 == Approx(16.6).epsilon(0.005));
  CHECK(states_per_param(zero(3, 8)) * psi / 1e9 == Approx(1.88).epsilon(0.005));
  // Where each part lives on 16 GPUs: BF16 parameters replicated until stage 3, the FP32 master copy and
  // Adam's state sharded from stage 1, BF16 gradients sharded from stage 2.
  const double n = static_cast<double>(test::catalog().model("llama2_7b").total_params);
  const MemoryEstimate one = estimate_memory(test::catalog(), zero(1, 2));
  CHECK(part(one, "parameters") == Approx(n * 2 + n * 4 / 16));
  CHECK(part(one, "gradients") == Approx(n * 2));
  CHECK(part(one, "optimizer_state") == Approx(n * 8 / 16));
  CHECK(part(one, "buffers") == Approx(2 * 5e8 * 2));  // two reduce buckets (overlap_comm)
  // DeepSpeed's default at stages 1 and 2, no overlap: one bucket; at stage 3 the overlap is the default.
  CHECK(part(estimate_memory(test::catalog(), zero(1, 2, "llama2_7b", 8, "")), "buffers") == Approx(5e8 * 2));
  CHECK(zero(2, 2, "llama2_7b", 8, "").communication.overlap_comm == false);
  CHECK(zero(3, 2, "llama2_7b", 8, "").communication.overlap_comm == true);
  CHECK(part(estimate_memory(test::catalog(), zero(2, 2)), "gradients") == Approx(n * 2 / 16));
  const MemoryEstimate three = estimate_memory(test::catalog(), zero(3, 2));
  CHECK(part(three, "parameters") == Approx(n * 6 / 16));
  CHECK(part(three, "buffers") > part(one, "buffers"));  // and the gathered blocks
  // Llama 3 70B at stage 1 on 16 GPUs: 4.75 bytes a parameter do not fit, and a higher stage is the advice.
  const MemoryEstimate big = estimate_memory(test::catalog(), zero(1, 2, "llama3_70b"));
  CHECK_FALSE(big.fits());
  CHECK_THAT(big.advice, Catch::Contains("a higher communication.zero_stage"));
  CHECK(estimate_memory(test::catalog(), zero(3, 2, "llama3_70b")).per_gpu_bytes < big.per_gpu_bytes / 2);
  // On one GPU no stage shards anything: more GPUs is the advice, and the gradients are reduced in buckets.
  const Scenario single = zero(2, 1, "llama3_8b", 1);
  CHECK_THAT(estimate_memory(test::catalog(), single).advice, Catch::Contains("more GPUs"));
  CHECK_THAT(estimate_memory(test::catalog(), single).advice, !Catch::Contains("zero_stage"));
  const std::string table =
      run_in_child([&] { return prediction_table(predict(test::catalog(), single, Fidelity::Step)); });
  CHECK_THAT(table, Catch::Contains(" buckets"));
}

TEST_CASE("deepspeed: what an iteration moves at each stage, on both fidelities alike", "[deepspeed]") {
  const Catalog& c = test::catalog();
  const ModelSpec& m = c.model("llama2_7b");
  const double n = static_cast<double>(m.total_params), root = 2.0 * 32000 * 4096 + 4096;
  std::vector<double> iteration;
  for (const int stage : {1, 2, 3})
    for (const Fidelity f : {Fidelity::Step, Fidelity::Flow}) {
      INFO("stage " << stage << ", " << to_string(f));
      const nlohmann::json p = predicted(zero(stage, 2), f);
      double gathered = 0, reduced = 0;
      int gathers = 0;
      for (const auto& r : p["collectives"]) {
        const auto bytes = r["bytes"].get<double>();
        if (r["algorithm"] == "ring_allgather") gathered += bytes, ++gathers;
        const std::string algorithm = r["algorithm"];
        if (stage == 3 ? algorithm == "ring_reduce_scatter" : algorithm.ends_with("allreduce")) {
          reduced += bytes;
          CHECK(bytes <= 5e8 * 2 + 32000.0 * 4096 * 2);  // a bucket, with the tensor that overfills it
        }
      }
      // BF16 gradients (DeepSpeed reduces in the model's type) allreduced at stages 1 and 2, reduce-scattered
      // at stage 3; stages 1 and 2 gather the BF16 parameters once, whole, stage 3 each block twice and the
      // root once.
      CHECK(reduced == Approx(n * 2));
      CHECK(gathers == (stage == 3 ? 65 : 1));
      CHECK(gathered == Approx(stage == 3 ? (2 * n - root) * 2 : n * 2));
      CHECK(p["update_time_s"].get<double>() == Approx(build_compute_model(c, zero(stage, 1)).update_s / 2));
      iteration.push_back(p["iteration_time_s"].get<double>());
    }
  for (std::size_t i = 0; i < iteration.size(); i += 2) CHECK(iteration[i] == Approx(iteration[i + 1]).epsilon(0.03));
  // Stages 1 and 2 move the same bytes at the same times; the whole-model gather before the forward pass
  // cannot hide behind compute, so it is exposed.
  CHECK(iteration[0] == Approx(iteration[2]));
  const nlohmann::json stage1 = predicted(zero(1, 2), Fidelity::Step);
  const double first_gather = stage1["collectives"][0]["end_s"].get<double>();
  CHECK(stage1["exposed_communication_s"].get<double>() >= 0.9 * first_gather);
}

TEST_CASE("deepspeed: without overlap_comm the gradients are reduced once backward is over", "[deepspeed]") {
  for (const Fidelity f : {Fidelity::Step, Fidelity::Flow}) {
    INFO(to_string(f));
    const nlohmann::json on = predicted(zero(2, 2), f), off = predicted(zero(2, 2, "llama2_7b", 8, "false"), f);
    // The same bytes either way; without the overlap none starts before the backward pass ends,
    // the first holding the first layers' gradients (registration order), so the step is longer.
    auto reduced = [](const nlohmann::json& p) {
      std::vector<double> bytes, starts;
      for (const auto& r : p["collectives"])
        if (r["algorithm"].get<std::string>().ends_with("allreduce")) {
          bytes.push_back(r["bytes"].get<double>());
          starts.push_back(r["start_s"].get<double>());
        }
      return std::pair{bytes, starts};
    };
    const auto [on_bytes, on_starts] = reduced(on);
    const auto [off_bytes, off_starts] = reduced(off);
    REQUIRE(off_bytes.size() > 1);  // the buckets close at other tensors in registration order
    double on_sum = 0, off_sum = 0;
    for (double b : on_bytes) on_sum += b;
    for (double b : off_bytes) off_sum += b;
    CHECK(off_sum == Approx(on_sum));
    // The whole-model gather first, then the forward and backward passes.
    const double backward = on["backward_time_s"].get<double>();
    const double backward_end =
        on["collectives"][0]["end_s"].get<double>() + on["forward_time_s"].get<double>() + backward;
    for (double t : off_starts) CHECK(t >= backward_end - 0.01 * backward);
    CHECK(*std::min_element(on_starts.begin(), on_starts.end()) < backward_end - 0.1 * backward);
    CHECK(off["iteration_time_s"].get<double>() > on["iteration_time_s"].get<double>() * 1.02);
    CHECK(off["exposed_communication_s"].get<double>() > on["exposed_communication_s"].get<double>());
  }
  CHECK_THAT(to_yaml(zero(1, 2, "llama2_7b", 8, "")), Catch::Contains("overlap_comm: false"));
}

TEST_CASE("deepspeed: bad input names the key and the choices", "[deepspeed][bad_input]") {
  const Catalog& c = test::catalog();
  auto error = [&](const std::string& communication) {
    return test::input_error_of([&] {
      load_scenario_text(
          "cluster: {sku: ND96isr_H100_v5, nodes: 2}\nmodel: {name: llama2_7b, batch_per_gpu: "
          "1}\ntraining: {epochs: 1}\ncommunication: {" +
              communication + "}\n",
          "bad.yaml", c);
    });
  };
  CHECK_THAT(error("framework: deepspeed, zero_stage: 4"),
             Catch::Contains("bad.yaml:4:") && Catch::Contains("3, 2 or 1"));
  CHECK_THAT(error("framework: deepspeed"), Catch::Contains("needs communication.zero_stage: 1, 2 or 3"));
  CHECK_THAT(error("framework: fsdp, zero_stage: 3"), Catch::Contains("applies to framework: deepspeed"));
  CHECK_THAT(error("framework: pytorch_ddp, overlap_comm: true"), Catch::Contains("applies to framework: deepspeed"));
  CHECK_THAT(error("framework: deepspeed, zero_stage: 2, overlap_comm: maybe"), Catch::Contains("bad.yaml:4:"));
  CHECK_THAT(error("framework: deepspeed, zero_stage: 3, sharding: full_shard"),
             Catch::Contains("deepspeed shards by zero_stage"));
  CHECK_THAT(error("framework: deepspeed, zero_stage: 2, strategy: tree"),
             Catch::Contains("use strategy ring or auto"));
  CHECK_THAT(error("framework: deepspeed, zero_stage: 2, fusion_threshold: 64M"),
             Catch::Contains("reduce_bucket_size"));
  // ringsim-real runs ZeRO as it moves gradients: in FP32.
  CHECK_THAT(real_run_refusal(zero(2, 2)), Catch::Contains("ringsim-real moves FP32 gradients"));
  // The resolved scenario says the stage.
  CHECK_THAT(to_yaml(zero(3, 2)), Catch::Contains("zero_stage: 3"));
}
