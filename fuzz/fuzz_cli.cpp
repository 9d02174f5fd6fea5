// The `ringsim` command line: argument vectors (the input split at newlines) parsed by the program's own
// definition (cli/command_line.h). A bad command line must be a CLI11 parse error; a command that only
// reads and prints (catalog, topo, check) is run too, and may reject its input only as a reader does.
#include <fcntl.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "cli/command_line.h"
#include "fuzz_common.h"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  // What the commands print is not the finding; keep libFuzzer's own output (stderr) readable.
  const int null = ::open("/dev/null", O_WRONLY);
  if (null >= 0) ::dup2(null, STDOUT_FILENO);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::vector<std::string> args = {"ringsim", "--catalog", RINGSIM_FUZZ_CATALOG};
  std::istringstream in(std::string(reinterpret_cast<const char*>(data), size));
  for (std::string a; std::getline(in, a);) args.push_back(a);
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  const auto cl = std::make_unique<ringsim::CommandLine>();
  try {
    cl->app.parse(static_cast<int>(args.size()), argv.data());
  } catch (const CLI::ParseError&) {
    return 0;  // a usage error, reported by main with exit status 2
  }
  if (!cl->prints_only()) return 0;  // the others write files or start processes: run by the tests
  ringsim::fuzz::expect_clean_rejection([&] { cl->run("ringsim"); });
  return 0;
}
