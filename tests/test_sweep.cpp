// ringsim sweep as a user runs it: point order and determinism across job counts, resume, the sweep
// section of a scenario, and bad sweep specs refused with their location.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "plan/sweep.h"
#include "report/progress.h"
#include "test_support.h"

namespace fs = std::filesystem;

namespace {

struct Run {
  int status = 0;
  std::string output;
};

Run run_ringsim(const std::string& args) {
  const auto c =
      ringsim::test::run_command(std::string(RINGSIM_TEST_BINARY) + " --catalog " + RINGSIM_TEST_CATALOG + " " + args);
  return {c.status, c.output};
}

using ringsim::test::slurp;

const std::string kScenario = std::string(RINGSIM_TEST_SCENARIOS) + "/landolakes_cifar10_2x_nc24rs_v3.yaml";

}  // namespace

TEST_CASE("sweep: Cartesian product in axis order, first axis slowest, zip side by side", "[sweep]") {
  const std::vector<ringsim::SweepAxis> axes = {{"cluster.nodes", {"1", "2"}, {}, {}},
                                                {"communication.strategy", {"ring", "hierarchical", "ring"}, {}, {}}};
  const auto pts = ringsim::expand_sweep(axes, false);
  REQUIRE(pts.size() == 6);
  CHECK(pts[1].values == std::vector<std::string>{"1", "hierarchical"});
  CHECK(pts[3].values == std::vector<std::string>{"2", "ring"});
  CHECK(pts[5].index == 5);
  const std::vector<ringsim::SweepAxis> two = {{"cluster.nodes", {"1", "2"}, {}, {}},
                                               {"model.batch_per_gpu", {"32", "64"}, {}, {}}};
  const auto z = ringsim::expand_sweep(two, true);
  REQUIRE(z.size() == 2);
  CHECK(z[1].values == std::vector<std::string>{"2", "64"});
  CHECK_THROWS_AS(ringsim::expand_sweep(axes, true), ringsim::InputError);  // 2 vs 3 values
}

TEST_CASE("sweep: more than kMaxSweepPoints points are refused before they are expanded", "[sweep]") {
  std::vector<std::string> thousand;
  for (int i = 1; i <= 1000; ++i) thousand.push_back(std::to_string(i));
  const std::vector<ringsim::SweepAxis> axes = {{"cluster.nodes", thousand, {"s.yaml", 3, 4, ""}, {}},
                                                {"model.batch_per_gpu", thousand, {}, {}},
                                                {"training.epochs", thousand, {}, {}}};
  const std::string msg = ringsim::test::input_error_of([&] { ringsim::expand_sweep(axes, false); });
  CHECK_THAT(msg, Catch::StartsWith("s.yaml:3:4: error: sweep: 1000 (cluster.nodes) x 1000"));
  CHECK_THAT(msg, Catch::Contains("= 1e+09 points; a sweep runs at most 100000"));
  CHECK(ringsim::expand_sweep({axes[0], axes[1]}, true).size() == 1000);  // zip: side by side
}

