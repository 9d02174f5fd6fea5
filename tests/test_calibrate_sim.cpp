// Calibration against the simulator: the figures it fits (protocol switches, size regimes, copy rates, a link
// class's exchanges and launches) and the samples it leaves out, as predict then uses them.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "calibrate/calibrate.h"
#include "collective/collective.h"
#include "execute/comm_model.h"
#include "execute/simgrid/training_sim.h"
#include "graph/topology_graph.h"
#include "load/scenario.h"
#include "sim_test_support.h"
#include "test_support.h"
#include "validate/validation.h"

using namespace ringsim;
using collective::Space;

namespace {

using ringsim::test::local_host;
using ringsim::test::OneTransfer;
using ringsim::test::scenario;
using ringsim::test::timed_with;

}  // namespace

TEST_CASE("calibrate: a protocol switch stays a message's own cost where copies are keyed by footprint",
          "[calibrate]") {
  // Exchanges of 2 processes take 1 us + S / 12 GB/s below 4 KiB and 3 us + S / 12 GB/s from 4 KiB (the
  // library's rendezvous). A 2-process ring of 256 KiB sends 128 KiB messages and holds 768 KiB, what an
  // exchange of 192 KiB holds: keyed by footprint, it is costed at that exchange's rate per byte, but each
  // message still pays its own rendezvous, 2 us, not 2 us x 128 / 192 spread over the bytes.
  nlohmann::json ex = nlohmann::json::array(), red = nlohmann::json::array();
  for (double s = 8; s <= 64.0 * (1 << 20); s *= 2)
    ex.push_back({{"bytes", s}, {"seconds", (s < 4096 ? 1e-6 : 3e-6) + s / 12e9}});
  for (double s = 4096; s <= 64.0 * (1 << 20); s *= 2) red.push_back({{"bytes", s}, {"seconds", s / 16e9}});
  // A ring allreduce of 16 B - 1 KiB: its two exchanges of half the buffer, the reduction of that half, and
  // 0.3 us a call.
  nlohmann::json calls = nlohmann::json::array();
  for (double s = 16; s <= 1024; s *= 2)
    calls.push_back({{"bytes", s}, {"seconds", 2 * (1e-6 + s / 2 / 12e9) + s / 2 / 16e9 + 0.3e-6}});
  const nlohmann::json data = {
      {"schema", "ringsim.calibration-data/1"},
      {"transport", "host"},
      {"ranks", 2},
      {"pingpong",
       {{{"class", "same_socket"}, {"ranks", {0, 1}}, {"hosts", {"h", "h"}}, {"sockets", {0, 0}}, {"points", ex}}}},
      {"sendrecv", {{{"class", "same_socket"}, {"ranks", {0, 1}}, {"points", ex}}}},
      {"allreduce_small", {{"class", "same_socket"}, {"ranks", {0, 1}}, {"points", calls}}},
      {"reduction", red},
      {"compute_stand_in", nlohmann::json::array()}};
  const std::string file = "/tmp/ringsim_protocol_data_" + std::to_string(getpid()) + ".json";
  std::ofstream(file) << data.dump();
  const CalibrationResult r = calibrate(test::catalog(), local_host(2), {{file}, {}});
  INFO(r.overlay_yaml);
  CHECK(r.overlay_yaml.find("regimes_by: footprint") != std::string::npos);
  CHECK(r.overlay_yaml.find("protocol_overheads: [{from: 4096 B, overhead: 2e-06 s}]") != std::string::npos);
  // The calls' own cost replaces the library's assumed one.
  CHECK(r.collective_overhead == Approx(0.3e-6).epsilon(1e-6));
  CHECK(r.overlay_yaml.find("    collective_overhead: 3e-07 s") != std::string::npos);
  const std::string overlay = file + ".yaml";
  std::ofstream(overlay) << r.overlay_yaml;
  Catalog cat = test::catalog();
  cat.apply_overlay(overlay);
  const double chunk = 128 * 1024;
  const double expected = 2 * (3e-6 + chunk / 12e9) + chunk / 16e9;
  auto ring = collective::make_ring_allreduce(2, 256 * 1024, 4, Space::Device);
  for (Fidelity f : {Fidelity::Flow, Fidelity::Step}) {
    CAPTURE(to_string(f));
    CHECK(timed_with(cat, local_host(2), *ring, f) == Approx(expected).epsilon(0.001));
  }
  CHECK(cat.library("mpi").collective_overhead == Approx(0.3e-6).epsilon(1e-6));
  std::remove(file.c_str());
  std::remove(overlay.c_str());
}

