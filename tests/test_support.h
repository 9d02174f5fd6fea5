// Shared helpers for the tests: the bundled catalog (loaded once) and capturing InputError messages.
#pragma once

#include <catch2/catch.hpp>
#include <functional>
#include <string>

#include "load/catalog.h"
#include "load/input_error.h"

namespace ringsim::test {

inline const Catalog& catalog() {
  static const Catalog c = Catalog::load(RINGSIM_TEST_CATALOG);
  return c;
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