TEST_CASE("sweep: the same CSV with one job and with two", "[sweep]") {
  const fs::path dir = fs::temp_directory_path() / ("ringsim_sweep_t" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string axes = " --sweep cluster.nodes=1,2 --sweep communication.fusion_threshold=0,1MiB,64MiB";
  REQUIRE(run_ringsim("sweep " + kScenario + axes + " -j1 --csv " + (dir / "a.csv").string()).status == 0);
  REQUIRE(run_ringsim("sweep " + kScenario + axes + " -j2 --csv " + (dir / "b.csv").string() + " --json " +
                      (dir / "b.json").string() + " --plot " + (dir / "b.svg").string())
              .status == 0);
  const std::string a = slurp(dir / "a.csv");
  CHECK(a == slurp(dir / "b.csv"));
  CHECK(std::count(a.begin(), a.end(), '\n') == 7);  // header + 6 points
  CHECK_THAT(a, Catch::StartsWith("point,cluster.nodes,communication.fusion_threshold,gpus,nodes,fidelity,"));
  CHECK_THAT(slurp(dir / "b.json"), Catch::Contains("\"schema\": \"ringsim.sweep/1\""));
  CHECK_THAT(slurp(dir / "b.svg"), Catch::Contains("<svg") && Catch::Contains("</svg>"));  // drawn by gnuplot
  CHECK_THAT(slurp(dir / "b.gp"), Catch::Contains("\"b.dat\" index 0 using 1:2"));

  // Resume: keep the header and two rows, run again: only the four others run, same file at the end.
  std::istringstream in(a);
  std::string line, partial;
  for (int i = 0; i < 3 && std::getline(in, line); ++i) partial += line + "\n";
  std::ofstream(dir / "c.csv") << partial;
  const Run resumed = run_ringsim("sweep " + kScenario + axes + " -j2 --resume --csv " + (dir / "c.csv").string());
  CHECK(resumed.status == 0);
  CHECK_THAT(resumed.output, Catch::Contains("(4/4)"));
  CHECK(slurp(dir / "c.csv") == a);
  fs::remove_all(dir);
}

TEST_CASE("sweep: a scenario's sweep section with lists and ranges", "[sweep]") {
  const auto axes =
      ringsim::read_sweep_axes(std::string(RINGSIM_TEST_SCENARIOS) + "/resnet50_scaling_sweep_nc24rs_v3.yaml", {});
  REQUIRE(axes.size() == 3);
  CHECK(axes[0].values == std::vector<std::string>{"1", "2", "4", "8", "16", "32"});
  CHECK(axes[2].values == std::vector<std::string>{"0 B", "16 MiB", "64 MiB"});
  CHECK(ringsim::expand_sweep(axes, false).size() == 36);
}

TEST_CASE("sweep: bad sweep specs are refused with file, line and column", "[sweep]") {
  const fs::path f = fs::temp_directory_path() / ("ringsim_bad_sweep_" + std::to_string(::getpid()) + ".yaml");
  const std::string base = slurp(kScenario);
  auto with_sweep = [&](const std::string& section) {
    std::ofstream(f) << base << section;
    return run_ringsim("sweep " + f.string() + " -j1");
  };
  const Run unknown = with_sweep("sweep:\n  cluster.node: [1, 2]\n");
  CHECK(unknown.status == 2);
  const auto key_line = std::count(base.begin(), base.end(), '\n') + 2;  // "  cluster.node: ..." below "sweep:"
  CHECK_THAT(unknown.output, Catch::Contains(f.string() + ":" + std::to_string(key_line) + ":17: error:"));
  CHECK_THAT(unknown.output, Catch::Contains("unknown key 'cluster.node'; did you mean cluster.nodes"));
  const Run empty = with_sweep("sweep:\n  cluster.nodes: []\n");
  CHECK(empty.status == 2);
  CHECK_THAT(empty.output, Catch::Contains("the list of values is empty"));
  const Run range = with_sweep("sweep:\n  cluster.nodes: {from: one, to: 8, step: 1}\n");
  CHECK(range.status == 2);
  CHECK_THAT(range.output, Catch::Contains("sweep.cluster.nodes.from"));
  const Run bad_value = with_sweep("sweep:\n  cluster.nodes: [1, 0]\n");
  CHECK(bad_value.status == 2);
  // Reported at the list item that gives the value.
  CHECK_THAT(bad_value.output, Catch::Contains(":24:22: error: sweep value cluster.nodes=0: cluster.nodes: must be"));
  const Run cli = run_ringsim("sweep " + kScenario + " --sweep cluster.nodes");
  CHECK(cli.status == 2);
  CHECK_THAT(cli.output, Catch::Contains("--sweep cluster.nodes: error: expected KEY=V1,V2"));
  fs::remove(f);
}

TEST_CASE("progress: one line rewritten in place on a terminal, a line per point elsewhere (issue 30)", "[sweep]") {
  CHECK(ringsim::Progress::status(3, 12, "points", 6) == "3/12 points, 2 s each, 18 s left");
  CHECK(ringsim::Progress::status(10, 12, "points", 2) == "10/12 points, 5.0 points/s, 400 ms left");
  CHECK(ringsim::Progress::status(12, 12, "launches", 60) == "12/12 launches, 5 s each");
  CHECK(ringsim::Progress::status(0, 12, "points", 0) == "0/12 points");
  const std::string sweep = std::string(RINGSIM_TEST_BINARY) + " --catalog " + RINGSIM_TEST_CATALOG + " sweep " +
                            kScenario + " --sweep cluster.nodes=1,2,4 -j 1 --csv /dev/null";
  // Not a terminal: plain lines.
  const auto plain = ringsim::test::run_command(sweep);
  CHECK(plain.status == 0);
  CHECK_THAT(plain.output, Catch::Contains("ringsim sweep: point 2 done (3/3)\n"));
  CHECK(plain.output.find('\r') == std::string::npos);
  // A terminal (script(1), of Debian's essential util-linux, gives the command one): the line is rewritten,
  // with the rate and time left.
  const auto tty = ringsim::test::run_command("script -qefc '" + sweep + "' /dev/null");
  CHECK(tty.status == 0);
  CHECK_THAT(tty.output, Catch::Contains("\rringsim sweep: 1/3 points, ") && Catch::Contains(" left\033[K") &&
                             Catch::Contains("\rringsim sweep: 3/3 points, "));
  CHECK(tty.output.find("point 2 done") == std::string::npos);
}

TEST_CASE("sweep: a text model's chart counts sequences, not images (issue 50)", "[sweep]") {
  const fs::path dir = fs::temp_directory_path() / ("ringsim_sweep_noun_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string bert = std::string(RINGSIM_TEST_SCENARIOS) + "/bert_large_bf16_plan.yaml";
  const Run r = run_ringsim("sweep " + bert + " --sweep cluster.nodes=1,2 -j2 --csv " + (dir / "a.csv").string() +
                            " --plot " + (dir / "a.svg").string());
  INFO(r.output);
  REQUIRE(r.status == 0);
  const std::string gp = slurp(dir / "a.gp");
  CHECK_THAT(gp, Catch::Contains("set ylabel \"sequences/s, all GPUs\""));
  CHECK_THAT(gp, Catch::Contains(" sequences/s\""));  // the linear-scaling line's title
  CHECK_THAT(gp + r.output, !Catch::Contains("images"));
  // The CSV keeps its columns (a schema that --resume and users read).
  CHECK_THAT(slurp(dir / "a.csv"), Catch::Contains(",images_per_sec,images_per_sec_per_gpu,"));
  fs::remove_all(dir);
}

TEST_CASE("progress: validate --published shows its cases on standard error, stdout unchanged (issue 50)",
          "[sweep][validate]") {
  const fs::path dir = fs::temp_directory_path() / ("ringsim_validate_progress_" + std::to_string(::getpid()));
  fs::create_directories(dir / "data");
  const std::string published = std::string(RINGSIM_TEST_CATALOG) + "/../validate/";
  fs::create_directory_symlink(fs::path(published) / "scenarios", dir / "scenarios");
  std::ofstream cases(dir / "data" / "published.yaml");
  cases << "cases:\n";
  std::istringstream in(slurp(published + "data/published.yaml"));
  for (std::string line; std::getline(in, line);)
    if (line.find("name: vgg16 b32 x8,") != std::string::npos ||
        line.find("name: resnet50 b64 x2,") != std::string::npos)
      cases << line << "\n";
  cases.close();
  const std::string cmd = std::string(RINGSIM_TEST_BINARY) + " --catalog " + RINGSIM_TEST_CATALOG +
                          " validate --no-band --published " + (dir / "data" / "published.yaml").string();
  const auto err = ringsim::test::run_command("(" + cmd + " 2>&1 >/dev/null)");  // standard error alone
  CHECK(err.status == 0);
  CHECK_THAT(err.output, Catch::Contains("ringsim validate: case vgg16 b32 x8") && Catch::Contains("(1/2)\n") &&
                             Catch::Contains("(2/2)\n"));
  const auto out = ringsim::test::run_command("(" + cmd + " 2>/dev/null)");  // standard output alone
  CHECK(out.status == 0);
  CHECK_THAT(out.output, !Catch::Contains("ringsim validate: case"));
  fs::remove_all(dir);
}
