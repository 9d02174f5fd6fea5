// README.md against the program: the default run's excerpt must be what `ringsim predict` prints for the
// default scenario (issue 50), so that the README does not drift from the code.
#include <cmath>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "test_support.h"

namespace {

const std::string kReadme = std::string(RINGSIM_TEST_CATALOG) + "/../README.md";

// The lines of the code block after `marker` in `text` (empty when there is none).
std::vector<std::string> code_block_after(const std::string& text, const std::string& marker) {
  std::vector<std::string> lines;
  const auto at = text.find(marker);
  if (at == std::string::npos) return lines;
  std::istringstream in(text.substr(at));
  std::string line;
  while (std::getline(in, line) && line.rfind("```", 0) != 0) {
  }
  while (std::getline(in, line) && line.rfind("```", 0) != 0) lines.push_back(line);
  return lines;
}

}  // namespace

TEST_CASE("README: the default run's excerpt is what ringsim predict prints", "[readme]") {
  const auto excerpt = code_block_after(ringsim::test::slurp(kReadme), "Its output (abridged):");
  REQUIRE(excerpt.size() >= 5);
  const auto run =
      ringsim::test::run_command(std::string(RINGSIM_TEST_BINARY) + " --catalog " + RINGSIM_TEST_CATALOG + " predict " +
                                 RINGSIM_TEST_SCENARIOS + "/resnet50_imagenet_8x_nc24rs_v3.yaml");
  REQUIRE(run.status == 0);
  INFO(run.output);
  for (const auto& line : excerpt) {
    INFO("README.md line: " << line);
    CHECK(ringsim::test::in_output(line, run.output));
  }
}

TEST_CASE("README: an excerpt line matches a whole line, or the start of one where it ends in ...", "[readme]") {
  const std::string out = "a\n  iteration time   241.5 ms\n  band from   16 samples of x, y\n";
  CHECK(ringsim::test::in_output("  iteration time   241.5 ms", out));
  CHECK_FALSE(ringsim::test::in_output("  iteration time   241.5", out));
  CHECK(ringsim::test::in_output("  band from   16 samples ...", out));
  CHECK_FALSE(ringsim::test::in_output("  band from   17 samples ...", out));
  CHECK(code_block_after("x\nIts output (abridged):\n\n```\none\ntwo\n```\n", "Its output (abridged):") ==
        std::vector<std::string>{"one", "two"});
}

namespace {

// "−20.6 %" or "+2.1 %" as the README writes a signed error (a Unicode minus), or "5.0 %" unsigned.
std::string pct(double v, bool sign) {
  char b[32];
  std::snprintf(b, sizeof b, "%.1f %%", std::fabs(v));
  return (sign ? (v < 0 ? "\u2212" : "+") : "") + std::string(b);
}

}  // namespace

TEST_CASE("README: the published validation's figures are the recorded baseline's", "[readme]") {
  const std::string readme = ringsim::test::slurp(kReadme);
  const auto j = nlohmann::json::parse(
      ringsim::test::slurp(std::string(RINGSIM_TEST_CATALOG) + "/../validate/data/published_baseline.json"));
  std::map<std::string, double> error;
  int banded = 0, inside = 0;
  for (const auto& c : j["cases"]) {
    error[c["case"].get<std::string>()] = c["error_pct"].get<double>();
    if (c.contains("in_band")) {
      ++banded;
      inside += c["in_band"].get<bool>() ? 1 : 0;
    }
  }
  CHECK_THAT(readme, Catch::Contains("over 50 GbE, " + pct(error.at("goyal resnet50 b32 x256"), true) + " and " +
                                     pct(error.at("goyal resnet50 b32 x352"), true)));
  CHECK_THAT(readme, Catch::Contains(pct(error.at("dgx1v nccl allreduce 1G x32"), true) + " (V100) and " +
                                     pct(error.at("dgx1-p100 nccl allreduce 1G x32"), true) + " (P100)"));
  CHECK_THAT(readme, Catch::Contains(std::to_string(j["cases"].size()) + " cases, MAPE " +
                                     pct(j["mape_pct"].get<double>(), false) + ", max " +
                                     pct(j["max_abs_error_pct"].get<double>(), false) + ", " + std::to_string(inside) +
                                     " of " + std::to_string(banded) + " inside their band"));
}
