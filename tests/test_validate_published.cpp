// `ringsim validate --published`: the check fails where a case's error grows past the recorded one, and a
// series calibrated on its small runs (few-shot) predicts its large ones.
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "load/input_error.h"
#include "test_support.h"
#include "validate/stack_coverage.h"
#include "validate/validation.h"

using namespace ringsim;

namespace {

using ringsim::test::slurp;

}  // namespace

TEST_CASE("validate --published: a case whose error grows past the recorded one fails the check", "[validate]") {
  const std::string dir = std::string(RINGSIM_TEST_CATALOG) + "/../validate/data/";
  std::ifstream in(dir + "published_baseline.json");
  auto baseline = nlohmann::json::parse(in);
  // 27 DGX-1 P100 rows, 2 Goyal et al. rows, 21 GCE K80 rows, 21 AWS p2.8xlarge rows, 20 distributed AWS rows,
  // 2 NCCL allreduce busbw rows across DGX-1 nodes
  REQUIRE(baseline["cases"].size() == 93);
  for (auto& c : baseline["cases"]) c["error_pct"] = 0.0;  // pretend every case used to be exact
  // Three of the published cases (the whole set takes minutes under the sanitizers), one of them an
  // allreduce's busbw, in a copy of the published file next to a link to the scenarios.
  const std::filesystem::path tmp = "/tmp/ringsim_strict_" + std::to_string(::getpid());
  std::filesystem::create_directories(tmp / "data");
  std::filesystem::create_directory_symlink(std::filesystem::path(dir) / ".." / "scenarios", tmp / "scenarios");
  std::ofstream cases(tmp / "data" / "published.yaml");
  cases << "cases:\n";
  std::istringstream published(slurp(dir + "published.yaml"));
  for (std::string line; std::getline(published, line);)
    if (line.find("name: vgg16 b32 x8,") != std::string::npos ||
        line.find("name: resnet50 b64 x2,") != std::string::npos ||
        line.find("name: dgx1-p100 nccl allreduce 1G x32,") != std::string::npos)
      cases << line << "\n";
  cases.close();
  const std::string strict = (tmp / "strict.json").string();
  std::ofstream(strict) << baseline.dump();
  const std::string out = (tmp / "out.txt").string();
  const std::string cmd = std::string(RINGSIM_TEST_BINARY) + " --catalog " + RINGSIM_TEST_CATALOG +
                          " validate --published " + (tmp / "data" / "published.yaml").string() + " --baseline " +
                          strict + " --json " + (tmp / "out.json").string() + " > " + out;
  const int status = std::system(cmd.c_str());
  CHECK(WEXITSTATUS(status) == 1);
  const std::string text = slurp(out);
  CHECK(text.find("regression: vgg16 b32 x8 / images_per_sec") != std::string::npos);
  CHECK(text.find("regression: dgx1-p100 nccl allreduce 1G x32 / busbw_gbps") != std::string::npos);
  CHECK(text.find("over 3 cases") != std::string::npos);
  // Each stack's cases, their error and their bands: three stacks here, a case each.
  CHECK(text.find("by stack: strategy over library") != std::string::npos);
  for (const char* stack : {"ring over nccl ", "ring over nccl1 ", "parameter_server over nccl "})
    CHECK(text.find(std::string("    ") + stack) != std::string::npos);
  const auto j = nlohmann::json::parse(slurp((tmp / "out.json").string()));
  REQUIRE(j.at("by_stack").size() == 3);
  int banded = 0;
  for (const auto& s : j.at("by_stack")) {
    CHECK(s.at("cases") == 1);
    banded += s.value("banded", 0);
  }
  // The two training cases have their bands and their stacks count them; the allreduce's busbw has none
  // (a bench prediction carries no band), and its stack says so rather than claiming coverage.
  CHECK(banded == 2);
  for (const auto& c : j.at("cases")) CHECK(!c.at("stack").get<std::string>().empty());
  std::filesystem::remove_all(tmp);
}

