// The prediction band: which figures are uncertain where, the band's runs (side by side in child processes),
// its outputs, uncertain.yaml, and plans timed at its pessimistic end.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>

#include "execute/buffer_collective.h"
#include "execute/comm_model.h"
#include "execute/estimate/child_process.h"
#include "execute/estimate/prediction_band.h"
#include "execute/simgrid/training_sim.h"
#include "load/input_error.h"
#include "load/overlay.h"
#include "load/scenario.h"
#include "load/uncertain.h"
#include "schedule/compute_evidence.h"
#include "schedule/compute_model.h"
#include "sim_test_support.h"
#include "test_support.h"

using namespace ringsim;

namespace {

using ringsim::test::one_gpu_per_node;
using ringsim::test::scenario;

}  // namespace

TEST_CASE("uncertain: a device library's host sums are in the band only where parameter servers sit on CPUs",
          "[model]") {
  const auto* p = [&]() -> const UncertainParameter* {
    for (const auto& u : test::catalog().uncertain())
      if (u.figure == "libraries.nccl.host_reduction_rate") return &u;
    return nullptr;
  }();
  REQUIRE(p != nullptr);
  const std::string common = "model: {name: vgg16, batch_per_gpu: 32}\ntraining: {epochs: 1}\n";
  const std::string node = "cluster: {sku: DGX-1-P100, nodes: 1}\n" + common;
  CHECK(
      applies_to(*p, scenario(node + "communication: {library: nccl, strategy: parameter_server}\n"), test::catalog()));
  // NCCL's allreduce sums on the GPUs; servers on the GPUs sum there too; MPI's own figure is another one.
  CHECK_FALSE(applies_to(*p, scenario(node + "communication: {library: nccl}\n"), test::catalog()));
  CHECK_FALSE(applies_to(*p,
                         scenario(node + "communication: {library: nccl, strategy: parameter_server, "
                                         "parameter_server_placement: gpus}\n"),
                         test::catalog()));
  CHECK_FALSE(
      applies_to(*p, scenario(node + "communication: {library: mpi, strategy: parameter_server}\n"), test::catalog()));
}

TEST_CASE("uncertain: the RPC rate is in the band only where parameter servers are processes of their own", "[model]") {
  const auto* p = [&]() -> const UncertainParameter* {
    for (const auto& u : test::catalog().uncertain())
      if (u.figure == "libraries.nccl.rpc_rate") return &u;
    return nullptr;
  }();
  REQUIRE(p != nullptr);
  const std::string node =
      "cluster: {sku: AWS-p2.8xlarge, nodes: 2}\nmodel: {name: resnet50, batch_per_gpu: 32}\n"
      "training: {epochs: 1}\n";
  CHECK(applies_to(*p,
                   scenario(node + "communication: {strategy: parameter_server, parameter_server_transport: rpc}\n"),
                   test::catalog()));
  CHECK_FALSE(applies_to(*p, scenario(node + "communication: {strategy: parameter_server}\n"), test::catalog()));
  CHECK_FALSE(applies_to(*p, scenario(node + "communication: {strategy: ring}\n"), test::catalog()));
}

