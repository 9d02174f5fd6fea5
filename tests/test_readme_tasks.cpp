// README.md's worked tasks against the program (issue 51): each task's commands, taken from its code blocks
// ("$ build/bin/ringsim ..." lines), run in a temporary folder and must exit 0 and print the lines the README
// shows after them; and docs/scenario_keys.md must document exactly the program's scenario keys.
//
// Tags: [readme_tasks] on all. The fast ones carry [readme] too (CTest label `readme`, both CI
// configurations); the capacity plan (about a minute on 2 cores) carries [many_runs] instead (label
// `many_runs`, which the sanitizer configuration leaves out).
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "load/scenario.h"
#include "test_support.h"

namespace {

namespace fs = std::filesystem;

const std::string kRoot = std::string(RINGSIM_TEST_CATALOG) + "/..";
const std::string kReadme = kRoot + "/README.md";
const std::string kProgram = "build/bin/ringsim";

// The text of the section under `heading` (a whole line), up to the next heading of the same or a higher
// level; empty when there is no such heading.
std::string section(const std::string& text, const std::string& heading) {
  const auto at = text.find("\n" + heading + "\n");
  if (at == std::string::npos) return "";
  const std::size_t level = heading.find(' ');
  std::istringstream in(text.substr(at + heading.size() + 2));
  std::string out, line;
  bool in_code = false;
  while (std::getline(in, line)) {
    if (line.rfind("```", 0) == 0) in_code = !in_code;
    if (!in_code && !line.empty() && line[0] == '#') {
      const std::size_t l = line.find(' ');
      if (l != std::string::npos && l <= level && line.find_first_not_of('#') == l) break;
    }
    out += line + "\n";
  }
  return out;
}

// A command of a code block and the output lines the README shows after it.
struct Step {
  std::string command;
  std::vector<std::string> shown;
};

// Every "$ " line of the section's code blocks, with the lines after it up to the next command or the end
// of the block.
std::vector<Step> steps_in(const std::string& text) {
  std::vector<Step> steps;
  std::istringstream in(text);
  std::string line;
  bool in_code = false;
  while (std::getline(in, line)) {
    if (line.rfind("```", 0) == 0) {
      in_code = !in_code;
      continue;
    }
    if (!in_code) continue;
    if (line.rfind("$ ", 0) == 0)
      steps.push_back({line.substr(2), {}});
    else if (!steps.empty())
      steps.back().shown.push_back(line);
  }
  return steps;
}

// The README's command as the test runs it: the program built here with the bundled catalog, every
// argument that names a file or folder of the source tree (it has a '/') made absolute; the rest (output
// file names) stays relative, in `folder`.
std::string runnable(const std::string& command, const std::string& folder) {
  std::istringstream in(command);
  std::string word, out = "cd '" + folder + "' &&";
  bool first = true;
  while (in >> word) {
    if (first) {
      REQUIRE(word == kProgram);
      out += " '" + std::string(RINGSIM_TEST_BINARY) + "' --catalog '" + RINGSIM_TEST_CATALOG + "'";
      first = false;
      continue;
    }
    REQUIRE(word.find('\'') == std::string::npos);
    if (word.find('/') != std::string::npos && fs::exists(kRoot + "/" + word))
      out += " '" + kRoot + "/" + word + "'";
    else
      out += " '" + word + "'";
  }
  return out;
}

// A fresh folder under the system's temporary one, removed with the object.
struct TempFolder {
  std::string path;
  TempFolder() {
    std::string pattern = (fs::temp_directory_path() / "ringsim_readme_task_XXXXXX").string();
    REQUIRE(mkdtemp(pattern.data()) != nullptr);
    path = pattern;
  }
  ~TempFolder() {
    std::error_code ignored;
    fs::remove_all(path, ignored);
  }
};

// Runs the commands of the README's task under `heading`; each must exit 0 and print what the README shows.
// `must_run` are parts of commands the task must have (so that deleting a command fails too); `writes` are
// the files the task's commands must leave in the working folder.
void run_task(const std::string& heading, const std::vector<std::string>& must_run,
              const std::vector<std::string>& writes) {
  const std::string text = section(ringsim::test::slurp(kReadme), heading);
  INFO("README.md section: " << heading);
  REQUIRE_FALSE(text.empty());
  const auto steps = steps_in(text);
  REQUIRE_FALSE(steps.empty());
  for (const auto& part : must_run)
    CHECK(std::any_of(steps.begin(), steps.end(),
                      [&](const Step& s) { return s.command.find(part) != std::string::npos; }));
  TempFolder folder;
  for (const auto& step : steps) {
    INFO("command: " << step.command);
    CHECK_FALSE(step.shown.empty());  // the README says what each command prints
    const auto run = ringsim::test::run_command(runnable(step.command, folder.path));
    INFO(run.output);
    REQUIRE(run.status == 0);
    for (const auto& line : step.shown) {
      INFO("README.md line: " << line);
      CHECK(ringsim::test::in_output(line, run.output));
    }
  }
  for (const auto& file : writes) {
    INFO("output file: " << file);
    CHECK(fs::is_regular_file(folder.path + "/" + file));
  }
}

}  // namespace