TEST_CASE("calibrate: size regimes are found in ping-pong data and predict follows them", "[calibrate]") {
  // Two processes whose copies run at 10 GB/s with 1 us up to 4 MiB and at 5 GB/s with 20 us from 8 MiB
  // (buffers outgrowing the caches): ringsim-real calibrate's layout, sizes 8 B - 256 MiB by factors of 2.
  auto t = [](double s) { return s < 6e6 ? 1e-6 + s / 10e9 : 20e-6 + s / 5e9; };
  nlohmann::json pts = nlohmann::json::array(), red = nlohmann::json::array();
  for (double s = 8; s <= 256.0 * (1 << 20); s *= 2) pts.push_back({{"bytes", s}, {"seconds", t(s)}});
  for (double s = 65536; s <= 64.0 * (1 << 20); s *= 2) red.push_back({{"bytes", s}, {"seconds", s / 20e9}});
  const nlohmann::json data = {
      {"schema", "ringsim.calibration-data/1"},
      {"transport", "host"},
      {"ranks", 2},
      {"pingpong",
       {{{"class", "same_socket"}, {"ranks", {0, 1}}, {"hosts", {"h", "h"}}, {"sockets", {0, 0}}, {"points", pts}}}},
      {"reduction", red},
      {"compute_stand_in", nlohmann::json::array()}};
  const std::string file = "/tmp/ringsim_regimes_" + std::to_string(getpid()) + ".json";
  std::ofstream(file) << data.dump();
  const CalibrationResult r = calibrate(test::catalog(), local_host(2), {{file}, {}});
  INFO(r.overlay_yaml);
  std::vector<const LinearFit*> regimes;
  for (const auto& f : r.fits)
    if (f.path_class == "same_socket") regimes.push_back(&f);
  REQUIRE(regimes.size() == 2);
  CHECK(regimes[1]->from_bytes == 8 << 20);
  CHECK(1 / regimes[0]->beta == Approx(10e9).epsilon(1e-6));
  CHECK(1 / regimes[1]->beta == Approx(5e9).epsilon(1e-6));
  CHECK(regimes[1]->alpha == Approx(20e-6).epsilon(1e-6));
  // One reduction regime: the data is one line.
  CHECK(std::count_if(r.fits.begin(), r.fits.end(), [](const LinearFit& f) { return f.path_class == "reduction"; }) ==
        1);

  const std::string overlay = file + ".yaml";
  std::ofstream(overlay) << r.overlay_yaml;
  Catalog cat = test::catalog();
  cat.apply_overlay(overlay);
  // One message in each regime costs what was measured, in both fidelities.
  for (double s : {65536.0, 1048576.0, 16777216.0, 268435456.0}) {
    const OneTransfer one(static_cast<std::uint64_t>(s));
    for (Fidelity f : {Fidelity::Flow, Fidelity::Step}) {
      CAPTURE(s, to_string(f));
      CHECK(timed_with(cat, local_host(2), one, f) == Approx(t(s)).epsilon(0.001));
    }
  }
  std::remove(file.c_str());
  std::remove(overlay.c_str());
}

