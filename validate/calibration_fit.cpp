#include "validate/calibration_fit.h"

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <tuple>

#include "execute/comm_model.h"
#include "graph/topology_graph.h"
#include "load/input_error.h"
#include "load/units.h"
#include "report/plot.h"
#include "report/stats.h"
#include "validate/json_file.h"
#include "validate/nccl_tests.h"
#include "validate/placement.h"

namespace ringsim {

LinearFit fit_linear(const std::vector<FitPoint>& pts) {
  LinearFit f;
  f.points = pts.size();
  if (pts.size() < 2) throw std::invalid_argument("a fit needs at least two points");
  const Eigen::Index n = static_cast<Eigen::Index>(pts.size());
  auto solve = [&](bool with_alpha) {
    Eigen::MatrixXd a(n, with_alpha ? 2 : 1);
    Eigen::VectorXd b(n);
    for (Eigen::Index i = 0; i < n; ++i) {
      const double w = 1.0 / pts[i].seconds;  // relative residuals
      if (with_alpha) {
        a(i, 0) = pts[i].x_alpha * w;
        a(i, 1) = pts[i].x_beta * w;
      } else {
        a(i, 0) = pts[i].x_beta * w;
      }
      b(i) = 1.0;
    }
    Eigen::VectorXd x = a.colPivHouseholderQr().solve(b);
    return with_alpha ? std::make_pair(x(0), x(1)) : std::make_pair(0.0, x(0));
  };
  auto [alpha, beta] = solve(true);
  if (alpha < 0) {
    std::tie(alpha, beta) = solve(false);
  } else if (beta < 0) {  // time falling with size is noise on latency-bound points: a constant
    double sum_w = 0, sum = 0;
    for (const auto& p : pts) {
      const double w = p.x_alpha / p.seconds;  // relative residuals, as above
      sum += w;
      sum_w += w * w;
    }
    alpha = sum_w > 0 ? sum / sum_w : 0;
    beta = 0;
  }
  f.alpha = alpha;
  f.beta = beta;
  double mean = 0;
  for (const auto& p : pts) mean += p.seconds;
  mean /= pts.size();
  double ss_res = 0, ss_tot = 0;
  for (const auto& p : pts) {
    const double fit = alpha * p.x_alpha + beta * p.x_beta;
    ss_res += (fit - p.seconds) * (fit - p.seconds);
    ss_tot += (p.seconds - mean) * (p.seconds - mean);
    f.worst_residual_pct = std::max(f.worst_residual_pct, std::fabs(fit - p.seconds) / p.seconds * 100);
  }
  f.r2 = ss_tot > 0 ? 1 - ss_res / ss_tot : 1;
  return f;
}

namespace {
double relative_ssr(const LinearFit& f, const std::vector<FitPoint>& pts) {
  double s = 0;
  for (const auto& p : pts) {
    const double r = (f.alpha * p.x_alpha + f.beta * p.x_beta - p.seconds) / p.seconds;
    s += r * r;
  }
  return s;
}
}  // namespace

std::string fit_summary(const LinearFit& f) {
  return f.path_class + (f.from_bytes > 0 ? " from " + format_bytes(f.from_bytes) : std::string()) + ": alpha " +
         format_time(f.alpha) + ", 1/beta " + format_bandwidth(f.beta > 0 ? 1 / f.beta : 0) + ", R^2 " +
         format_number(f.r2) + ", worst residual " + format_number(f.worst_residual_pct) + " % (" +
         std::to_string(f.points) + " points)";
}

std::vector<LinearFit> fit_regimes(std::vector<FitPoint> pts, int max_regimes, std::size_t min_points) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  if (pts.size() < 2) return {fit_linear(pts)};  // which says why
  min_points = std::clamp<std::size_t>(min_points, 2, pts.size());
  std::stable_sort(pts.begin(), pts.end(), [](const FitPoint& a, const FitPoint& b) { return a.x_beta < b.x_beta; });
  const std::size_t n = pts.size();
  auto fit_range = [&](std::size_t a, std::size_t b) {
    std::vector<FitPoint> part(pts.begin() + static_cast<std::ptrdiff_t>(a),
                               pts.begin() + static_cast<std::ptrdiff_t>(b));
    LinearFit f = fit_linear(part);
    f.data = part;
    f.from_bytes = a == 0 ? 0 : part.front().x_beta;
    return f;
  };
  auto aic = [&](const std::vector<LinearFit>& fits) {
    double ssr = 0;
    for (const auto& f : fits) ssr += relative_ssr(f, f.data);
    const double k = 3.0 * static_cast<double>(fits.size()) - 1;  // alpha, beta per regime, and the breaks
    // Residuals below 1e-6 (relative, RMS) are no measurement's: a floor keeps exact data from
    // rewarding splits that only shave rounding errors.
    return static_cast<double>(n) * std::log(std::max(ssr / static_cast<double>(n), 1e-12)) + 2 * k;
  };
  // Segmented least squares by dynamic programming: for each regime count, the break points that
  // minimise the summed relative squared residuals; then the count with the lowest AIC.
  std::vector<std::vector<double>> seg(n + 1, std::vector<double>(n + 1, kInf));
  for (std::size_t a = 0; a < n; ++a)
    for (std::size_t b = a + min_points; b <= n; ++b) {
      const LinearFit f = fit_range(a, b);
      seg[a][b] = relative_ssr(f, f.data);
    }
  // cost[k][i]: the first i points in k regimes; from[k][i]: where the last of them starts.
  std::vector<std::vector<double>> cost(1, std::vector<double>(n + 1, kInf));
  std::vector<std::vector<std::size_t>> from(1, std::vector<std::size_t>(n + 1, 0));
  cost[0][0] = 0;
  std::vector<LinearFit> best;
  double best_aic = kInf;
  for (int k = 1; k <= std::max(1, max_regimes); ++k) {
    cost.emplace_back(n + 1, kInf);
    from.emplace_back(n + 1, 0);
    for (std::size_t i = 1; i <= n; ++i)
      for (std::size_t j = 0; j < i; ++j)
        if (cost[k - 1][j] < kInf && seg[j][i] < kInf && cost[k - 1][j] + seg[j][i] < cost[k][i]) {
          cost[k][i] = cost[k - 1][j] + seg[j][i];
          from[k][i] = j;
        }
    if (cost[k][n] == kInf) break;  // too few points for k regimes
    std::vector<LinearFit> fits;
    for (std::size_t i = n, kk = static_cast<std::size_t>(k); kk > 0; --kk) {
      fits.insert(fits.begin(), fit_range(from[kk][i], i));
      i = from[kk][i];
    }
    const double a = aic(fits);
    if (a < best_aic) {
      best_aic = a;
      best = std::move(fits);
    }
  }
  return best;
}