TEST_CASE("band: it holds the prediction, and a calibration that measures a figure narrows it", "[model]") {
  // Two NC24r nodes over Ethernet with NCCL: the socket transport's fraction and the VMs' Ethernet rate are
  // assumptions, so the band is wide and below the prediction.
  const Scenario s = scenario(
      "cluster: {sku: NC24r, nodes: 2, fabric: ethernet}\nmodel: {name: resnet50, batch_per_gpu: 32}\n"
      "training: {epochs: 1}\ncommunication: {library: nccl}\n");
  const Catalog& catalog = test::catalog();
  const BandRatios band = band_ratios(catalog, s);
  CHECK(band.samples == kBandSamples);
  CHECK(std::count(band.parameters.begin(), band.parameters.end(), "nccl_socket_fraction") == 1);
  CHECK(std::count(band.parameters.begin(), band.parameters.end(), "mpi_host_reduction_rate") == 0);  // not MPI
  Prediction p;
  p.images_per_sec = 100;
  p.time_to_train_s = 1000;
  apply_band(band, p);
  CHECK(p.images_per_sec_low <= 100);
  CHECK(p.images_per_sec_high >= 100);
  CHECK(p.time_to_train_s_low <= 1000);
  CHECK(p.time_to_train_s_high >= 1000);
  CHECK(p.images_per_sec_low < 95);  // the network's figures matter here
  // The single-GPU rate came from one GPU, and the GPUs' spread is uncertain: where that GPU stands is too.
  CHECK(std::count(band.parameters.begin(), band.parameters.end(), "reference_gpu_score") == 1);
  CHECK(std::count(band.parameters.begin(), band.parameters.end(), "nccl_kernel_channels") == 1);
  // The same figures measured (a calibration overlay sets them): only the rest stays uncertain.
  CatalogOverlay measured;
  measured.libraries["nccl"].paths["ethernet"].bandwidth_fraction = 0.5;
  measured.skus["NC24r"].ethernet_bandwidth = 10e9 / 8;
  const BandRatios narrower = band_ratios(catalog, s, measured);
  CHECK(std::count(narrower.parameters.begin(), narrower.parameters.end(), "nccl_socket_fraction") == 0);
  CHECK(std::count(narrower.parameters.begin(), narrower.parameters.end(), "azure_ethernet_rate") == 0);
  CHECK(narrower.rate_high / narrower.rate_low < band.rate_high / band.rate_low);
  // Fitted to runs instead (calibrate --runs), the figures keep what the runs leave them: sampled over those
  // narrower ranges, between the band of nothing measured and the band of both measured exactly.
  CatalogOverlay fitted = measured;
  fitted.fitted_ranges["nccl_socket_fraction"] = {0.45, 0.55};
  fitted.fitted_ranges["azure_ethernet_rate"] = {0.9, 1.1};  // factors of the figure the overlay sets
  const BandRatios ranged = band_ratios(catalog, s, fitted);
  CHECK(std::count(ranged.parameters.begin(), ranged.parameters.end(), "nccl_socket_fraction") == 1);
  CHECK(ranged.rate_high / ranged.rate_low < band.rate_high / band.rate_low);
  CHECK(ranged.rate_high / ranged.rate_low > narrower.rate_high / narrower.rate_low);
  // Runs that measured the GPUs' spread measured the run's GPUs: the reference GPU leaves the band too,
  // whether the spread is set exactly or over a fitted range.
  measured.compute.gpu_to_gpu_cv = 0.015;
  const BandRatios gpus_measured = band_ratios(catalog, s, measured);
  CHECK(std::count(gpus_measured.parameters.begin(), gpus_measured.parameters.end(), "reference_gpu_score") == 0);
  measured.fitted_ranges["gpu_to_gpu_cv"] = {0.01, 0.02};
  const BandRatios gpus_fitted = band_ratios(catalog, s, measured);
  CHECK(std::count(gpus_fitted.parameters.begin(), gpus_fitted.parameters.end(), "gpu_to_gpu_cv") == 1);
  CHECK(std::count(gpus_fitted.parameters.begin(), gpus_fitted.parameters.end(), "reference_gpu_score") == 0);
  // One node of NVLink GPUs, compute-bound: the reference GPU alone spreads the band both ways by more than
  // one standard deviation of the catalog's spread.
  const BandRatios node = band_ratios(catalog, scenario("cluster: {sku: DGX-1-P100, nodes: 1}\n"
                                                        "model: {name: resnet50, batch_per_gpu: 64}\n"
                                                        "training: {epochs: 1}\ncommunication: {library: nccl}\n"));
  CHECK(node.rate_low < 1 - catalog.compute().gpu_to_gpu_cv);
  CHECK(node.rate_high > 1 + 0.5 * catalog.compute().gpu_to_gpu_cv);
  // One GPU with a given rate: nothing uncertain takes part, no band.
  CHECK(band_ratios(catalog, scenario("cluster: {sku: NC24rs_v3, nodes: 1, gpus_per_node: 1}\n"
                                      "model: {name: resnet50, batch_per_gpu: 64, images_per_sec_single_gpu: 300}\n"
                                      "training: {epochs: 1}\n"))
            .samples == 0);
}

