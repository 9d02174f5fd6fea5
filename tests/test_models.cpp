// Issue 29: transformers beside the CNNs, precision, sequence length and gradient accumulation.
#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "collective/fusion.h"
#include "execute/estimate/child_process.h"
#include "execute/simgrid/training_sim.h"
#include "report/prediction_report.h"
#include "schedule/compute_model.h"
#include "test_support.h"

using namespace ringsim;

namespace {

Scenario scenario(const std::string& sku, int gpus, const std::string& model, const std::string& extra = "") {
  return load_scenario_text("cluster: {sku: " + sku + ", nodes: 1, gpus_per_node: " + std::to_string(gpus) +
                                "}\nmodel: {name: " + model + ", batch_per_gpu: 32" + extra +
                                "}\ntraining: {epochs: 1}\n",
                            "test.yaml", test::catalog());
}

// A prediction's result JSON, simulated in a child (one SimGrid engine per process).
nlohmann::json predicted(const Scenario& s) {
  return nlohmann::json::parse(
      run_in_child([&] { return result_json(predict(test::catalog(), s, Fidelity::Step), "predict"); }));
}

double fwd_bwd(const Scenario& s) {
  const ComputeModel cm = build_compute_model(test::catalog(), s, false);
  return cm.forward_s + cm.backward_s;
}

// The pre-training heads BertForPreTraining adds to BertModel: the masked-LM transform (dense + LayerNorm),
// the decoder's bias (its weight is the word embeddings) and the next-sentence classifier.
std::int64_t bert_heads(std::int64_t d) { return d * d + d + 2 * d + 30522 + 2 * d + 2; }

}  // namespace

TEST_CASE("models: the transformers' parameter counts are their reference implementations'", "[models]") {
  const Catalog& c = test::catalog();
  CHECK(c.model("bert_base").total_params == 109482240 + bert_heads(768));  // BertModel bert-base-uncased
  CHECK(c.model("bert_base").total_params == 110106428);                    // BertForPreTraining
  CHECK(c.model("bert_large").total_params == 335141888 + bert_heads(1024));
  CHECK(c.model("gpt2").total_params == 124439808);      // GPT2LMHeadModel, lm_head tied
  CHECK(c.model("gpt2_xl").total_params == 1557611200);  // gpt2-xl
  CHECK(c.model("vit_b16").total_params == 86567656);    // torchvision vit_b_16
  CHECK(c.model("bert_base").tensors.size() == 5 + 12 * 16 + 2 + 7);
  CHECK(c.model("gpt2_xl").tensors.size() == 2 + 48 * 12 + 2);
  for (const char* m : {"bert_base", "bert_large", "gpt2", "gpt2_xl", "vit_b16"}) CHECK(c.model(m).transformer());
  CHECK_FALSE(c.model("resnet50").transformer());
}

TEST_CASE("models: MPT as LLM Foundry's benchmark tables count it, its output layer tied", "[models]") {
  const Catalog& c = test::catalog();
  // wte (tied), a 2,048-row position table, per layer 12 d^2 of weights, 9 d of biases and two LayerNorms
  // (4 d); the final LayerNorm. The tables' NumParams at 2,048 tokens.
  auto count = [](double d, double L) { return 50368 * d + 2048 * d + L * (12 * d * d + 13 * d) + 2 * d; };
  CHECK(c.model("mpt_1b").total_params == 1315950592);
  CHECK(static_cast<double>(c.model("mpt_1b").total_params) == count(2048, 24));
  CHECK(c.model("mpt_3b").total_params == 2651837440);
  CHECK(static_cast<double>(c.model("mpt_3b").total_params) == count(2560, 32));
  CHECK(c.model("mpt_3b").head_dim == 128);
  CHECK(c.model("mpt_1b").vocabulary() == 50368);
  // forward: 2 T (12 L d^2 + V d) of matmuls per sequence (the tied table as the output layer), attention 4 T^2 d
  const double d = 2048, T = 4096;
  CHECK(c.model("mpt_1b").forward_flops(4096) == Approx(2 * T * (24 * 12 * d * d + 50368 * d) + 24 * 4 * T * T * d));
}