namespace {

std::string fmt(double v) {
  char b[64];
  std::snprintf(b, sizeof b, "%.6g", v);
  return b;
}

// The class a pair's ping-pong is fitted under where the same file has its exchanges.
constexpr const char* kPingPongSuffix = " ping-pong";
// Exchanges of two processes on one core (the first pair within a host).
constexpr const char* kOneCore = "one core";
// The same pair's exchanges on two cores, each core shared with another thread that yields.
constexpr const char* kSharedCores = "two shared cores";

// The latency of exchanges from 1 KiB to 256 KiB (a line fitted over them; none: -1), where the
// rendezvous protocol runs and bandwidth does not yet hide a few microseconds.
double small_exchange_latency(const std::vector<FitPoint>& pts) {
  std::vector<FitPoint> small;
  for (const auto& p : pts)
    if (p.x_alpha == 1 && p.x_beta >= 1024 && p.x_beta <= 256 * 1024) small.push_back(p);
  return small.size() < 3 ? -1 : fit_linear(small).alpha;
}

// Several runs of one measurement (ringsim-real calibrate launched again, as validate --local does): per
// size the median. On a shared machine a launch can run in a state of its own that lasts the whole launch
// (validate/HISTORY.md), so one launch would carry its state into every prediction.
std::vector<FitPoint> median_per_size(std::vector<FitPoint> pts) {
  std::stable_sort(pts.begin(), pts.end(), [](const FitPoint& a, const FitPoint& b) {
    return std::tie(a.x_alpha, a.x_beta) < std::tie(b.x_alpha, b.x_beta);
  });
  std::vector<FitPoint> out;
  for (std::size_t i = 0; i < pts.size();) {
    std::size_t j = i;
    std::vector<double> t;
    for (; j < pts.size() && pts[j].x_alpha == pts[i].x_alpha && pts[j].x_beta == pts[i].x_beta; ++j)
      t.push_back(pts[j].seconds);
    FitPoint m = pts[i];
    m.seconds = median(t);
    out.push_back(m);
    i = j;
  }
  return out;
}

}  // namespace

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

