// The host CPU's reduction of a received buffer into its own (host-staged libraries, CPU processes).
#include "calibrate/effect.h"

namespace ringsim {

namespace {

// The rate (1 / gamma) and, where the fit has several size regimes, the rate of each. Measured as a
// collective reduces (data just received, into a span the peer just read), its cost per byte follows the
// reduction's own size: the cache lines it must claim back from the peer.
void apply(const FitContext& c, CatalogOverlay& o, std::vector<std::string>&) {
  const LinearFit* f = c.fitted.base("reduction");
  if (!f || f->beta <= 0) return;
  LibraryOverlay& lib = o.libraries[c.library];
  lib.host_reduction_rate = significant(1 / f->beta);
  o.comments["libraries." + c.library + ".host_reduction_rate"] = "1 / gamma";
  const auto& regs = c.fitted.regimes("reduction");
  if (regs.size() < 2) return;
  lib.host_reduction_regimes_by = RegimeKey::Message;
  lib.host_reduction_regimes.emplace();
  for (const LinearFit* g : regs)
    if (g->beta > 0) lib.host_reduction_regimes->emplace_back(whole_bytes(g->from_bytes), significant(1 / g->beta));
}

}  // namespace

Effect host_reduction_effect() {
  return {"host_reduction",
          "reduction: the host adding a just-received buffer into its own, by size (ringsim-real calibrate)",
          "alpha + gamma x bytes in size regimes (segmented least squares); the rate is 1 / gamma",
          {"libraries.LIB.host_reduction_rate", "libraries.LIB.host_reduction_regimes",
           "libraries.LIB.host_reduction_regimes_by"},
          "CommModel::reduce_time: reductions on the host (host-staged libraries, CPU processes)",
          apply};
}

}  // namespace ringsim
