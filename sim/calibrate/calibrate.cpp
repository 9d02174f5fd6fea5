#include "calibrate/calibrate.h"

#include <algorithm>
#include <cstdio>
#include <sstream>

#include "calibrate/class_fits.h"
#include "calibrate/effect.h"
#include "load/units.h"

namespace ringsim {

namespace {

// A pair of members for each class: member 0 and the first member of each kind of pair with it.
std::map<std::string, std::pair<int, int>> pick_members(ScenarioRoutes& routes, const Scenario& s, bool cpu_processes) {
  const int gpn = s.cluster.gpus_per_node;
  std::map<std::string, std::pair<int, int>> members;
  for (int m = 1; m < gpn; ++m) {
    bool same = routes.cm.member(m).host == routes.cm.member(0).host;
    if (cpu_processes) {  // each process is its own memory: same socket unless the route crosses sockets
      same = true;
      for (int e : routes.route(0, m).edges)
        if (routes.link(e).kind == LinkKind::SocketInterconnect) same = false;
    }
    members.emplace(same ? "same_socket" : "cross_socket", std::make_pair(0, m));
  }
  if (s.cluster.nodes > 1) members.emplace("network", std::make_pair(0, gpn));
  return members;
}

// The overlay's header: what it is for, and a line per fit it comes from.
std::vector<std::string> header(const Scenario& s, const std::string& library, const std::vector<LinearFit>& fits) {
  std::vector<std::string> h = {"ringsim calibration overlay for " + s.cluster.sku + ", library " + library +
                                ", fabric " + std::string(to_string(s.cluster.fabric)) +
                                "; written by `ringsim calibrate` from:"};
  for (const auto& f : fits)
    h.push_back("  " + f.path_class + (f.from_bytes > 0 ? " from " + format_bytes(f.from_bytes) : std::string()) +
                ": " + f.source + "\n    alpha " + format_number(f.alpha) + " s, beta " + format_number(f.beta) +
                " s/B (" + format_bandwidth(f.beta > 0 ? 1 / f.beta : 0) + "), R^2 " + format_number(f.r2) +
                ", worst residual " + format_number(f.worst_residual_pct) + " % over " + std::to_string(f.points) +
                " points");
  h.push_back("Use: ringsim predict SCENARIO --calibration THIS_FILE, or the scenario key `calibration:`.");
  return h;
}

}  // namespace

// Reads the measurements, fits each class, then lets each effect write its figures into the overlay.
CalibrationResult calibrate(const Catalog& catalog, const Scenario& s, const CalibrationInputs& in) {
  Measurements m = read_measurements(catalog, s, in);
  CalibrationResult r;
  r.notes = reading_notes(m);
  const std::string gpu = catalog.sku(s.cluster.sku).gpu;
  const bool cpu_processes = catalog.gpu(gpu).cpu_process;
  Fitted fitted;
  fit_classes(m, cpu_processes, fitted, r.fits, r.notes);
  index_regimes(r.fits, fitted);

  ScenarioRoutes routes(catalog, s);
  const std::string library = catalog.library(std::string(to_string(s.communication.library))).name;
  const FitContext context{
      catalog, s, m, fitted, r.fits, routes, pick_members(routes, s, cpu_processes), gpu, library, cpu_processes};
  r.overlay.header = header(s, library, r.fits);
  r.overlay.measured_on = s.cluster.sku;
  for (const Effect& e : calibration_effects()) e.apply(context, r.overlay, r.notes);
  const auto lib = r.overlay.libraries.find(library);
  if (lib != r.overlay.libraries.end() && lib->second.collective_overhead)
    r.collective_overhead = *lib->second.collective_overhead;
  r.overlay_yaml = r.overlay.to_yaml();
  return r;
}

std::string effects_table() {
  std::ostringstream out;
  for (const Effect& e : calibration_effects()) {
    out << e.name << "\n  measures:  " << e.measures << "\n  fit:       " << e.fit << "\n  writes:    ";
    for (std::size_t i = 0; i < e.overlay_keys.size(); ++i) out << (i ? ", " : "") << e.overlay_keys[i];
    out << "\n  read by:   " << e.cost_term << "\n";
  }
  return out.str();
}

Plot calibration_plot(const CalibrationResult& r) {
  Plot p;
  p.title = "ringsim calibrate: effective bandwidth against message size";
  p.source = "ringsim calibrate --plot: the measurements and the fitted alpha + beta x bytes of each class";
  PlotPanel pn{"bytes per step over time (collectives: scaled by their step factor); circles measured, lines fitted",
               "bytes per step",
               "GB/s",
               2,
               0,
               {},
               {},
               {}};
  std::vector<std::string> classes;
  for (const auto& f : r.fits)
    if (std::find(classes.begin(), classes.end(), f.path_class) == classes.end()) classes.push_back(f.path_class);
  double lo = 1e300, hi = 0;
  for (std::size_t k = 0; k < classes.size(); ++k) {
    const int color = static_cast<int>(k) + 1;
    PlotSeries meas{classes[k] + " measured", "points pt 6 ps 1.3", color, {}, {}};
    std::vector<PlotSeries> fits;
    for (const auto& f : r.fits) {
      if (f.path_class != classes[k]) continue;
      std::vector<FitPoint> pts = f.data;
      std::stable_sort(pts.begin(), pts.end(),
                       [](const FitPoint& a, const FitPoint& b) { return a.x_beta < b.x_beta; });
      PlotSeries fit{classes[k] + " fit" + (f.from_bytes > 0 ? " from " + format_bytes(f.from_bytes) : ""),
                     "lines lw 2",
                     color,
                     {},
                     {}};
      for (std::size_t i = 0; i < pts.size(); ++i) {
        if (pts[i].x_beta <= 0 || pts[i].seconds <= 0) continue;
        const double gbps = pts[i].x_beta / pts[i].seconds / 1e9;
        meas.rows.push_back({pts[i].x_beta, gbps});
        lo = std::min(lo, gbps);
        hi = std::max(hi, gbps);
        // The fitted curve, eight samples per doubling up to the next measured size.
        const double to = i + 1 < pts.size() ? pts[i + 1].x_beta : pts[i].x_beta * 1.0001;
        for (double x = pts[i].x_beta; x < to; x *= std::pow(2.0, 1.0 / 8))
          fit.rows.push_back({x, x / (f.alpha * pts[i].x_alpha + f.beta * x) / 1e9});
      }
      fits.push_back(std::move(fit));
    }
    std::stable_sort(meas.rows.begin(), meas.rows.end());
    pn.series.push_back(std::move(meas));
    for (auto& f : fits) pn.series.push_back(std::move(f));
  }
  if (hi > 0 && hi / lo >= 100) pn.y_log_base = 10;
  double x_lo = 1e300, x_hi = 0;
  for (const auto& s : pn.series)
    for (const auto& row : s.rows) x_lo = std::min(x_lo, row[0]), x_hi = std::max(x_hi, row[0]);
  if (x_hi > 0) pn.setup.push_back(byte_tics("x", x_lo, x_hi));
  p.panels = {pn};
  return p;
}

}  // namespace ringsim