namespace {

// What the measurement files hold: each class's points (a class of rank pair, or a host operation), the
// files they came from, and what reading them left to say.
struct Measurements {
  std::map<std::string, std::vector<FitPoint>> by_class;
  std::map<std::string, std::string> sources;
  std::set<std::string> exchange_classes;  // fitted to exchanges (each rank sends and receives a message)
  std::vector<FitPoint> small_calls;       // 2-process ring allreduce of small buffers (a call's own cost)
  std::string call_class;                  // the pair class they ran on
  std::vector<std::string> input_notes;    // what the files left to the scenario
  // Placement probes: samples count where the CPUs were as near as the files (and the caller) saw them.
  PlacementFilter placement;
  int points_left_out = 0;  // no sample in the nearest placement

  // A file among a class's sources, once.
  void add_source(const std::string& cls, const std::string& file) {
    if (sources[cls].find(file) == std::string::npos) sources[cls] += (sources[cls].empty() ? "" : ", ") + file;
  }
  // A point's time over its samples that count; below 0, and counted as left out, where none does.
  double seconds_of(const nlohmann::json& p) {
    const double t = placement.point_seconds(p);
    if (t < 0) ++points_left_out;
    return t;
  }
  // A file's {bytes, seconds} points that have a time: above 0, or also 0 where `keep_zero` (host operations).
  std::vector<FitPoint> timed_points(const nlohmann::json& points, double x_alpha, bool keep_zero) {
    std::vector<FitPoint> out;
    for (const auto& p : points)
      if (const double t = seconds_of(p); t > 0 || (keep_zero && t >= 0))
        out.push_back({x_alpha, p.at("bytes").get<double>(), t});
    return out;
  }
  // Adds them to a class, which exists only once it has a point.
  void add_points(const std::string& cls, const nlohmann::json& points, double x_alpha = 1, bool keep_zero = false) {
    const std::vector<FitPoint> pts = timed_points(points, x_alpha, keep_zero);
    if (pts.empty()) return;
    std::vector<FitPoint>& to = by_class[cls];
    to.insert(to.end(), pts.begin(), pts.end());
  }
};

// The calibration data files' JSON, all read before any is used: the placement filter takes the nearest
// probe of them all.
std::vector<nlohmann::json> read_data_files(const CalibrationInputs& in, PlacementFilter& placement) {
  std::vector<nlohmann::json> data;
  for (const auto& f : in.data_files) {
    data.push_back(read_json_file(f));
    try {
      placement.add_file(data.back());
    } catch (const nlohmann::json::exception& e) {
      throw InputError({f, 0, 0, ""}, std::string("malformed calibration data: ") + e.what());
    }
  }
  placement.add_nearest(in.nearest_core_to_core_ns);
  return data;
}

// Ping-pong and exchanges per pair class. Collectives move data as exchanges (every rank sends and
// receives at once), so where the file has them they are the class's figures; its ping-pong is then
// fitted and shown beside them only.
void add_pair_classes(const std::string& f, const nlohmann::json& j, Measurements& m) {
  const bool exchanges = j.contains("sendrecv") && !j.at("sendrecv").empty();
  auto add_pairs = [&](const char* key, const std::string& suffix) {
    for (const auto& pair : j.at(key)) {
      const std::string cls = pair.at("class").get<std::string>() + suffix;
      m.add_points(cls, pair.at("points"));
      m.add_source(cls, f);
    }
  };
  add_pairs("pingpong", exchanges ? kPingPongSuffix : "");
  if (exchanges) {
    add_pairs("sendrecv", "");
    for (const auto& pair : j.at("sendrecv")) m.exchange_classes.insert(pair.at("class").get<std::string>());
  }
}

// One pair's exchanges on one core, and on two cores each shared with a yielding thread (the core handoffs).
void add_core_exchanges(const std::string& f, const nlohmann::json& j, Measurements& m) {
  for (const auto& [key, cls] : {std::pair{"sendrecv_one_core", kOneCore}, {"sendrecv_shared_cores", kSharedCores}})
    if (j.contains(key) && j.at(key).contains("points")) {
      m.add_points(cls, j.at(key).at("points"));
      m.add_source(cls, f);
    }
}

// A 2-process ring allreduce of small buffers: what a collective call costs beyond its steps.
void add_small_calls(const nlohmann::json& j, Measurements& m) {
  if (!j.contains("allreduce_small") || !j.at("allreduce_small").contains("points")) return;
  const auto& calls = j.at("allreduce_small");
  m.call_class = calls.at("class").get<std::string>();
  const std::vector<FitPoint> pts = m.timed_points(calls.at("points"), 1, false);
  m.small_calls.insert(m.small_calls.end(), pts.begin(), pts.end());
}

// The host's reduction and copies: per byte until fitted, which gives them a start-up cost.
void add_host_operations(const std::string& f, const nlohmann::json& j, Measurements& m) {
  for (const char* kind : {"reduction", "copy"}) {
    if (!j.contains(kind) && std::string(kind) == "copy") continue;  // files written before copies were timed
    m.add_points(kind, j.at(kind), 0, true);
    m.add_source(kind, f);
  }
}

// One `ringsim-real calibrate --json` file's measurements, once its schema is the one read here.
void add_data_file(const std::string& f, const nlohmann::json& j, Measurements& m) {
  try {
    if (!j.is_object() || !j.contains("schema") || j["schema"] != "ringsim.calibration-data/1")
      throw InputError({f, 0, 0, ""},
                       "expected \"schema\": \"ringsim.calibration-data/1\" (ringsim-real calibrate --json)");
    add_pair_classes(f, j, m);
    add_core_exchanges(f, j, m);
    add_small_calls(j, m);
    add_host_operations(f, j, m);
  } catch (const nlohmann::json::exception& e) {
    throw InputError({f, 0, 0, ""}, std::string("malformed calibration data: ") + e.what());
  }
}

// The rails an nccl-tests allreduce across nodes shares its bus bandwidth among: NCCL runs its rings at
// once, each through its own NIC where the node has several (NodeLayout::gpu_rail, the scenario's SKU).
int rails_of(const Catalog& catalog, const Scenario& s, const NcclTestsData& d) {
  if (!d.spans_nodes || d.op != "all_reduce" || s.cluster.fabric != FabricKind::InfiniBand) return 1;
  return std::max(1, catalog.layout(catalog.sku(s.cluster.sku).layout).rails_of_first(d.ranks / std::max(d.hosts, 1)));
}

// One nccl-tests output file: across nodes its points are the network's (one rail's), else same_socket's.
void add_nccl_tests_file(const Catalog& catalog, const Scenario& s, const std::string& f, Measurements& m) {
  std::ifstream t(f);
  if (!t) throw InputError({f, 0, 0, ""}, "cannot open file");
  const std::string text((std::istreambuf_iterator<char>(t)), std::istreambuf_iterator<char>());
  NcclTestsData d = parse_nccl_tests(text, f, {s.cluster.total_gpus(), s.cluster.nodes});
  if (d.ranks_from_context)
    m.input_notes.push_back(f + ": no rank lines; " + std::to_string(d.ranks) + " ranks on " + std::to_string(d.hosts) +
                            " hosts, as the scenario has them (cluster.nodes x gpus_per_node: --set to change)");
  const std::string cls = d.spans_nodes ? "network" : "same_socket";
  const int rails = rails_of(catalog, s, d);
  for (auto& p : d.points) p.x_beta /= rails;
  std::vector<FitPoint>& pts = m.by_class[cls];
  pts.insert(pts.end(), d.points.begin(), d.points.end());
  m.sources[cls] += (m.sources[cls].empty() ? "" : ", ") + f + " (nccl-tests " + d.op + ", " + std::to_string(d.ranks) +
                    " ranks" + (rails > 1 ? ", its bus bandwidth shared by " + std::to_string(rails) + " rails" : "") +
                    ")";
}

// All input files' points by class, each size's repeated measurements (launches) merged by the median.
Measurements read_measurements(const Catalog& catalog, const Scenario& s, const CalibrationInputs& in) {
  Measurements m;
  const std::vector<nlohmann::json> data = read_data_files(in, m.placement);
  for (std::size_t file = 0; file < in.data_files.size(); ++file) add_data_file(in.data_files[file], data[file], m);
  for (const auto& f : in.nccl_tests_files) add_nccl_tests_file(catalog, s, f, m);
  for (auto& [cls, pts] : m.by_class) pts = median_per_size(std::move(pts));
  return m;
}

// The notes reading left: the files' own, then what the placement filter left out.
std::vector<std::string> reading_notes(const Measurements& m) {
  std::vector<std::string> notes = m.input_notes;
  if (m.placement.active()) {
    notes.push_back("placement: " + m.placement.summary("samples"));
    if (m.points_left_out > 0)
      notes.push_back("placement: " + std::to_string(m.points_left_out) +
                      " points had no sample that counts, and are left out");
  }
  return notes;
}

using Steps = std::vector<std::pair<double, double>>;  // (from bytes, seconds)

// What the overlay is written from beside the fits: per-message classes' regimes (the measured curve) and
// protocol overheads, then per class its size regimes, ascending, and its base regime.
struct Fitted {
  std::map<std::string, std::vector<LinearFit>> tables;
  std::map<std::string, Steps> protocol_of;
  // The largest messages' regime is the base (their bandwidth is what contention shares); the others are
  // regimes of the overlay, the first one from 1 byte.
  std::map<std::string, std::vector<const LinearFit*>> regimes_of;
  std::map<std::string, const LinearFit*> fit_of;