TEST_CASE("cpu processes: a copy costs the measured rate at its size, interpolated in log(size)", "[calibrate]") {
  GpuSpec g;
  g.memory_bandwidth = 40e9;
  CHECK(g.copy_time(1 << 20) == Approx(2.0 * (1 << 20) / 40e9));  // none measured: reads and writes each byte
  g.copy_rates.points = {{64 * 1024, 10e9}, {1 << 20, 5e9}};
  CHECK(g.copy_time(32 * 1024) == Approx(32 * 1024 / 10e9));  // below the first size: its rate
  CHECK(g.copy_time(64 * 1024) == Approx(64 * 1024 / 10e9));
  CHECK(g.copy_time(256 * 1024) == Approx(256 * 1024 / std::sqrt(10e9 * 5e9)));  // halfway in log(size)
  CHECK(g.copy_time(1 << 20) == Approx((1 << 20) / 5e9));
  CHECK(g.copy_time(4 << 20) == Approx((4 << 20) / 5e9));  // above the last: its rate
  // A calibration overlay's copy rates are what a fusion buffer's copies cost in a prediction.
  const std::string overlay = "/tmp/ringsim_copy_rates_" + std::to_string(getpid()) + ".yaml";
  std::ofstream(overlay) << "gpus:\n  cpu-process: {copy_rates: [{from: 64 KiB, rate: 10 GB/s}, {from: 1 MiB, "
                            "rate: 5 GB/s}]}\n";
  Catalog cat = test::catalog();
  cat.apply_overlay(overlay);
  std::remove(overlay.c_str());
  REQUIRE(cat.gpu("cpu-process").copy_rates.size() == 2);
  const Scenario s = local_host(2);
  const Topology topo = Topology::build(cat, cluster_shape(s.cluster));
  const CommModel cm(cat, s, topo);
  CHECK(cm.device_copy_time(256 * 1024) == Approx(256 * 1024 / std::sqrt(10e9 * 5e9)));
}

