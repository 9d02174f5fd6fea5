// Calibration: the least-squares fit, the nccl-tests reader, the overlay and its effect on predict.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <map>
#include <set>
#include <sstream>

#include "calibrate/calibrate.h"
#include "calibrate/effect.h"
#include "calibrate/nccl_tests.h"
#include "calibrate/posterior.h"
#include "calibrate/runs.h"
#include "execute/estimate/prediction_band.h"
#include "load/overlay.h"
#include "load/scenario.h"
#include "test_support.h"
#include "validate/horovod_timeline.h"
#include "validate/validation.h"

using namespace ringsim;

namespace {

// nccl-tests all_reduce_perf output in its documented layout, for `per_host` ranks on each of 2 hosts,
// with times from a ring of latency alpha and bus bandwidth bw: t = 2(n-1) alpha + 2(n-1)/n S / bw.
std::string nccl_tests_text(double alpha, double bw, int per_host = 1) {
  std::ostringstream o;
  o << "# nThread 1 nGpus 1 minBytes 8 maxBytes 134217728 step: 4(factor) warmup iters: 5 iters: 20 validation: 1\n"
       "#\n# Using devices\n";
  const int n = 2 * per_host;
  for (int r = 0; r < n; ++r)
    o << "#  Rank " << r << " Group  0 Pid  " << 41234 + r << " on      node" << 1 + r / per_host << " device  "
      << r % per_host << " [0x1a] Tesla V100-SXM2-32GB\n";
  o << "#\n"
       "#                                                              out-of-place                       in-place\n"
       "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw "
       "#wrong\n"
       "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  "
       "(GB/s)\n";
  for (double s = 8; s <= 134217728; s *= 4) {
    const double bus = 2.0 * (n - 1) / n;  // busbw = algbw x 2(n-1)/n
    const double t = 2 * (n - 1) * alpha + bus * s / bw;
    char row[256];
    std::snprintf(row, sizeof row,
                  "%12.0f %12.0f     float     sum      -1 %8.2f  %6.2f  %6.2f      0 %8.2f  %6.2f  %6.2f      0\n", s,
                  s / 4, t * 1e6, s / t / 1e9, bus * s / t / 1e9, t * 1e6, s / t / 1e9, bus * s / t / 1e9);
    o << row;
  }
  o << "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 5.1\n#\n";
  return o.str();
}

std::string temp(const std::string& name) {
  return (std::filesystem::temp_directory_path() / (name + std::to_string(::getpid()))).string();
}

}  // namespace

TEST_CASE("calibrate: the fit recovers alpha and beta from exact points", "[calibrate]") {
  std::vector<FitPoint> pts;
  for (double s = 8; s <= 1 << 28; s *= 2) pts.push_back({1, s, 2e-6 + s / 5e9});
  const LinearFit f = fit_linear(pts);
  CHECK(f.alpha == Approx(2e-6).epsilon(1e-6));
  CHECK(1 / f.beta == Approx(5e9).epsilon(1e-6));
  CHECK(f.r2 == Approx(1.0));
  CHECK(f.worst_residual_pct < 1e-6);
  // A negative intercept is clamped: latency cannot be negative.
  std::vector<FitPoint> neg = {{1, 1000, 1e-7}, {1, 2000, 3e-7}, {1, 4000, 7e-7}};
  CHECK(fit_linear(neg).alpha == 0);
}

TEST_CASE("calibrate: nccl-tests all_reduce_perf output is read and fitted as a ring", "[calibrate]") {
  const NcclTestsData d = parse_nccl_tests(nccl_tests_text(20e-6, 10e9), "all_reduce.txt");
  CHECK(d.op == "all_reduce");
  CHECK(d.ranks == 2);
  CHECK(d.spans_nodes);
  CHECK(d.points.size() == 13);
  const LinearFit f = fit_linear(d.points);
  CHECK(f.alpha == Approx(20e-6).epsilon(0.01));
  CHECK(1 / f.beta == Approx(10e9).epsilon(0.01));
  const std::string msg = test::input_error_of([] { parse_nccl_tests("hello\n", "x.txt"); });
  CHECK_THAT(msg, Catch::Contains("x.txt: error: no nccl-tests result rows found"));
}

TEST_CASE("calibrate: an nccl-tests header naming root after the time is refused at a short row", "[calibrate]") {
  // Found by fuzz_measurements: the root column was read past the end of the row.
  const std::string text =
      "#  Rank  0 Group  0 Pid  1 on  h device  0 [0x1a] V100\n"
      "#       size   count   type   redop   time   algbw   busbw  #wrong   root\n"
      "        1024     256  float     sum   10.0    0.10    0.10       0\n";
  const std::string msg = test::input_error_of([&] { parse_nccl_tests(text, "root.txt"); });
  CHECK_THAT(msg, Catch::Contains("root.txt:3:"));
  CHECK_THAT(msg, Catch::Contains("expected an nccl-tests result row of at least 9 columns"));
}

TEST_CASE("calibrate: an nccl-tests rank number too long for any machine is no rank line", "[calibrate]") {
  // Found by fuzz_measurements: std::stol threw out_of_range on a 100-digit rank.
  const std::string text = "#  Rank  " + std::string(100, '1') +
                           " Group  0 Pid  1 on  h device  0 [0x1a] V100\n"
                           "#  Rank  0 Group  0 Pid  2 on  h device  0 [0x1a] V100\n"
                           "#  Rank  1 Group  0 Pid  3 on  h device  1 [0x1b] V100\n"
                           "#       size   count   type   redop   root   time   algbw   busbw  #wrong\n"
                           "        1024     256  float     sum     -1   10.0    0.10    0.10       0\n";
  const NcclTestsData d = parse_nccl_tests(text, "ranks.txt");
  CHECK(d.ranks == 2);
  CHECK(d.points.size() == 1);
}

