#include "calibrate/runs.h"

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>

#include "calibrate/posterior.h"
#include "execute/estimate/prediction_band.h"
#include "load/input_error.h"
#include "load/input_file.h"
#include "load/uncertain.h"
#include "load/units.h"

namespace ringsim {

namespace {

// The cells of one CSV line and the column each starts at (no quoting: keys and numbers only).
std::vector<std::pair<std::string, int>> cells(const std::string& line) {
  std::vector<std::pair<std::string, int>> out;
  std::size_t start = 0;
  for (;;) {
    const std::size_t comma = line.find(',', start);
    std::string c = line.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    const std::size_t lead = c.find_first_not_of(" \t");
    const std::size_t last = c.find_last_not_of(" \t\r");
    out.emplace_back(lead == std::string::npos ? "" : c.substr(lead, last - lead + 1),
                     static_cast<int>(start + (lead == std::string::npos ? 0 : lead)) + 1);
    if (comma == std::string::npos) return out;
    start = comma + 1;
  }
}

int rate_column(const std::vector<std::pair<std::string, int>>& header, const std::string& file) {
  int rate = -1;
  for (std::size_t i = 0; i < header.size(); ++i) {
    const std::string& h = header[i].first;
    if (h == "images_per_sec" || h == "samples_per_sec") {
      if (rate >= 0) throw InputError({file, 1, header[i].second, ""}, "a second measured-rate column");
      rate = static_cast<int>(i);
    } else if (h.empty() || h.find('.') == std::string::npos) {
      throw InputError({file, 1, header[i].second, ""},
                       "expected images_per_sec, samples_per_sec or a scenario key such as cluster.nodes, got '" +
                           printable(h, 60) + "'" + suggestion_suffix(h, {"images_per_sec", "samples_per_sec"}));
    }
  }
  if (rate < 0) throw InputError({file, 1, 1, ""}, "expected a column images_per_sec (or samples_per_sec)");
  return rate;
}

}  // namespace

std::vector<MeasuredRun> read_runs(const std::string& file) {
  std::istringstream in(read_input_file(file, kMaxCsvInputBytes, "runs CSV"));
  std::string line;
  if (!std::getline(in, line)) throw InputError({file, 1, 1, ""}, "expected a header row");
  const auto header = cells(line);
  const int rate = rate_column(header, file);
  std::vector<MeasuredRun> runs;
  for (int n = 2; std::getline(in, line); ++n) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const auto row = cells(line);
    if (row.size() != header.size())
      throw InputError({file, n, 1, ""}, "expected " + std::to_string(header.size()) +
                                             " cells as the header has, got " + std::to_string(row.size()));
    MeasuredRun r;
    r.line = n;
    for (std::size_t i = 0; i < row.size(); ++i) {
      const SourceLocation at{file, n, row[i].second, ""};
      if (static_cast<int>(i) != rate) {
        r.sets.push_back(parse_override(header[i].first + "=" + row[i].first));
        r.columns.push_back(row[i].second);
        continue;
      }
      char* end = nullptr;
      r.images_per_sec = std::strtod(row[i].first.c_str(), &end);
      if (row[i].first.empty() || *end || !(r.images_per_sec > 0) || !std::isfinite(r.images_per_sec))
        throw InputError(at, "expected a measured rate above 0, got '" + printable(row[i].first, 60) + "'");
    }
    runs.push_back(r);
  }
  if (runs.empty()) throw InputError({file, 2, 1, ""}, "expected at least one measured run below the header");
  return runs;
}