TEST_CASE("placement: samples taken with the CPUs farther apart than twice the nearest probe are left out",
          "[calibrate]") {
  // ringsim-real --probe-cores: each sample carries the core-to-core probes taken before and after it. Per
  // size, two samples with the CPUs 30-32 ns apart (cores of one cache) at 1 us + S / 12 GB/s, and three
  // with them 170-180 ns apart (cores sharing none) five times slower: the median of all five, the point's
  // "seconds", is a far one. The largest size was measured only far.
  auto point = [](double bytes, double near_seconds, bool any_near) {
    nlohmann::json samples = nlohmann::json::array();
    for (int i = 0; i < 2 && any_near; ++i)
      samples.push_back({{"seconds", near_seconds}, {"core_to_core_ns", {30.0 + i, 32.0}}, {"retakes", 0}});
    for (int i = 0; i < 3; ++i)
      samples.push_back({{"seconds", 5 * near_seconds}, {"core_to_core_ns", {170.0, 175.0 + i}}, {"retakes", 3}});
    return nlohmann::json{{"bytes", bytes}, {"seconds", 5 * near_seconds}, {"samples", samples}};
  };
  nlohmann::json ex = nlohmann::json::array(), red = nlohmann::json::array();
  for (double s = 8; s <= 64.0 * (1 << 20); s *= 2) ex.push_back(point(s, 1e-6 + s / 12e9, s < 64.0 * (1 << 20)));
  for (double s = 4096; s <= 64.0 * (1 << 20); s *= 2) red.push_back(point(s, s / 16e9, true));
  const nlohmann::json pair = {{"class", "same_socket"}, {"ranks", {0, 1}}, {"points", ex}};
  const nlohmann::json data = {
      {"schema", "ringsim.calibration-data/1"},
      {"transport", "host"},
      {"ranks", 2},
      {"pingpong", {pair}},
      {"sendrecv", {pair}},
      {"reduction", red},
      {"copy", nlohmann::json::array()},
      {"compute_stand_in", nlohmann::json::array()},
      {"core_to_core", {{"cpus", {0, 1}}, {"nearest_ns", 30.0}, {"retake_above_nearest", 2.0}, {"waited_s", 0}}}};
  const std::string file = "/tmp/ringsim_placed_" + std::to_string(getpid()) + ".json";
  std::ofstream(file) << data.dump();
  const CalibrationResult r = calibrate(test::catalog(), local_host(2), {{file}, {}});
  INFO(r.overlay_yaml);
  for (const auto& f : r.fits)
    if (f.path_class == "same_socket") CHECK(1 / f.beta == Approx(12e9).epsilon(1e-6));
  CHECK(r.overlay_yaml.find("host_reduction_rate: 1.6e+10 B/s") != std::string::npos);
  auto note = [&](const std::string& start) {
    return std::any_of(r.notes.begin(), r.notes.end(), [&](const std::string& n) { return n.rfind(start, 0) == 0; });
  };
  // Each size's three far samples of the exchanges (twice: ping-pong too) and the reduction; the largest
  // exchange had no other, and is left out.
  const int points = 2 * static_cast<int>(ex.size()) + static_cast<int>(red.size());
  CHECK(note("placement: " + std::to_string(3 * points) + " of " + std::to_string(5 * points - 2 * 2) +
             " samples taken with CPUs 0 and 1 more than 60 ns apart (2 times the nearest probe, 30 ns) left out"));
  CHECK(note("placement: 2 points had no sample that counts, and are left out"));
  // A nearest probe seen by another launch counts: at 14 ns, none of these samples does.
  const CalibrationResult nearer = calibrate(test::catalog(), local_host(2), {{file}, {}, 14});
  CHECK(std::none_of(nearer.fits.begin(), nearer.fits.end(),
                     [](const LinearFit& f) { return f.path_class == "same_socket"; }));
  std::remove(file.c_str());

  // A bench file's rows: the one measured with the CPUs far apart is not compared, and a note says so.
  nlohmann::json rows = nlohmann::json::array();
  for (double ns : {31.0, 178.0, 33.0})
    rows.push_back({{"bytes", 1 << 20},
                    {"count", 1 << 18},
                    {"type", "float"},
                    {"op", "allreduce"},
                    {"busbw_gbps", 5.0},
                    {"core_to_core_ns", {ns, 31.0}},
                    {"retakes", 0}});
  const nlohmann::json bench = {
      {"schema", "ringsim.bench/1"},
      {"ranks", 2},
      {"transport", "host"},
      {"op", "allreduce"},
      {"algorithm", "ring"},
      {"type", "float"},
      {"rows", rows},
      {"core_to_core", {{"cpus", {0, 1}}, {"nearest_ns", 31.0}, {"retake_above_nearest", 2.0}, {"waited_s", 0}}}};
  const std::string bench_file = "/tmp/ringsim_placed_bench_" + std::to_string(getpid()) + ".json";
  std::ofstream(bench_file) << bench.dump();
  const ValidationReport v = validate_measured(test::catalog(), local_host(2), {bench_file});
  CHECK(v.cases.size() == 2);
  REQUIRE(v.notes.size() == 1);
  CHECK(v.notes[0] ==
        "placement: 1 of 3 bench rows taken with CPUs 0 and 1 more than 62 ns apart (2 times the nearest probe, 31 ns) "
        "left out");
  CHECK(validation_table(v).find("  note: placement: 1 of 3 bench rows") != std::string::npos);
  std::remove(bench_file.c_str());
}