TEST_CASE(
    "roofline efficiency: a rate from the roofline is as uncertain as the stacks behind it, a measured one is not",
    "[model]") {
  Catalog c = test::catalog();
  const Scenario roofline = one_gpu_per_node(1);  // a V100 and ResNet-50 at batch 64: no measured row
  const Scenario measured = scenario(
      "cluster: {sku: DGX-1-P100, nodes: 1, gpus_per_node: 1}\n"
      "model: {name: resnet50, batch_per_gpu: 64}\ntraining: {epochs: 1}\n");
  REQUIRE(build_compute_model(c, roofline, false).source == "roofline");
  REQUIRE(build_compute_model(c, measured, false).source == "measured");
  const auto pass = [&](const Scenario& s) {
    const ComputeModel m = build_compute_model(c, s, false);
    return m.forward_s + m.backward_s;
  };
  const double roofline_before = pass(roofline), measured_before = pass(measured);
  CatalogOverlay o;
  o.compute.roofline_efficiency_scale = 0.5;
  c.apply(o);
  CHECK(pass(roofline) == Approx(2 * roofline_before));
  CHECK(pass(measured) == Approx(measured_before));
  // An overlay file carries it.
  const std::string file = "/tmp/ringsim_roofline_" + std::to_string(::getpid()) + ".yaml";
  std::ofstream(file) << o.to_yaml();
  CHECK(test::catalog().read_overlay(file).compute.roofline_efficiency_scale == Approx(0.5));
  std::remove(file.c_str());
  // The band samples it for the roofline's rate only. A V100's is drawn from the public rates nearest it
  // (schedule/compute_evidence.h): the roofline's ratios to the V100s', P100s' and A100s' ResNet-50 rates.
  const BandRatios band = band_ratios(test::catalog(), roofline);
  CHECK(band.parameters == std::vector<std::string>{"roofline_efficiency"});
  CHECK(band.compute_evidence.find("V100-SXM2-16GB resnet50 b256 fp32") != std::string::npos);
  CHECK(band.rate_low > 0.6);
  CHECK(band.rate_high < 1.5);
  CHECK(band.rate_high > 1);
  // An H100 has no rate of its generation on the tuned stack: one GPU, where nothing else is uncertain, spreads
  // over the catalog's range, mostly below (a tuned stack is the catalog's figure, most others reach less).
  const Scenario h100 = scenario(
      "cluster: {sku: ND96isr_H100_v5, nodes: 1, gpus_per_node: 1}\n"
      "model: {name: resnet50, batch_per_gpu: 64}\ntraining: {epochs: 1}\n");
  const BandRatios wide = band_ratios(test::catalog(), h100);
  CHECK(wide.parameters == std::vector<std::string>{"roofline_efficiency"});
  CHECK(wide.compute_evidence.find("no public CNN rates on the tuned stack of a GPU of H100-SXM5-80GB's generation") !=
        std::string::npos);
  // The ends are the extreme samples', Halton's 1/32 and 15/16 along the range, log-uniform over 0.25-1.2
  // (0.263 and 1.088), moved a little towards 1: the optimizer's step, which the figure does not scale.
  CHECK(wide.rate_low > 0.26);
  CHECK(wide.rate_low < 0.3);
  CHECK(wide.rate_high > 1.05);
  CHECK(wide.rate_high <= 1.2);
  CHECK(band_ratios(test::catalog(), measured).samples == 0);
}