namespace {

// What a run must have for a figure to show in it.
std::string what_to_measure(const UncertainParameter& p) {
  const std::string& f = p.figure;
  if (f.rfind("compute.", 0) == 0) return "runs with more GPUs";
  if (f.find(".intra_node.") != std::string::npos) return "runs with several GPUs in one node";
  if (f.find("ethernet") != std::string::npos) return "runs across two or more nodes over Ethernet";
  if (f.find("infiniband") != std::string::npos) return "runs across two or more nodes over InfiniBand";
  if (f.ends_with(".rpc_rate")) return "runs whose parameter servers' exchanges are not hidden by the compute";
  return "runs with the library and paths it applies to";
}

// The scenario of each run: the base scenario with the run's keys; errors point into RUNS.csv.
std::vector<Scenario> run_scenarios(const Catalog& catalog, const std::string& scenario_file,
                                    const std::vector<Override>& sets, const std::vector<MeasuredRun>& runs,
                                    const std::string& runs_file) {
  std::vector<Scenario> out;
  for (const auto& r : runs) {
    std::vector<Override> all = sets;
    all.insert(all.end(), r.sets.begin(), r.sets.end());
    try {
      out.push_back(load_scenario(scenario_file, catalog, all));
    } catch (const InputError& e) {
      int column = 1;
      for (std::size_t i = 0; i < r.sets.size(); ++i)
        if (e.where().origin.find(r.sets[i].text) != std::string::npos) column = r.columns[i];
      throw InputError({runs_file, r.line, column, ""}, e.message());
    }
  }
  return out;
}

// The figures at a point: each parameter at u (0..1 along its range).
struct FigurePoint {
  std::vector<const UncertainParameter*> params;
  std::vector<double> u;
};

class RunsFitter {
 public:
  RunsFitter(const Catalog& c, std::vector<Scenario> runs, std::vector<double> measured, std::string sku)
      : catalog_(c),
        runs_(std::move(runs)),
        measured_(std::move(measured)),
        scale_(runs_.size(), 1.0),
        sku_(std::move(sku)) {}