  const std::vector<const LinearFit*>& regimes(const std::string& cls) const {
    static const std::vector<const LinearFit*> kNone;
    const auto it = regimes_of.find(cls);
    return it == regimes_of.end() ? kNone : it->second;
  }
  const Steps& protocol(const std::string& cls) const {
    static const Steps kNone;
    const auto it = protocol_of.find(cls);
    return it == protocol_of.end() ? kNone : it->second;
  }
  const LinearFit* base(const std::string& cls) const {
    const auto it = fit_of.find(cls);
    return it == fit_of.end() ? nullptr : it->second;
  }
};

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
    g.beta = std::max(0.0, p.seconds - g.alpha - step_value(protocol, p.x_beta)) / p.x_beta;
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

// Fits every class of two points or more into r.fits (the summary: alpha, beta, R^2, worst residual).
// CPU processes' copies are memory traffic, whose regimes are the caches' (keyed by footprint).
void fit_classes(Measurements& m, bool cpu_processes, Fitted& fitted, CalibrationResult& r) {
  for (auto& [cls, pts] : m.by_class) {
    if (pts.size() < 2) {
      r.notes.push_back(cls + ": fewer than two points, not fitted");
      continue;
    }
    std::vector<LinearFit> fits = fit_class(cls, pts, cpu_processes && cls != "network", fitted);
    for (auto& f : fits) {
      f.path_class = cls;
      f.source = m.sources[cls];
      r.fits.push_back(f);
    }
  }
}

// Each class's regimes and base: its measured regimes where it has them, else its fits. They point into
// `fits` and fitted.tables, which stay unchanged while the overlay is written.
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

// The scenario's topology and the route the library's transfers take between two members, onto which the
// fits map; not copyable, as the comm model refers to the topology.
struct ScenarioRoutes {
  ScenarioRoutes(const Catalog& catalog, const Scenario& s)
      : topo(Topology::build(catalog, cluster_shape(s.cluster))), cm(catalog, s, topo), space(cm.data_space()) {}
  ScenarioRoutes(const ScenarioRoutes&) = delete;
  ScenarioRoutes& operator=(const ScenarioRoutes&) = delete;