TEST_CASE("models: the Llama checkpoints' parameter counts, grouped-query attention and head size", "[models]") {
  const Catalog& c = test::catalog();
  // Embedding and output layer (untied), then per layer: q, o at d x d, k and v at d x kv, SwiGLU's three, two
  // RMSNorm scales; the final norm.
  auto count = [](double V, double d, double L, double ff, double kv) {
    return 2 * V * d + L * (2 * d * d + 2 * d * kv + 3 * d * ff + 2 * d) + d;
  };
  CHECK(c.model("llama2_7b").total_params == 6738415616);  // the Hub's safetensors totals
  CHECK(static_cast<double>(c.model("llama2_7b").total_params) == count(32000, 4096, 32, 11008, 4096));
  CHECK(c.model("llama2_13b").total_params == 13015864320);
  CHECK(static_cast<double>(c.model("llama2_70b").total_params) == count(32000, 8192, 80, 28672, 1024));
  CHECK(c.model("llama3_8b").total_params == 8030261248);
  CHECK(static_cast<double>(c.model("llama3_8b").total_params) == count(128256, 4096, 32, 14336, 1024));
  CHECK(c.model("llama3_70b").total_params == 70553706496);
  CHECK(c.model("llama3_70b").head_dim == 128);
  CHECK(c.model("gpt2").head_dim == 64);
  // Forward FLOPs at 8192 tokens: 2 N T without the embedding (a lookup) and the norms' scales, plus
  // attention's 4 T^2 d a layer.
  const double d = 4096, L = 32, T = 8192, V = 128256;
  const double expected = 2 * T * (8030261248.0 - V * d - (2 * L + 1) * d) + L * 4 * T * T * d;
  CHECK(c.model("llama3_8b").forward_flops(8192) == Approx(expected).epsilon(1e-12));
  CHECK(c.model("llama3_8b").default_tokens == 8192);
}

TEST_CASE("models: a transformer's forward FLOPs are its matmuls on every token and its attention", "[models]") {
  const Catalog& c = test::catalog();
  SECTION("BERT-Large at 128 and 512 tokens: layers, the tied decoder, the transform; pooler and NSP once") {
    const double d = 1024, ff = 4096, L = 24, V = 30522;
    for (double T : {128.0, 512.0}) {
      const double per_token = L * (4 * d * d + 2 * d * ff) + V * d + d * d;
      const double expected = 2 * T * per_token + 2 * (d * d + 2 * d) + L * 4 * T * T * d;
      CHECK(c.model("bert_large").forward_flops(static_cast<int>(T)) == Approx(expected).epsilon(1e-12));
    }
  }
  SECTION("GPT-2 XL: 2 N T with the tied LM head, less the position table, plus attention") {
    const double d = 1600, L = 48, V = 50257, T = 1024;
    const double expected = 2 * T * (L * 12 * d * d + V * d) + L * 4 * T * T * d;
    CHECK(c.model("gpt2_xl").forward_flops(1024) == Approx(expected).epsilon(1e-12));
  }
  SECTION("ViT-B/16 at its 197 tokens: torchvision lists 17.56 GFLOPS (multiply-accumulates)") {
    CHECK(c.model("vit_b16").default_tokens == 197);
    CHECK(c.model("vit_b16").forward_flops() / 2 == Approx(17.56e9).epsilon(0.01));
  }
  SECTION("a CNN's FLOPs do not depend on tokens") {
    CHECK(c.model("resnet50").forward_flops() == Approx(2 * 4.089e9).epsilon(0.001));
  }
}