TEST_CASE("calibrate: an allreduce across DGX-1 nodes shares its bus bandwidth among the four rails", "[calibrate]") {
  const std::string nccl = temp("ringsim_nccl_tests_rails_");
  std::ofstream(nccl) << nccl_tests_text(20e-6, 47e9, 8);  // 2 x 8 GPUs at 47 GB/s busbw
  const NcclTestsData d = parse_nccl_tests(test::slurp(nccl), nccl);
  CHECK(d.ranks == 16);
  CHECK(d.hosts == 2);
  auto overlay_of = [&](const std::string& comm) {
    const Scenario s = load_scenario_text(
        "cluster: {sku: DGX-1-V100, nodes: 2}\nmodel: {name: resnet50, batch_per_gpu: "
        "64}\ntraining: {epochs: 1}\n" +
            comm,
        "cal.yaml", test::catalog());
    return calibrate(test::catalog(), s, {{}, {nccl}});
  };
  // Eight GPUs per host leave by four EDR NICs of 12.5 GB/s: 47 / 4 / 12.5 = 0.94 of each, whatever
  // the scenario's own strategy.
  for (const std::string& comm : {std::string(), std::string("communication: {strategy: hierarchical}\n")}) {
    const CalibrationResult four = overlay_of(comm);
    INFO(four.overlay_yaml);
    CHECK_THAT(four.overlay_yaml, Catch::Contains("infiniband: {bandwidth_fraction: 0.94"));
    CHECK_THAT(four.overlay_yaml, Catch::Contains("shared by 4 rails"));
    CHECK(four.notes.empty());
  }
  // Two GPUs per host share one NIC (GPUs 0 and 1 sit on one PCIe switch with ib0): one rail, and 18 GB/s
  // of busbw is more than it carries: capped, and said so.
  std::ofstream(nccl) << nccl_tests_text(20e-6, 18e9, 2);
  const CalibrationResult one = overlay_of("");
  CHECK_THAT(one.overlay_yaml, Catch::Contains("infiniband: {bandwidth_fraction: 1,"));
  CHECK_THAT(one.overlay_yaml, !Catch::Contains("shared by"));
  REQUIRE(one.notes.size() == 1);
  CHECK_THAT(one.notes[0], Catch::Contains("capped at 1"));
  std::remove(nccl.c_str());
}

TEST_CASE("calibrate: the overlay sets the library's path profile and predict applies it", "[calibrate]") {
  const std::string nccl = temp("ringsim_nccl_tests_");
  std::ofstream(nccl) << nccl_tests_text(20e-6, 5e9);
  const Scenario s = load_scenario_text(
      "cluster: {sku: NC24rs_v3, nodes: 2}\nmodel: {name: resnet50, batch_per_gpu: 64}\ntraining: {epochs: 1}\n",
      "cal.yaml", test::catalog());
  const CalibrationResult r = calibrate(test::catalog(), s, {{}, {nccl}});
  INFO(r.overlay_yaml);
  REQUIRE(r.fits.size() == 1);
  CHECK(r.fits[0].path_class == "network");
  // 5 GB/s measured over an FDR route whose nominal bottleneck is 54.55 Gb/s = 6.82 GB/s.
  CHECK_THAT(r.overlay_yaml, Catch::Contains("infiniband: {bandwidth_fraction: 0.733"));
  const std::string overlay = temp("ringsim_overlay_") + ".yaml";
  std::ofstream(overlay) << r.overlay_yaml;
  Catalog c = test::catalog();
  c.apply_overlay(overlay);
  CHECK(c.library("nccl").infiniband.bandwidth_fraction == Approx(0.733).epsilon(0.001));
  CHECK(c.library("nccl").intra_node.bandwidth_fraction ==
        test::catalog().library("nccl").intra_node.bandwidth_fraction);

  // End to end: predict with --calibration is slower than without (5 GB/s instead of 6.65 GB/s).
  auto iteration = [&](const std::string& extra) {
    const std::string json = temp("ringsim_cal_predict_") + ".json";
    const std::string cmd = std::string(RINGSIM_TEST_BINARY) + " --catalog " + RINGSIM_TEST_CATALOG + " predict " +
                            RINGSIM_TEST_SCENARIOS + "/resnet50_imagenet_8x_nc24rs_v3.yaml --set cluster.nodes=2 " +
                            extra + " --json " + json + " > /dev/null";
    REQUIRE(std::system(cmd.c_str()) == 0);
    std::ifstream in(json);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::remove(json.c_str());
    const auto at = text.find("\"communication_time_s\": ");
    return std::stod(text.substr(at + 24));
  };
  CHECK(iteration("--calibration " + overlay) > iteration(""));
  std::remove(nccl.c_str());
  std::remove(overlay.c_str());
}

TEST_CASE("calibrate: a bad overlay is reported with file, line and column", "[calibrate]") {
  const std::string overlay = temp("ringsim_bad_overlay_") + ".yaml";
  std::ofstream(overlay) << "libraries:\n  ncl:\n    collective_overhead: 1 us\n";
  Catalog c = test::catalog();
  const std::string msg = test::input_error_of([&] { c.apply_overlay(overlay); });
  CHECK_THAT(msg, Catch::StartsWith(overlay + ":3:5: error: libraries.ncl:"));  // at the entry's value
  CHECK_THAT(msg, Catch::Contains("unknown library 'ncl'; did you mean nccl"));
  std::ofstream(overlay) << "libraries:\n  mpi:\n    paths:\n      infiniband: {bandwidth_fraction: 2}\n";
  CHECK_THAT(test::input_error_of([&] { c.apply_overlay(overlay); }), Catch::Contains("must be between 0.01 and 1"));
  // A fit's ranges: names of uncertain parameters, each [LOW, HIGH].
  std::ofstream(overlay) << "fitted_ranges:\n  tf_rpc_rate: [3e8, 4e8]\n  step_time_c: [0.01, 0.02]\n";
  std::string e = test::input_error_of([&] { c.apply_overlay(overlay); });
  CHECK_THAT(e, Catch::StartsWith(overlay + ":3:"));
  CHECK_THAT(e, Catch::Contains("unknown uncertain parameter 'step_time_c'; did you mean step_time_cv"));
  std::ofstream(overlay) << "fitted_ranges:\n  tf_rpc_rate: [4e8, 3e8]\n";
  CHECK_THAT(test::input_error_of([&] { c.apply_overlay(overlay); }), Catch::Contains("expected LOW <= HIGH"));
  std::ofstream(overlay) << "fitted_ranges:\n  tf_rpc_rate: 3e8\n";
  e = test::input_error_of([&] { c.apply_overlay(overlay); });
  CHECK_THAT(e, Catch::StartsWith(overlay + ":2:"));
  CHECK_THAT(e, Catch::Contains("expected [LOW, HIGH]"));
  std::remove(overlay.c_str());
}

