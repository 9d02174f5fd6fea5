// README.md against the program: the default run's excerpt must be what `ringsim predict` prints for the
// default scenario (issue 50), so that the README does not drift from the code.
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

// An excerpt line is one of the output's lines; one ending in "..." is the start of one.
bool in_output(const std::string& excerpt, const std::string& output) {
  std::istringstream in(output);
  const bool prefix = excerpt.size() >= 3 && excerpt.compare(excerpt.size() - 3, 3, "...") == 0;
  const std::string want = prefix ? excerpt.substr(0, excerpt.size() - 3) : excerpt;
  for (std::string line; std::getline(in, line);)
    if (prefix ? line.rfind(want, 0) == 0 : line == want) return true;
  return false;
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
    CHECK(in_output(line, run.output));
  }
}

TEST_CASE("README: an excerpt line matches a whole line, or the start of one where it ends in ...", "[readme]") {
  const std::string out = "a\n  iteration time   241.5 ms\n  band from   16 samples of x, y\n";
  CHECK(in_output("  iteration time   241.5 ms", out));
  CHECK_FALSE(in_output("  iteration time   241.5", out));
  CHECK(in_output("  band from   16 samples ...", out));
  CHECK_FALSE(in_output("  band from   17 samples ...", out));
  CHECK(code_block_after("x\nIts output (abridged):\n\n```\none\ntwo\n```\n", "Its output (abridged):") ==
        std::vector<std::string>{"one", "two"});
}
