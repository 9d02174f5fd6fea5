// The catalog loader with one file (skus.yaml, the richest) replaced by the input, and the calibration
// overlay reader and the prices reader (ringsim plan) on the same input.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>

#include "fuzz_common.h"
#include "load/prices.h"

namespace fs = std::filesystem;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const fs::path dir = [] {
    const fs::path d = fs::temp_directory_path() / ("ringsim_fuzz_catalog_" + std::to_string(getpid()));
    fs::remove_all(d);
    fs::copy(RINGSIM_FUZZ_CATALOG, d, fs::copy_options::recursive);
    return d;
  }();
  {
    std::ofstream out(dir / "skus.yaml", std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  ringsim::fuzz::expect_clean_rejection([&] { ringsim::Catalog::load(dir.string()); });
  ringsim::Catalog c = ringsim::fuzz::catalog();
  ringsim::fuzz::expect_clean_rejection([&] { c.apply_overlay((dir / "skus.yaml").string()); });
  ringsim::fuzz::expect_clean_rejection([&] { ringsim::PriceTable::load((dir / "skus.yaml").string(), c); });
  return 0;
}