TEST_CASE("precision: the passes run at the precision's peak, gradients travel in its bytes", "[models]") {
  const Catalog& c = test::catalog();
  SECTION("roofline: fp32 and bf16 on an H100 differ by their peaks times their efficiencies") {
    const double f32 = fwd_bwd(scenario("ND96isr_H100_v5", 1, "bert_large"));
    const double b16 = fwd_bwd(scenario("ND96isr_H100_v5", 1, "bert_large", ", precision: bf16"));
    const auto& p = c.compute().precisions;
    CHECK(f32 / b16 == Approx(989 * p.at("bf16").transformer_efficiency / (67 * p.at("fp32").transformer_efficiency)));
    // The efficiencies come from NVIDIA's BERT-Large rates on one A100 (compute.yaml [dle]): the roofline gives them
    // back.
    const Scenario a = scenario("ND96amsr_A100_v4", 1, "bert_large", ", precision: amp");
    CHECK(a.model.batch_per_gpu / fwd_bwd(a) == Approx(580).epsilon(0.02));  // the passes, without the update
  }
  SECTION("a measured rate is chosen by precision") {
    for (auto [precision, rate] : {std::pair{"tf32", 938.0}, {"amp", 2470.0}}) {
      Scenario s = scenario("ND96amsr_A100_v4", 1, "resnet50", std::string(", precision: ") + precision);
      s.model.batch_per_gpu = 256;
      const ComputeModel cm = build_compute_model(c, s, false);
      CHECK(cm.source == "measured");
      CHECK(cm.single_gpu_images_per_sec == Approx(rate).epsilon(1e-9));
    }
    Scenario s = scenario("ND96amsr_A100_v4", 1, "resnet50");
    s.model.batch_per_gpu = 256;
    CHECK(build_compute_model(c, s, false).source == "roofline");
  }
  SECTION("a measured rate of a text model holds at its sequence length only") {
    ComputeSpec cs;
    cs.measured.push_back({"H200-SXM-141GB", "bert_large", "bf16", 64, 0, 845, "a"});    // the model's default (128)
    cs.measured.push_back({"H200-SXM-141GB", "bert_large", "bf16", 64, 512, 200, "b"});  // seq_len: 512
    CHECK(cs.find("H200-SXM-141GB", "bert_large", 64, "bf16", 128, 128)->source == "a");
    CHECK(cs.find("H200-SXM-141GB", "bert_large", 64, "bf16", 512, 128)->source == "b");
    CHECK(cs.find("H200-SXM-141GB", "bert_large", 64, "bf16", 256, 128) == nullptr);
    CHECK(cs.find("H200-SXM-141GB", "bert_large", 32, "bf16", 128, 128) == nullptr);
  }
  SECTION("gradients travel in FP32 (autocast keeps FP32 weights) unless the scenario compresses them") {
    for (auto [extra, bytes] : {std::pair{", precision: fp32", 4},
                                {", precision: tf32", 4},
                                {", precision: amp", 4},
                                {", precision: bf16", 4}}) {
      const Scenario s = scenario("ND96isr_H100_v5", 8, "gpt2", extra);
      CHECK(s.model.gradient_bytes == bytes);
    }
    Scenario s = load_scenario_text(
        "cluster: {sku: ND96isr_H100_v5, nodes: 1}\nmodel: {name: gpt2, batch_per_gpu: 8, precision: bf16}\n"
        "training: {epochs: 1}\ncommunication: {gradient_precision: bf16}\n",
        "c.yaml", c);
    CHECK(s.model.gradient_bytes == 2);
    for (int bytes : {2, 4}) {
      s.model.gradient_bytes = bytes;
      std::uint64_t sum = 0;
      const auto j = predicted(s);
      for (const auto& b : j["collectives"]) sum += b["bytes"].get<std::uint64_t>();
      CHECK(sum == static_cast<std::uint64_t>(c.model("gpt2").total_params) * bytes);
    }
  }
  SECTION("a GPU without the precision's peak is refused, naming what it runs") {
    const std::string e = test::input_error_of([] { scenario("NC24rs_v3", 1, "resnet50", ", precision: bf16"); });
    CHECK(e.find("V100-PCIe-16GB has no bf16 peak") != std::string::npos);
    CHECK(e.find("it runs fp32 or amp") != std::string::npos);
  }
}