TEST_CASE("compute evidence: the nearest public rates of the stack and family, or none where extrapolated", "[model]") {
  const Catalog& c = test::catalog();
  std::vector<const SingleGpuRate*> pool;
  for (const auto& r : c.single_gpu_rates()) pool.push_back(&r);
  REQUIRE(pool.size() >= 40);
  std::string why;
  // A V100 PCIe's ResNet-50: the V100 SXM2's rates first (the same generation), then other generations'
  // ResNet-50s before other models; all CNNs on the tuned stack.
  const SingleGpuRate v100{"V100-PCIe-16GB", "resnet50", "fp32", "tuned", "", 64, 1};
  const auto near = nearest_rates(c, v100, pool, &why);
  REQUIRE(near.size() == kNearestRates);
  CHECK(near[0]->gpu == "V100-SXM2-16GB");
  CHECK(near[0]->precision == "fp32");
  CHECK(near[1]->gpu == "V100-SXM2-16GB");
  CHECK(near[2]->model == "resnet50");
  for (const auto* r : near) {
    CHECK(r->stack == "tuned");
    CHECK(!c.model(r->model).transformer());
    CHECK(r->gpu != "K80");  // three generations away, behind the P100s and A100s
  }
  // None of the GPU's generation: an H100 on the tuned stack, an MI300X (no CUDA generation) on the eager one.
  CHECK(nearest_rates(c, {"H100-SXM5-80GB", "resnet50", "bf16", "tuned", "", 256, 1}, pool, &why).empty());
  CHECK(why.find("generation (compute capability 9.x)") != std::string::npos);
  CHECK(nearest_rates(c, {"MI300X", "bert_large", "bf16", "eager", "", 64, 128}, pool, &why).empty());
  CHECK(nearest_rates(c, {"H200-SXM-141GB", "bert_large", "bf16", "eager", "", 64, 128}, pool, &why).size() ==
        kNearestRates);
  // Too few: the tuned stack's two transformer rates.
  CHECK(nearest_rates(c, {"A100-SXM4-80GB", "bert_large", "bf16", "tuned", "", 64, 512}, pool, &why).empty());
  CHECK(why == "2 public transformer rates on the tuned stack, fewer than 4");
}

TEST_CASE("compute evidence: a 90 % prediction interval from the nearest rates' ratios", "[model]") {
  // No spread, no width; otherwise log-symmetric about the geometric mean and wider than the ratios.
  const auto [a, b] = prediction_interval({1.2, 1.2, 1.2, 1.2});
  CHECK(a == Approx(1.2));
  CHECK(b == Approx(1.2));
  const std::vector<double> r{0.8, 0.9, 1.0, 1.1, 1.25};
  const auto [lo, hi] = prediction_interval(r);
  double mean = 0;
  for (const double x : r) mean += std::log(x) / r.size();
  CHECK(std::log(lo) + std::log(hi) == Approx(2 * mean));
  CHECK(lo < 0.8);
  CHECK(hi > 1.25);
  // t(0.95, 4) = 2.1318: the half-width in logs is t x sd x sqrt(1 + 1/5)
  double ss = 0;
  for (const double x : r) ss += std::pow(std::log(x) - mean, 2);
  CHECK(std::log(hi) - mean == Approx(2.1318 * std::sqrt(ss / 4) * std::sqrt(1.2)).epsilon(1e-3));
}

TEST_CASE("children: side by side, results in the tasks' order, failures and RINGSIM_JOBS reported", "[model]") {
  std::vector<std::function<std::string()>> tasks;
  for (int i = 0; i < 7; ++i)
    tasks.push_back([i] {
      usleep(static_cast<useconds_t>((7 - i) * 2000));                // the later tasks end first
      return std::string(70000 * (i == 3), 'x') + std::to_string(i);  // one beyond a pipe's buffer
    });
  for (const char* jobs : {"1", "3", "16"}) {
    CAPTURE(jobs);
    ::setenv("RINGSIM_JOBS", jobs, 1);
    CHECK(child_jobs() == std::stoi(jobs));
    const std::vector<std::string> out = run_in_children(tasks);
    REQUIRE(out.size() == 7);
    for (std::size_t i = 0; i < 7; ++i) CHECK(out[i].substr(out[i].size() - 1) == std::to_string(i));
    CHECK(out[3].size() == 70001);
  }
  tasks[5] = []() -> std::string { throw std::runtime_error("task five failed"); };
  CHECK_THROWS_WITH(run_in_children(tasks), Catch::Contains("task five failed"));
  for (const char* bad : {"0", "two", "3x", ""}) {
    ::setenv("RINGSIM_JOBS", bad, 1);
    CHECK_THROWS_WITH(child_jobs(),
                      Catch::Contains("RINGSIM_JOBS=" + std::string(bad) + ": error: expected a whole number"));
  }
  ::unsetenv("RINGSIM_JOBS");
  CHECK(child_jobs() >= 1);
}

