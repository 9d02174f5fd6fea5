// The readers of measurements: nccl-tests text and Horovod timelines.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>

#include "calibrate/calibrate.h"
#include "calibrate/nccl_tests.h"
#include "fuzz_common.h"
#include "validate/horovod_timeline.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  ringsim::fuzz::expect_clean_rejection([&] {
    const auto d = ringsim::parse_nccl_tests(text, "fuzz.txt");
    if (d.points.size() >= 2) ringsim::fit_linear(d.points);
  });
  static const std::string file =
      (std::filesystem::temp_directory_path() / ("ringsim_fuzz_timeline_" + std::to_string(getpid()) + ".json"))
          .string();
  {
    std::ofstream out(file, std::ios::binary | std::ios::trunc);
    out.write(text.data(), static_cast<std::streamsize>(text.size()));
  }
  ringsim::fuzz::expect_clean_rejection([&] { ringsim::read_horovod_timeline(file); });
  return 0;
}