TEST_CASE("validate --published: few-shot, a series calibrated on its small runs predicts its large ones",
          "[validate][calibrate]") {
  const std::string dir = std::string(RINGSIM_TEST_CATALOG) + "/../validate/data/";
  const std::filesystem::path tmp = "/tmp/ringsim_few_shot_" + std::to_string(::getpid());
  std::filesystem::create_directories(tmp / "data");
  std::filesystem::create_directory_symlink(std::filesystem::path(dir) / ".." / "scenarios", tmp / "scenarios");
  // The distributed AWS ResNet-50 batch-64 series: 1 and 2 instances fit, 4 and 8 are predicted.
  std::string rows;
  std::istringstream published(slurp(dir + "published.yaml"));
  for (std::string line; std::getline(published, line);)
    if (line.find("name: aws dist resnet50 b64 x") != std::string::npos) rows += line + "\n";
  const auto write = [&](const std::string& name, const std::string& few_shot) {
    const std::string f = (tmp / "data" / name).string();
    std::ofstream(f) << few_shot << "cases:\n" << rows;
    return f;
  };
  const std::string file = write("published.yaml", "few_shot: {fit_nodes: 2, series: [model, batch_per_gpu]}\n");
  const ValidationReport r = validate_published(test::catalog(), file, false);
  REQUIRE(r.cases.size() == 4);
  REQUIRE(r.few_shot.size() == 2);
  REQUIRE(r.few_shot_fits.size() == 1);
  CHECK(r.few_shot_fits.front().find("(2 runs)") != std::string::npos);
  for (const auto& c : r.few_shot) {
    CHECK((c.x == 32 || c.x == 64));
    CHECK(c.predicted != c.zero_shot);  // the fitted figures moved it
    // The zero-shot prediction of the same run is the one in the zero-shot cases.
    const auto same = std::find_if(r.cases.begin(), r.cases.end(), [&](const auto& z) { return z.name == c.name; });
    REQUIRE(same != r.cases.end());
    CHECK(c.zero_shot == same->predicted);
  }
  const std::string text = validation_table(r);
  CHECK(text.find("few-shot MAPE") != std::string::npos);
  // The series' stack, in the zero-shot and the few-shot tables alike.
  const std::string stack =
      stack_of(load_scenario(dir + "../scenarios/aws_p2_8xlarge_tf_distributed_replicated.yaml", test::catalog()));
  CHECK(stack.rfind("parameter_server", 0) == 0);
  CHECK(cases_by_stack(r.few_shot).count(stack) == 1);
  CHECK(cases_by_stack(r.cases).at(stack).size() == 4);
  const std::string fsdp = stack_of(
      load_scenario(std::string(RINGSIM_TEST_SCENARIOS) + "/llama3_8b_fsdp_2x_nd96isr_h100_v5.yaml", test::catalog()));
  CHECK(fsdp.find(", fsdp over nccl") != std::string::npos);
  const auto j = nlohmann::json::parse(validation_json(r));
  CHECK(j.at("few_shot").at("cases").size() == 2);
  CHECK(j.at("few_shot").at("fit_nodes") == 2);
  // The recorded JSON's few-shot cases are checked like the others.
  auto recorded = nlohmann::json::parse(validation_json(r));
  const std::string strict = (tmp / "strict.json").string();
  for (auto& c : recorded["few_shot"]["cases"]) c["error_pct"] = 0.0;
  std::ofstream(strict) << recorded.dump();
  const auto worse = regressions(r, strict, 0.1);
  CHECK(worse.size() == 2);
  for (const auto& w : worse) CHECK(w.rfind("few-shot aws dist resnet50 b64 x", 0) == 0);
  // A file without few_shot has no few-shot cases.
  CHECK(validate_published(test::catalog(), write("none.yaml", ""), false).few_shot.empty());
  // Bad few_shot settings name the file, line and column.
  const std::string bad_nodes = write("bad_nodes.yaml", "few_shot: {fit_nodes: 0}\n");
  CHECK(test::input_error_of([&] {
          validate_published(test::catalog(), bad_nodes, false);
        }).find("bad_nodes.yaml:1:") != std::string::npos);
  const std::string bad_key = write("bad_key.yaml", "few_shot: {fit_nodes: 2, series: [gpus]}\n");
  const std::string e = test::input_error_of([&] { validate_published(test::catalog(), bad_key, false); });
  CHECK(e.find("bad_key.yaml:1:") != std::string::npos);
  CHECK(e.find("model") != std::string::npos);
  const std::string typo = write("typo.yaml", "few_shot: {fit_node: 2}\n");
  CHECK(test::input_error_of([&] { validate_published(test::catalog(), typo, false); }).find("fit_nodes") !=
        std::string::npos);
  std::filesystem::remove_all(tmp);
}
