#include "calibrate/class_fits.h"

#include <algorithm>

#include "load/size_curve.h"

namespace ringsim {

namespace {

// Protocol switches: each fitted range's alpha above the first range's, kept where it rises.
Steps protocol_overheads(const std::vector<LinearFit>& fits) {
  Steps protocol;
  for (std::size_t i = 1; i < fits.size(); ++i) {
    const double above = fits[i].alpha - fits.front().alpha;
    if (above > (protocol.empty() ? 0 : protocol.back().second)) protocol.emplace_back(fits[i].from_bytes, above);
  }
  return protocol;
}

// Per-message classes: the overlay's regimes are the measured curve itself, one per size measured, as
// SMPI's piecewise factors are (a fitted line per size range misses the gradual fall of bandwidth as
// buffers outgrow each cache level; validate/HISTORY.md). Each keeps the first range's latency `alpha` and
// puts the rest of the measured time, less the protocol overheads, into its bandwidth, so a message of a
// measured size costs what it measured.
std::vector<LinearFit> measured_regimes(const std::vector<FitPoint>& pts, double alpha, const Steps& protocol) {
  std::vector<LinearFit> table;
  for (const auto& p : pts) {
    if (p.x_beta <= 0 || (!table.empty() && p.x_beta == table.back().from_bytes)) continue;
    LinearFit g;
    g.alpha = alpha;
    g.beta =
        std::max(0.0, p.seconds - g.alpha - SizeCurve{protocol, SizeCurve::Shape::Steps}.at(p.x_beta, 0)) / p.x_beta;
    g.from_bytes = table.empty() ? 0 : p.x_beta;
    table.push_back(g);
  }
  return table;
}

// One class's fits: size regimes where x_beta is the message size (ping-pong, sendrecv, reduction, copy),
// which also give its measured regimes; one line for rings. Where the regimes are keyed by footprint, a
// message's fixed costs above the first range's latency (the library's protocol switches) stay keyed by
// its own size: a ring's message of m in a collective that holds 20 m pays the rendezvous of an m message.
std::vector<LinearFit> fit_class(const std::string& cls, std::vector<FitPoint>& pts, bool footprint_keyed,
                                 Fitted& fitted) {
  if (cls == "reduction" || cls == "copy")
    for (auto& p : pts) p.x_alpha = 1;  // a fixed start-up cost plus gamma per byte
  const bool per_message = std::all_of(pts.begin(), pts.end(), [](const FitPoint& p) { return p.x_alpha == 1; });
  if (!per_message) {
    std::vector<LinearFit> fits = {fit_linear(pts)};
    fits.front().data = pts;
    return fits;
  }
  std::stable_sort(pts.begin(), pts.end(), [](const FitPoint& a, const FitPoint& b) { return a.x_beta < b.x_beta; });
  std::vector<LinearFit> fits = fit_regimes(pts);
  Steps& protocol = fitted.protocol_of[cls];
  if (footprint_keyed && cls != "reduction" && cls != "copy") protocol = protocol_overheads(fits);
  fitted.tables[cls] = measured_regimes(pts, fits.front().alpha, protocol);
  return fits;
}

}  // namespace

void fit_classes(Measurements& m, bool cpu_processes, Fitted& fitted, std::vector<LinearFit>& out,
                 std::vector<std::string>& notes) {
  for (auto& [cls, pts] : m.by_class) {
    if (pts.size() < 2) {
      notes.push_back(cls + ": fewer than two points, not fitted");
      continue;
    }
    std::vector<LinearFit> fits = fit_class(cls, pts, cpu_processes && cls != "network", fitted);
    for (auto& f : fits) {
      f.path_class = cls;
      f.source = m.sources[cls];
      out.push_back(f);
    }
  }
}

void index_regimes(const std::vector<LinearFit>& fits, Fitted& fitted) {
  for (const auto& f : fits) {
    if (fitted.tables.count(f.path_class)) continue;
    fitted.regimes_of[f.path_class].push_back(&f);
    fitted.fit_of[f.path_class] = &f;
  }
  for (const auto& [cls, table] : fitted.tables) {
    for (const auto& g : table) fitted.regimes_of[cls].push_back(&g);
    fitted.fit_of[cls] = &table.back();
  }
}

}  // namespace ringsim