  // The runs' predictions at the catalog's figures, each in its own fidelity, and the ratio of each to the
  // step fidelity's with one collective at a time (cheap; as the band runs it). Until use_own_fidelity(),
  // the fit's predictions are the latter scaled by that ratio.
  std::vector<double> anchor() {
    std::vector<ChildPrediction> jobs;
    for (const auto& s : runs_) jobs.push_back({&s, {}, true, std::nullopt});
    for (const auto& s : runs_)
      if (!step(s)) jobs.push_back({&s, {}, false, std::nullopt});
    const auto q = predict_in_children(catalog_, jobs);
    std::vector<double> own;
    for (std::size_t i = 0, k = runs_.size(); i < runs_.size(); ++i) {
      own.push_back(step(runs_[i]) ? q[i].first : q[k++].first);
      scale_[i] = own[i] / q[i].first;
    }
    return own;
  }
  // Each run's prediction in its own fidelity (or back to the scaled step fidelity): where collectives run
  // at once, the figures of the links they share move it otherwise than one collective at a time shows.
  void use_own_fidelity(bool own) {
    own_ = own && std::any_of(runs_.begin(), runs_.end(), [](const Scenario& s) { return !step(s); });
  }
  // The predicted images/s of every run at each point, remembered (searches revisit points): all that are
  // new side by side, in children.
  std::vector<std::vector<double>> predictions(const std::vector<FigurePoint>& points) {
    std::vector<FigurePoint> todo;
    for (const auto& pt : points)
      if (!seen_[own_].count({pt.params, pt.u}) && std::none_of(todo.begin(), todo.end(), [&](const FigurePoint& t) {
            return t.params == pt.params && t.u == pt.u;
          }))
        todo.push_back(pt);
    std::vector<ChildPrediction> jobs;
    for (const auto& pt : todo) {
      const CatalogOverlay o = figures(pt.params, pt.u);
      for (const auto& s : runs_) jobs.push_back({&s, o, own_ ? step(s) : true, std::nullopt});
    }
    const auto q = predict_in_children(catalog_, jobs);
    for (std::size_t k = 0; k < todo.size(); ++k) {
      std::vector<double>& p = seen_[own_][{todo[k].params, todo[k].u}];
      for (std::size_t i = 0; i < runs_.size(); ++i)
        p.push_back(q[k * runs_.size() + i].first * (own_ ? 1.0 : scale_[i]));
    }
    std::vector<std::vector<double>> out;
    for (const auto& pt : points) out.push_back(seen_[own_].at({pt.params, pt.u}));
    return out;
  }
  std::vector<double> predictions(const std::vector<const UncertainParameter*>& params, const std::vector<double>& u) {
    return predictions(std::vector<FigurePoint>{{params, u}}).front();
  }
  // The log errors of the runs' predictions at each point.
  std::vector<Eigen::VectorXd> residuals(const std::vector<const UncertainParameter*>& params,
                                         const std::vector<std::vector<double>>& us) {
    std::vector<FigurePoint> points;
    for (const auto& u : us) points.push_back({params, u});
    std::vector<Eigen::VectorXd> out;
    for (const auto& p : predictions(points)) {
      Eigen::VectorXd r(static_cast<Eigen::Index>(p.size()));
      for (std::size_t i = 0; i < p.size(); ++i) r[static_cast<Eigen::Index>(i)] = std::log(p[i] / measured_[i]);
      out.push_back(r);
    }
    return out;
  }
  Eigen::VectorXd residuals(const std::vector<const UncertainParameter*>& params, const std::vector<double>& u) {
    return residuals(params, std::vector<std::vector<double>>{u}).front();
  }
  CatalogOverlay figures(const std::vector<const UncertainParameter*>& params, const std::vector<double>& u) const {
    CatalogOverlay o;
    for (std::size_t i = 0; i < params.size(); ++i)
      o.merge(uncertain_overlay(catalog_, *params[i], value_at(*params[i], u[i])));
    for (auto it = o.skus.begin(); it != o.skus.end();)  // the runs' SKU only
      it = it->first == sku_ ? std::next(it) : o.skus.erase(it);
    return o;
  }
  static bool step(const Scenario& s) { return s.communication.concurrent_collectives == 1; }
  // Whether the figure takes part in any run's prediction at all (uncertain.h applies_to).
  bool any_run_uses(const UncertainParameter& p) const {
    return std::any_of(runs_.begin(), runs_.end(), [&](const Scenario& s) { return applies_to(p, s, catalog_); });
  }