  const Path& route(int a, int b) { return cm.path(cm.endpoint(a, space), cm.endpoint(b, space)); }
  const Link& link(int edge) const { return topo.link(cm.edge(edge)); }
  // A route's nominal bottleneck bandwidth and summed latency.
  std::pair<double, double> nominal(const Path& p) const {
    double bw = 1e300, lat = 0;
    for (int e : p.edges) {
      const Link& l = link(e);
      bw = std::min(bw, l.bandwidth);
      lat += l.latency;
    }
    return std::make_pair(bw, lat);
  }

  Topology topo;
  CommModel cm;
  collective::Space space;
};

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

// The overlay's header, a comment per fit it comes from, and the start of the library's section.
void write_header(std::ostream& y, const Scenario& s, const LibraryProfile& lib, const std::vector<LinearFit>& fits) {
  y << "# ringsim calibration overlay for " << s.cluster.sku << ", library " << lib.name << ", fabric "
    << to_string(s.cluster.fabric) << "; written by `ringsim calibrate` from:\n";
  for (const auto& f : fits)
    y << "#   " << f.path_class << (f.from_bytes > 0 ? " from " + format_bytes(f.from_bytes) : std::string()) << ": "
      << f.source << "\n#     alpha " << fmt(f.alpha) << " s, beta " << fmt(f.beta) << " s/B ("
      << format_bandwidth(f.beta > 0 ? 1 / f.beta : 0) << "), R^2 " << fmt(f.r2) << ", worst residual "
      << fmt(f.worst_residual_pct) << " % over " << f.points << " points\n";
  y << "# Use: ringsim predict SCENARIO --calibration THIS_FILE, or the scenario key `calibration:`.\n";
  y << "libraries:\n  " << lib.name << ":\n";
}

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

// A collective call's own cost: a 2-process ring allreduce of S is two exchanges of S / 2 and a reduction
// of S / 2; what it took more, at sizes where latency is all there is, is the call's (the median over
// sizes). Measured with the host's processes, it is theirs: GPU ranks' calls launch kernels and streams.
void write_collective_overhead(std::ostream& y, const Measurements& m, const std::string& gpu, bool cpu_processes,
                               CalibrationResult& r) {
  if (m.small_calls.empty()) return;
  if (!cpu_processes) {
    r.notes.push_back("allreduce_small: " + gpu +
                      " ranks call the library on GPU buffers, not as the host's processes measured; not applied");
    return;
  }
  const std::vector<FitPoint> calls = median_per_size(m.small_calls);
  const std::vector<double> extra = call_extras(m, calls, r.fits);
  if (extra.empty()) {
    r.notes.push_back("allreduce_small: no exchanges of half its sizes in class " + m.call_class +
                      " to take out; the library's collective_overhead is kept");
    return;
  }
  r.collective_overhead = std::max(0.0, upper_median(extra));
  y << "    collective_overhead: " << fmt(r.collective_overhead) << " s   # 2-process ring allreduce of "
    << format_bytes(calls.front().x_beta) << "-" << format_bytes(calls.back().x_beta)
    << " less its two exchanges and reduction (median over " << extra.size() << " sizes)\n";
}

// A regime's first size, times `scale`, in whole bytes (at least 1).
std::string regime_from(const LinearFit* f, double scale = 1) {
  return std::to_string(static_cast<long long>(std::max(f->from_bytes * scale, 1.0))) + " B";
}

// The host reduction's rate (1 / gamma) and, where it has several regimes, the rate of each. Measured as a
// collective reduces (data just received, into a span the peer just read), its cost per byte follows the
// reduction's own size: the cache lines it must claim back from the peer.
void write_host_reduction(std::ostream& y, const Fitted& fitted) {
  const LinearFit* f = fitted.base("reduction");
  if (!f || f->beta <= 0) return;
  y << "    host_reduction_rate: " << fmt(1 / f->beta) << " B/s   # 1 / gamma\n";
  const auto& regs = fitted.regimes("reduction");
  if (regs.size() < 2) return;
  y << "    host_reduction_regimes_by: message\n    host_reduction_regimes:\n";
  for (const LinearFit* g : regs)
    if (g->beta > 0) y << "      - {from: " << regime_from(g) << ", rate: " << fmt(1 / g->beta) << " B/s}\n";
}

// The library's path profiles and, for CPU processes, the link classes that carry the fits: each class's
// base fit mapped onto the scenario's route between its pair of members.
class PathProfiles {
 public:
  PathProfiles(ScenarioRoutes& routes, const std::map<std::string, std::pair<int, int>>& members, const Fitted& fitted,
               const std::set<std::string>& exchange_classes, bool cpu_processes)
      : routes_(routes),
        members_(members),
        fitted_(fitted),
        exchange_classes_(exchange_classes),
        cpu_processes_(cpu_processes) {}

