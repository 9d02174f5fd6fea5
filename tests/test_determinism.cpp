// Design rule 5: the same input gives byte-identical output. Every bundled scenario is run twice through
// the `ringsim` program; sweeps and plans with two jobs at once, whose points finish in any order.
// (Sweeps with -j1 against -j2, in the flow fidelity, are compared in test_sweep.cpp.)
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "load/scenario.h"
#include "test_support.h"

namespace fs = std::filesystem;

namespace {

using ringsim::test::slurp;

bool has_section(const fs::path& scenario, const std::string& section) {
  std::istringstream in(slurp(scenario));
  for (std::string line; std::getline(in, line);)
    if (line.rfind(section + ":", 0) == 0) return true;
  return false;
}

// Runs `ringsim ARGS` with {out} replaced by the fresh folder `out`; returns standard output and the files
// written there, named and concatenated.
std::string outputs(const std::string& args, const fs::path& out) {
  fs::remove_all(out);
  fs::create_directories(out);
  std::string a = args;
  for (auto pos = a.find("{out}"); pos != std::string::npos; pos = a.find("{out}")) a.replace(pos, 5, out.string());
  // Standard error only carries progress lines, in completion order: not part of the output.
  const auto r = ringsim::test::run_command("(" + std::string(RINGSIM_TEST_BINARY) + " --catalog " +
                                            RINGSIM_TEST_CATALOG + " " + a + " 2>/dev/null)");
  REQUIRE(r.status == 0);
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(out)) files.push_back(e.path());
  std::sort(files.begin(), files.end());
  std::string all = "stdout:\n" + r.output;
  for (const auto& f : files) {
    const std::string text = slurp(f);
    CHECK_FALSE(text.empty());
    all += "\n" + f.filename().string() + ":\n" + text;
  }
  std::size_t named = 0;  // every file the command was told to write is there
  for (auto pos = args.find("{out}/"); pos != std::string::npos; pos = args.find("{out}/", pos + 1)) ++named;
  CHECK(files.size() == named);
  return all;
}

}  // namespace

TEST_CASE("determinism: every bundled scenario, run twice, gives byte-identical output", "[determinism][cli]") {
  std::vector<fs::path> scenarios;
  for (const char* dir : {RINGSIM_TEST_SCENARIOS, RINGSIM_TEST_VALIDATION_SCENARIOS})
    for (const auto& e : fs::directory_iterator(dir))
      if (e.path().extension() == ".yaml") scenarios.push_back(e.path());
  std::sort(scenarios.begin(), scenarios.end());
  REQUIRE(scenarios.size() >= 12);
  const fs::path tmp = fs::temp_directory_path() / ("ringsim_determinism_" + std::to_string(::getpid()));
  for (const auto& s : scenarios) {
    // Thousands of GPUs without their band (16 more runs of the same code, whose determinism the smaller
    // scenarios check): the suite's time stays the sanitizers' budget.
    const bool large = ringsim::load_scenario(s.string(), ringsim::test::catalog()).cluster.total_gpus() > 4096;
    std::vector<std::string> commands = {
        "check " + s.string(), "predict " + s.string() + (large ? " --no-band" : "") +
                                   " --json {out}/result.json --trace {out}/trace.json --links {out}/links.csv"};
    // Sweeps and plans in the step fidelity: what is checked here is that points finishing in any order
    // give the same files (each point's own determinism is predict's, checked above in its default
    // fidelity); the flow fidelity's 64-GPU points would take minutes under the sanitizers.
    if (has_section(s, "sweep"))
      commands.push_back("sweep " + s.string() + " -j2 --fidelity step --csv {out}/sweep.csv --json {out}/sweep.json");
    if (has_section(s, "plan"))
      commands.push_back("plan " + s.string() + " -j2 --fidelity step --csv {out}/plan.csv --json {out}/plan.json");
    for (const auto& c : commands) {
      DYNAMIC_SECTION(s.filename().string() << ": " << c.substr(0, c.find(' '))) {
        const std::string first = outputs(c, tmp / "a"), second = outputs(c, tmp / "b");
        // The folder name differs between the runs; nothing else may.
        std::string b = second;
        for (auto pos = b.find((tmp / "b").string()); pos != std::string::npos; pos = b.find((tmp / "b").string()))
          b.replace(pos, (tmp / "b").string().size(), (tmp / "a").string());
        CHECK(first == b);
      }
    }
  }
  fs::remove_all(tmp);
}
