// The scenario loader on arbitrary text.
#include <cstddef>
#include <cstdint>

#include "fuzz_common.h"
#include "load/scenario.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  ringsim::fuzz::expect_clean_rejection(
      [&] { ringsim::load_scenario_text(text, "fuzz.yaml", ringsim::fuzz::catalog()); });
  return 0;
}
