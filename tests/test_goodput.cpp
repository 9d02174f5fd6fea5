// Goodput (execute/goodput): the closed form against Daly's and the Monte Carlo, the interval `auto`
// chooses, the checkpoint's cost, the reliability figures a scenario resolves, and what it refuses.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "execute/goodput/goodput.h"
#include "load/scenario.h"
#include "test_support.h"

using namespace ringsim;

namespace {

constexpr double kHour = 3600, kDay = 86400;

// Daly (2006), synchronous checkpoints, one restart time: n x M e^(R/M) (e^((tau + C)/M) - 1).
double daly(double work, double n, double mtbf, double restart, double cost) {
  return n * mtbf * std::exp(restart / mtbf) * std::expm1((work / n + cost) / mtbf);
}

// Ten jobs from a one-node week to a 16,384-GPU month, synchronous and asynchronous, with and without
// interruptions that wait for a node.
std::vector<std::pair<InterruptionModel, std::int64_t>> ten_jobs() {
  std::vector<std::pair<InterruptionModel, std::int64_t>> jobs;
  auto add = [&](double work, double mtbf, double restart, double wait, double p, double stall, double commit,
                 double interval) {
    InterruptionModel m{work, 1 / mtbf, restart, wait, p, stall, commit};
    jobs.push_back({m, std::max<std::int64_t>(1, static_cast<std::int64_t>(work / interval))});
  };
  add(7 * kDay, 50 * kDay, 600, 0, 0, 10, 0, kHour);             // a node, rare failures
  add(30 * kDay, 3 * kHour, 600, 0, 0, 113, 0, 1500);            // 2,048 nodes, blob
  add(30 * kDay, 3 * kHour, 600, 1800, 0.5, 113, 0, 1500);       // no spare nodes
  add(30 * kDay, 3 * kHour, 600, 1800, 0.05, 0.3, 113, 1200);    // asynchronous
  add(2 * kDay, 1 * kHour, 300, 0, 0, 30, 0, 600);               // failures every hour
  add(10 * kDay, 6 * kHour, 1200, 7200, 0.3, 5, 60, 3 * kHour);  // long interval, async
  add(1 * kDay, 20 * kHour, 600, 0, 0, 1, 0, 30 * 60);           // a short job
  add(14 * kDay, 2 * kHour, 900, 1800, 1, 60, 0, 45 * 60);       // every interruption waits
  add(5 * kDay, 0.5 * kHour, 120, 0, 0, 5, 20, 300);             // evictions every half hour
  add(3 * kDay, 12 * kHour, 600, 3600, 0.2, 200, 0, 8 * kHour);  // one checkpoint in 8 hours
  return jobs;
}

Scenario llama(const std::string& extra = "", const std::string& cluster = ", nodes: 4", const std::string& comm = "") {
  return load_scenario_text("cluster: {sku: ND96isr_H100_v5" + cluster +
                                "}\nmodel: {name: llama2_7b, batch_per_gpu: 1, precision: bf16, seq_len: 2048}\n"
                                "training: {epochs: 1}\ncommunication: {framework: fsdp" +
                                comm + "}\n" + extra,
                            "goodput.yaml", test::catalog());
}

}  // namespace

TEST_CASE("goodput: synchronous checkpoints are Daly's expected time, none lost without interruptions", "[goodput]") {
  const double work = 30 * kDay, mtbf = 3 * kHour, restart = 600, cost = 113;
  const InterruptionModel m{work, 1 / mtbf, restart, 0, 0, cost, 0};
  for (std::int64_t n : {1, 10, 1728, 20000})
    CHECK(expected_wall_s(m, n) == Approx(daly(work, static_cast<double>(n), mtbf, restart, cost)).epsilon(1e-9));
  const InterruptionModel none{work, 0, restart, 0, 0, cost, 40};
  CHECK(expected_wall_s(none, 100) == Approx(work + 100 * cost + 40));
}