TEST_CASE("band: the same with its predictions one at a time and side by side", "[model]") {
  const Scenario s = scenario(
      "cluster: {sku: NC24r, nodes: 2, fabric: ethernet}\nmodel: {name: resnet50, batch_per_gpu: 32}\n"
      "training: {epochs: 1}\ncommunication: {library: nccl}\n");
  ::setenv("RINGSIM_JOBS", "1", 1);
  const BandRatios one = band_ratios(test::catalog(), s);
  ::setenv("RINGSIM_JOBS", "4", 1);
  const BandRatios four = band_ratios(test::catalog(), s);
  ::unsetenv("RINGSIM_JOBS");
  CHECK(one.rate_low == four.rate_low);
  CHECK(one.rate_high == four.rate_high);
  CHECK(one.time_high == four.time_high);
  CHECK(one.rate_low < 1);
}

TEST_CASE("band: given the point prepared, its samples run alone and the point is their run at the catalog's own",
          "[model]") {
  for (const auto& [text, fidelity] :
       {std::pair{"communication: {library: nccl}\n", Fidelity::Step},
        std::pair{"communication: {library: nccl, concurrent_collectives: unlimited}\n", Fidelity::Flow}}) {
    CAPTURE(text);
    const Scenario s = scenario(
        "cluster: {sku: NC24r, nodes: 2, fabric: ethernet}\nmodel: {name: resnet50, "
        "batch_per_gpu: 32}\ntraining: {epochs: 1}\n" +
        std::string(text));
    REQUIRE(band_runs_as_point(s, fidelity));
    const BandRatios alone = band_ratios(test::catalog(), s, {}, fidelity);
    const SharedLayouts shared;
    PreparedPrediction point(test::catalog(), s, fidelity);
    BandRatios given = band_ratios(test::catalog(), s, {}, fidelity, &point);
    CHECK(given.pending.size() == kBandSamples);  // the catalog's own figures' run left to the point
    const std::string rates = run_in_child([&] {
      const Prediction p = point.run();
      char b[80];
      std::snprintf(b, sizeof b, "%.17g %.17g", p.images_per_sec, p.time_to_train_s);
      return std::string(b);
    });
    const double rate = std::stod(rates), time = std::stod(rates.substr(rates.find(' ')));
    relate_band(given, rate, time);
    CHECK(given.pending.empty());
    CHECK(given.rate_low == alone.rate_low);  // the same runs, the same figures
    CHECK(given.rate_high == alone.rate_high);
    CHECK(given.time_low == alone.time_low);
    CHECK(given.time_high == alone.time_high);
    CHECK(given.rate_low < 1);
  }
  const Scenario flow_point = scenario(
      "cluster: {sku: NC24r, nodes: 2, fabric: ethernet}\nmodel: {name: resnet50, batch_per_gpu: 32}\n"
      "training: {epochs: 1}\ncommunication: {library: nccl}\n");
  CHECK_FALSE(band_runs_as_point(flow_point, Fidelity::Flow));  // its band samples the step fidelity
  const SharedLayouts shared;
  const PreparedPrediction point(test::catalog(), flow_point, Fidelity::Flow);
  CHECK_THROWS_AS(band_ratios(test::catalog(), flow_point, {}, Fidelity::Flow, &point), std::logic_error);
}