 private:
  const Catalog& catalog_;
  std::vector<Scenario> runs_;
  std::vector<double> measured_;
  std::vector<double> scale_;  // each run's own fidelity over the step fidelity's, at the catalog's figures
  std::string sku_;
  bool own_ = false;
  // Predictions by point, scaled (0) and in the runs' own fidelity (1).
  std::map<std::pair<std::vector<const UncertainParameter*>, std::vector<double>>, std::vector<double>> seen_[2];
};

// The fit's cost at u: the runs' log errors against their noise, and the figures' distance from the prior.
double map_cost(const Eigen::VectorXd& r, const std::vector<double>& u, double noise) {
  double prior = 0;
  for (double x : u) prior += (x - kPriorMean) * (x - kPriorMean);
  return r.squaredNorm() / (noise * noise) + prior / (kPriorSd * kPriorSd);
}

// Golden-section search of one coordinate of u over [0, 1], the others fixed.
void search(RunsFitter& f, const std::vector<const UncertainParameter*>& params, std::vector<double>& u, std::size_t i,
            double noise) {
  const double g = (std::sqrt(5.0) - 1) / 2;
  auto with = [&](double x) {
    std::vector<double> v = u;
    v[i] = x;
    return v;
  };
  auto costs = [&](std::vector<double> xs) {  // side by side
    std::vector<std::vector<double>> vs;
    for (double x : xs) vs.push_back(with(x));
    std::vector<double> out;
    const auto rs = f.residuals(params, vs);
    for (std::size_t k = 0; k < rs.size(); ++k) out.push_back(map_cost(rs[k], vs[k], noise));
    return out;
  };
  double a = 0, b = 1, c = b - g * (b - a), d = a + g * (b - a);
  const std::vector<double> first = costs({c, d});
  double fc = first[0], fd = first[1];
  for (int k = 0; k < 10; ++k) {
    if (fc < fd) {
      b = d, d = c, fd = fc, c = b - g * (b - a), fc = costs({c})[0];
    } else {
      a = c, c = d, fc = fd, d = a + g * (b - a), fd = costs({d})[0];
    }
  }
  // The optimum may sit at an end of the range.
  const double best = (a + b) / 2;
  const std::vector<double> last = costs({best, 0.0, 1.0});
  u[i] = last[1] < last[0] ? 0.0 : last[2] < last[0] ? 1.0 : best;
}

// The runs' log errors against each coordinate of u, by forward differences (r: the errors at u).
Eigen::MatrixXd jacobian(RunsFitter& f, const std::vector<const UncertainParameter*>& params,
                         const std::vector<double>& u, const Eigen::VectorXd& r) {
  Eigen::MatrixXd jac(r.size(), static_cast<Eigen::Index>(params.size()));
  std::vector<std::vector<double>> xs(params.size(), u);
  for (std::size_t j = 0; j < xs.size(); ++j) xs[j][j] += u[j] < 0.9 ? 0.1 : -0.1;
  const std::vector<Eigen::VectorXd> rs = f.residuals(params, xs);  // the columns side by side
  for (std::size_t j = 0; j < xs.size(); ++j) jac.col(static_cast<Eigen::Index>(j)) = (rs[j] - r) / (xs[j][j] - u[j]);
  return jac;
}

// Levenberg-Marquardt from u, each coordinate kept in [0, 1], on the fit's cost (map_cost: the runs' log
// errors, Jacobian by forward differences, and the prior): it follows the valleys that run across figures
// which trade against each other (the compute's variation and the collectives' hold on it, the network's
// figures), where searches along one figure stall.
void follow_valleys(RunsFitter& f, const std::vector<const UncertainParameter*>& params, std::vector<double>& u,
                    double noise) {
  const auto n = static_cast<Eigen::Index>(params.size());
  Eigen::VectorXd r = f.residuals(params, u);
  double lambda = 1e-3;
  // A few iterations, while each still lowers the cost by a thousandth.
  for (int it = 0; it < 6; ++it) {
    const double before = map_cost(r, u, noise);
    const Eigen::MatrixXd jac = jacobian(f, params, u, r) / noise;
    Eigen::MatrixXd a = jac.transpose() * jac;
    a.diagonal().array() += 1 / (kPriorSd * kPriorSd);
    Eigen::VectorXd g = jac.transpose() * (r / noise);
    for (Eigen::Index j = 0; j < n; ++j) g[j] += (u[j] - kPriorMean) / (kPriorSd * kPriorSd);
    bool better = false;
    while (!better && lambda < 1e4) {
      Eigen::MatrixXd damped = a;
      damped.diagonal() += lambda * a.diagonal();
      const Eigen::VectorXd step = damped.ldlt().solve(-g);
      std::vector<double> x = u;
      for (Eigen::Index j = 0; j < n; ++j) x[j] = std::clamp(u[j] + step[j], 0.0, 1.0);
      const Eigen::VectorXd rx = f.residuals(params, x);
      better = map_cost(rx, x, noise) < before;
      if (better) {
        u = x, r = rx;
        lambda = std::max(lambda / 4, 1e-6);
      } else {
        lambda *= 4;
      }
    }
    if (!better || map_cost(r, u, noise) > 0.999 * before) return;
  }
}

// The noise of a run's log rate: the assumed (kRunNoise), or the spread of runs of one configuration measured
// more than once where it is larger; rows that differ by more than 10 % are named in a warning.
double repeat_noise(const std::vector<MeasuredRun>& runs, const std::string& file, std::vector<std::string>& warnings) {
  std::map<std::vector<std::string>, std::vector<const MeasuredRun*>> same;
  for (const auto& r : runs) {
    std::vector<std::string> key;
    for (const auto& o : r.sets) key.push_back(o.text);
    std::sort(key.begin(), key.end());
    same[key].push_back(&r);
  }
  double noise = kRunNoise;
  for (const auto& [key, group] : same) {
    if (group.size() < 2) continue;
    double mean = 0, sq = 0, lo = group.front()->images_per_sec, hi = lo;
    for (const auto* r : group) mean += std::log(r->images_per_sec) / static_cast<double>(group.size());
    for (const auto* r : group) {
      sq += std::pow(std::log(r->images_per_sec) - mean, 2);
      lo = std::min(lo, r->images_per_sec), hi = std::max(hi, r->images_per_sec);
    }
    noise = std::max(noise, std::sqrt(sq / static_cast<double>(group.size() - 1)));
    if (hi <= 1.1 * lo) continue;
    std::string lines;
    for (const auto* r : group) lines += (lines.empty() ? "" : ", ") + std::to_string(r->line);
    warnings.push_back(file + ": lines " + lines + " measure the same configuration " + format_number(hi / lo) +
                       "x apart; the fit takes a run's noise as " + format_number(noise * 100) +
                       " % (check those runs: warm-up, other jobs, a different build)");
  }
  return noise;
}

// "cluster.nodes=2 cluster.gpus_per_node=8": a configuration of the scenario's cluster.
std::string configuration(std::int64_t nodes, std::int64_t gpus) {
  return "cluster.nodes=" + std::to_string(nodes) + " cluster.gpus_per_node=" + std::to_string(gpus);
}

// The posterior of every figure that moves the scenario's own prediction: the fitted figures' (post), the
// others' their prior, independent of them (Laplace's covariance, extended).
Posterior with_prior_figures(const Posterior& post, std::size_t others) {
  Posterior p = post;
  const Eigen::Index n = post.cov.rows(), all = n + static_cast<Eigen::Index>(others);
  p.cov = Eigen::MatrixXd::Zero(all, all);
  p.cov.topLeftCorner(n, n) = post.cov;
  for (Eigen::Index j = n; j < all; ++j) p.cov(j, j) = kPriorSd * kPriorSd;
  return p;
}

// Of the configurations a planner measures first (one node of 1, 2, 4 ... GPUs, then 2 and 4 full nodes), the
// one run that would narrow the band of the scenario's own prediction most: its log rate's variance under the
// posterior of every figure it depends on (the fitted ones as the runs leave them, the rest at their priors),
// updated by that run alone. Gradients by forward differences about the fit, the others at mid-range.
NextRun next_run(const Catalog& catalog, const std::string& scenario_file, const std::vector<Override>& sets,
                 const std::vector<Scenario>& measured, const RunsFitter& f,
                 std::vector<const UncertainParameter*> params, std::vector<double> u, const Posterior& post,
                 const std::vector<const UncertainParameter*>& all) {
  const Scenario target = load_scenario(scenario_file, catalog, sets);
  const std::size_t fitted = params.size();
  for (const auto* p : all)
    if (std::find(params.begin(), params.end(), p) == params.end() && applies_to(*p, target, catalog))
      params.push_back(p), u.push_back(kPriorMean);
  const std::int64_t nodes = target.cluster.nodes, gpus = target.cluster.gpus_per_node;
  std::vector<std::pair<std::int64_t, std::int64_t>> sizes;
  for (std::int64_t g = 1; g < gpus; g *= 2) sizes.emplace_back(1, g);
  for (std::int64_t n = 1; n <= 4 && n < nodes; n *= 2) sizes.emplace_back(n, gpus);
  std::vector<Scenario> candidates{target};
  for (const auto& size : sizes) {
    const std::int64_t n = size.first, g = size.second;  // named, not bound: clang 14 captures no bindings
    const bool seen = std::any_of(measured.begin(), measured.end(), [&](const Scenario& m) {
      return m.cluster.nodes == n && m.cluster.gpus_per_node == g;
    });
    std::vector<Override> at = sets;
    for (const auto& o : {"cluster.nodes=" + std::to_string(n), "cluster.gpus_per_node=" + std::to_string(g)})
      at.push_back(parse_override(o));
    if (seen) continue;
    try {
      candidates.push_back(load_scenario(scenario_file, catalog, at));
    } catch (const InputError&) {  // a size the scenario cannot take (e.g. its servers need more nodes)
    }
  }
  std::vector<CatalogOverlay> points{f.figures(params, u)};
  std::vector<double> step;
  for (std::size_t j = 0; j < u.size(); ++j) {
    std::vector<double> x = u;
    step.push_back(u[j] < 0.9 ? 0.1 : -0.1);
    x[j] += step.back();
    points.push_back(f.figures(params, x));
  }
  std::vector<ChildPrediction> jobs;
  for (const auto& s : candidates)
    for (const auto& o : points) jobs.push_back({&s, o, true, std::nullopt});
  const auto q = predict_in_children(catalog, jobs);
  const auto gradient = [&](std::size_t k) {
    Eigen::VectorXd g(static_cast<Eigen::Index>(u.size()));
    const double base = q[k * points.size()].first;
    for (std::size_t j = 0; j < u.size(); ++j)
      g[static_cast<Eigen::Index>(j)] = std::log(q[k * points.size() + j + 1].first / base) / step[j];
    return g;
  };
  const Posterior extended = with_prior_figures(post, params.size() - fitted);
  NextRun next;
  const Eigen::VectorXd g = gradient(0);
  next.target = configuration(nodes, gpus);
  next.sd_now = next.sd_after = std::sqrt(std::max(0.0, prediction_variance(extended, g)));
  for (std::size_t k = 1; k < candidates.size(); ++k) {
    const double sd = std::sqrt(std::max(0.0, prediction_variance_after(extended, g, gradient(k))));
    if (sd >= next.sd_after - 1e-9) continue;
    next.sd_after = sd;
    next.run = configuration(candidates[k].cluster.nodes, candidates[k].cluster.gpus_per_node);
  }
  return next;
}

}  // namespace