TEST_CASE("goodput: the Monte Carlo's mean is the closed form's within 1 % on ten jobs", "[goodput]") {
  for (const auto& [m, n] : ten_jobs()) {
    const double closed = expected_wall_s(m, n);
    const MonteCarloRuns mc = simulate_runs(m, n, 10000, 42);
    INFO("work " << m.work_s << " s, mtbf " << 1 / m.rate << " s, segments " << n);
    CHECK(mc.mean_s == Approx(closed).epsilon(0.01));
    CHECK(mc.mean_interruptions == Approx(m.rate * closed).epsilon(0.02).margin(0.05));
    CHECK(mc.p10_s <= mc.mean_s);
    CHECK(mc.p90_s >= mc.p10_s);
  }
}

TEST_CASE("goodput: the Monte Carlo is deterministic for a seed", "[goodput]") {
  const auto [m, n] = ten_jobs()[2];
  const MonteCarloRuns a = simulate_runs(m, n, 500, 7), b = simulate_runs(m, n, 500, 7);
  CHECK(a.mean_s == b.mean_s);
  CHECK(a.p90_s == b.p90_s);
  CHECK(simulate_runs(m, n, 500, 8).mean_s != a.mean_s);
}

TEST_CASE("goodput: auto never loses to a fixed interval", "[goodput]") {
  for (const auto& [m, fixed] : ten_jobs()) {
    const double shortest = std::max(m.commit_s, 1.0);
    const std::int64_t best = best_segments(m, shortest);
    const double at_best = expected_wall_s(m, best);
    for (double interval = shortest; interval < m.work_s * 2; interval *= 1.07) {
      const auto n = std::max<std::int64_t>(1, static_cast<std::int64_t>(std::floor(m.work_s / interval)));
      INFO("interval " << interval << " s");
      CHECK(at_best <= expected_wall_s(m, n) * (1 + 1e-12));
    }
  }
}

TEST_CASE("goodput: the interval chosen is Young's and Daly's where checkpoints are cheap", "[goodput]") {
  // Young (1974): sqrt(2 C M); Daly (2006) adds higher-order terms and subtracts C. Both are first-order in
  // C / M; at C / M of 1e-3 and 1e-2 the exact optimum lies within a few per cent of them.
  for (double cost : {10.0, 113.0}) {
    const double mtbf = 3 * kHour, work = 60 * kDay;
    const InterruptionModel m{work, 1 / mtbf, 600, 0, 0, cost, 0};
    const double chosen = work / static_cast<double>(best_segments(m, cost));
    const double young = std::sqrt(2 * cost * mtbf);
    const double x = cost / (2 * mtbf);
    const double daly = young * (1 + std::sqrt(x) / 3 + x / 9) - cost;
    CHECK(chosen == Approx(daly).epsilon(0.03));
    CHECK(chosen == Approx(young).epsilon(0.06));
    // The overhead at the optimum, first order: sqrt(2 C / M) of checkpointing and rework, R / M restarts.
    const double ettr = work / expected_wall_s(m, best_segments(m, cost));
    if (cost < 100) CHECK(1 / ettr - 1 == Approx(std::sqrt(2 * cost / mtbf) + 600 / mtbf).epsilon(0.1));
  }
}

TEST_CASE("goodput: Erlang's loss formula for spare nodes", "[goodput]") {
  CHECK(no_spare_probability(0, 5, 1) == 1);
  CHECK(no_spare_probability(1, 1, 1) == Approx(0.5));
  CHECK(no_spare_probability(2, 1, 1) == Approx(0.2));
  const double a = 10.0 / kDay * 1800;  // ten a day, each holding a spare for half an hour
  CHECK(no_spare_probability(4, 10.0 / kDay, 1800) ==
        Approx(std::pow(a, 4) / 24 / (1 + a + a * a / 2 + std::pow(a, 3) / 6 + std::pow(a, 4) / 24)));
}