TEST_CASE("band: its samples share the layout of the catalog's own figures, as NCCL tunes from its own view",
          "[model]") {
  const Catalog& c = test::catalog();
  const Scenario s = load_scenario(std::string(RINGSIM_TEST_SCENARIOS) + "/nccl_tests_nd96isr_h100_v5.yaml", c,
                                   {parse_override("cluster.nodes=2"), parse_override("communication.strategy=auto")});
  Catalog slow = c;  // an InfiniBand that reaches half of what the catalog says
  for (const auto& p : c.uncertain())
    if (p.figure == "libraries.nccl.paths.infiniband.bandwidth_fraction") slow.apply(uncertain_overlay(c, p, 0.5));
  auto bus_bandwidth = [&](const Catalog& catalog) {
    const Topology topo = Topology::build(catalog, cluster_shape(s.cluster));
    CommModel cm(catalog, s, topo);
    return buffer_collective_layout(s, cm.data_space(), cm).choice.value().bus_bandwidth;
  };
  const double own = bus_bandwidth(c), slower = bus_bandwidth(slow);
  CHECK(slower < 0.8 * own);
  {
    const SharedLayouts shared;
    CHECK(bus_bandwidth(c) == own);
    CHECK(bus_bandwidth(slow) == own);  // the first layout made, not the sample's own
  }
  CHECK(bus_bandwidth(slow) == slower);  // none shared once the last is gone
}

TEST_CASE("band: where the flow fidelity runs collectives at once, the band samples it too", "[model]") {
  const std::string text =
      "cluster: {sku: NC24r, nodes: 2, fabric: ethernet}\nmodel: {name: resnet50, batch_per_gpu: 32}\n"
      "training: {epochs: 1}\ncommunication: {library: nccl, concurrent_collectives: unlimited}\n";
  const Scenario at_once = scenario(text);
  const Scenario one_at_a_time = scenario(
      "cluster: {sku: NC24r, nodes: 2, fabric: ethernet}\nmodel: {name: resnet50, batch_per_gpu: 32}\n"
      "training: {epochs: 1}\ncommunication: {library: nccl}\n");
  CHECK_FALSE(band_samples_step(at_once, Fidelity::Flow));
  CHECK(band_samples_step(at_once, Fidelity::Step));  // the step fidelity runs one at a time anyway
  CHECK(band_samples_step(one_at_a_time, Fidelity::Flow));
  // The links the collectives share make the network's figures move the prediction otherwise than one
  // collective at a time: the two bands differ.
  const BandRatios flow = band_ratios(test::catalog(), at_once, {}, Fidelity::Flow);
  const BandRatios step = band_ratios(test::catalog(), at_once, {}, Fidelity::Step);
  CHECK(flow.samples == kBandSamples);
  CHECK(std::fabs(flow.rate_low / step.rate_low - 1) > 0.01);
  CHECK(flow.rate_low < 1);
}

TEST_CASE("band: predict writes it in the JSON and the table, and --no-band leaves it out", "[model]") {
  const std::string file = std::string(RINGSIM_TEST_SCENARIOS) + "/resnet50_imagenet_nccl_tcp_4x_nc24s_v3.yaml";
  const std::string json = "/tmp/ringsim_band_" + std::to_string(::getpid()) + ".json";
  double point = 0;  // with the band first
  for (const bool band : {true, false}) {
    CAPTURE(band);
    const test::CommandResult r =
        test::run_command(std::string(RINGSIM_TEST_BINARY) + " --catalog " + RINGSIM_TEST_CATALOG + " predict " + file +
                          (band ? "" : " --no-band") + " --json " + json);
    REQUIRE(r.status == 0);
    std::ifstream in(json);
    const auto j = nlohmann::json::parse(in);
    CHECK(j.contains("images_per_sec_low") == band);
    // The point runs on the layout the band's samples shared (SharedLayouts): the same as without them.
    if (band) point = j["iteration_time_s"].get<double>();
    if (!band) CHECK(j["iteration_time_s"].get<double>() == point);
    CHECK(j.contains("time_to_train_s_high") == band);
    CHECK((r.output.find("band from") != std::string::npos) == band);
    if (band) CHECK(j["images_per_sec_low"].get<double>() < j["images_per_sec"].get<double>());
    // The scenario's V100 rate is the roofline's: the table says what takes that figure out.
    CHECK((r.output.find("the single-GPU rate is the roofline's") != std::string::npos) == band);
  }
  std::remove(json.c_str());
}