TEST_CASE("calibrate: an overlay written is read back by the catalog's parsers to the same figures", "[calibrate]") {
  CatalogOverlay o;
  o.header = {"written by the test", "  a second line"};
  LibraryOverlay& mpi = o.libraries["mpi"];
  mpi.collective_overhead = 3.25e-6;
  mpi.host_reduction_rate = 1.6e10;
  mpi.host_reduction_regimes = {{{1, 2e10}, {65536, 1.23456789e10}}};
  mpi.host_reduction_regimes_by = RegimeKey::Footprint;
  PathOverlay& intra = mpi.paths["intra_node"];
  intra.bandwidth_fraction = 0.1 + 0.2;  // a double without a short decimal form
  intra.message_overhead = 0;
  intra.regimes = {{{1, 1, 0}, {4096, 0.5, 1e-6}, {1 << 20, 0.25, 2.5e-6}}};
  intra.regimes_by = RegimeKey::Footprint;
  intra.protocol_overheads = {{{4096, 2e-6}}};
  o.libraries["nccl"].paths["ethernet"].bandwidth_fraction = 0.75;
  o.link_classes["shm_process"] = {1.2e10, 5e-7};
  o.gpus["cpu-process"] = {4e10, {{{65536, 2e10}, {1 << 20, 1.5e10}}}, 7e-6, 4e-6};
  o.skus["local-host"].vcpus = 2;
  o.comments["libraries.mpi.paths.intra_node"] = "a comment: with a colon, # and a hash";
  o.comments["gpus.cpu-process"] = "copies";

  const std::string file = temp("ringsim_overlay_round_trip_") + ".yaml";
  std::ofstream(file) << o.to_yaml();
  Catalog c = test::catalog();
  const CatalogOverlay back = c.read_overlay(file);
  INFO(o.to_yaml());
  CHECK(back.same_figures(o));
  CHECK(back.to_yaml().find("#") == std::string::npos);  // comments are for people, not read back

  // Applied, the catalog's figures are the overlay's, and the ones it leaves unset stay.
  const double ib_fraction = c.library("mpi").infiniband.bandwidth_fraction;
  c.apply(back);
  const LibraryProfile& lib = c.library("mpi");
  CHECK(lib.collective_overhead == 3.25e-6);
  CHECK(lib.host_reduction_rate_for(1 << 16) == 1.23456789e10);
  CHECK(lib.intra_node.bandwidth_fraction == 0.1 + 0.2);
  CHECK(lib.intra_node.regimes() == *intra.regimes);
  CHECK(lib.intra_node.protocol_overhead(8192) == 2e-6);
  CHECK(lib.infiniband.bandwidth_fraction == ib_fraction);
  CHECK(c.library("nccl").ethernet.bandwidth_fraction == 0.75);
  CHECK(c.link("shm_process").bandwidth == 1.2e10);
  CHECK(c.gpu("cpu-process").cross_core_handoff == 4e-6);
  CHECK(c.gpu("cpu-process").copy_time(1 << 20) == Approx((1 << 20) / 1.5e10));
  CHECK(c.sku("local-host").vcpus == 2);
  std::remove(file.c_str());
}

TEST_CASE("calibrate: every effect in the registry says what it measures, fits, writes and what reads it",
          "[calibrate]") {
  std::set<std::string> names;
  for (const Effect& e : calibration_effects()) {
    INFO(e.name);
    CHECK(names.insert(e.name).second);
    CHECK(std::string(e.measures).size() > 10);
    CHECK(std::string(e.fit).size() > 10);
    CHECK(std::string(e.cost_term).size() > 10);
    CHECK(!e.overlay_keys.empty());
    CHECK(e.apply != nullptr);
  }
  CHECK(names.size() >= 6);
  CHECK_THAT(effects_table(), Catch::Contains("host_reduction\n  measures:"));
}

TEST_CASE("validate: a Horovod timeline is read into buffers and iteration cadence", "[validate]") {
  // Hand-written in Horovod's timeline layout: metadata rows naming tensors, then per tensor
  // NEGOTIATE_ALLREDUCE and ALLREDUCE B/E pairs with nested activities; tensors 1 and 2 are fused.
  // Two iterations, 250 ms apart.
  const std::string file = temp("ringsim_hvd_timeline_") + ".json";
  std::ofstream(file) << R"([
{"name": "process_name", "ph": "M", "pid": 1, "args": {"name": "DistributedOptimizer_Allreduce/HorovodAllreduce_grad_dense_1"}},
{"name": "process_name", "ph": "M", "pid": 2, "args": {"name": "DistributedOptimizer_Allreduce/HorovodAllreduce_grad_conv_2"}},
{"name": "process_name", "ph": "M", "pid": 3, "args": {"name": "DistributedOptimizer_Allreduce/HorovodAllreduce_grad_conv_1"}},
{"name": "NEGOTIATE_ALLREDUCE", "ph": "B", "ts": 1000, "pid": 1}, {"ph": "E", "ts": 2000, "pid": 1},
{"name": "ALLREDUCE", "ph": "B", "ts": 2000, "pid": 1}, {"name": "NCCL_ALLREDUCE", "ph": "B", "ts": 2100, "pid": 1},
{"ph": "E", "ts": 4900, "pid": 1}, {"ph": "E", "ts": 5000, "pid": 1},
{"name": "ALLREDUCE", "ph": "B", "ts": 6000, "pid": 2}, {"name": "MEMCPY_IN_FUSION_BUFFER", "ph": "B", "ts": 6000, "pid": 2},
{"ph": "E", "ts": 6100, "pid": 2}, {"ph": "E", "ts": 8000, "pid": 2},
{"name": "ALLREDUCE", "ph": "B", "ts": 6000, "pid": 3}, {"ph": "E", "ts": 8000, "pid": 3},
{"name": "ALLREDUCE", "ph": "B", "ts": 252000, "pid": 1}, {"ph": "E", "ts": 255000, "pid": 1},
{"name": "ALLREDUCE", "ph": "B", "ts": 256000, "pid": 2}, {"ph": "E", "ts": 258000, "pid": 2},
{"name": "ALLREDUCE", "ph": "B", "ts": 256000, "pid": 3}, {"ph": "E", "ts": 258000, "pid": 3}
])";
  const TimelineSummary t = read_horovod_timeline(file);
  CHECK(t.tensors == 3);
  CHECK(t.iterations == 2);
  REQUIRE(t.buffers.size() == 4);
  CHECK(t.buffers[1].tensors == 2);  // the fused pair
  CHECK(t.buffers_per_iteration() == 2);
  CHECK(t.iteration_s == Approx(0.25));
  CHECK(t.mean_buffer_s() == Approx((0.003 + 0.002 + 0.003 + 0.002) / 4));
  std::ofstream(file) << "{\"not\": \"a trace\"}";
  CHECK_THAT(test::input_error_of([&] { read_horovod_timeline(file); }), Catch::Contains("expected a Chrome trace"));
  std::remove(file.c_str());
}

