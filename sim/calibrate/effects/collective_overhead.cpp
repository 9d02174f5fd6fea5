// A collective call's own cost, beyond its steps: launching it, its bookkeeping.
#include <algorithm>

#include "calibrate/effect.h"
#include "load/units.h"
#include "report/stats.h"

namespace ringsim {

namespace {

// Per size of the small calls, what a call took beyond its two exchanges of half its size and the
// reduction of that half; only sizes whose half the call's class has exchanges of.
std::vector<double> call_extras(const Measurements& m, const std::vector<FitPoint>& calls,
                                const std::vector<LinearFit>& fits) {
  static const std::vector<FitPoint> kNone;
  const auto found = m.by_class.find(m.call_class);
  const auto& ex = found == m.by_class.end() ? kNone : found->second;
  const LinearFit* red = nullptr;
  for (const auto& f : fits)
    if (f.path_class == "reduction" && !red) red = &f;
  std::vector<double> extra;
  for (const auto& c : calls) {
    const double half = c.x_beta / 2;
    auto e = std::find_if(ex.begin(), ex.end(), [&](const FitPoint& p) { return p.x_beta == half; });
    if (e == ex.end() || !m.exchange_classes.count(m.call_class)) continue;
    extra.push_back(c.seconds - 2 * e->seconds - (red ? red->alpha + red->beta * half : 0));
  }
  return extra;
}

// A 2-process ring allreduce of S is two exchanges of S / 2 and a reduction of S / 2; what it took more,
// at sizes where latency is all there is, is the call's (the median over sizes). Measured with the host's
// processes, it is theirs: GPU ranks' calls launch kernels and streams.
void apply(const FitContext& c, CatalogOverlay& o, std::vector<std::string>& notes) {
  const Measurements& m = c.measurements;
  if (m.small_calls.empty()) return;
  if (!c.cpu_processes) {
    notes.push_back("allreduce_small: " + c.gpu +
                    " ranks call the library on GPU buffers, not as the host's processes measured; not applied");
    return;
  }
  const std::vector<FitPoint> calls = median_per_size(m.small_calls);
  const std::vector<double> extra = call_extras(m, calls, c.fits);
  if (extra.empty()) {
    notes.push_back("allreduce_small: no exchanges of half its sizes in class " + m.call_class +
                    " to take out; the library's collective_overhead is kept");
    return;
  }
  o.libraries[c.library].collective_overhead = significant(std::max(0.0, upper_median(extra)));
  o.comments["libraries." + c.library + ".collective_overhead"] =
      "2-process ring allreduce of " + format_bytes(calls.front().x_beta) + "-" + format_bytes(calls.back().x_beta) +
      " less its two exchanges and reduction (median over " + std::to_string(extra.size()) + " sizes)";
}

}  // namespace

Effect collective_overhead_effect() {
  return {"collective_overhead",
          "allreduce_small: a 2-process ring allreduce of small buffers (ringsim-real calibrate), CPU processes",
          "per size, the call's time less its two exchanges and reduction of half its size; the median",
          {"libraries.LIB.collective_overhead"},
          "each collective call's fixed cost (CommModel, the Horovod cycle's collectives)",
          apply};
}

}  // namespace ringsim
