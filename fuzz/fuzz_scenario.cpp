// The scenario loader on arbitrary text, and the reader of its plan: section (ringsim plan).
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>

#include "fuzz_common.h"
#include "load/scenario.h"
#include "plan/capacity_plan.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const std::string file =
      (std::filesystem::temp_directory_path() / ("ringsim_fuzz_scenario_" + std::to_string(getpid()) + ".yaml"))
          .string();
  const std::string text(reinterpret_cast<const char*>(data), size);
  ringsim::fuzz::expect_clean_rejection(
      [&] { ringsim::load_scenario_text(text, "fuzz.yaml", ringsim::fuzz::catalog()); });
  {
    std::ofstream out(file, std::ios::binary | std::ios::trunc);
    out.write(text.data(), static_cast<std::streamsize>(text.size()));
  }
  ringsim::fuzz::expect_clean_rejection(
      [&] { ringsim::read_plan_goal(file, ringsim::PlanOptions{}, ringsim::fuzz::catalog()); });
  return 0;
}