TEST_CASE("seq_len: the tokens of a sequence set its FLOPs and an epoch's sequences", "[models]") {
  const Catalog& c = test::catalog();
  const Scenario s128 = scenario("ND96isr_H100_v5", 1, "bert_base");
  const Scenario s512 = scenario("ND96isr_H100_v5", 1, "bert_base", ", seq_len: 512");
  CHECK(s128.model.tokens == 128);
  CHECK(s512.model.tokens == 512);
  CHECK(s128.training.dataset_images == 3300000000 / 128);
  CHECK(s512.training.dataset_images == 3300000000 / 512);
  const double ratio = c.model("bert_base").forward_flops(512) / c.model("bert_base").forward_flops(128);
  CHECK(fwd_bwd(s512) / fwd_bwd(s128) == Approx(ratio));
  CHECK(ratio > 4);  // attention grows with the square of the tokens
  const std::string e = test::input_error_of([] { scenario("ND96isr_H100_v5", 1, "bert_base", ", seq_len: 513"); });
  CHECK(e.find("bert_base's position embeddings hold 512 tokens; got 513") != std::string::npos);
}

TEST_CASE("gradient accumulation: k micro-batches a step, one allreduce", "[models]") {
  const Catalog& c = test::catalog();
  const std::string base = "cluster: {sku: NC24rs_v3, nodes: 2}\nmodel: {name: resnet50, batch_per_gpu: 64}\n";
  const Scenario one = load_scenario_text(base + "training: {epochs: 1}\n", "a.yaml", c);
  const Scenario four = load_scenario_text(base + "training: {epochs: 1, gradient_accumulation: 4}\n", "b.yaml", c);
  const ComputeModel c1 = build_compute_model(c, one, false), c4 = build_compute_model(c, four, false);
  CHECK(c4.accumulation_s == Approx(3 * (c1.forward_s + c1.backward_s)));
  CHECK(c4.backward_s == Approx(c1.backward_s));  // the gradients come from the last micro-batch's backward pass
  CHECK(c4.update_s == c1.update_s);              // one optimizer step
  const auto p1 = predicted(one), p4 = predicted(four);
  CHECK(p4["communication_time_s"].get<double>() == Approx(p1["communication_time_s"].get<double>()).epsilon(0.01));
  CHECK(p4["iterations_per_epoch"] == (p1["iterations_per_epoch"].get<int>() + 3) / 4);
  const double r1 = p1["images_per_sec"], r4 = p4["images_per_sec"];
  CHECK(r4 > r1);  // the allreduce's exposed part and the update amortise
  CHECK(r4 < 1.1 * r1);
}

TEST_CASE("results: samples_per_sec beside images_per_sec, and the table says sequences for text", "[models]") {
  const Scenario s = scenario("ND96isr_H100_v5", 8, "gpt2", ", precision: bf16, samples_per_sec_single_gpu: 100");
  const auto j = predicted(s);
  CHECK(j["samples_per_sec"] == j["images_per_sec"]);
  CHECK(j["scenario"]["model"]["precision"] == "bf16");
  CHECK(j["scenario"]["model"]["tokens_per_sample"] == 1024);
  CHECK(j["single_gpu_images_per_sec"].get<double>() == Approx(100));
  const std::string t = run_in_child([&] { return prediction_table(predict(test::catalog(), s, Fidelity::Step)); });
  CHECK(t.find("sequences/s (total)") != std::string::npos);
  CHECK(t.find("samples_per_sec_single_gpu = 100 sequences/s") != std::string::npos);
}

