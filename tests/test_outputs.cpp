// Every command that writes files, with each output option alone and all together (issue 30: `sweep
// --plot` alone read an empty --json). Each run must write what was asked and nothing else; plots come
// with their gnuplot script and data beside them; a missing gnuplot is refused before any work.
#include <catch2/catch.hpp>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "test_support.h"

namespace fs = std::filesystem;

namespace {

const std::string kScenarios = RINGSIM_TEST_SCENARIOS;
const std::string kData = RINGSIM_TEST_DATA;

struct Command {
  std::string name, args;
  std::map<std::string, std::string> outputs;  // option -> file name it writes
};

std::vector<Command> commands() {
  const std::string base = kScenarios + "/resnet50_imagenet_8x_nc24rs_v3.yaml --set cluster.nodes=2";
  return {
      {"predict", "predict " + base, {{"--json", "p.json"}, {"--trace", "p.trace.json"}, {"--links", "p.csv"}}},
      {"sweep",
       "sweep " + base + " --sweep cluster.nodes=1,2 -j 1",
       {{"--csv", "s.csv"}, {"--json", "s.json"}, {"--plot", "s.png"}}},
      {"plan",
       "plan " + kScenarios +
           "/resnet50_imagenet_plan.yaml --skus NC24rs_v3 --nodes 1,2 --strategies ring -j 1 --deadline 30h",
       {{"--csv", "plan.csv"}, {"--json", "plan.json"}, {"--plot", "plan.png"}}},
      {"validate",
       "validate " + base + " --horovod-timeline " + kData +
           "/horovod_timelines/real/thetagpu_a100_8rank_tf2_keras_nccl_prefix.json",
       {{"--json", "v.json"}, {"--plot", "v.png"}}},
      {"calibrate",
       "calibrate " + base + " --nccl-tests " + kData +
           "/nccl_tests/real/aws_p4d_efa_2node_16rank_tagged_ncclinfo_2021.log",
       {{"-o", "overlay.yaml"}, {"--plot", "c.png"}}},
  };
}

// What a plot option leaves: the image, its script and its data.
std::vector<std::string> files_of(const std::string& option, const std::string& file) {
  if (option != "--plot") return {file};
  const std::string stem = fs::path(file).stem().string();
  return {file, stem + ".gp", stem + ".dat"};
}

ringsim::test::CommandResult ringsim_in(const fs::path& dir, const std::string& args, const std::string& env = "") {
  return ringsim::test::run_command("cd " + dir.string() + " && " + env + " " + RINGSIM_TEST_BINARY + " --catalog " +
                                    RINGSIM_TEST_CATALOG + " " + args);
}

fs::path fresh_dir(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("ringsim_outputs_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

std::size_t files_in(const fs::path& dir) {
  return static_cast<std::size_t>(std::distance(fs::directory_iterator(dir), fs::directory_iterator()));
}

}  // namespace

TEST_CASE("outputs: each file option of predict, sweep, plan, validate and calibrate, alone and together",
          "[outputs]") {
  for (const auto& c : commands()) {
    // Each option alone, then all of them in one run.
    std::vector<std::map<std::string, std::string>> runs;
    for (const auto& o : c.outputs) runs.push_back({o});
    runs.push_back(c.outputs);
    for (const auto& run : runs) {
      const fs::path dir = fresh_dir(c.name);
      std::string args = c.args;
      std::size_t expected = 0;
      for (const auto& [option, file] : run) {
        args += " " + option + " " + file;
        expected += files_of(option, file).size();
      }
      INFO(args);
      const auto r = ringsim_in(dir, args);
      CAPTURE(r.output);
      CHECK(r.status == 0);
      for (const auto& [option, file] : run)
        for (const auto& f : files_of(option, file)) {
          INFO(f);
          CHECK(fs::file_size(dir / f) > 0);
        }
      for (const auto& [option, file] : run)
        if (option == "--plot") CHECK(ringsim::test::slurp((dir / file).string()).substr(1, 3) == "PNG");
      CHECK(files_in(dir) == expected);  // nothing else: no temporary file left behind
      fs::remove_all(dir);
    }
  }
}

TEST_CASE("outputs: plots as svg and pdf, and the same script and data on a second run", "[outputs]") {
  const fs::path dir = fresh_dir("kinds");
  const std::string sweep =
      "sweep " + kScenarios + "/resnet50_imagenet_8x_nc24rs_v3.yaml --sweep cluster.nodes=1,2 -j 1";
  REQUIRE(ringsim_in(dir, sweep + " --plot a.svg").status == 0);
  CHECK_THAT(ringsim::test::slurp((dir / "a.svg").string()), Catch::Contains("<svg") && Catch::Contains("</svg>"));
  const std::string script = ringsim::test::slurp((dir / "a.gp").string());
  const std::string data = ringsim::test::slurp((dir / "a.dat").string());
  REQUIRE(ringsim_in(dir, sweep + " --plot a.svg").status == 0);
  CHECK(ringsim::test::slurp((dir / "a.gp").string()) == script);
  CHECK(ringsim::test::slurp((dir / "a.dat").string()) == data);
  REQUIRE(ringsim_in(dir, sweep + " --plot b.pdf").status == 0);
  CHECK(ringsim::test::slurp((dir / "b.pdf").string()).substr(0, 5) == "%PDF-");
  // The script draws the chart again where it lies, as a user restyling it would run it.
  fs::remove(dir / "a.svg");
  CHECK(ringsim::test::run_command("cd " + dir.string() + " && gnuplot a.gp").status == 0);
  CHECK(fs::exists(dir / "a.svg"));
  fs::remove_all(dir);
}

TEST_CASE("outputs: a plot is refused before any work without gnuplot or with an image kind it cannot write",
          "[outputs]") {
  const fs::path dir = fresh_dir("refused");
  const std::string sweep =
      "sweep " + kScenarios + "/resnet50_imagenet_8x_nc24rs_v3.yaml --sweep cluster.nodes=1,2 -j 1";
  const auto absent = ringsim_in(dir, sweep + " --csv s.csv --plot s.png", "RINGSIM_GNUPLOT=/nonexistent/gnuplot");
  CHECK(absent.status == 2);
  CHECK_THAT(absent.output, Catch::Contains("--plot draws with gnuplot, which is not installed here") &&
                                Catch::Contains("apt-get install gnuplot-nox"));
  CHECK(absent.output.find("point 0 done") == std::string::npos);  // refused before the points ran
  const auto kind = ringsim_in(dir, sweep + " --plot s.jpg");
  CHECK(kind.status == 2);
  CHECK_THAT(kind.output, Catch::Contains("s.jpg: error: --plot: expected an image name ending in .png, .svg or .pdf"));
  const auto folder = ringsim_in(dir, "plan " + kScenarios + "/resnet50_imagenet_plan.yaml --plot no/such/dir/p.png");
  CHECK(folder.status == 2);
  CHECK(files_in(dir) == 0);  // nothing written
  fs::remove_all(dir);
}