  // The profile under `key` from class `cls`, where it was fitted; a note where the scenario lacks its pair.
  void add(const char* key, const char* cls, std::vector<std::string>& notes) {
    const LinearFit* f = fitted_.base(cls);
    auto m = members_.find(cls);
    if (!f) return;
    if (m == members_.end()) {
      notes.push_back(std::string(cls) + ": the scenario has no such pair of ranks; not applied");
      return;
    }
    const Path& route = routes_.route(m->second.first, m->second.second);
    if (cpu_processes_ && std::string(cls) != "network" && f->beta > 0)
      add_process_link(key, cls, route, *f);
    else
      add_route_fraction(key, cls, route, *f, notes);
  }

  // The paths section of the library, then the link_classes section.
  void write(std::ostream& y) const {
    if (!path_lines_.empty()) {
      y << "    paths:\n";
      for (const auto& l : path_lines_) y << l << "\n";
    }
    if (!link_lines_.empty()) {
      y << "link_classes:\n";
      for (const auto& l : link_lines_) y << l << "\n";
    }
  }

 private:
  // The ranks are processes: the fit is their copy link itself (each route crosses it twice, the sender's
  // and the receiver's side), at the library's full rate. Its latency is the smallest messages' alpha;
  // larger regimes add theirs above it as overhead.
  void add_process_link(const char* key, const std::string& cls, const Path& route, const LinearFit& f) {
    const int hops = static_cast<int>(route.edges.size());
    const std::string link = routes_.link(route.edges.front()).link_class;
    const double alpha0 = fitted_.regimes(cls).front()->alpha;
    link_lines_.push_back("  " + link + ": {bandwidth: " + fmt(1 / f.beta) +
                          " B/s, latency: " + fmt(alpha0 / std::max(hops, 1)) + " s}   # from " + cls + ", " +
                          std::to_string(hops) + " hops per message");
    path_lines_.push_back(std::string("      ") + key +
                          ": {bandwidth_fraction: 1, message_overhead: " + fmt(std::max(0.0, f.alpha - alpha0)) + " s" +
                          regimes_yaml(cls, alpha0, true) + "}   # the " + link + " figures below carry the fit");
  }