TEST_CASE("goodput: the checkpoint is the FP32 parameters and Adam's state, one shard each writer", "[goodput]") {
  const Catalog& c = test::catalog();
  const double params = static_cast<double>(c.model("llama2_7b").total_params);
  const Scenario full = llama();
  const CheckpointCost cp = checkpoint_cost(c, full, 0.5);
  CHECK(cp.bytes == Approx(params * 12));
  CHECK(cp.writers == 32);
  CHECK(cp.writer_bytes == Approx(params * 12 / 32));
  CHECK(cp.write_bandwidth == Approx(60e9 / 8));  // one storage account's ingress, below 4 nodes' NICs
  CHECK(cp.write_s == Approx(cp.bytes / cp.write_bandwidth));
  const Scenario ddp = llama("", ", nodes: 4", ", sharding: no_shard");
  CHECK(checkpoint_cost(c, ddp, 0.5).writers == 1);
  // One node writes alone through its 80 Gb/s NIC to a file system faster than that.
  const Scenario lustre =
      llama("reliability: {checkpoint_storage: managed_lustre}\n", ", nodes: 4", ", sharding: no_shard");
  const CheckpointCost one = checkpoint_cost(c, lustre, 0.5);
  CHECK(one.write_bandwidth == Approx(80e9 / 8));
  CHECK(one.limit.find("Ethernet") != std::string::npos);
}

TEST_CASE("goodput: the scenario's reliability figures, the catalog's by default", "[goodput]") {
  const Scenario s = llama();
  REQUIRE(s.reliability.modelled);
  CHECK(s.reliability.failures_per_1000_node_days.value == Approx(3.79));
  CHECK(s.reliability.evictions_per_node_day.value == 0);
  CHECK(!s.reliability.checkpoint_interval_s);
  CHECK(s.reliability.checkpoint_storage == "premium_blob");
  // Four GPUs of eight: the GPUs' 59 % share halved.
  const Scenario four = llama("", ", nodes: 4, gpus_per_node: 4");
  CHECK(four.reliability.failures_per_1000_node_days.value == Approx(3.79 * (0.41 + 0.59 / 2)));
  const Scenario spot = llama("", ", nodes: 4, low_priority: true");
  CHECK(spot.reliability.evictions_per_node_day.value > 0);
  const Scenario given = llama(
      "reliability: {failures_per_1000_node_days: 5, checkpoint_interval: 30 min, "
      "checkpoint_async: true, spare_nodes: 2}\n");
  CHECK(given.reliability.failures_per_1000_node_days.low == 5);
  CHECK(given.reliability.failures_per_1000_node_days.high == 5);
  CHECK(*given.reliability.checkpoint_interval_s == 1800);
  CHECK(given.reliability.checkpoint_async);
  CHECK(given.reliability.spare_nodes == 2);
  CHECK(to_yaml(given).find("checkpoint_interval: 1800 s") != std::string::npos);
}

TEST_CASE("goodput: spare nodes, asynchronous checkpoints and dedicated VMs each shorten the wall time", "[goodput]") {
  const Catalog& c = test::catalog();
  auto wall = [&](const Scenario& s) {
    return estimate_goodput(c, s, 30 * kDay, 30 * kDay, 30 * kDay, 1).wall_time_to_train_s;
  };
  const double base = wall(llama("", ", nodes: 256"));
  CHECK(wall(llama("reliability: {spare_nodes: 2}\n", ", nodes: 256")) < base);
  CHECK(wall(llama("reliability: {checkpoint_async: true}\n", ", nodes: 256")) < base);
  CHECK(wall(llama("", ", nodes: 16, low_priority: true")) > wall(llama("", ", nodes: 16")));
  const GoodputEstimate g = estimate_goodput(c, llama("", ", nodes: 256"), 30 * kDay, 25 * kDay, 40 * kDay, 1);
  CHECK(g.ettr_low <= g.ettr);
  CHECK(g.ettr <= g.ettr_high);
  CHECK(g.ettr < 1);
  CHECK(g.wall_time_to_train_s_low <= g.wall_time_to_train_s);
  CHECK(g.wall_time_to_train_s <= g.wall_time_to_train_s_high);
  CHECK(g.monte_carlo.mean_s == Approx(g.wall_time_to_train_s).epsilon(0.01));
  CHECK(g.lost_gpu_hours == Approx((g.wall_time_to_train_s - 30 * kDay) * 256 * 8 / kHour));
  // Low-priority VMs on 256 nodes: at the high end of the evictions' range they rarely complete an interval;
  // the band says so rather than failing the prediction.
  const GoodputEstimate spot = estimate_goodput(c, llama("", ", nodes: 256, low_priority: true"), kDay, kDay, kDay, 1);
  CHECK(spot.band_unbounded);
  CHECK(spot.ettr_low == 0);
  CHECK(spot.wall_time_to_train_s_high == kUnboundedWork * kDay);
  // At 2,048 nodes even the catalog's figures leave low-priority VMs no interval to complete.
  const GoodputEstimate never =
      estimate_goodput(c, llama("", ", nodes: 2048, low_priority: true"), 30 * kDay, 30 * kDay, 30 * kDay, 1);
  CHECK(!never.completes);
  CHECK_THAT(never.advice, Catch::Contains("dedicated VMs"));
  CHECK(never.monte_carlo.runs == 0);
}

