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

CalibrationResult calibrate(const Catalog& catalog, const Scenario& s, const CalibrationInputs& in) {
  std::map<std::string, std::vector<FitPoint>> by_class;
  std::map<std::string, std::string> sources;
  std::set<std::string> exchange_classes;  // fitted to exchanges (each rank sends and receives a message)
  std::vector<FitPoint> small_calls;       // 2-process ring allreduce of small buffers (a call's own cost)
  std::string call_class;                  // the pair class they ran on
  auto add_source = [&](const std::string& cls, const std::string& file) {
    if (sources[cls].find(file) == std::string::npos) sources[cls] += (sources[cls].empty() ? "" : ", ") + file;
  };
  // Placement probes: samples count where the CPUs were as near as the files (and the caller) saw them.
  std::vector<nlohmann::json> data;
  PlacementFilter placement;
  for (const auto& f : in.data_files) {
    data.push_back(read_json_file(f));
    try {
      placement.add_file(data.back());
    } catch (const nlohmann::json::exception& e) {
      throw InputError({f, 0, 0, ""}, std::string("malformed calibration data: ") + e.what());
    }
  }
  placement.add_nearest(in.nearest_core_to_core_ns);
  int points_left_out = 0;  // no sample in the nearest placement
  auto seconds_of = [&](const nlohmann::json& p) {
    const double t = placement.point_seconds(p);
    if (t < 0) ++points_left_out;
    return t;
  };
  for (std::size_t file = 0; file < in.data_files.size(); ++file) {
    const std::string& f = in.data_files[file];
    const auto& j = data[file];
    try {
      if (!j.is_object() || !j.contains("schema") || j["schema"] != "ringsim.calibration-data/1")
        throw InputError({f, 0, 0, ""},
                         "expected \"schema\": \"ringsim.calibration-data/1\" (ringsim-real calibrate --json)");
      // Collectives move data as exchanges (every rank sends and receives at once), so where the file has
      // them they are the class's figures; its ping-pong is then fitted and shown beside them only.
      const bool exchanges = j.contains("sendrecv") && !j.at("sendrecv").empty();
      auto add_pairs = [&](const char* key, const std::string& suffix) {
        for (const auto& pair : j.at(key)) {
          const std::string cls = pair.at("class").get<std::string>() + suffix;
          for (const auto& p : pair.at("points"))
            if (const double t = seconds_of(p); t > 0) by_class[cls].push_back({1, p.at("bytes").get<double>(), t});
          add_source(cls, f);
        }
      };
      add_pairs("pingpong", exchanges ? kPingPongSuffix : "");
      if (exchanges) {
        add_pairs("sendrecv", "");
        for (const auto& pair : j.at("sendrecv")) exchange_classes.insert(pair.at("class").get<std::string>());
      }
      for (const auto& [key, cls] : {std::pair{"sendrecv_one_core", kOneCore}, {"sendrecv_shared_cores", kSharedCores}})
        if (j.contains(key) && j.at(key).contains("points")) {
          for (const auto& p : j.at(key).at("points"))
            if (const double t = seconds_of(p); t > 0) by_class[cls].push_back({1, p.at("bytes").get<double>(), t});
          add_source(cls, f);
        }
      if (j.contains("allreduce_small") && j.at("allreduce_small").contains("points")) {
        const auto& calls = j.at("allreduce_small");
        call_class = calls.at("class").get<std::string>();
        for (const auto& p : calls.at("points"))
          if (const double t = seconds_of(p); t > 0) small_calls.push_back({1, p.at("bytes").get<double>(), t});
      }
      for (const char* kind : {"reduction", "copy"}) {
        if (!j.contains(kind) && std::string(kind) == "copy") continue;  // files written before copies were timed
        for (const auto& p : j.at(kind))
          if (const double t = seconds_of(p); t >= 0) by_class[kind].push_back({0, p.at("bytes").get<double>(), t});
        add_source(kind, f);
      }
    } catch (const nlohmann::json::exception& e) {
      throw InputError({f, 0, 0, ""}, std::string("malformed calibration data: ") + e.what());
    }
  }
  std::vector<std::string> input_notes;  // what the files left to the scenario
  for (const auto& f : in.nccl_tests_files) {
    std::ifstream t(f);
    if (!t) throw InputError({f, 0, 0, ""}, "cannot open file");
    const std::string text((std::istreambuf_iterator<char>(t)), std::istreambuf_iterator<char>());
    NcclTestsData d = parse_nccl_tests(text, f, {s.cluster.total_gpus(), s.cluster.nodes});
    if (d.ranks_from_context)
      input_notes.push_back(f + ": no rank lines; " + std::to_string(d.ranks) + " ranks on " + std::to_string(d.hosts) +
                            " hosts, as the scenario has them (cluster.nodes x gpus_per_node: --set to change)");
    const std::string cls = d.spans_nodes ? "network" : "same_socket";
    // An allreduce across nodes runs NCCL's rings at once, each through its own NIC where the node has
    // several: the bus bandwidth is shared by the rails the ranks of a host leave by (NodeLayout::gpu_rail,
    // the scenario's SKU), and the fit is one rail's.
    int rails = 1;
    if (d.spans_nodes && d.op == "all_reduce" && s.cluster.fabric == FabricKind::InfiniBand)
      rails =
          std::max(1, catalog.layout(catalog.sku(s.cluster.sku).layout).rails_of_first(d.ranks / std::max(d.hosts, 1)));
    for (auto& p : d.points) p.x_beta /= rails;
    by_class[cls].insert(by_class[cls].end(), d.points.begin(), d.points.end());
    sources[cls] += (sources[cls].empty() ? "" : ", ") + f + " (nccl-tests " + d.op + ", " + std::to_string(d.ranks) +
                    " ranks" + (rails > 1 ? ", its bus bandwidth shared by " + std::to_string(rails) + " rails" : "") +
                    ")";
  }

  for (auto& [cls, pts] : by_class) pts = median_per_size(std::move(pts));

  CalibrationResult r;
  r.notes = input_notes;
  if (placement.active()) {
    r.notes.push_back("placement: " + placement.summary("samples"));
    if (points_left_out > 0)
      r.notes.push_back("placement: " + std::to_string(points_left_out) +
                        " points had no sample that counts, and are left out");
  }
  // CPU processes' copies are memory traffic, whose regimes are the caches' (keyed by footprint, below).
  const bool cpu_processes = catalog.gpu(catalog.sku(s.cluster.sku).gpu).cpu_process;
  auto footprint_keyed = [&](const std::string& cls) { return cpu_processes && cls != "network"; };
  // Per-message classes: the overlay's regimes are the measured curve itself, one per size measured, as
  // SMPI's piecewise factors are (a fitted line per size range misses the gradual fall of bandwidth as
  // buffers outgrow each cache level; validate/HISTORY.md). Each keeps the first range's latency and puts
  // the rest of the measured time into its bandwidth, so a message of a measured size costs what it
  // measured; the fits above stay the summary (alpha, beta, R^2, worst residual).
  // Where the regimes are keyed by footprint, a message's fixed costs above the first range's latency
  // (the library's protocol switches: each fitted range's alpha, never falling as sizes grow) stay keyed
  // by its own size, as protocol overheads: a ring's message of m in a collective that holds 20 m pays the
  // rendezvous of an m message, not the share of it that an exchange of 5 m spread over its bytes.
  std::map<std::string, std::vector<LinearFit>> tables;
  std::map<std::string, std::vector<std::pair<double, double>>> protocol_of;  // (from bytes, seconds)
  for (auto& [cls, pts] : by_class) {
    if (pts.size() < 2) {
      r.notes.push_back(cls + ": fewer than two points, not fitted");
      continue;
    }
    if (cls == "reduction" || cls == "copy")
      for (auto& p : pts) p.x_alpha = 1;  // a fixed start-up cost plus gamma per byte
    // Size regimes where x_beta is the message size (ping-pong, sendrecv, reduction); one line for rings.
    const bool per_message = std::all_of(pts.begin(), pts.end(), [](const FitPoint& p) { return p.x_alpha == 1; });
    std::vector<LinearFit> fits;
    if (per_message) {
      std::stable_sort(pts.begin(), pts.end(),
                       [](const FitPoint& a, const FitPoint& b) { return a.x_beta < b.x_beta; });
      fits = fit_regimes(pts);
      auto& protocol = protocol_of[cls];
      if (footprint_keyed(cls) && cls != "reduction" && cls != "copy")
        for (std::size_t i = 1; i < fits.size(); ++i) {
          const double above = fits[i].alpha - fits.front().alpha;
          if (above > (protocol.empty() ? 0 : protocol.back().second)) protocol.emplace_back(fits[i].from_bytes, above);
        }
      auto& table = tables[cls];
      for (const auto& p : pts) {
        if (p.x_beta <= 0 || (!table.empty() && p.x_beta == table.back().from_bytes)) continue;
        LinearFit g;
        g.alpha = fits.front().alpha;
        g.beta = std::max(0.0, p.seconds - g.alpha - step_value(protocol, p.x_beta)) / p.x_beta;
        g.from_bytes = table.empty() ? 0 : p.x_beta;
        table.push_back(g);
      }
    } else {
      fits = {fit_linear(pts)};
      fits.front().data = pts;
    }
    for (auto& f : fits) {
      f.path_class = cls;
      f.source = sources[cls];
      r.fits.push_back(f);
    }
  }

  // Map the fits onto the scenario's paths: the route the library's transfers take between two members.
  Topology topo = Topology::build(catalog, cluster_shape(s.cluster));
  CommModel cm(catalog, s, topo);
  const collective::Space space = cm.data_space();
  const LibraryProfile& lib = catalog.library(std::string(to_string(s.communication.library)));
  auto route_of = [&](int a, int b) { return &cm.path(cm.endpoint(a, space), cm.endpoint(b, space)); };
  auto nominal = [&](const Path& p) {
    double bw = 1e300, lat = 0;
    for (int e : p.edges) {
      const Link& l = topo.link(cm.edge(e));
      bw = std::min(bw, l.bandwidth);
      lat += l.latency;
    }
    return std::make_pair(bw, lat);
  };
  // Pick member pairs for each class.
  const int gpn = s.cluster.gpus_per_node;
  std::map<std::string, std::pair<int, int>> members;
  for (int m = 1; m < gpn; ++m) {
    bool same = cm.member(m).host == cm.member(0).host;
    if (cpu_processes) {  // each process is its own memory: same socket unless the route crosses sockets
      same = true;
      for (int e : route_of(0, m)->edges)
        if (topo.link(cm.edge(e)).kind == LinkKind::SocketInterconnect) same = false;
    }
    members.emplace(same ? "same_socket" : "cross_socket", std::make_pair(0, m));
  }
  if (s.cluster.nodes > 1) members.emplace("network", std::make_pair(0, gpn));

  std::ostringstream y;
  y << "# ringsim calibration overlay for " << s.cluster.sku << ", library " << lib.name << ", fabric "
    << to_string(s.cluster.fabric) << "; written by `ringsim calibrate` from:\n";
  for (const auto& f : r.fits)
    y << "#   " << f.path_class << (f.from_bytes > 0 ? " from " + format_bytes(f.from_bytes) : std::string()) << ": "
      << f.source << "\n#     alpha " << fmt(f.alpha) << " s, beta " << fmt(f.beta) << " s/B ("
      << format_bandwidth(f.beta > 0 ? 1 / f.beta : 0) << "), R^2 " << fmt(f.r2) << ", worst residual "
      << fmt(f.worst_residual_pct) << " % over " << f.points << " points\n";
  y << "# Use: ringsim predict SCENARIO --calibration THIS_FILE, or the scenario key `calibration:`.\n";
  y << "libraries:\n  " << lib.name << ":\n";
  // A collective call's own cost: a 2-process ring allreduce of S is two exchanges of S / 2 and a reduction
  // of S / 2; what it took more, at sizes where latency is all there is, is the call's (the median over
  // sizes). The validation's sizes are 64 times larger and up. Measured with the host's processes, it is
  // theirs: GPU ranks' calls launch kernels and streams besides.
  if (!small_calls.empty() && !cpu_processes) {
    r.notes.push_back("allreduce_small: " + catalog.sku(s.cluster.sku).gpu +
                      " ranks call the library on GPU buffers, not as the host's processes measured; not applied");
  } else if (!small_calls.empty()) {
    const std::vector<FitPoint> calls = median_per_size(small_calls);
    static const std::vector<FitPoint> kNone;
    const auto found = by_class.find(call_class);
    const auto& ex = found == by_class.end() ? kNone : found->second;
    const LinearFit* red = nullptr;
    for (const auto& f : r.fits)
      if (f.path_class == "reduction" && !red) red = &f;
    std::vector<double> extra;
    for (const auto& c : calls) {
      const double half = c.x_beta / 2;
      auto e = std::find_if(ex.begin(), ex.end(), [&](const FitPoint& p) { return p.x_beta == half; });
      if (e == ex.end() || !exchange_classes.count(call_class)) continue;
      extra.push_back(c.seconds - 2 * e->seconds - (red ? red->alpha + red->beta * half : 0));
    }
    if (extra.empty()) {
      r.notes.push_back("allreduce_small: no exchanges of half its sizes in class " + call_class +
                        " to take out; the library's collective_overhead is kept");
    } else {
      r.collective_overhead = std::max(0.0, upper_median(extra));
      y << "    collective_overhead: " << fmt(r.collective_overhead) << " s   # 2-process ring allreduce of "
        << format_bytes(calls.front().x_beta) << "-" << format_bytes(calls.back().x_beta)
        << " less its two exchanges and reduction (median over " << extra.size() << " sizes)\n";
    }
  }
  // Per class its size regimes, ascending. The largest messages' regime is the base (their bandwidth is
  // what contention shares); the others are regimes of the overlay, the first one from 1 byte.
  std::map<std::string, std::vector<const LinearFit*>> regimes_of;
  std::map<std::string, const LinearFit*> fit_of;
  for (const auto& f : r.fits) {
    if (tables.count(f.path_class)) continue;
    regimes_of[f.path_class].push_back(&f);
    fit_of[f.path_class] = &f;
  }
  for (const auto& [cls, table] : tables) {
    for (const auto& g : table) regimes_of[cls].push_back(&g);
    fit_of[cls] = &table.back();
  }
  auto regime_from = [](const LinearFit* f, double scale = 1) {
    return std::to_string(static_cast<long long>(std::max(f->from_bytes * scale, 1.0))) + " B";
  };
  if (auto it = fit_of.find("reduction"); it != fit_of.end() && it->second->beta > 0) {
    y << "    host_reduction_rate: " << fmt(1 / it->second->beta) << " B/s   # 1 / gamma\n";
    const auto& regs = regimes_of["reduction"];
    if (regs.size() > 1) {
      // Measured as a collective reduces (data just received, into a span the peer just read), its cost
      // per byte follows the reduction's own size: the cache lines it must claim back from the peer.
      y << "    host_reduction_regimes_by: message\n    host_reduction_regimes:\n";
      for (const LinearFit* g : regs)
        if (g->beta > 0) y << "      - {from: " << regime_from(g) << ", rate: " << fmt(1 / g->beta) << " B/s}\n";
    }
  }
  // The regimes line of a path: bandwidth relative to the base fit's, overhead above `latency_in_route`.
  // Copies between processes of one host are memory traffic, whose regimes are the caches' (footprint:
  // what the host's processes hold, as they share its last-level cache); elsewhere they are the library's
  // protocol switches (message). A measurement stands for the collectives that hold as much as it did:
  // the 2 processes of an exchange each send one message and receive another (4 messages' bytes), of a
  // ping-pong each hold one (2); a ring of p processes holds p x (buffer + buffer / p).
  auto regimes_yaml = [&](const std::string& cls, double latency_in_route, bool by_buffer) {
    const auto& regs = regimes_of[cls];
    if (regs.size() < 2) return std::string();
    const LinearFit* base = regs.back();
    const double buffer_per_message = by_buffer ? (exchange_classes.count(cls) ? 4 : 2) : 1;
    std::string out = by_buffer ? ", regimes_by: footprint, regimes: [" : ", regimes: [";
    for (std::size_t i = 0; i < regs.size(); ++i) {
      const LinearFit* g = regs[i];
      const double scale = g->beta > 0 ? std::clamp(base->beta / g->beta, 0.01, 100.0) : 100.0;
      out += std::string(i ? ", " : "") + "{from: " + regime_from(g, buffer_per_message) +
             ", bandwidth_scale: " + fmt(scale) +
             ", message_overhead: " + fmt(std::max(0.0, g->alpha - latency_in_route)) + " s}";
    }
    out += "]";
    if (const auto& protocol = protocol_of[cls]; by_buffer && !protocol.empty()) {
      out += ", protocol_overheads: [";
      for (std::size_t i = 0; i < protocol.size(); ++i)
        out += std::string(i ? ", " : "") + "{from: " + std::to_string(static_cast<long long>(protocol[i].first)) +
               " B, overhead: " + fmt(protocol[i].second) + " s}";
      out += "]";
    }
    return out;
  };
  std::vector<std::string> path_lines, link_lines;
  auto path_profile = [&](const char* key, const char* cls) {
    auto f = fit_of.find(cls);
    auto m = members.find(cls);
    if (f == fit_of.end()) return;
    if (m == members.end()) {
      r.notes.push_back(std::string(cls) + ": the scenario has no such pair of ranks; not applied");
      return;
    }
    const Path& route = *route_of(m->second.first, m->second.second);
    const auto [bw, lat] = nominal(route);
    if (cpu_processes && std::string(cls) != "network" && f->second->beta > 0) {
      // The ranks are processes: the fit is their copy link itself (each route crosses it twice, the
      // sender's and the receiver's side), at the library's full rate. Its latency is the smallest
      // messages' alpha; larger regimes add theirs above it as overhead.
      const int hops = static_cast<int>(route.edges.size());
      const std::string link = topo.link(cm.edge(route.edges.front())).link_class;
      const double alpha0 = regimes_of[cls].front()->alpha;
      link_lines.push_back("  " + link + ": {bandwidth: " + fmt(1 / f->second->beta) +
                           " B/s, latency: " + fmt(alpha0 / std::max(hops, 1)) + " s}   # from " + cls + ", " +
                           std::to_string(hops) + " hops per message");
      path_lines.push_back(std::string("      ") + key + ": {bandwidth_fraction: 1, message_overhead: " +
                           fmt(std::max(0.0, f->second->alpha - alpha0)) + " s" + regimes_yaml(cls, alpha0, true) +
                           "}   # the " + link + " figures below carry the fit");
      return;
    }
    double fraction = f->second->beta > 0 ? (1 / f->second->beta) / bw : 1;
    if (fraction > 1) {
      r.notes.push_back(std::string(cls) + ": measured " + format_bandwidth(1 / f->second->beta) +
                        " is above the route's nominal " + format_bandwidth(bw) + "; bandwidth fraction capped at 1");
      fraction = 1;
    }
    fraction = std::max(fraction, 0.01);
    const double overhead = std::max(0.0, f->second->alpha - lat);
    path_lines.push_back(std::string("      ") + key + ": {bandwidth_fraction: " + fmt(fraction) +
                         ", message_overhead: " + fmt(overhead) + " s" + regimes_yaml(cls, lat, false) + "}   # from " +
                         cls + ": route nominal " + format_bandwidth(bw) + ", latency " + format_time(lat));
  };
  if (fit_of.count("same_socket"))
    path_profile("intra_node", "same_socket");
  else
    path_profile("intra_node", "cross_socket");
  path_profile(s.cluster.fabric == FabricKind::InfiniBand ? "infiniband" : "ethernet", "network");
  if (!path_lines.empty()) {
    y << "    paths:\n";
    for (const auto& l : path_lines) y << l << "\n";
  }
  if (!link_lines.empty()) {
    y << "link_classes:\n";
    for (const auto& l : link_lines) y << l << "\n";
  }
  // What the ranks themselves do, for CPU processes: the memory rate of their copies (fusion copies,
  // optimizer update), where the largest copies' rate is the base, as for links (a fusion buffer's tensors
  // were last touched an iteration ago); and the core handoffs, what an exchange on one core, and one on
  // two cores each shared with another thread, took more than on two cores of their own, at sizes where
  // latency shows.
  std::vector<std::pair<std::string, std::string>> rank_lines;  // key: value, and where it comes from
  const std::string gpu = catalog.sku(s.cluster.sku).gpu;
  if (auto c = fit_of.find("copy"); c != fit_of.end() && c->second->beta > 0) {
    rank_lines.push_back({"memory_bandwidth: " + fmt(2 / c->second->beta) + " B/s",
                          "memory_bandwidth: 2 x the largest copies' rate (a copy reads and writes each byte)"});
    // The copies' measured rate at each size, which a fusion copy of that size costs: below the largest
    // copies' line at fusion sizes, and what training iterations' copies take (validate/HISTORY.md).
    std::string rates;
    for (const auto& p : by_class.at("copy"))
      if (p.x_beta > 0 && p.seconds > 0)
        rates += std::string(rates.empty() ? "" : ", ") + "{from: " + std::to_string(static_cast<long long>(p.x_beta)) +
                 " B, rate: " + fmt(p.x_beta / p.seconds) + " B/s}";
    if (!rates.empty())
      rank_lines.push_back({"copy_rates: [" + rates + "]",
                            "copy_rates: the copies' rate at each size measured, which a copy of that size costs"});
  }
  const std::string pair_cls = members.count("same_socket") ? "same_socket" : "cross_socket";
  auto by_name = [&](const std::string& cls) {
    auto it = by_class.find(cls);
    return it == by_class.end() ? -1 : small_exchange_latency(it->second);
  };
  const double apart = by_name(pair_cls);
  for (const auto& [cls, key, what] :
       {std::tuple{kOneCore, "core_handoff", "the one-core exchanges' latency above the exchanges' (1 KiB-256 KiB)"},
        {kSharedCores, "cross_core_handoff",
         "the same for exchanges on two cores, each shared with a yielding thread"}}) {
    if (!by_class.count(cls) && std::string(cls) == kSharedCores && by_class.count(kOneCore)) {
      r.notes.push_back(std::string(kSharedCores) +
                        ": none measured (one core only, pinning refused, or data from an older " +
                        "ringsim-real); the catalog's cross_core_handoff stays");
      continue;
    }
    if (!by_class.count(cls)) continue;
    const double shared = by_name(cls);
    if (shared >= 0 && apart >= 0)
      rank_lines.push_back(
          {std::string(key) + ": " + fmt(std::max(0.0, shared - apart)) + " s", std::string(key) + ": " + what});
    else
      r.notes.push_back(std::string(cls) + ": too few exchanges from 1 KiB to 256 KiB to fit the " + key);
  }
  if (!rank_lines.empty() && cpu_processes) {
    y << "gpus:\n  " << gpu << ": {";
    for (std::size_t i = 0; i < rank_lines.size(); ++i) y << (i ? ", " : "") << rank_lines[i].first;
    y << "}   #";
    for (std::size_t i = 0; i < rank_lines.size(); ++i) y << (i ? "; " : " ") << rank_lines[i].second;
    y << "\n";
  } else if (!rank_lines.empty()) {
    r.notes.push_back("copy, one core: " + gpu +
                      " ranks copy in GPU memory and do not share cores, not as the host measured; not applied");
  }
  r.overlay_yaml = y.str();
  return r;
}

}  // namespace ringsim