TEST_CASE("pytorch_ddp: buckets in reverse registration order, the first 1 MiB, each closing at its limit",
          "[models]") {
  using collective::FusionTensor;
  const std::uint64_t MiB = 1 << 20;
  SECTION("closed form on made-up tensors") {
    // Registration order 0..5; backward produces 5 first. 5 + 4 reach 1 MiB; 3 + 2 + 1 reach 25 MiB; 0 remains.
    const std::vector<FusionTensor> t = {{MiB, 4},     {20 * MiB, 4}, {3 * MiB, 4},
                                         {2 * MiB, 4}, {MiB / 2, 4},  {MiB / 2, 4}};
    const auto b = collective::ddp_buckets(t, MiB, 25 * MiB);
    REQUIRE(b.size() == 3);
    CHECK(b[0] == std::vector<int>{5, 4});
    CHECK(b[1] == std::vector<int>{3, 2, 1});
    CHECK(b[2] == std::vector<int>{0});
  }
  SECTION("ResNet-50: the classifier alone first, then buckets of at least 25 MiB, every tensor once") {
    const ModelSpec& m = test::catalog().model("resnet50");
    std::vector<FusionTensor> t;
    for (const auto& x : m.tensors) t.push_back({static_cast<std::uint64_t>(x.numel) * 4, 4});
    const auto b = collective::ddp_buckets(t, MiB, 25 * MiB);
    CHECK(b.front() == std::vector<int>{160, 159});  // fc.bias, fc.weight (8 MB)
    int next = static_cast<int>(t.size()) - 1;
    for (std::size_t i = 0; i < b.size(); ++i) {
      std::uint64_t bytes = 0;
      for (int x : b[i]) {
        CHECK(x == next--);  // consecutive, in reverse registration order
        bytes += t[x].bytes;
      }
      if (i + 1 < b.size()) CHECK(bytes >= (i == 0 ? MiB : 25 * MiB));
      if (i + 1 < b.size()) CHECK(bytes - t[b[i].back()].bytes < (i == 0 ? MiB : 25 * MiB));
    }
    CHECK(next == -1);
  }
}

TEST_CASE("pytorch_ddp: an allreduce per bucket as it fills, overlapping the backward pass", "[models]") {
  const Scenario s = load_scenario_text(
      "cluster: {sku: ND96isr_H100_v5, nodes: 2}\nmodel: {name: bert_large, batch_per_gpu: 32, precision: bf16}\n"
      "training: {epochs: 1}\ncommunication: {framework: pytorch_ddp, bucket_size: 25 MiB}\n",
      "ddp.yaml", test::catalog());
  CHECK(s.communication.cycle_time_s == 0);
  const ModelSpec& m = test::catalog().model("bert_large");
  std::vector<collective::FusionTensor> t;
  for (const auto& x : m.tensors) t.push_back({static_cast<std::uint64_t>(x.numel) * 4, 4});  // FP32 gradients
  const auto buckets = collective::ddp_buckets(t, 1 << 20, 25 << 20);
  const auto j = predicted(s);
  REQUIRE(j["collectives"].size() == buckets.size());
  double previous_end = 0;
  for (std::size_t i = 0; i < buckets.size(); ++i) {
    const auto& c = j["collectives"][i];
    CHECK(c["tensors"] == buckets[i].size());
    CHECK(c["start_s"].get<double>() >= previous_end - 1e-12);  // one at a time, in bucket order
    previous_end = c["end_s"];
  }
  CHECK(j["exposed_communication_s"].get<double>() < 0.5 * j["communication_time_s"].get<double>());
  CHECK(j["scenario"]["communication"]["framework"] == "pytorch_ddp");
}