TEST_CASE("goodput: bad reliability input is refused where it is", "[goodput]") {
  auto error = [](const std::function<void()>& f) {
    try {
      f();
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  CHECK_THAT(error([] { llama("reliability: {failures_per_1000_node_days: -1}\n"); }),
             Catch::Contains("goodput.yaml:5:") && Catch::Contains("must be between 0"));
  CHECK_THAT(error([] { llama("reliability: {failures_per_1000_node_days: .nan}\n"); }),
             Catch::Contains("expected a number"));
  CHECK_THAT(error([] { llama("reliability: {evictions_per_node_day: 1}\n"); }),
             Catch::Contains("cluster.low_priority: true"));
  CHECK_THAT(error([] { llama("reliability: {checkpoint_storage: premium_blobs}\n"); }),
             Catch::Contains("unknown storage backend 'premium_blobs'") && Catch::Contains("premium_blob"));
  CHECK_THAT(error([] { llama("reliability: {checkpoint_storage: local_ssd, spare: 1}\n"); }),
             Catch::Contains("spare_nodes"));
  const Scenario s = llama("reliability: {checkpoint_interval: 10 s}\n");
  CHECK_THAT(error([&] { estimate_goodput(test::catalog(), s, kDay, kDay, kDay, 1); }),
             Catch::Contains("goodput.yaml:5:") && Catch::Contains("shorter than the checkpoint's write"));
}

TEST_CASE("goodput: the A100 failure rate gives the job MTTF Kokolis et al. project at 16,384 and 131,072 GPUs",
          "[goodput]") {
  // arXiv:2410.21680 (RSC-1, 6.50 failures per 1000 node-days): MTTF (nodes x rate)^-1, 1.8 h at 16,384 GPUs
  // and 0.23 h at 131,072 (validate/README.md).
  for (const auto& [nodes, hours] : {std::pair{2048, 1.8}, std::pair{16384, 0.23}}) {
    const Scenario s =
        load_scenario_text("cluster: {sku: ND96amsr_A100_v4, nodes: " + std::to_string(nodes) +
                               "}\nmodel: {name: llama2_7b, batch_per_gpu: 1, precision: bf16, "
                               "seq_len: 2048}\ntraining: {epochs: 1}\ncommunication: {framework: fsdp}\n",
                           "a100.yaml", test::catalog());
    const GoodputEstimate g = estimate_goodput(test::catalog(), s, 30 * kDay, 30 * kDay, 30 * kDay, 1);
    CHECK(g.mtbf_s / kHour == Approx(hours).epsilon(0.03));
  }
}

TEST_CASE("goodput: predict --plot draws goodput against nodes and the simulated runs' completion times", "[goodput]") {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("ringsim_goodput_plot_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const auto r = test::run_command(
      std::string(RINGSIM_TEST_BINARY) + " --catalog " + RINGSIM_TEST_CATALOG + " predict " + RINGSIM_TEST_SCENARIOS +
      "/llama3_8b_fsdp_2x_nd96isr_h100_v5.yaml --no-band --fidelity step --plot " + (dir / "g.svg").string());
  INFO(r.output);
  REQUIRE(r.status == 0);
  CHECK_THAT(test::slurp(dir / "g.svg"), Catch::Contains("<svg") && Catch::Contains("</svg>"));
  const std::string script = test::slurp(dir / "g.gp");
  CHECK_THAT(script, Catch::Contains("auto (each size's best interval)") && Catch::Contains("simulated runs"));
  // Four interval series over the node counts, then the runs' 101 percentiles and the closed form's mean.
  const std::string data = test::slurp(dir / "g.dat");
  CHECK(std::count(data.begin(), data.end(), '\n') >= 4 * 5 + 101 + 1);
  fs::remove_all(dir);
}