TEST_CASE("plots: the validation chart's script and data, a line per group and predicted against measured", "[plot]") {
  ValidationReport r;
  r.title = "test";
  for (int g : {2, 4, 8}) {
    ValidationCase c("m x" + std::to_string(g), "images_per_sec", 100.0 * g, 90.0 * g);
    c.group = "m b64";
    c.x = g;
    r.cases.push_back(c);
  }
  const Plot p = validation_plot(r);
  REQUIRE(p.panels.size() == 3);  // the group's lines, its errors against GPUs, predicted against measured
  const PlotFiles f = plot_files("/tmp/v.png", p);
  CHECK(f.script_file == "/tmp/v.gp");
  CHECK(f.data_file == "/tmp/v.dat");
  CHECK_THAT(f.script, Catch::Contains("set terminal pngcairo") && Catch::Contains("set multiplot layout 3,1") &&
                           Catch::Contains("title \"m b64 measured\"") && Catch::Contains("set logscale x 2") &&
                           Catch::Contains("x with lines lw 1.5 lc rgb 'black' title \"predicted = measured\""));
  // Block 0 holds the predictions against GPUs, block 1 the measurements; the errors are +11.1 %.
  CHECK_THAT(f.data, Catch::Contains("# block 0:") && Catch::Contains("\n2 200\n4 400\n8 800\n") &&
                         Catch::Contains("\n2 180\n4 360\n8 720\n") && Catch::Contains("\n2 11.1111111\n"));
  CHECK(plot_files("/tmp/v.png", validation_plot(r)).data == f.data);  // deterministic
  CHECK_THAT(plot_files("/tmp/v.svg", p).script, Catch::Contains("set terminal svg"));
}

TEST_CASE("fuzz regressions: malformed measurement files are refused, not crashed on", "[validate]") {
  // Found by fuzz_measurements: a trace event whose "ph" is a number made the reader throw a JSON type
  // error. Events with fields of the wrong type are now skipped.
  const std::string file = std::string(RINGSIM_TEST_DATA) + "/../bad_inputs/timeline_ph_not_a_string.json";
  CHECK_THAT(test::input_error_of([&] { read_horovod_timeline(file); }), Catch::Contains("no ALLREDUCE spans"));
  // Also from fuzz_measurements: a number too large for the JSON parser is out_of_range, not parse_error.
  const std::string overflow = std::string(RINGSIM_TEST_DATA) + "/../bad_inputs/timeline_number_overflow.json";
  CHECK_THAT(test::input_error_of([&] { read_horovod_timeline(overflow); }),
             Catch::Contains("not a complete JSON trace"));
  // From fuzz_measurements (issue 30): a trace cut short whose shortened text is not JSON either (a NUL
  // in a key) is refused with the file's own error, not the shortened text's.
  const std::string nul_key = std::string(RINGSIM_TEST_DATA) + "/../bad_inputs/timeline_cut_nul_in_key.json";
  CHECK_THAT(test::input_error_of([&] { read_horovod_timeline(nul_key); }),
             Catch::Contains("timeline_cut_nul_in_key.json:") && Catch::Contains("not a complete JSON trace"));
  // Non-finite numbers in nccl-tests rows.
  const std::string nan_row =
      "#  Rank  0 Group  0 Pid  1 on  a device  0\n#  size count type redop root time algbw busbw\n"
      "  8 2 float sum -1 nan 0.0 0.0\n";
  CHECK_THAT(test::input_error_of([&] { parse_nccl_tests(nan_row, "nan.txt"); }),
             Catch::Contains("nan.txt:3:1: error: expected an nccl-tests result row"));
}

TEST_CASE("validate: repeated measurements report their own floor, each run against the median of the others",
          "[validate]") {
  // 10 against median(12, 8) = 10: 0 %; 12 against 9: 25 %; 8 against 11: 37.5 %; the median of the three.
  CHECK(others_error_pct({10, 12, 8}) == Approx(25));
  CHECK(against_others_pct({10, 12, 8}, 2) == Approx(37.5));
  CHECK(others_error_pct({10, 12}) == -1);  // two runs: each is the other's median, nothing to tell
  CHECK(others_error_pct({5, 5, 5, 5}) == 0);
  ValidationReport r;
  ValidationCase a{"a", "busbw_gbps", 10, 10};
  a.others_error_pct = 20;
  r.cases = {a, {"c", "busbw_gbps", 1, 1}};
  CHECK(validation_json(r).find("\"measured_others_error_pct\": 20") != std::string::npos);
}