TEST_CASE("uncertain.yaml: a figure that is not one is refused with file, line and column", "[catalog]") {
  const std::filesystem::path dir = "/tmp/ringsim_uncertain_" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  for (const auto& e : std::filesystem::directory_iterator(RINGSIM_TEST_CATALOG))
    std::filesystem::create_symlink(std::filesystem::absolute(e.path()), dir / e.path().filename());
  std::filesystem::remove(dir / "uncertain.yaml");
  std::ofstream(dir / "uncertain.yaml") << "parameters:\n  x:\n    figure: libraries.ncl.host_reduction_rate\n"
                                           "    range: [1 GB/s, 2 GB/s]\n    source: test\n";
  std::string msg = test::input_error_of([&] { Catalog::load(dir.string()); });
  CHECK_THAT(msg, Catch::Contains("uncertain.yaml:3:13"));
  CHECK_THAT(msg, Catch::Contains("did you mean nccl"));
  std::ofstream(dir / "uncertain.yaml") << "parameters:\n  x:\n    figure: compute.step_time_cv\n"
                                           "    range: [0.02, 0.01]\n    source: test\n";
  CHECK_THAT(test::input_error_of([&] { Catalog::load(dir.string()); }), Catch::Contains("below its LOW"));
  std::filesystem::remove_all(dir);
}

TEST_CASE(
    "plan --confidence high: plans are timed at the pessimistic end of their band, and a deadline met only "
    "at the optimistic end is flagged",
    "[plan]") {
  const std::string out = "/tmp/ringsim_plan_confidence_" + std::to_string(::getpid()) + ".json";
  const auto plan = [&](const std::string& args, int status = 0) {  // 1: no configuration meets the goal
    const std::string cmd = std::string(RINGSIM_TEST_BINARY) + " --catalog " + RINGSIM_TEST_CATALOG + " plan " +
                            RINGSIM_TEST_CATALOG + "/../scenarios/resnet50_imagenet_plan.yaml --skus NC24r --nodes 8 " +
                            "--strategies ring --fidelity step --json " + out + " " + args + " > /dev/null 2>&1";
    const int rc = std::system(cmd.c_str());
    REQUIRE(WIFEXITED(rc));
    REQUIRE(WEXITSTATUS(rc) == status);
    std::ifstream in(out);
    return nlohmann::json::parse(in);
  };
  const auto typical = plan("--deadline 1000d");
  const auto& t = typical["configurations"][0];
  CHECK(typical["goal"]["confidence"] == "typical");
  CHECK(t["time_to_train_s"] == t["predicted_time_to_train_s"]);
  CHECK(t["time_to_train_s_high"].get<double>() > t["time_to_train_s"].get<double>());  // K80s over Ethernet
  const auto high = plan("--deadline 1000d --confidence high");
  CHECK(high["goal"]["confidence"] == "high");
  CHECK(high["configurations"][0]["time_to_train_s"] == t["time_to_train_s_high"]);
  CHECK(high["configurations"][0]["cost_usd"].get<double>() > t["cost_usd"].get<double>());
  // The rate shown beside that time is the band's low end too; the prediction's is kept beside it.
  CHECK(t["images_per_sec"] == t["predicted_images_per_sec"]);
  CHECK(high["configurations"][0]["images_per_sec"].get<double>() < t["images_per_sec"].get<double>());
  CHECK(high["configurations"][0]["predicted_images_per_sec"] == t["images_per_sec"]);
  // A deadline between the prediction and its pessimistic end.
  const double between = (t["time_to_train_s"].get<double>() + t["time_to_train_s_high"].get<double>()) / 2;
  const auto flagged = plan("--deadline " + std::to_string(static_cast<long long>(between)) + "s");
  bool flag = false;
  for (const auto& f : flagged["flags"]) flag = flag || f["flag"] == "deadline_at_optimistic_end";
  CHECK(flag);
  // At the pessimistic end every configuration is banded and timed there, those that miss a deadline at
  // their prediction too: none is ranked at its prediction beside others at their band's end.
  const auto missed =
      plan("--deadline " + std::to_string(static_cast<long long>(between / 4)) + "s --confidence high", 1);
  REQUIRE(!missed["configurations"].empty());
  for (const auto& c : missed["configurations"]) {
    REQUIRE(!c["time_to_train_s_high"].is_null());
    CHECK(c["time_to_train_s"] == c["time_to_train_s_high"]);
  }
  std::remove(out.c_str());
}