  // Elsewhere the fit is a fraction of the route's nominal bandwidth (at most 1) and an overhead above
  // its nominal latency.
  void add_route_fraction(const char* key, const std::string& cls, const Path& route, const LinearFit& f,
                          std::vector<std::string>& notes) {
    const auto [bw, lat] = routes_.nominal(route);
    double fraction = f.beta > 0 ? (1 / f.beta) / bw : 1;
    if (fraction > 1) {
      notes.push_back(cls + ": measured " + format_bandwidth(1 / f.beta) + " is above the route's nominal " +
                      format_bandwidth(bw) + "; bandwidth fraction capped at 1");
      fraction = 1;
    }
    fraction = std::max(fraction, 0.01);
    const double overhead = std::max(0.0, f.alpha - lat);
    path_lines_.push_back(std::string("      ") + key + ": {bandwidth_fraction: " + fmt(fraction) +
                          ", message_overhead: " + fmt(overhead) + " s" + regimes_yaml(cls, lat, false) +
                          "}   # from " + cls + ": route nominal " + format_bandwidth(bw) + ", latency " +
                          format_time(lat));
  }

  // The regimes of a path: bandwidth relative to the base fit's, overhead above `latency_in_route`.
  // Copies between processes of one host are memory traffic, whose regimes are the caches' (footprint:
  // what the host's processes hold, as they share its last-level cache); elsewhere they are the library's
  // protocol switches (message). A measurement stands for the collectives that hold as much as it did:
  // the 2 processes of an exchange each send one message and receive another (4 messages' bytes), of a
  // ping-pong each hold one (2); a ring of p processes holds p x (buffer + buffer / p).
  std::string regimes_yaml(const std::string& cls, double latency_in_route, bool by_buffer) const {
    const auto& regs = fitted_.regimes(cls);
    if (regs.size() < 2) return std::string();
    const LinearFit* base = regs.back();
    const double buffer_per_message = by_buffer ? (exchange_classes_.count(cls) ? 4 : 2) : 1;
    std::string out = by_buffer ? ", regimes_by: footprint, regimes: [" : ", regimes: [";
    for (std::size_t i = 0; i < regs.size(); ++i) {
      const LinearFit* g = regs[i];
      const double scale = g->beta > 0 ? std::clamp(base->beta / g->beta, 0.01, 100.0) : 100.0;
      out += std::string(i ? ", " : "") + "{from: " + regime_from(g, buffer_per_message) +
             ", bandwidth_scale: " + fmt(scale) +
             ", message_overhead: " + fmt(std::max(0.0, g->alpha - latency_in_route)) + " s}";
    }
    out += "]";
    if (by_buffer) out += protocol_yaml(fitted_.protocol(cls));
    return out;
  }

  // The protocol overheads a message pays by its own size, where regimes are keyed by footprint.
  static std::string protocol_yaml(const Steps& protocol) {
    if (protocol.empty()) return std::string();
    std::string out = ", protocol_overheads: [";
    for (std::size_t i = 0; i < protocol.size(); ++i)
      out += std::string(i ? ", " : "") + "{from: " + std::to_string(static_cast<long long>(protocol[i].first)) +
             " B, overhead: " + fmt(protocol[i].second) + " s}";
    return out + "]";
  }

