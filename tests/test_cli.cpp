// The `ringsim` program as a user runs it: output, exit status, and no partial files on errors.
#include <sys/wait.h>

#include <array>
#include <catch2/catch.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "test_support.h"

namespace fs = std::filesystem;

namespace {

struct Run {
  int status = -1;
  std::string output;  // stdout and stderr
};

Run run_ringsim(const std::string& args) {
  const std::string cmd =
      std::string(RINGSIM_TEST_BINARY) + " --catalog " + RINGSIM_TEST_CATALOG + " " + args + " 2>&1";
  Run r;
  FILE* p = ::popen(cmd.c_str(), "r");
  REQUIRE(p != nullptr);
  std::array<char, 4096> buf{};
  std::size_t n = 0;
  while ((n = std::fread(buf.data(), 1, buf.size(), p)) > 0) r.output.append(buf.data(), n);
  const int st = ::pclose(p);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

using ringsim::test::slurp;

const std::string kScenarios = RINGSIM_TEST_SCENARIOS;

}  // namespace

TEST_CASE("cli: ringsim catalog lists SKUs, GPUs, models and link classes", "[cli]") {
  const Run r = run_ringsim("catalog");
  CHECK(r.status == 0);
  for (const char* s : {"NC24rs_v3", "ND40rs_v2", "monk", "V100-SXM2-32GB", "ResNet-50", "cifar10_keras_cnn", "nvlink2",
                        "ib_edr", "Standard NCSv3 Family vCPUs"})
    CHECK_THAT(r.output, Catch::Contains(s));
  CHECK(run_ringsim("catalog models").output.find("NC24rs_v3") == std::string::npos);
  CHECK(run_ringsim("catalog nonsense").status != 0);
  // Storage backends (issue 8) and prices (issue 7).
  const Run st = run_ringsim("catalog storage");
  CHECK(st.status == 0);
  for (const char* s : {"azure_files", "blobfuse", "parallel_fs", "per_server (default 4)", "local_ssd (on)"})
    CHECK_THAT(st.output, Catch::Contains(s));
  const Run pr = run_ringsim("catalog prices");
  CHECK(pr.status == 0);
  CHECK_THAT(pr.output, Catch::Contains("Prices, eastus") && Catch::Contains("$13.460") &&
                            Catch::Contains("$2.692 (est.)") && Catch::Contains("Standard NDSv2 Family vCPUs"));
  CHECK(pr.output.find("monk") == std::string::npos);
}

TEST_CASE("cli: ringsim topo prints the matrix, bandwidths, latencies and legend", "[cli]") {
  const Run r = run_ringsim("topo NC24rs_v3 --nodes 2");
  CHECK(r.status == 0);
  for (const char* s :
       {"Connection", "n0.GPU0", "PHB", "SYS", "NET", "Bottleneck bandwidth", "Latency (us", "Legend:", "6.82"})
    CHECK_THAT(r.output, Catch::Contains(s));
  CHECK_THAT(run_ringsim("topo Standard_ND40rs_v2").output, Catch::Contains("NV2"));
  CHECK_THAT(run_ringsim("topo NC12").output, Catch::Contains("PIX"));
  const Run tree = run_ringsim("topo NC24rs_v3 --nodes 40 --fabric-topology fat_tree --oversubscription 2");
  CHECK(tree.status == 0);
  CHECK_THAT(tree.output, Catch::Contains("3 leaves x 9 spines"));
  CHECK_THAT(tree.output, Catch::Contains("showing nodes 0-1 of 40"));
}

TEST_CASE("cli: ringsim topo writes Graphviz and SimGrid files, deterministically", "[cli]") {
  const fs::path dir = fs::temp_directory_path() / "ringsim_cli_test";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string dot = (dir / "a.dot").string(), xml1 = (dir / "a.xml").string(), xml2 = (dir / "b.xml").string();
  CHECK(run_ringsim("topo NC24rs_v3 --nodes 2 --dot " + dot + " --platform-xml " + xml1).status == 0);
  CHECK(run_ringsim("topo NC24rs_v3 --nodes 2 --platform-xml " + xml2).status == 0);
  CHECK_THAT(slurp(dot), Catch::StartsWith("graph ringsim {"));
  CHECK_THAT(slurp(xml1), Catch::StartsWith("<?xml"));
  CHECK(slurp(xml1) == slurp(xml2));
  fs::remove_all(dir);
}

TEST_CASE("cli: errors exit non-zero, name the problem and leave no output file", "[cli]") {
  const fs::path dir = fs::temp_directory_path() / "ringsim_cli_err";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const Run unknown = run_ringsim("topo NC24rs_v4");
  CHECK(unknown.status == 2);
  CHECK_THAT(unknown.output,
             Catch::Contains("ringsim topo: error: unknown SKU 'NC24rs_v4'; did you mean NC24rs_v3 or NC24rs_v2?"));
  const Run no_ib = run_ringsim("topo NC24s_v3 --nodes 2 --fabric infiniband --dot " + (dir / "x.dot").string());
  CHECK(no_ib.status == 2);
  CHECK_THAT(no_ib.output, Catch::Contains("has no InfiniBand"));
  CHECK(fs::is_empty(dir));
  const Run bad_set = run_ringsim("check " + kScenarios + "/resnet50_imagenet_8x_nc24rs_v3.yaml --set cluster.nodes=0");
  CHECK(bad_set.status == 2);
  CHECK_THAT(bad_set.output,
             Catch::Contains("--set cluster.nodes=0: error: cluster.nodes: must be between 1 and 65536, got 0"));
  const Run missing = run_ringsim("check " + (dir / "missing.yaml").string());
  CHECK(missing.status == 2);
  CHECK_THAT(missing.output,
             Catch::Contains("missing.yaml: error: cannot read the scenario: No such file or directory"));
  CHECK(run_ringsim("topo").status != 0);  // the SKU argument is required
  const Run bad_fidelity =
      run_ringsim("predict " + kScenarios + "/resnet50_imagenet_8x_nc24rs_v3.yaml --fidelity exact");
  CHECK(bad_fidelity.status != 0);
  CHECK_THAT(bad_fidelity.output, Catch::Contains("flow"));
  const Run bad_predict =
      run_ringsim("predict " + kScenarios + "/resnet50_imagenet_8x_nc24rs_v3.yaml --set model.name=resnet5" +
                  " --json " + (dir / "p.json").string());
  CHECK(bad_predict.status == 2);
  CHECK_THAT(bad_predict.output, Catch::Contains("did you mean resnet50"));
  const Run unwritable = run_ringsim("predict " + kScenarios + "/landolakes_cifar10_2x_nc24rs_v3.yaml --json " +
                                     (dir / "no" / "such" / "dir" / "p.json").string());
  CHECK(unwritable.status == 2);  // a bad --json path is bad input
  CHECK_THAT(unwritable.output, Catch::Contains("p.json: error: cannot write the output file: No such file"));
  CHECK(fs::is_empty(dir));
  fs::remove_all(dir);
}

TEST_CASE("cli: ringsim check prints the resolved scenario", "[cli]") {
  const Run r = run_ringsim("check " + kScenarios + "/landolakes_cifar10_2x_nc24rs_v3.yaml --set training.epochs=7");
  CHECK(r.status == 0);
  CHECK_THAT(r.output, Catch::Contains("valid"));
  CHECK_THAT(r.output, Catch::Contains("epochs: 7"));
  CHECK_THAT(r.output, Catch::Contains("library: mpi"));
  CHECK_THAT(r.output, Catch::Contains("8 GPUs (2 x NC24rs_v3"));
}

TEST_CASE("cli: --catalog is taken before or after the subcommand (issue 30)", "[cli]") {
  const std::string bin = RINGSIM_TEST_BINARY, cat = std::string(" --catalog ") + RINGSIM_TEST_CATALOG;
  const std::string scenario = " " + kScenarios + "/resnet50_imagenet_8x_nc24rs_v3.yaml --set cluster.nodes=1";
  for (const std::string& cmd : {bin + " check" + scenario + cat, bin + cat + " check" + scenario,
                                 bin + " catalog skus" + cat, bin + " topo NC24rs_v3" + cat}) {
    INFO(cmd);
    const auto r = ringsim::test::run_command(cmd);
    CAPTURE(r.output);
    CHECK(r.status == 0);
  }
  // A catalog folder that is not one is refused wherever it is given.
  const auto bad = ringsim::test::run_command(bin + " check" + scenario + " --catalog /nonexistent");
  CHECK(bad.status != 0);
  // A bad command line exits 2, as every input error does.
  CHECK(ringsim::test::run_command(bin + " predict").status == 2);
  CHECK(ringsim::test::run_command(bin + " predict --no-such-option x.yaml").status == 2);
}

TEST_CASE("cli: ringsim bench's band: the figures its collectives depend on, every size, --no-band", "[cli]") {
  const fs::path dir = fs::temp_directory_path() / "ringsim_cli_bench_band";
  fs::create_directories(dir);
  const std::string json = (dir / "bench.json").string();
  const std::string h100 = "bench " + kScenarios + "/nccl_tests_nd96isr_h100_v5.yaml ";
  const std::string two_nodes = h100 + "--set cluster.nodes=2 --set communication.strategy=ring ";
  const Run r = run_ringsim(two_nodes + "-b 8 -e 1G -f 32 --json " + json);
  REQUIRE(r.status == 0);
  CHECK_THAT(r.output, Catch::Contains("# band: busbw"));
  CHECK_THAT(r.output, Catch::Contains("16 samples of nccl_cross_socket_fraction, nccl_infiniband_fraction"));
  CHECK_THAT(r.output, !Catch::Contains("step_time_cv"));  // a collective alone computes nothing
  const auto j = nlohmann::json::parse(slurp(json));
  for (const auto& row : j["rows"]) {
    REQUIRE(row.contains("busbw_low_gbps"));
    CHECK(row["busbw_low_gbps"].get<double>() <= row["busbw_gbps"].get<double>());
    CHECK(row["busbw_high_gbps"].get<double>() >= row["busbw_gbps"].get<double>());
  }
  // at 1 GiB the ring crosses InfiniBand, whose fraction of the wire (0.85-0.98) moves it
  const auto& big = j["rows"].back();
  CHECK(big["busbw_high_gbps"].get<double>() / big["busbw_low_gbps"].get<double>() > 1.05);
  CHECK(run_ringsim(two_nodes + "-b 8 -e 1G -f 32 --json " + json).output == r.output);  // deterministic
  const Run plain = run_ringsim(two_nodes + "-b 8 -e 1G -f 32 --no-band --json " + json);
  REQUIRE(plain.status == 0);
  CHECK_THAT(plain.output, !Catch::Contains("# band"));
  CHECK_FALSE(nlohmann::json::parse(slurp(json))["rows"][0].contains("busbw_low_gbps"));
  // one node's NVLS: no uncertain figure moves it, and the table says so rather than showing a band of nothing
  const Run one = run_ringsim(h100 + "-b 1G -e 1G");
  REQUIRE(one.status == 0);
  CHECK_THAT(one.output, Catch::Contains("# band: none of the 2 uncertain figures these collectives could depend on"));
  // the band's tables count against the work limit, and the refusal says how to do without them
  const Run big_run = run_ringsim(h100 + "--set cluster.nodes=1024 -b 8 -e 8G -f 1.2");
  CHECK(big_run.status == 2);
  CHECK_THAT(big_run.output, Catch::Contains("with the band's 16 more tables"));
  CHECK_THAT(big_run.output, Catch::Contains("pass --no-band"));
}

TEST_CASE("cli: ringsim bench prints nccl-tests' columns and ringsim-real's JSON schema", "[cli]") {
  const fs::path dir = fs::temp_directory_path() / "ringsim_cli_bench";
  fs::create_directories(dir);
  const std::string json = (dir / "bench.json").string();
  const Run r = run_ringsim("bench " + kScenarios + "/nccl_tests_nd96isr_h100_v5.yaml -b 1M -e 8M -f 2 --json " + json);
  REQUIRE(r.status == 0);
  for (const char* s :
       {"size(B)", "count", "type", "redop", "time(us)", "algbw", "busbw", "8 ranks", "ND96isr_H100_v5"})
    CHECK_THAT(r.output, Catch::Contains(s));
  const auto j = nlohmann::json::parse(slurp(json));
  CHECK(j["schema"] == "ringsim.bench/1");
  CHECK(j["transport"] == "predicted");
  REQUIRE(j["rows"].size() == 4);  // 1, 2, 4, 8 MiB
  for (const auto& row : j["rows"]) {
    CHECK(row["busbw_gbps"].get<double>() == Approx(row["algbw_gbps"].get<double>() * 1.75));
    CHECK(row["count"].get<std::uint64_t>() * 4 == row["bytes"].get<std::uint64_t>());
  }
  CHECK(j["rows"][3]["busbw_gbps"].get<double>() > j["rows"][0]["busbw_gbps"].get<double>());
  // --op all_gather (nccl-tests' name): its columns, the bus factor (n - 1) / n, the count a rank holds.
  const Run ag = run_ringsim("bench " + kScenarios +
                             "/nccl_tests_nd96isr_h100_v5.yaml -b 1M -e 1M --op all_gather --json " + json);
  REQUIRE(ag.status == 0);
  CHECK_THAT(ag.output, Catch::Contains("# ringsim bench (predicted): allgather, 8 ranks"));
  CHECK_THAT(ag.output, Catch::Contains("none"));  // nccl-tests' redop for an all-gather
  const auto g = nlohmann::json::parse(slurp(json));
  CHECK(g["op"] == "allgather");
  CHECK(g["rows"][0]["op"] == "allgather");
  CHECK(g["rows"][0]["busbw_gbps"].get<double>() == Approx(g["rows"][0]["algbw_gbps"].get<double>() * 0.875));
  CHECK(g["rows"][0]["count"].get<std::uint64_t>() * 4 * 8 == g["rows"][0]["bytes"].get<std::uint64_t>());
  const Run bad_op = run_ringsim("bench " + kScenarios + "/nccl_tests_nd96isr_h100_v5.yaml --op broadcast");
  CHECK(bad_op.status != 0);
  CHECK_THAT(bad_op.output, Catch::Contains("all_gather"));
  // Bad sizes and a scenario without an allreduce: a clear error, non-zero, no file.
  fs::remove(json);
  const Run bad = run_ringsim("bench " + kScenarios + "/nccl_tests_nd96isr_h100_v5.yaml -b 8X --json " + json);
  CHECK(bad.status == 2);
  CHECK_THAT(bad.output, Catch::Contains("expected a number with an optional K, M or G suffix"));
  const Run reversed = run_ringsim("bench " + kScenarios + "/nccl_tests_nd96isr_h100_v5.yaml -b 1G -e 1M");
  CHECK(reversed.status == 2);
  const Run ps =
      run_ringsim("bench " + kScenarios +
                  "/nccl_tests_nd96isr_h100_v5.yaml --set communication.strategy=parameter_server --json " + json);
  CHECK(ps.status == 2);
  CHECK_THAT(ps.output, Catch::Contains("parameter_server runs no allreduce"));
  CHECK_FALSE(fs::exists(json));
}

TEST_CASE("cli: a calibration overlay applies only on the SKU it was measured on", "[cli]") {
  const std::string overlay = "/tmp/ringsim-test-measured-on.yaml";
  {
    std::ofstream f(overlay);
    f << "compute:\n  roofline_efficiency_scale: 0.5\nmeasured_on: ND96isr_H100_v5\n";
  }
  const std::string scenario = kScenarios + "/bert_large_bf16_plan.yaml --no-band --fidelity step";
  const Run plain = run_ringsim("predict " + scenario);
  const Run there = run_ringsim("predict " + scenario + " --calibration " + overlay);
  const Run elsewhere =
      run_ringsim("predict " + scenario + " --set cluster.sku=ND96amsr_A100_v4 --calibration " + overlay);
  REQUIRE(plain.status == 0);
  REQUIRE(there.status == 0);
  REQUIRE(elsewhere.status == 0);
  CHECK(there.output != plain.output);  // measured here: applied (half the roofline's efficiency)
  CHECK(there.output.find("left out") == std::string::npos);
  CHECK(elsewhere.output.find("calibration") != std::string::npos);
  CHECK(elsewhere.output.find("was measured on ND96isr_H100_v5, not ND96amsr_A100_v4: left out") != std::string::npos);
  const Run a100 = run_ringsim("predict " + scenario + " --set cluster.sku=ND96amsr_A100_v4");
  // left out: the A100 prediction is the uncalibrated one (its table has one row more)
  CHECK(elsewhere.output.substr(elsewhere.output.find("iteration time")) ==
        a100.output.substr(a100.output.find("iteration time")));
  {
    std::ofstream f(overlay);
    f << "measured_on: ND96isr_H100_v6\n";
  }
  const Run bad = run_ringsim("predict " + scenario + " --calibration " + overlay);
  CHECK(bad.status != 0);
  CHECK(bad.output.find("ND96isr_H100_v5") != std::string::npos);
  std::remove(overlay.c_str());
}
