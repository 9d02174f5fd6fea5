// The unit parser, for every kind of quantity.
#include <cstddef>
#include <cstdint>

#include "fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  for (auto kind :
       {ringsim::Quantity::Bytes, ringsim::Quantity::Bandwidth, ringsim::Quantity::Time, ringsim::Quantity::FlopRate})
    ringsim::fuzz::expect_clean_rejection([&] { ringsim::parse_quantity(text, kind); });
  return 0;
}