TEST_CASE("calibrate: real nccl-tests and rccl-tests logs as launchers and users leave them (issue 30)",
          "[calibrate]") {
  // tests/data/nccl_tests/real/SOURCES.md: where each log was published and what it shows.
  struct Expect {
    std::string file, op;
    int ranks, hosts;
    bool from_context;
    double first_bytes, first_us;  // the first row of nonzero size: out-of-place size and time
  };
  const std::vector<Expect> cases = {
      {"aws_p4d_efa_2node_16rank_tagged_ncclinfo_2021.log", "all_reduce", 16, 2, false, 8, 179.1},
      {"aws_p3dn_efa_2node_16rank_ncclinfo_nccl2.4_2019.log", "all_reduce", 16, 2, false, 8, 146.7},
      {"aws_eks_t4_efa_2node_tagged_ncclinfo_destroy.log", "all_reduce", 2, 2, false, 4, 65.7},
      {"aws_p5_h100_2node_tagged_table_only_elided.log", "all_reduce", 16, 2, true, 8, 87.96},
      {"oci_gb200_2node_8rank_tail_no_header_destroy.log", "all_reduce", 16, 2, true, 8, 21.57},
      {"polaris_a100_540node_2160rank_allreduce_nccl2.21.log", "all_reduce", 2160, 540, false, 4, 253.3},
      {"rccl_mi300x_2node_16rank_allreduce.log", "all_reduce", 16, 2, false, 8, 256.5},
      {"azure_mi300x_vf_rccl_g8_allreduce_issue1562.log", "all_reduce", 8, 1, false, 8, 45.92},
      {"rtx5090_2rank_tagged_stderr_allgather_v2.18.log", "all_gather", 2, 1, false, 1048576, 2191.72},
      {"sophia_dgxa100_2node_16rank_allgather.log", "all_gather", 16, 2, false, 256, 37.42},
      {"superbench_a100x8_g8_allreduce_check0_2021.log", "all_reduce", 8, 1, false, 4, 34.73},
      {"superbench_a100x8_g8_allgather_check0_2021.log", "all_gather", 8, 1, false, 32, 35.03},
      {"superbench_a100x8_g8_reducescatter_check0_2021.log", "reduce_scatter", 8, 1, false, 32, 35.06},
  };
  const std::string dir = std::string(RINGSIM_TEST_DATA) + "/nccl_tests/real/";
  for (const auto& c : cases) {
    INFO(c.file);
    const NcclTestsData d = parse_nccl_tests(test::slurp(dir + c.file), c.file, {16, 2});
    CHECK(d.op == c.op);
    CHECK(d.ranks == c.ranks);
    CHECK(d.hosts == c.hosts);
    CHECK(d.ranks_from_context == c.from_context);
    REQUIRE(!d.points.empty());
    const double n = d.ranks;
    const double factor = d.op == "all_reduce" ? 2 * (n - 1) / n : (n - 1) / n;
    CHECK(d.points.front().x_beta == Approx(c.first_bytes * factor));
    CHECK(d.points.front().seconds == Approx(c.first_us * 1e-6));
    for (const auto& p : d.points) CHECK((p.seconds > 0 && std::isfinite(p.seconds)));
  }
  // Runs that failed, and one that moved nothing: refused with the line that says why.
  const auto error_of = [&](const std::string& f) {
    return test::input_error_of([&] { parse_nccl_tests(test::slurp(dir + f), f, {16, 2}); });
  };
  CHECK_THAT(error_of("sophia_dgxa100_2node_16rank_allreduce_failed_nccl_error.log"),
             Catch::Contains(":20:1: error: the nccl-tests run failed before it measured anything") &&
                 Catch::Contains("Test NCCL failure common.cu:1012 'unhandled system error"));
  CHECK_THAT(error_of("rtx5090_g2_ncclinfo_warn_cuda_failure_issue287.log"),
             Catch::Contains(":71:1: error: the nccl-tests run failed") && Catch::Contains("unhandled cuda error"));
  CHECK_THAT(error_of("rtx5090_1gpu_column_overflow_avgbw0_issue287.log"),
             Catch::Contains("all_reduce_perf on one rank moves nothing between GPUs"));
  // Without rank lines and without a scenario to say it, the count is asked for.
  CHECK_THAT(test::input_error_of([&] {
               parse_nccl_tests(test::slurp(dir + "aws_p5_h100_2node_tagged_table_only_elided.log"), "t.log");
             }),
             Catch::Contains("cannot tell the rank count"));
}

TEST_CASE("calibrate: nccl-tests output of several tests in one file, and a sendrecv log", "[calibrate]") {
  const std::string dir = std::string(RINGSIM_TEST_DATA) + "/nccl_tests/real/";
  const std::string two = "mpirun -np 2 ./build/all_reduce_perf -b 8\n" +
                          test::slurp(dir + "aws_eks_t4_efa_2node_tagged_ncclinfo_destroy.log") +
                          "mpirun -np 2 ./build/all_gather_perf_mpi -b 8\n" +
                          test::slurp(dir + "sophia_dgxa100_2node_16rank_allgather.log");
  CHECK_THAT(test::input_error_of([&] { parse_nccl_tests(two, "two.log"); }),
             Catch::Contains("several tests (all_gather_perf, all_reduce_perf); give each its own file"));
  // The test named by its command line: sendrecv's time is one message's, whatever the ranks.
  const std::string sendrecv = "$ mpirun -np 2 ./sendrecv_perf -b 8 -e 1M\n" + nccl_tests_text(5e-6, 10e9);
  const NcclTestsData d = parse_nccl_tests(sendrecv, "sendrecv.log");
  CHECK(d.op == "sendrecv");
  CHECK(d.points.front().x_alpha == 1);
  CHECK(d.points.front().x_beta == 8);
}

TEST_CASE("validate: real Horovod timelines, whole and cut off mid-run (issue 30)", "[validate]") {
  // tests/data/horovod_timelines/real/SOURCES.md: where each was published.
  const std::string dir = std::string(RINGSIM_TEST_DATA) + "/horovod_timelines/real/";
  struct Expect {
    std::string file;
    int buffers, tensors, iterations;
  };
  for (const auto& c : std::vector<Expect>{{"andrewor14_tf_mpi_2019_oldformat_prefix.json", 138, 6, 23},
                                           {"thetagpu_8rank_tf2_keras_mpi_cpu_prefix.json", 122, 9, 15},
                                           {"thetagpu_a100_8rank_tf2_keras_nccl_prefix.json", 122, 9, 15}}) {
    INFO(c.file);
    const TimelineSummary t = read_horovod_timeline(dir + c.file);
    CHECK(t.truncated);  // each is a published prefix without the closing bracket
    CHECK(static_cast<int>(t.buffers.size()) == c.buffers);
    CHECK(t.tensors == c.tensors);
    CHECK(t.iterations == c.iterations);
    CHECK(t.iteration_s > 0);
    for (const auto& b : t.buffers) CHECK(b.end_s >= b.start_s);
  }
  // A whole timeline that recorded only the initial broadcasts: named as such.
  CHECK_THAT(test::input_error_of([&] { read_horovod_timeline(dir + "alcf_thetagpu_1rank_tf2_mpi_complete.json"); }),
             Catch::Contains("no ALLREDUCE spans (it records BROADCAST, MPI_BCAST, NEGOTIATE_BROADCAST)"));
}