TEST_CASE("calibrate: exchanges set a class's figures, launches are merged by the median, copies set the memory rate",
          "[calibrate]") {
  // Three launches of ringsim-real calibrate on 2 processes. Exchanges (both ranks send and receive at once)
  // take 1 us + S / 12 GB/s, ping-pong 1 us + S / 8 GB/s; one launch is 3x slower at every measurement (a
  // state that lasts a launch on a shared VM), which the median per size drops. Copies run at 20 GB/s.
  auto launch = [](double slow) {
    nlohmann::json pp = nlohmann::json::array(), ex = nlohmann::json::array(), red = nlohmann::json::array(),
                   cp = nlohmann::json::array();
    for (double s = 8; s <= 64.0 * (1 << 20); s *= 2) {
      pp.push_back({{"bytes", s}, {"seconds", slow * (1e-6 + s / 8e9)}});
      ex.push_back({{"bytes", s}, {"seconds", slow * (1e-6 + s / 12e9)}});
    }
    for (double s = 4096; s <= 64.0 * (1 << 20); s *= 2) {
      red.push_back({{"bytes", s}, {"seconds", slow * s / 16e9}});
      if (s >= 65536) cp.push_back({{"bytes", s}, {"seconds", slow * s / 20e9}});
    }
    nlohmann::json one = nlohmann::json::array();  // both processes on one core: 7 us more, copies in turn
    nlohmann::json two = nlohmann::json::array();  // on two cores, each shared with a yielding thread: 4 us more
    for (double s = 8; s <= 256.0 * 1024; s *= 2) {
      one.push_back({{"bytes", s}, {"seconds", slow * (8e-6 + s / 6e9)}});
      two.push_back({{"bytes", s}, {"seconds", slow * (5e-6 + s / 12e9)}});
    }
    const nlohmann::json pair = {{"class", "same_socket"}, {"ranks", {0, 1}}};
    nlohmann::json with_points = pair;
    with_points["points"] = pp;
    nlohmann::json exchanged = pair;
    exchanged["points"] = ex;
    return nlohmann::json{
        {"schema", "ringsim.calibration-data/1"},
        {"transport", "host"},
        {"ranks", 2},
        {"pingpong", {with_points}},
        {"sendrecv", {exchanged}},
        {"sendrecv_one_core", {{"class", "same_socket"}, {"ranks", {0, 1}}, {"cpu", 0}, {"points", one}}},
        {"sendrecv_shared_cores", {{"class", "same_socket"}, {"ranks", {0, 1}}, {"cpus", {0, 1}}, {"points", two}}},
        {"reduction", red},
        {"copy", cp},
        {"compute_stand_in", nlohmann::json::array()}};
  };
  std::vector<std::string> files;
  for (double slow : {1.0, 3.0, 1.0}) {
    files.push_back("/tmp/ringsim_launch" + std::to_string(files.size()) + "_" + std::to_string(getpid()) + ".json");
    std::ofstream(files.back()) << launch(slow).dump();
  }
  const CalibrationResult r = calibrate(test::catalog(), local_host(2), {files, {}});
  INFO(r.overlay_yaml);
  auto fits_of = [&](const std::string& cls) {
    std::vector<const LinearFit*> v;
    for (const auto& f : r.fits)
      if (f.path_class == cls) v.push_back(&f);
    return v;
  };
  // The exchanges are the class's figures, the ping-pong is fitted beside them; both at the fast launches'
  // rates: the slow launch is the odd one out at every size.
  REQUIRE(fits_of("same_socket").size() == 1);
  CHECK(1 / fits_of("same_socket")[0]->beta == Approx(12e9).epsilon(1e-6));
  REQUIRE(fits_of("same_socket ping-pong").size() == 1);
  CHECK(1 / fits_of("same_socket ping-pong")[0]->beta == Approx(8e9).epsilon(1e-6));
  CHECK(r.overlay_yaml.find("shm_process: {bandwidth: 1.2e+10 B/s") != std::string::npos);
  CHECK(r.overlay_yaml.find("host_reduction_rate: 1.6e+10 B/s") != std::string::npos);
  // Copies read and write each byte: the processes' memory streams at twice the copy rate. Sharing a core
  // costs each message the one-core exchanges' latency above the exchanges', and sharing cores that the
  // processes are spread over the shared-cores exchanges' latency above them as well.
  // Copies cost their size's measured rate (here 20 GB/s at every size).
  CHECK(r.overlay_yaml.find("gpus:\n  cpu-process: {memory_bandwidth: 4e+10 B/s, copy_rates: [{from: 65536 B, rate: "
                            "2e+10 B/s}, {from: 131072 B, rate: 2e+10 B/s}, ") != std::string::npos);
  CHECK(r.overlay_yaml.find(
            "{from: 67108864 B, rate: 2e+10 B/s}], core_handoff: 7e-06 s, cross_core_handoff: 4e-06 s}") !=
        std::string::npos);

  const std::string overlay = files.front() + ".yaml";
  std::ofstream(overlay) << r.overlay_yaml;
  Catalog cat = test::catalog();
  cat.apply_overlay(overlay);
  CHECK(cat.gpu("cpu-process").memory_bandwidth == Approx(40e9));
  CHECK(cat.gpu("cpu-process").core_handoff == Approx(7e-6));
  CHECK(cat.gpu("cpu-process").cross_core_handoff == Approx(4e-6));
  // An exchange's message of 16 MiB costs what the exchanges measured; with 4 processes on the 2 cores,
  // both handoffs more and half the core, in both fidelities. On a host of one core, whose processes all
  // share it, only the core handoff: no message crosses cores.
  const std::string one_cpu = files.front() + ".cores.yaml";
  std::ofstream(one_cpu) << "skus:\n  local-host:\n    vcpus: 1\n";
  Catalog single = cat;
  single.apply_overlay(one_cpu);
  const OneTransfer one(16u << 20);
  for (Fidelity f : {Fidelity::Flow, Fidelity::Step}) {
    CAPTURE(to_string(f));
    CHECK(timed_with(cat, local_host(2), one, f) == Approx(1e-6 + (16u << 20) / 12e9).epsilon(0.001));
    CHECK(timed_with(cat, local_host(4), one, f) == Approx(12e-6 + (16u << 20) / 6e9).epsilon(0.001));
    CHECK(timed_with(single, local_host(2), one, f) == Approx(8e-6 + (16u << 20) / 6e9).epsilon(0.001));
  }
  std::remove(one_cpu.c_str());
  // Data without the shared-cores exchanges (one CPU, or an older ringsim-real): the catalog's figure stays,
  // and a note says so.
  const std::string older = files.front() + ".older.json";
  auto without = launch(1.0);
  without.erase("sendrecv_shared_cores");
  std::ofstream(older) << without.dump();
  const CalibrationResult r_older = calibrate(test::catalog(), local_host(2), {{older}, {}});
  CHECK(r_older.overlay_yaml.find("core_handoff: 7e-06 s}") != std::string::npos);
  CHECK(r_older.overlay_yaml.find("cross_core_handoff") == std::string::npos);
  CHECK(std::any_of(r_older.notes.begin(), r_older.notes.end(), [](const std::string& n) {
    return n.find("two shared cores: none measured") == 0 && n.find("the catalog's cross_core_handoff stays") != n.npos;
  }));
  std::remove(older.c_str());
  // Ranks that are GPUs copy in GPU memory: the host's copies are not applied to them.
  const Scenario gpus = scenario(
      "cluster: {sku: NC24rs_v3, nodes: 1}\nmodel: {name: resnet50, batch_per_gpu: 64}\ntraining: {epochs: 1}\n"
      "communication: {library: mpi}\n");
  const CalibrationResult on_gpus = calibrate(test::catalog(), gpus, {files, {}});
  CHECK(on_gpus.overlay_yaml.find("gpus:") == std::string::npos);
  CHECK(on_gpus.overlay.gpus.empty());
  for (const char* note : {"copy: V100-PCIe-16GB ranks copy in GPU memory", "one core: V100-PCIe-16GB ranks do not"})
    CHECK(std::any_of(on_gpus.notes.begin(), on_gpus.notes.end(),
                      [&](const std::string& n) { return n.find(note) == 0; }));
  for (const auto& f : files) std::remove(f.c_str());
  std::remove(overlay.c_str());
}
