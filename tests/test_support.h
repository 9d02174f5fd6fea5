// Shared helpers for the tests: the bundled catalog (loaded once) and capturing InputError messages.
#pragma once

#include <sys/wait.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <fstream>
#include <functional>
#include <iterator>
#include <sstream>
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

// `text` without AddressSanitizer's note on an exception thrown after SimGrid switched stacks in the same
// process ("ASan is ignoring requested __asan_handle_no_return", and the two lines after it): the sanitizer
// build prints it beside an error that a write after the simulation throws; it is not the program's output.
inline std::string without_asan_notes(std::string text) {
  const std::string marker = "WARNING: ASan is ignoring requested __asan_handle_no_return";
  for (auto at = text.find(marker); at != std::string::npos; at = text.find(marker)) {
    std::size_t start = text.rfind('\n', at);
    start = start == std::string::npos ? 0 : start + 1;
    std::size_t end = start;
    for (int line = 0; line < 3 && end != std::string::npos; ++line) {
      end = text.find('\n', end);
      if (end != std::string::npos) ++end;
    }
    text.erase(start, end == std::string::npos ? std::string::npos : end - start);
  }
  return text;
}

// A line a document shows is one of the output's lines; one ending in "..." is the start of one (a line
// "..." alone: any).
inline bool in_output(const std::string& shown, const std::string& output) {
  std::istringstream in(output);
  const bool prefix = shown.size() >= 3 && shown.compare(shown.size() - 3, 3, "...") == 0;
  const std::string want = prefix ? shown.substr(0, shown.size() - 3) : shown;
  for (std::string line; std::getline(in, line);)
    if (prefix ? line.rfind(want, 0) == 0 : line == want) return true;
  return false;
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
