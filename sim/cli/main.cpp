// ringsim: simulate, plan and validate data-parallel training on GPU clusters.
#include <unistd.h>

#include <iostream>
#include <memory>
#include <new>

#include "cli/command_line.h"
#include "load/input_error.h"

namespace {
std::string self_path(const char* argv0) {
  char self[4096] = {};
  const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  return n > 0 ? std::string(self, static_cast<std::size_t>(n)) : std::string(argv0);
}
}  // namespace

int main(int argc, char** argv) {
  const auto cl = std::make_unique<ringsim::CommandLine>();
  try {
    cl->app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help and --version exit 0; a bad command line exits 2, as every other input error does.
    return cl->app.exit(e) == 0 ? 0 : 2;
  }
  try {
    return cl->run(self_path(argv[0]));
  } catch (const ringsim::InputError& e) {
    std::cerr << e.what() << "\n";
    return 2;
  } catch (const std::bad_alloc&) {
    std::cerr << "ringsim: error: out of memory; `ringsim check SCENARIO` prints what a scenario needs\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "ringsim: error: " << e.what() << "\n";
    return 1;
  }
}
