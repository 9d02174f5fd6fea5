// The readers of what a user measured: the runs CSV of `ringsim calibrate --runs` and the result JSON of
// `ringsim validate --measured` (ringsim-real train or bench files), the same input to both.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>

#include "calibrate/runs.h"
#include "fuzz_common.h"
#include "load/scenario.h"
#include "validate/validation.h"

namespace {

// A one-GPU scenario, so that a result file that gets as far as a prediction costs little.
const ringsim::Scenario& scenario() {
  static const ringsim::Scenario s = ringsim::load_scenario_text(
      "cluster: {sku: NC6s_v3, nodes: 1}\nmodel: {name: resnet50, batch_per_gpu: 32}\ntraining: {epochs: 1}\n",
      "fuzz.yaml", ringsim::fuzz::catalog());
  return s;
}

std::string temp_file(const char* name) {
  return (std::filesystem::temp_directory_path() / ("ringsim_fuzz_" + std::to_string(getpid()) + "_" + name)).string();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const std::string file = temp_file("results");
  {
    std::ofstream out(file, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  ringsim::fuzz::expect_clean_rejection([&] { ringsim::read_runs(file); });
  ringsim::fuzz::expect_clean_rejection(
      [&] { ringsim::validate_measured(ringsim::fuzz::catalog(), scenario(), {file}); });
  return 0;
}