namespace {
// A scenario file of two NC24r nodes over Ethernet with NCCL (K80s: the network's figures are assumptions),
// with a calibration overlay where one is given.
std::string runs_scenario(const std::string& calibration = "") {
  const std::string f = temp("ringsim_runs_scenario_") + ".yaml";
  std::ofstream(f)
      << "name: runs\ncluster: {sku: NC24r, nodes: 2, fabric: ethernet}\n"
         "model: {name: resnet50, batch_per_gpu: 32}\ntraining: {epochs: 1}\ncommunication: {library: nccl}\n"
      << (calibration.empty() ? "" : "calibration: " + calibration + "\n");
  return f;
}

// RUNS.csv of the scenario on 1..nodes nodes, as predicted with the figures `truth`.
void write_runs(const std::string& runs, const std::string& scenario_file, const CatalogOverlay& truth, int nodes) {
  std::ofstream out(runs);
  out << "cluster.nodes, images_per_sec\n";
  for (int n = 1; n <= nodes; ++n) {
    const Scenario s =
        load_scenario(scenario_file, test::catalog(), {parse_override("cluster.nodes=" + std::to_string(n))});
    out << n << ", " << std::setprecision(17) << predict_in_child(test::catalog(), s, truth).first << "\n";
  }
}
}  // namespace

TEST_CASE("calibrate --runs: runs generated from known figures are fitted back", "[calibrate]") {
  const Catalog& catalog = test::catalog();
  // NCCL's channels, its GPUs' path across the sockets and the busy neighbours' toll measured (the
  // scenario's overlay; none in the truth too):
  // four figures change these runs, as four runs do.
  const std::string channels = temp("ringsim_runs_channels_") + ".yaml";
  std::ofstream(channels) << "compute:\n  co_run_slowdown: 0\nlibraries:\n  nccl:\n    kernel_channels: 2\n"
                             "    paths:\n      cross_socket: {bandwidth_fraction: 0.16}\n";
  const std::string scenario_file = runs_scenario(channels);
  CatalogOverlay truth;
  truth.libraries["nccl"].paths["ethernet"].bandwidth_fraction = 0.40;
  truth.compute.step_time_cv = 0.02;
  truth.compute.co_run_slowdown = 0;
  const std::string runs = temp("ringsim_runs_") + ".csv";
  write_runs(runs, scenario_file, truth, 4);
  const RunsFit fit = fit_runs(catalog, scenario_file, {}, runs);
  REQUIRE(fit.after.size() == 4);
  CHECK(fit.fitted.size() == 4);
  for (std::size_t i = 0; i < 4; ++i) CHECK(fit.after[i] == Approx(fit.measured[i]).epsilon(0.01));
  double before_error = 0;
  for (std::size_t i = 0; i < 4; ++i)
    before_error = std::max(before_error, std::fabs(fit.before[i] / fit.measured[i] - 1));
  CHECK(before_error > 0.01);  // the catalog's figures miss them
  std::map<std::string, double> value;
  for (const auto& x : fit.fitted) value[x.name] = x.value;
  // The step's and the GPUs' variations add in the slowest rank: their sum of squares is determined.
  const double gpus = catalog.compute().gpu_to_gpu_cv;
  // (They move these runs little against a run's noise of 1 %, so the prior keeps a share: within a quarter.)
  CHECK(std::hypot(value.at("step_time_cv"), value.at("gpu_to_gpu_cv")) ==
        Approx(std::hypot(0.02, gpus)).epsilon(0.25));
  // The socket fraction and the Ethernet rate multiply: their product is what the runs determine.
  CHECK(value.at("nccl_socket_fraction") * value.at("azure_ethernet_rate") == Approx(0.40).epsilon(0.2));
  // Each fitted value lies in what the runs leave it, itself inside the figure's range; the overlay keeps it.
  for (const auto& x : fit.fitted) {
    CHECK(x.fit_low <= x.value);
    CHECK(x.fit_high >= x.value);
    CHECK(x.fit_low >= x.low * (1 - 1e-12));
    CHECK(x.fit_high <= x.high * (1 + 1e-12));
    REQUIRE(fit.overlay.fitted_ranges.count(x.name) == 1);
  }
  // Written and read back as any overlay, with those ranges; predict then samples them in its band.
  const std::string overlay = temp("ringsim_runs_overlay_") + ".yaml";
  std::ofstream(overlay) << fit.overlay.to_yaml();
  CHECK(catalog.read_overlay(overlay).same_figures(fit.overlay));
  // The channels unmeasured too: five figures, five runs. They trade against the compute's variation (both
  // slow the compute), so only the runs' predictions are checked: within 2 % (the valley is flat enough that
  // the fit's few Levenberg-Marquardt steps stop at 1.5 % on one run), and closer than the catalog's figures
  // over all runs.
  const std::string co_run = temp("ringsim_runs_co_run_") + ".yaml";
  std::ofstream(co_run) << "compute:\n  co_run_slowdown: 0\nlibraries:\n  nccl:\n    paths:\n"
                           "      cross_socket: {bandwidth_fraction: 0.16}\n";
  const std::string open_file = runs_scenario(co_run);
  write_runs(runs, open_file, truth, 5);
  const RunsFit five = fit_runs(catalog, open_file, {}, runs);
  CHECK(five.fitted.size() == 5);
  double before_sq = 0, after_sq = 0;  // over all runs, the fit is closer than the catalog's figures
  for (std::size_t i = 0; i < five.after.size(); ++i) {
    CHECK(five.after[i] == Approx(five.measured[i]).epsilon(0.02));
    before_sq += std::pow(std::log(five.before[i] / five.measured[i]), 2);
    after_sq += std::pow(std::log(five.after[i] / five.measured[i]), 2);
  }
  CHECK(after_sq < before_sq);
  for (const auto& f : {scenario_file, open_file, channels, co_run, runs, overlay}) std::remove(f.c_str());
}