TEST_CASE("README task 1: plan a job on today's sizes with a deadline and a budget", "[readme_tasks][many_runs]") {
  run_task("### 1. Plan a job before asking for quota",
           {"ringsim plan scenarios/bert_large_bf16_plan.yaml", "--deadline", "--budget"}, {"plan.json"});
}

TEST_CASE("README task 2: measure one or two nodes, calibrate on the runs, predict sixteen", "[readme_tasks][readme]") {
  run_task("### 2. Measure one or two nodes, then predict sixteen",
           {"ringsim calibrate", "--runs docs/examples/runs_resnet50_nc24rs_v3.csv -o overlay.yaml", "ringsim predict",
            "--calibration overlay.yaml --set cluster.nodes=16"},
           {"overlay.yaml"});
}

TEST_CASE("README task 3: ringsim bench against a real nccl-tests log, and a fit to it", "[readme_tasks][readme]") {
  run_task("### 3. Hold the simulator against a real nccl-tests log",
           {"ringsim bench scenarios/nccl_tests_nd96isr_h100_v5.yaml", "--nccl-tests tests/data/nccl_tests/real/",
            "--calibration nccl_overlay.yaml"},
           {"nccl_overlay.yaml"});
}

TEST_CASE("README task 4: whether a job fits a GPU's memory, and what makes it fit", "[readme_tasks][readme]") {
  run_task("### 4. Does the job fit in a GPU's memory?", {"check ", "activation_checkpointing=full"}, {});
}

TEST_CASE("README task 5: a language model sharded with FSDP: memory, tokens/s, a token budget",
          "[readme_tasks][readme]") {
  run_task("### 5. Shard a language model with FSDP: fit, tokens/s, time for a token budget",
           {"predict ", "sharding=no_shard"}, {});
}

TEST_CASE("README task 6: goodput at 16,384 GPUs, dedicated against low-priority, the checkpoint interval",
          "[readme_tasks][readme]") {
  run_task("### 6. How long, really: failures, checkpoints and low-priority VMs",
           {"predict scenarios/llama3_70b_hsdp_2048x_nd96isr_h100_v5.yaml", "cluster.low_priority=true",
            "reliability.checkpoint_async=true"},
           {});
}

