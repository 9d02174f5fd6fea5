// Shared by the libFuzzer targets: the bundled catalog (loaded once) and the rule that a reader may
// reject input only with the errors it documents (InputError, UnitError); anything else is a finding.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

#include "load/catalog.h"
#include "load/input_error.h"
#include "load/units.h"

namespace ringsim::fuzz {

inline const Catalog& catalog() {
  static const Catalog c = Catalog::load(RINGSIM_FUZZ_CATALOG);
  return c;
}

template <class F>
void expect_clean_rejection(F&& f) {
  try {
    f();
  } catch (const InputError&) {
  } catch (const UnitError&) {
  } catch (const std::exception& e) {
    std::fprintf(stderr, "unexpected exception: %s\n", e.what());
    std::abort();
  }
}

}  // namespace ringsim::fuzz
