// --set KEY=VALUE arguments applied to a valid scenario.
#include <cstddef>
#include <cstdint>

#include "fuzz_common.h"
#include "load/scenario.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string arg(reinterpret_cast<const char*>(data), size);
  static const std::string base =
      "cluster: {sku: NC24rs_v3, nodes: 2}\nmodel: {name: resnet50, batch_per_gpu: 64}\ntraining: {epochs: 1}\n";
  ringsim::fuzz::expect_clean_rejection([&] {
    const ringsim::Override o = ringsim::parse_override(arg);
    ringsim::load_scenario_text(base, "base.yaml", ringsim::fuzz::catalog(), {o});
  });
  return 0;
}