TEST_CASE("calibrate --runs: the posterior of the figures, in closed form", "[calibrate]") {
  // Three runs, one figure moving each by d log(rate) / du = 1, noise 1 %: the posterior's precision is
  // 3 / 1e-4 + 12 (the prior's 1 / (1/12)), var(u) = 1 / 30012; the residuals' spread per degree of freedom left
  // (3 - 0.9996) is 1 %, no more than assumed. Half-width 1.6449 sqrt(var) = 0.009495.
  Eigen::MatrixXd jac(3, 1);
  jac << 1, 1, 1;
  Eigen::VectorXd r(3);
  r << 0.01, -0.01, 0;
  Posterior p = laplace(jac, r, 0.01);
  CHECK(p.noise == 0.01);
  CHECK(p.effective == Approx(3e4 / 30012.0));
  CHECK(p.cov(0, 0) == Approx(1 / 30012.0));
  auto i = intervals(p, {0.5});
  CHECK(i[0].first == Approx(0.5 - 0.009495).epsilon(1e-3));
  CHECK(i[0].second == Approx(0.5 + 0.009495).epsilon(1e-3));
  i = intervals(p, {0.995});  // clipped to the figure's range
  CHECK(i[0].second == 1.0);
  // Residuals of 5 %: the noise is what they show, sqrt(0.005 / 2), and the interval widens with it.
  r << 0.05, -0.05, 0;
  p = laplace(jac, r, 0.01);
  CHECK(p.noise == Approx(0.05).epsilon(1e-3));
  CHECK(intervals(p, {0.5})[0].second - 0.5 == Approx(1.6449 / std::sqrt(3 / 0.0025 + 12)).epsilon(1e-3));
  // One run is enough to pin one figure.
  Eigen::MatrixXd one(1, 1);
  one << 1;
  p = laplace(one, Eigen::VectorXd::Constant(1, 0.0), 0.01);
  CHECK(prior_share(p, 0) == Approx(std::sqrt(1 / (1e4 + 12.0)) / kPriorSd));
  CHECK(intervals(p, {0.5})[0].second < 0.52);
  // Two figures that move the runs only together (their sum): each keeps half its prior variance; a third,
  // alone, is pinned.
  Eigen::MatrixXd pair(4, 3);
  pair << 1, 1, 0.5, 1, 1, -0.5, 1, 1, 1, 1, 1, 0;
  Eigen::VectorXd r4 = Eigen::VectorXd::Zero(4);
  p = laplace(pair, r4, 0.01);
  CHECK(prior_share(p, 0) == Approx(std::sqrt(0.5)).epsilon(0.01));
  CHECK(prior_share(p, 1) == Approx(std::sqrt(0.5)).epsilon(0.01));
  CHECK(prior_share(p, 2) < 0.05);
  // A figure that moves no run keeps its prior, and all of its range.
  Eigen::MatrixXd flat(3, 1);
  flat << 0.0001, 0.0001, 0.0001;
  p = laplace(flat, Eigen::VectorXd::Zero(3), 0.01);
  CHECK(prior_share(p, 0) == Approx(1).epsilon(1e-3));
  CHECK(intervals(p, {0.5})[0] == std::pair{0.0, 1.0});
  // A prediction that moves as that figure does keeps the prior's variance; one more run that moves with
  // it by 1 per unit of u, noise 1 %, leaves 1 / (1e4 + 12) of it.
  Eigen::VectorXd g(1), candidate(1);
  g << 1;
  candidate << 1;
  CHECK(prediction_variance(p, g) == Approx(p.cov(0, 0)));
  CHECK(prediction_variance_after(p, g, candidate) == Approx(1 / (1 / p.cov(0, 0) + 1e4)).epsilon(1e-6));
}

TEST_CASE("calibrate --runs: runs in the flow fidelity are searched in the step fidelity, fitted in their own",
          "[calibrate][many_runs]") {
  // Collectives at once (concurrent_collectives unlimited): each run's own prediction is the flow fidelity's.
  // The fit searches with the step fidelity scaled to it at the catalog's figures; the residuals it reports
  // are the flow fidelity's at the fitted figures.
  const Catalog& catalog = test::catalog();
  const std::string measured = temp("ringsim_runs_flow_measured_") + ".yaml";
  std::ofstream(measured) << "compute:\n  co_run_slowdown: 0\nlibraries:\n  nccl:\n    kernel_channels: 2\n"
                             "    paths:\n      cross_socket: {bandwidth_fraction: 0.16}\n";
  const std::string file = temp("ringsim_runs_flow_scenario_") + ".yaml";
  std::ofstream(file) << "name: runs\ncluster: {sku: NC24r, nodes: 2, fabric: ethernet}\n"
                         "model: {name: resnet50, batch_per_gpu: 32}\ntraining: {epochs: 1}\n"
                         "communication: {library: nccl, concurrent_collectives: unlimited}\ncalibration: "
                      << measured << "\n";
  CatalogOverlay truth;
  truth.libraries["nccl"].paths["ethernet"].bandwidth_fraction = 0.40;
  truth.compute.step_time_cv = 0.02;
  truth.compute.co_run_slowdown = 0;
  truth.libraries["nccl"].kernel_channels = 2;
  const std::string runs = temp("ringsim_runs_flow_") + ".csv";
  {
    std::ofstream out(runs);
    out << "cluster.nodes,images_per_sec\n";
    for (int n = 1; n <= 3; ++n) {
      const Scenario s = load_scenario(file, catalog, {parse_override("cluster.nodes=" + std::to_string(n))});
      out << n << "," << std::setprecision(17) << predict_in_child(catalog, s, truth, false).first << "\n";
    }
  }
  const RunsFit fit = fit_runs(catalog, file, {}, runs);
  REQUIRE(fit.after.size() == 3);
  Catalog fitted = catalog;
  fitted.apply(catalog.read_overlay(measured));
  fitted.apply(fit.overlay);
  for (std::size_t i = 0; i < 3; ++i) {
    CAPTURE(i);
    CHECK(fit.after[i] == Approx(fit.measured[i]).epsilon(0.01));
    const Scenario s = load_scenario(file, catalog, {parse_override("cluster.nodes=" + std::to_string(i + 1))});
    CHECK(fit.after[i] == predict_in_child(fitted, s, {}, false).first);  // the flow fidelity's own
  }
  CHECK(std::fabs(fit.before[2] / fit.measured[2] - 1) > 0.01);
  for (const auto& f : {measured, file, runs}) std::remove(f.c_str());
}