RunsFit fit_runs(const Catalog& catalog, const std::string& scenario_file, const std::vector<Override>& sets,
                 const std::string& runs_file) {
  return fit_runs(catalog, scenario_file, sets, read_runs(runs_file), runs_file);
}

RunsFit fit_runs(const Catalog& catalog, const std::string& scenario_file, const std::vector<Override>& sets,
                 const std::vector<MeasuredRun>& runs, const std::string& runs_file, bool advise) {
  const std::vector<Scenario> scenarios = run_scenarios(catalog, scenario_file, sets, runs, runs_file);
  RunsFit fit;
  for (const auto& r : runs) fit.measured.push_back(r.images_per_sec);
  // The scenario's own calibration applies, and the figures it sets are measured already.
  Catalog calibrated = catalog;
  CatalogOverlay measured;
  if (!scenarios.front().calibration.empty()) {
    measured = catalog.read_overlay(scenarios.front().calibration);
    calibrated.apply(measured);
  }
  RunsFitter f(calibrated, scenarios, fit.measured, scenarios.front().cluster.sku);
  std::vector<const UncertainParameter*> all, params;
  for (const auto& p : catalog.uncertain())
    if (!overlay_sets(catalog, measured, p)) all.push_back(&p);
  // The figures these runs depend on: any run's prediction, in its own fidelity, moves by more than 0.5 %
  // across the range. Each figure that takes part in a run at both ends of its range, all side by side.
  fit.before = f.anchor();
  f.use_own_fidelity(true);
  std::vector<FigurePoint> ends;
  for (const auto* p : all)
    if (f.any_run_uses(*p)) ends.insert(ends.end(), {{{p}, {0.0}}, {{p}, {1.0}}});
  const std::vector<std::vector<double>> q = f.predictions(ends);
  for (const auto* p : all) {
    const auto at =
        std::find_if(ends.begin(), ends.end(), [&](const FigurePoint& e) { return e.params == std::vector{p}; });
    bool moves = false;
    if (at != ends.end()) {
      const std::vector<double>&lo = q[static_cast<std::size_t>(at - ends.begin())],
            &hi = q[static_cast<std::size_t>(at - ends.begin()) + 1];
      for (std::size_t i = 0; i < lo.size(); ++i) moves = moves || std::fabs(std::log(hi[i] / lo[i])) > 0.005;
    }
    if (moves)
      params.push_back(p);
    else
      fit.not_fitted.push_back(p->name + ": none of these runs depends on it (" + what_to_measure(*p) + ")");
  }
  // The posterior's mode: each figure's valley by a search along it, twice over (one collective at a time,
  // scaled), then along the valleys across figures in the runs' own fidelity.
  const double noise = repeat_noise(runs, runs_file, fit.warnings);
  std::vector<double> u(params.size(), kPriorMean);
  f.use_own_fidelity(false);
  for (int sweep = 0; sweep < 2; ++sweep)
    for (std::size_t i = 0; i < params.size(); ++i) search(f, params, u, i, noise);
  f.use_own_fidelity(true);
  if (!params.empty()) follow_valleys(f, params, u, noise);
  const Eigen::VectorXd r = params.empty() ? Eigen::VectorXd() : f.residuals(params, u);
  const Posterior post = laplace(params.empty() ? Eigen::MatrixXd() : jacobian(f, params, u, r), r, noise);
  fit.noise = post.noise;
  const auto range = intervals(post, u);
  // A figure the runs barely narrow keeps the catalog's value and its whole range.
  std::vector<const UncertainParameter*> kept;
  std::vector<double> at;
  for (std::size_t i = 0; i < params.size(); ++i) {
    const UncertainParameter& p = *params[i];
    if (range[i] == std::pair{0.0, 1.0}) {
      fit.not_fitted.push_back(p.name + ": these runs barely move it; the catalog's value and its whole range (" +
                               what_to_measure(p) + ")");
      continue;
    }
    kept.push_back(&p);
    at.push_back(u[i]);
    const double value = value_at(p, u[i]), lo = value_at(p, range[i].first), hi = value_at(p, range[i].second);
    fit.fitted.push_back(
        {p.name, p.low, p.high, value, p.scale, lo, hi, prior_share(post, static_cast<Eigen::Index>(i))});
    // A factor's range is read against the figure the overlay sets, the catalog's times `value`.
    fit.overlay.fitted_ranges[p.name] = p.scale ? std::pair{lo / value, hi / value} : std::pair{lo, hi};
  }
  fit.after = kept.empty() ? fit.before : f.predictions(kept, at);
  const CatalogOverlay figures = f.figures(kept, at);
  fit.overlay.merge(figures);
  fit.overlay.measured_on = scenarios.front().cluster.sku;
  if (advise) fit.next = next_run(calibrated, scenario_file, sets, scenarios, f, params, u, post, all);
  fit.overlay.header = {"ringsim calibration overlay, fitted by `ringsim calibrate --runs " + runs_file + "` to " +
                        std::to_string(runs.size()) + " measured runs of " + scenario_file};
  for (const auto& x : fit.fitted)
    fit.overlay.header.push_back("  " + x.name + (x.scale ? " (factor)" : "") + " = " + format_number(x.value) + " (" +
                                 format_number(x.fit_low) + " to " + format_number(x.fit_high) +
                                 " 9 times in 10), range " + format_number(x.low) + " to " + format_number(x.high));
  return fit;
}

}  // namespace ringsim
