// The bad-input catalogue (tests/bad_inputs/catalogue.yaml): every bad file and argument, run through the
// `ringsim` program as a user would, must be refused with its documented one-line message, the bad-input
// exit status, no C++ exception type or stack trace, and no output file.
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "test_support.h"

namespace fs = std::filesystem;

namespace {

const std::string kDir = RINGSIM_TEST_BAD_INPUTS;

std::string substitute(std::string s, const std::string& out, const std::string& catalog) {
  for (auto [key, value] : {std::pair<std::string, std::string>{"{dir}", kDir}, {"{out}", out}, {"{catalog}", catalog}})
    for (auto pos = s.find(key); pos != std::string::npos; pos = s.find(key, pos + value.size()))
      s.replace(pos, key.size(), value);
  return s;
}

// Standard error only (standard output is discarded), with the given catalog.
// `env`: more VARIABLE=value settings for the run.
ringsim::test::CommandResult ringsim_stderr(const std::string& args, const std::string& catalog = RINGSIM_TEST_CATALOG,
                                            const std::string& env = "") {
  return ringsim::test::run_command("(RINGSIM_CATALOG=" + catalog + " " + env + " " + RINGSIM_TEST_BINARY + " " + args +
                                    " 2>&1 >/dev/null)");
}

// A copy of the bundled catalog with `edit.replace` replaced by `edit.with` in `edit.file`.
std::string edited_catalog(const YAML::Node& edit, const fs::path& dir) {
  fs::remove_all(dir);
  fs::copy(RINGSIM_TEST_CATALOG, dir, fs::copy_options::recursive);
  const fs::path file = dir / edit["file"].as<std::string>();
  std::string text = ringsim::test::slurp(file.string());
  const std::string from = edit["replace"].as<std::string>();
  const auto pos = text.find(from);
  REQUIRE(pos != std::string::npos);  // the catalog changed: update the case
  REQUIRE(text.find(from, pos + 1) == std::string::npos);
  text.replace(pos, from.size(), edit["with"].as<std::string>());
  std::ofstream(file, std::ios::binary) << text;
  return dir.string();
}

// What a user must never see: a C++ exception's type, a library's internals, a crash.
void check_no_internals(const std::string& err) {
  for (const char* s : {"std::", "exception", "terminate called", "what()", "Aborted", "Segmentation", "__cxx",
                        "basic_string", "Assertion", "core dumped"})
    CHECK_THAT(err, !Catch::Contains(s));
}

}  // namespace

TEST_CASE("bad inputs: every case of the catalogue is refused with its message", "[bad_input][cli]") {
  const YAML::Node cases = YAML::LoadFile(kDir + "/catalogue.yaml");
  REQUIRE(cases.IsSequence());
  CHECK(cases.size() >= 50);
  const fs::path tmp = fs::temp_directory_path() / ("ringsim_bad_inputs_" + std::to_string(::getpid()));
  fs::create_directories(tmp);
  const std::string out = (tmp / "output.file").string();
  for (const auto& c : cases) {
    const std::string name = c["name"].as<std::string>();
    DYNAMIC_SECTION(name) {
      const std::string catalog =
          c["catalog_edit"] ? edited_catalog(c["catalog_edit"], tmp / "catalog") : RINGSIM_TEST_CATALOG;
      auto r = ringsim_stderr(substitute(c["args"].as<std::string>(), out, catalog), catalog,
                              c["env"] ? c["env"].as<std::string>() : "");
      r.output = ringsim::test::without_asan_notes(r.output);
      const int status = c["status"] ? c["status"].as<int>() : 2;
      CHECK(r.status == status);
      CHECK(r.output == substitute(c["error"].as<std::string>(), out, catalog) + "\n");
      check_no_internals(r.output);
      CHECK_FALSE(fs::exists(out));
    }
  }
  fs::remove_all(tmp);
}

TEST_CASE("bad inputs: a 100 MB YAML file is refused before it is parsed", "[bad_input][cli]") {
  const fs::path file = fs::temp_directory_path() / ("ringsim_100mb_" + std::to_string(::getpid()) + ".yaml");
  {
    std::ofstream f(file, std::ios::binary);
    f << "cluster:\n  sku: NC24rs_v3\n  nodes: 2\nmodel:\n  name: resnet50\n  batch_per_gpu: 64\nsweep:\n"
         "  cluster.nodes: [";
    const std::string chunk(1 << 20, '1');  // one long number per MiB, 100 of them
    for (int i = 0; i < 100; ++i) f << (i ? ", " : "") << chunk;
    f << "]\n";
  }
  REQUIRE(fs::file_size(file) > 100u << 20);
  for (const char* command : {"check", "sweep"}) {
    const auto r = ringsim_stderr(std::string(command) + " " + file.string());
    CHECK(r.status == 2);
    CHECK(r.output == file.string() +
                          ": error: the file is larger than 4 MiB, the most ringsim reads as a scenario file; is it "
                          "the right file?\n");
    check_no_internals(r.output);
  }
  fs::remove(file);
}