TEST_CASE("README tasks: sections, commands and shown lines are read as the tests use them", "[readme_tasks][readme]") {
  const std::string text =
      "# t\n## A\nx\n### 1. one\n```\n$ build/bin/ringsim a b\nout\n...\n$ "
      "build/bin/ringsim c\n# not a heading\n```\n### 2. two\n$ build/bin/ringsim z\n## B\n";
  const std::string one = section(text, "### 1. one");
  CHECK(one.find("### 2.") == std::string::npos);
  const auto steps = steps_in(one);
  REQUIRE(steps.size() == 2);
  CHECK(steps[0].command == "build/bin/ringsim a b");
  CHECK(steps[0].shown == std::vector<std::string>{"out", "..."});
  CHECK(steps[1].shown == std::vector<std::string>{"# not a heading"});
  CHECK(section(text, "## A").find("### 2. two") != std::string::npos);
  CHECK(section(text, "### 3. three").empty());
  CHECK(ringsim::test::in_output("...", "anything\n"));
  CHECK(ringsim::test::in_output("  a b...", "x\n  a b c\n"));
  CHECK_FALSE(ringsim::test::in_output("  a b", "  a b c\n"));
  CHECK_THAT(runnable("build/bin/ringsim plan scenarios/bert_large_bf16_plan.yaml --json plan.json", "/tmp/x"),
             Catch::Contains("'" + kRoot + "/scenarios/bert_large_bf16_plan.yaml'") &&
                 Catch::Contains(" 'plan.json'") && Catch::StartsWith("cd '/tmp/x' &&"));
}

namespace {

// The keys a reference page documents: the first cell of every table row that is one key in backticks.
std::vector<std::string> documented_keys(const std::string& page) {
  std::vector<std::string> keys;
  static const std::regex row(R"(^\| `([A-Za-z0-9_.]+)` \|)");
  std::istringstream in(page);
  for (std::string line; std::getline(in, line);) {
    std::smatch m;
    if (std::regex_search(line, m, row)) keys.push_back(m[1]);
  }
  return keys;
}

}  // namespace

TEST_CASE("docs/scenario_keys.md documents exactly the program's scenario keys", "[readme_tasks][readme]") {
  const auto page = ringsim::test::slurp(kRoot + "/docs/scenario_keys.md");
  REQUIRE_FALSE(page.empty());
  const auto rows = documented_keys(page);
  const std::set<std::string> documented(rows.begin(), rows.end());
  CHECK(documented.size() == rows.size());  // one row per key
  const auto& program = ringsim::scenario_keys();
  const std::set<std::string> keys(program.begin(), program.end());
  std::string missing, extra;
  for (const auto& k : keys)
    if (!documented.count(k)) missing += "| `" + k + "` | type / unit | default | meaning |\n";
  for (const auto& k : documented)
    if (!keys.count(k)) extra += "  " + k + "\n";
  INFO("keys of ringsim::scenario_keys() without a row in docs/scenario_keys.md (add one):\n" << missing);
  INFO("rows of docs/scenario_keys.md naming no key of ringsim::scenario_keys():\n" << extra);
  CHECK(missing.empty());
  CHECK(extra.empty());
  CHECK(documented_keys("| key | x |\n| `cluster.nodes` | a | b | c |\n| `storage` section\n") ==
        std::vector<std::string>{"cluster.nodes"});
}

TEST_CASE("README.md and docs/: every relative link names a file of the source tree", "[readme_tasks][readme]") {
  std::vector<std::string> pages = {kReadme};
  for (const auto& e : fs::directory_iterator(kRoot + "/docs"))
    if (e.path().extension() == ".md") pages.push_back(e.path().string());
  CHECK(pages.size() >= 9);  // README.md and the eight pages by concept
  static const std::regex link(R"(\]\(([^)#\s]+)(#[^)\s]*)?\))");
  for (const auto& page : pages) {
    const std::string text = ringsim::test::slurp(page);
    for (auto it = std::sregex_iterator(text.begin(), text.end(), link); it != std::sregex_iterator(); ++it) {
      const std::string target = (*it)[1];
      if (target.find("://") != std::string::npos) continue;
      INFO(page << " links " << target);
      CHECK(fs::exists(fs::path(page).parent_path() / target));
    }
  }
}