  ScenarioRoutes& routes_;
  const std::map<std::string, std::pair<int, int>>& members_;
  const Fitted& fitted_;
  const std::set<std::string>& exchange_classes_;
  bool cpu_processes_;
  std::vector<std::string> path_lines_, link_lines_;
};

using RankLines = std::vector<std::pair<std::string, std::string>>;  // key: value, and where it comes from

// The memory rate of the processes' copies (fusion copies, optimizer update), where the largest copies'
// rate is the base, as for links; and the copies' measured rate at each size, which a fusion copy of that
// size costs (below the largest copies' line at fusion sizes; validate/HISTORY.md).
void add_copy_lines(const Measurements& m, const Fitted& fitted, RankLines& lines) {
  const LinearFit* c = fitted.base("copy");
  if (!c || c->beta <= 0) return;
  lines.push_back({"memory_bandwidth: " + fmt(2 / c->beta) + " B/s",
                   "memory_bandwidth: 2 x the largest copies' rate (a copy reads and writes each byte)"});
  std::string rates;
  for (const auto& p : m.by_class.at("copy"))
    if (p.x_beta > 0 && p.seconds > 0)
      rates += std::string(rates.empty() ? "" : ", ") + "{from: " + std::to_string(static_cast<long long>(p.x_beta)) +
               " B, rate: " + fmt(p.x_beta / p.seconds) + " B/s}";
  if (!rates.empty())
    lines.push_back({"copy_rates: [" + rates + "]",
                     "copy_rates: the copies' rate at each size measured, which a copy of that size costs"});
}

// A class's latency over its exchanges from 1 KiB to 256 KiB; -1 where it has too few or none.
double exchange_latency(const Measurements& m, const std::string& cls) {
  auto it = m.by_class.find(cls);
  return it == m.by_class.end() ? -1 : small_exchange_latency(it->second);
}

// The core handoffs: what an exchange on one core, and one on two cores each shared with another thread,
// took more than on two cores of their own, at sizes where latency shows.
void add_handoff_lines(const Measurements& m, const std::map<std::string, std::pair<int, int>>& members,
                       RankLines& lines, std::vector<std::string>& notes) {
  const std::string pair_cls = members.count("same_socket") ? "same_socket" : "cross_socket";
  const double apart = exchange_latency(m, pair_cls);
  for (const auto& [cls, key, what] :
       {std::tuple{kOneCore, "core_handoff", "the one-core exchanges' latency above the exchanges' (1 KiB-256 KiB)"},
        {kSharedCores, "cross_core_handoff",
         "the same for exchanges on two cores, each shared with a yielding thread"}}) {
    if (!m.by_class.count(cls) && std::string(cls) == kSharedCores && m.by_class.count(kOneCore)) {
      notes.push_back(std::string(kSharedCores) +
                      ": none measured (one core only, pinning refused, or data from an older " +
                      "ringsim-real); the catalog's cross_core_handoff stays");
      continue;
    }
    if (!m.by_class.count(cls)) continue;
    const double shared = exchange_latency(m, cls);
    if (shared >= 0 && apart >= 0)
      lines.push_back(
          {std::string(key) + ": " + fmt(std::max(0.0, shared - apart)) + " s", std::string(key) + ": " + what});
    else
      notes.push_back(std::string(cls) + ": too few exchanges from 1 KiB to 256 KiB to fit the " + key);
  }
}

// What the ranks themselves do, for CPU processes: the gpus section of their memory rates and core
// handoffs. GPU ranks copy in GPU memory and do not share cores: a note says these are not applied.
void write_rank_effects(std::ostream& y, const RankLines& lines, const std::string& gpu, bool cpu_processes,
                        std::vector<std::string>& notes) {
  if (lines.empty()) return;
  if (!cpu_processes) {
    notes.push_back("copy, one core: " + gpu +
                    " ranks copy in GPU memory and do not share cores, not as the host measured; not applied");
    return;
  }
  y << "gpus:\n  " << gpu << ": {";
  for (std::size_t i = 0; i < lines.size(); ++i) y << (i ? ", " : "") << lines[i].first;
  y << "}   #";
  for (std::size_t i = 0; i < lines.size(); ++i) y << (i ? "; " : " ") << lines[i].second;
  y << "\n";
}

}  // namespace

// Reads the measurements, fits each class, then writes the overlay section by section: the library's
// collective overhead, host reduction and path profiles, the link classes, and the ranks' own effects.
CalibrationResult calibrate(const Catalog& catalog, const Scenario& s, const CalibrationInputs& in) {
  Measurements m = read_measurements(catalog, s, in);
  CalibrationResult r;
  r.notes = reading_notes(m);
  const std::string gpu = catalog.sku(s.cluster.sku).gpu;
  const bool cpu_processes = catalog.gpu(gpu).cpu_process;
  Fitted fitted;
  fit_classes(m, cpu_processes, fitted, r);

  ScenarioRoutes routes(catalog, s);
  const LibraryProfile& lib = catalog.library(std::string(to_string(s.communication.library)));
  const auto members = pick_members(routes, s, cpu_processes);

  std::ostringstream y;
  write_header(y, s, lib, r.fits);
  write_collective_overhead(y, m, gpu, cpu_processes, r);
  index_regimes(r.fits, fitted);
  write_host_reduction(y, fitted);
  PathProfiles paths(routes, members, fitted, m.exchange_classes, cpu_processes);
  paths.add("intra_node", fitted.fit_of.count("same_socket") ? "same_socket" : "cross_socket", r.notes);
  paths.add(s.cluster.fabric == FabricKind::InfiniBand ? "infiniband" : "ethernet", "network", r.notes);
  paths.write(y);
  RankLines rank_lines;
  add_copy_lines(m, fitted, rank_lines);
  add_handoff_lines(m, members, rank_lines, r.notes);
  write_rank_effects(y, rank_lines, gpu, cpu_processes, r.notes);
  r.overlay_yaml = y.str();
  return r;
}

}  // namespace ringsim