namespace {
// What a DDP prediction spent on its bucket copies: the total, the copies into the buckets (rank 0's spans) and
// out of them, each copy out checked against the collective and the copy before it.
struct BucketCopies {
  double total = 0, in = 0, out = 0, iteration = 0;
  bool ordered = true;  // each copy out after its bucket's allreduce, the backward pass and the copy before
};
BucketCopies bucket_copies(const std::string& communication) {
  const Scenario s = load_scenario_text(
      "cluster: {sku: ND96isr_H100_v5, nodes: 1}\nmodel: {name: bert_large, batch_per_gpu: 32, precision: bf16}\n"
      "training: {epochs: 1}\ncommunication: {" +
          communication + "}\n",
      "ddp.yaml", test::catalog());
  const auto j = nlohmann::json::parse(run_in_child([&] {
    const Prediction p = predict(test::catalog(), s, Fidelity::Step);
    nlohmann::json out = {{"total", p.bucket_copy_s}, {"in", 0.0}, {"out", 0.0}, {"ordered", true}};
    out["iteration"] = p.iteration_time_s;
    double backward_end = 0, previous = 0;
    std::size_t bucket = 0;
    for (double r : p.tensor_ready_s) backward_end = std::max(backward_end, r);
    for (const auto& sp : p.compute_spans) {
      if (sp.name == "DDP_COPY_IN") out["in"] = out["in"].get<double>() + (sp.end - sp.start);
      if (sp.name != "DDP_COPY_OUT") continue;
      out["out"] = out["out"].get<double>() + (sp.end - sp.start);
      const double after = std::max({backward_end, previous, p.collectives.at(bucket++).end});
      if (std::abs(sp.start - after) > 1e-12) out["ordered"] = false;
      previous = sp.end;
    }
    if (bucket != p.collectives.size()) out["ordered"] = false;
    return out.dump();
  }));
  return {j["total"], j["in"], j["out"], j["iteration"], j["ordered"]};
}
}  // namespace

TEST_CASE("pytorch_ddp: copies out of the buckets wait for the backward pass, each allreduce and the copy before",
          "[models]") {
  std::vector<double> starts;
  // Backward ends at 10; allreduces end at 4, 12 and 13; copies of 1, 2 and 3.
  CHECK(collective::bucket_copies_end(10, {4, 12, 13}, {1, 2, 3}, &starts) == 17);
  CHECK(starts == std::vector<double>{10, 12, 14});
  // The last allreduce ends late: its copy waits for it, the others ran before.
  starts.clear();
  CHECK(collective::bucket_copies_end(10, {4, 5, 30}, {1, 2, 3}, &starts) == 33);
  CHECK(starts == std::vector<double>{10, 11, 30});
  CHECK(collective::bucket_copies_end(10, {}, {}) == 10);
  CHECK_THROWS_AS(collective::bucket_copies_end(0, {1}, {}), std::invalid_argument);
}

TEST_CASE("pytorch_ddp: gradients copied into their buckets in backward, out after the allreduces", "[models]") {
  // BERT-Large's FP32 gradients on one ND96isr_H100_v5: each way one GPU copy of them all, 2 bytes moved per
  // byte at the HBM's rate (GpuSpec::copy_time).
  const double bytes = static_cast<double>(test::catalog().model("bert_large").total_params) * 4;
  const double one_way = test::catalog().gpu("H100-SXM5-80GB").copy_time(bytes);
  const BucketCopies c = bucket_copies("framework: pytorch_ddp");
  CHECK(c.out == Approx(one_way).epsilon(1e-9));
  CHECK(c.in >= one_way * (1 - 1e-9));  // collectives' kernels beside them may slow the copies in
  CHECK(c.in < one_way * 1.5);
  CHECK(c.total == Approx(c.in + c.out).epsilon(1e-12));
  CHECK(c.ordered);
  // Gradients as bucket views: no copies; the iteration is shorter, by no more than the copies took.
  const BucketCopies views = bucket_copies("framework: pytorch_ddp, gradient_as_bucket_view: true");
  CHECK(views.total == 0);
  CHECK(views.in == 0);
  CHECK(views.out == 0);
  CHECK(views.iteration < c.iteration);
  CHECK(c.iteration - views.iteration <= c.total * (1 + 1e-9));
  // Horovod copies into its fusion buffer on its own thread, not on the compute stream.
  CHECK(bucket_copies("framework: horovod").total == 0);
}