TEST_CASE("model.stack: the operator model prices the step, and its leave-one-out error bands it", "[model]") {
  const std::string base =
      "cluster: {sku: ND96amsr_A100_v4, nodes: 1}\ntraining: {epochs: 1}\n"
      "model: {name: resnet50, batch_per_gpu: 256, precision: amp";
  const Catalog& catalog = test::catalog();
  // The catalog's measured row (NVIDIA's tuned container) answers for the default stack, not for eager PyTorch.
  CHECK(build_compute_model(catalog, scenario(base + "}\n")).source == "measured");
  CHECK(build_compute_model(catalog, scenario(base + ", stack: tuned}\n")).source == "measured");
  const Scenario eager = scenario(base + ", stack: eager}\n");
  const ComputeModel cm = build_compute_model(catalog, eager);
  CHECK(cm.source == "operators");
  CHECK(cm.source_detail.find("eager stack") != std::string::npos);
  double layers = 0;
  for (const auto& l : cm.layers) layers += l.forward_s + l.backward_s;
  CHECK(layers == Approx(cm.forward_s + cm.backward_s - cm.accumulation_s));
  // its band samples the operator model's error, not the roofline's efficiency
  const BandRatios band = band_ratios(catalog, scenario(base + ", stack: eager}\n"));
  CHECK(std::count(band.parameters.begin(), band.parameters.end(), "operator_model") == 1);
  CHECK(std::count(band.parameters.begin(), band.parameters.end(), "roofline_efficiency") == 0);
  CHECK(band.rate_low < 0.8);  // uncertain.yaml operator_model [0.74, 1.5], as time over the rate
  CHECK(band.rate_high > 1.25);
  // no H100 or H200 here: the eager stack's figures come from other GPU types, and the detail says so
  CHECK(cm.source_detail.find("no single-GPU rate of A100-SXM4-80GB on this stack: extrapolated") != std::string::npos);
  const ComputeModel h100 = build_compute_model(
      catalog, scenario("cluster: {sku: ND96isr_H100_v5, nodes: 1}\ntraining: {epochs: 1}\n"
                        "model: {name: bert_base, batch_per_gpu: 64, precision: bf16, stack: eager}\n"));
  CHECK(h100.source_detail.find("extrapolated") == std::string::npos);
  // One H100 on the eager stack has Hopper rates near it: the band is drawn from their errors, narrower than
  // the catalog's range (the same GPU's rates first: its BERTs, GPT-2s and ViTs come out 0.86-1.34).
  const Scenario one_h100 = scenario(
      "cluster: {sku: ND96isr_H100_v5, nodes: 1, gpus_per_node: 1}\ntraining: {epochs: 1}\n"
      "model: {name: bert_large, batch_per_gpu: 64, seq_len: 128, precision: bf16, stack: eager}\n");
  const BandRatios near = band_ratios(catalog, one_h100);
  // and the fused attention's rate, which rates at 128-1,024 tokens hardly see (compute.yaml [fa2], [fa3])
  CHECK(near.parameters == std::vector<std::string>{"operator_model", "attention"});
  CHECK(near.compute_evidence.find("the operator model gives the 8 nearest public rates on the eager stack") == 0);
  CHECK(near.compute_evidence.find("H100-SXM5-80GB bert_large b64 tf32") != std::string::npos);
  CHECK(near.compute_evidence.find("H200") == std::string::npos);
  CHECK(near.rate_low > 0.7);
  CHECK(near.rate_high < 1.3);
  CHECK(near.rate_high / near.rate_low < band.rate_high / band.rate_low);
  const std::string err = test::input_error_of([&] { scenario(base + ", stack: eagr}\n"); });
  CHECK(err.find("eager") != std::string::npos);
}