TEST_CASE("calibrate --runs: malformed files are refused with file:line:col", "[calibrate]") {
  const Catalog& catalog = test::catalog();
  const std::string scenario_file = runs_scenario();
  const std::string runs = temp("ringsim_runs_bad_") + ".csv";
  const auto error_of = [&](const std::string& text) {
    std::ofstream(runs) << text;
    return test::input_error_of([&] { fit_runs(catalog, scenario_file, {}, runs); });
  };
  CHECK_THAT(error_of("cluster.nodes,image_per_sec\n1,100\n"),
             Catch::StartsWith(runs + ":1:15: error:") && Catch::Contains("did you mean images_per_sec"));
  CHECK_THAT(error_of("cluster.nodes,images_per_sec\n1,fast\n"), Catch::StartsWith(runs + ":2:3: error:"));
  CHECK_THAT(error_of("cluster.nodes,images_per_sec\n1\n"), Catch::Contains("expected 2 cells"));
  CHECK_THAT(error_of("cluster.nods,images_per_sec\n1,100\n"),
             Catch::StartsWith(runs + ":2:1: error:") && Catch::Contains("cluster.nodes"));
  std::remove(runs.c_str());
  std::remove(scenario_file.c_str());
}

TEST_CASE("calibrate --runs: any number of runs is answered, what they pin down fitted, the rest kept",
          "[calibrate][many_runs]") {
  const Catalog& catalog = test::catalog();
  const std::string scenario_file = runs_scenario();
  const std::string runs = temp("ringsim_runs_any_") + ".csv";
  const auto fit_of = [&](const std::string& text) {
    std::ofstream(runs) << text;
    return fit_runs(catalog, scenario_file, {}, runs);
  };
  // One run of two nodes: six figures move it; the fit answers, meets the run within its noise and says
  // which figures stayed at their priors; the next run to measure is one of the scenario's candidates.
  RunsFit one = fit_of("cluster.nodes,images_per_sec\n2,300\n");
  REQUIRE(one.after.size() == 1);
  CHECK(std::fabs(std::log(one.after[0] / 300)) < std::fabs(std::log(one.before[0] / 300)));
  CHECK(!one.fitted.empty());
  CHECK(!one.not_fitted.empty());
  CHECK_THAT(one.next.target, Catch::StartsWith("cluster.nodes=2 cluster.gpus_per_node="));
  CHECK(one.next.sd_after <= one.next.sd_now);
  // Two runs of one node, as the old fit refused (four independent ways, two runs): answered, and every
  // fitted figure's range lies inside its catalog range.
  const RunsFit two = fit_of("cluster.nodes,cluster.gpus_per_node,images_per_sec\n1,2,180\n1,4,350\n");
  for (const auto& x : two.fitted) {
    CHECK(x.fit_low >= x.low * (1 - 1e-12));
    CHECK(x.fit_high <= x.high * (1 + 1e-12));
    CHECK(x.prior_share < 0.9);
  }
  // The same configuration measured twice, 2x apart: accepted with a warning naming both lines, and the
  // noise widened to their spread (log 2 / sqrt 2).
  const RunsFit twice = fit_of("cluster.nodes,images_per_sec\n2,300\n2,600\n");
  REQUIRE(twice.warnings.size() == 1);
  CHECK_THAT(twice.warnings[0], Catch::Contains("lines 2, 3") && Catch::Contains("2x apart"));
  CHECK(twice.noise >= std::log(2.0) / std::sqrt(2.0) * (1 - 1e-9));
  // More runs narrow what the scenario's own rate is known to: runs of 1 and 2 nodes from known figures,
  // the first alone and then both.
  CatalogOverlay truth;
  truth.libraries["nccl"].paths["ethernet"].bandwidth_fraction = 0.40;
  write_runs(runs, scenario_file, truth, 2);
  const RunsFit both = fit_runs(catalog, scenario_file, {}, runs);
  std::string first;
  {
    std::ifstream in(runs);
    std::string header, row;
    std::getline(in, header);
    std::getline(in, row);
    first = header + "\n" + row + "\n";
  }
  const RunsFit single = fit_of(first);
  CHECK(both.next.sd_now < single.next.sd_now);
  CHECK(!single.next.run.empty());  // and a run that would narrow it is named
  std::remove(runs.c_str());
  std::remove(scenario_file.c_str());
}

TEST_CASE(
    "calibrate --nccl-tests: the calibration is held against its own logs, and one that explains them worse "
    "is reported, marked in its header and exits 1",
    "[calibrate]") {
  const std::string out = temp("ringsim_nccl_agreement_") + ".yaml";
  const auto calibrate = [&](const std::string& sets, const std::string& log) {
    return test::run_command(std::string(RINGSIM_TEST_BINARY) + " --catalog " + RINGSIM_TEST_CATALOG + " calibrate " +
                             RINGSIM_TEST_SCENARIOS + "/nccl_tests_nd96isr_h100_v5.yaml " + sets + " --nccl-tests " +
                             RINGSIM_TEST_DATA + "/nccl_tests/real/" + log + " -o " + out + " 2>&1");
  };
  const auto header = [&] {
    std::ifstream in(out);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  // SuperBench's 8 A100 in one node: the fitted path explains its 32 sizes better than the catalog.
  auto r = calibrate("--set cluster.sku=ND96asr_v4", "superbench_a100x8_g8_allreduce_check0_2021.log");
  CHECK(r.status == 0);
  CHECK_THAT(r.output, Catch::Contains("over its 32 sizes the predicted times miss by") &&
                           Catch::Contains("with the catalog's figures"));
  CHECK_THAT(header(), !Catch::Contains("WARNING"));
  // Its all_gather log is held against bench's all-gather: 29 sizes of at least one float a rank.
  r = calibrate("--set cluster.sku=ND96asr_v4", "superbench_a100x8_g8_allgather_check0_2021.log");
  CHECK(r.status == 0);
  CHECK_THAT(r.output, Catch::Contains("allgather_check0_2021.log: over its 29 sizes the predicted times miss by"));
  // An H100 log read as if from two A100 nodes: the one-line fit explains it worse than the catalog does.
  r = calibrate("--set cluster.sku=ND96asr_v4 --set cluster.nodes=2", "aws_p5_h100_2node_tagged_table_only_elided.log");
  CHECK(r.status == 1);
  CHECK_THAT(r.output, Catch::Contains("worse than the catalog's figures"));
  CHECK_THAT(header(), Catch::Contains("WARNING: ") && Catch::Contains("worse than the catalog does"));
  std::remove(out.c_str());
}
