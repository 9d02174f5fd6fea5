// The memory copies of CPU processes: fusion-buffer copies and the optimizer's update run at these rates.
#include "calibrate/effect.h"

namespace ringsim {

namespace {

// The largest copies' rate is the base (memory_bandwidth: a copy reads and writes each byte), as for
// links; each size measured keeps its own rate, which a copy of that size costs (below the largest
// copies' line at fusion sizes; validate/HISTORY.md).
void apply(const FitContext& c, CatalogOverlay& o, std::vector<std::string>& notes) {
  const LinearFit* f = c.fitted.base("copy");
  if (!f || f->beta <= 0) return;
  if (!c.cpu_processes) {
    notes.push_back("copy: " + c.gpu + " ranks copy in GPU memory, not as the host measured; not applied");
    return;
  }
  GpuOverlay& g = o.gpus[c.gpu];
  g.memory_bandwidth = significant(2 / f->beta);
  o.comment("gpus." + c.gpu, "memory_bandwidth: 2 x the largest copies' rate (a copy reads and writes each byte)");
  std::vector<std::pair<double, double>> rates;
  for (const auto& p : c.measurements.by_class.at("copy"))
    if (p.x_beta > 0 && p.seconds > 0) rates.emplace_back(std::trunc(p.x_beta), significant(p.x_beta / p.seconds));
  if (rates.empty()) return;
  g.copy_rates = rates;
  o.comment("gpus." + c.gpu, "copy_rates: the copies' rate at each size measured, which a copy of that size costs");
}

}  // namespace

Effect copy_rate_effect() {
  return {"copy_rate",
          "copy: memcpy of one buffer into another by size (ringsim-real calibrate), CPU processes",
          "alpha + beta x bytes in size regimes; memory_bandwidth from the largest copies, and the rate per size",
          {"gpus.GPU.memory_bandwidth", "gpus.GPU.copy_rates"},
          "GpuSpec::copy_time: fusion-buffer copies; the optimizer update at the memory rate",
          apply};
}

}  // namespace ringsim
