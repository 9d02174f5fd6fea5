// Shared helpers for the tests: the bundled catalog (loaded once) and capturing InputError messages.
#pragma once

#include <sys/wait.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <fstream>
#include <functional>
#include <iterator>
#include <string>

#include "load/catalog.h"
#include "load/input_error.h"

namespace ringsim::test {

inline const Catalog& catalog() {
  static const Catalog c = Catalog::load(RINGSIM_TEST_CATALOG);
  return c;
}

// A file's whole content, byte for byte ("" when it cannot be read).
inline std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// A shell command's exit status and its standard output and error, together.
struct CommandResult {
  int status = 0;
  std::string output;
};
inline CommandResult run_command(const std::string& command) {
  CommandResult r;
  FILE* p = popen((command + " 2>&1").c_str(), "r");
  REQUIRE(p != nullptr);
  char buf[4096];
  std::size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.output.append(buf, n);
  const int st = pclose(p);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : 128;
  return r;
}

// Runs `f`, which must throw InputError; returns its full message ("file:line:col: error: ...").
inline std::string input_error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  FAIL("expected an InputError");
  return {};
}

}  // namespace ringsim::test
