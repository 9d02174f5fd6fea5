#include "calibrate/runs.h"

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>

#include "execute/prediction_band.h"
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

// How many independent directions the figures give a prediction: the step's and the GPUs' variations enter it
// only through their root sum of squares (ComputeSpec::straggler_cv), so the two count once.
std::size_t degrees_of_freedom(const std::vector<const UncertainParameter*>& params) {
  const auto has = [&](const char* figure) {
    return std::any_of(params.begin(), params.end(), [&](auto* p) { return p->figure == figure; });
  };
  return params.size() - (has("compute.step_time_cv") && has("compute.gpu_to_gpu_cv") ? 1 : 0);
}

// Golden-section search of one coordinate of u over [0, 1], the others fixed.
void search(RunsFitter& f, const std::vector<const UncertainParameter*>& params, std::vector<double>& u,
            std::size_t i) {
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
    for (const auto& r : f.residuals(params, vs)) out.push_back(r.squaredNorm());
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

// Student's t at 95 % (one-sided) for `dof` degrees of freedom: a table to 10, then its expansion in 1 / dof.
double t95(std::size_t dof) {
  static const double kTable[] = {6.314, 2.920, 2.353, 2.132, 2.015, 1.943, 1.895, 1.860, 1.833, 1.812};
  if (dof >= 1 && dof <= 10) return kTable[dof - 1];
  const double z = 1.6449, v = static_cast<double>(dof);
  return z + (z * z * z + z) / (4 * v) + (5 * std::pow(z, 5) + 16 * z * z * z + 3 * z) / (96 * v * v);
}

// Levenberg-Marquardt from u, each coordinate kept in [0, 1], on the runs' log errors (Jacobian by forward
// differences): it follows the valleys that run across figures which trade against each other (the compute's
// variation and the collectives' hold on it, the network's figures), where searches along one figure stall.
void follow_valleys(RunsFitter& f, const std::vector<const UncertainParameter*>& params, std::vector<double>& u) {
  const auto n = static_cast<Eigen::Index>(params.size());
  Eigen::VectorXd r = f.residuals(params, u);
  double lambda = 1e-3;
  // A few iterations, while each still lowers the cost by a hundredth: a fit stays well under a minute.
  for (int it = 0; it < 4 && r.squaredNorm() > 1e-12; ++it) {
    const double before = r.squaredNorm();
    const Eigen::MatrixXd jac = jacobian(f, params, u, r);
    const Eigen::MatrixXd a = jac.transpose() * jac;
    const Eigen::VectorXd g = jac.transpose() * r;
    bool better = false;
    while (!better && lambda < 1e4) {
      Eigen::MatrixXd damped = a;
      damped.diagonal() += lambda * (a.diagonal().array() + 1e-9).matrix();
      const Eigen::VectorXd step = damped.ldlt().solve(-g);
      std::vector<double> x = u;
      for (Eigen::Index j = 0; j < n; ++j) x[j] = std::clamp(u[j] + step[j], 0.0, 1.0);
      const Eigen::VectorXd rx = f.residuals(params, x);
      better = rx.squaredNorm() < r.squaredNorm();
      if (better) {
        u = x, r = rx;
        lambda = std::max(lambda / 4, 1e-6);
      } else {
        lambda *= 4;
      }
    }
    if (!better || r.squaredNorm() > 0.99 * before) return;
  }
}

}  // namespace

std::vector<std::pair<double, double>> fitted_intervals(const Eigen::MatrixXd& jac, const Eigen::VectorXd& r,
                                                        const std::vector<double>& u) {
  const Eigen::JacobiSVD<Eigen::MatrixXd> svd(jac, Eigen::ComputeFullV);
  const Eigen::VectorXd sv = svd.singularValues();
  const Eigen::MatrixXd v = svd.matrixV();
  Eigen::Index kept = 0;
  while (kept < sv.size() && sv[kept] > 0.005) ++kept;
  std::vector<std::pair<double, double>> out(u.size(), {0.0, 1.0});
  const auto runs = static_cast<std::size_t>(r.size());
  if (kept == 0 || runs <= static_cast<std::size_t>(kept)) return out;
  const std::size_t dof = runs - static_cast<std::size_t>(kept);
  const double s2 = r.squaredNorm() / static_cast<double>(dof), t = t95(dof);
  for (std::size_t j = 0; j < u.size(); ++j) {
    const auto row = static_cast<Eigen::Index>(j);
    bool pinned = true;  // no direction the runs do not see moves it by a tenth of what it moves
    for (Eigen::Index i = kept; i < v.cols(); ++i) pinned = pinned && std::fabs(v(row, i)) < 0.1;
    if (!pinned) continue;
    double var = 0;
    for (Eigen::Index i = 0; i < kept; ++i) var += v(row, i) * v(row, i) / (sv[i] * sv[i]);
    const double half = t * std::sqrt(s2 * var);
    out[j] = {std::clamp(u[j] - half, 0.0, 1.0), std::clamp(u[j] + half, 0.0, 1.0)};
  }
  return out;
}

RunsFit fit_runs(const Catalog& catalog, const std::string& scenario_file, const std::vector<Override>& sets,
                 const std::string& runs_file) {
  return fit_runs(catalog, scenario_file, sets, read_runs(runs_file), runs_file);
}

RunsFit fit_runs(const Catalog& catalog, const std::string& scenario_file, const std::vector<Override>& sets,
                 const std::vector<MeasuredRun>& runs, const std::string& runs_file) {
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
  if (params.empty())
    throw InputError({runs_file, 0, 0, ""},
                     "no uncertain figure of the catalog changes the prediction of these runs: "
                     "nothing to fit. Measure runs whose communication matters (several GPUs, "
                     "several nodes)");
  if (const std::size_t dof = degrees_of_freedom(params); dof > runs.size()) {
    std::string names;
    for (const auto* p : params) names += (names.empty() ? "" : ", ") + p->name;
    throw InputError({runs_file, 0, 0, ""}, std::to_string(params.size()) + " uncertain figures (" + names +
                                                ") change these runs' predictions in " + std::to_string(dof) +
                                                " independent ways but there are only " + std::to_string(runs.size()) +
                                                " runs: the fit is not determined. Measure more runs: other node and "
                                                "GPU counts");
  }
  // Each figure's valley by a search along it, twice over (one collective at a time, scaled), then along the
  // valleys across figures in the runs' own fidelity.
  std::vector<double> u(params.size(), 0.5);
  f.use_own_fidelity(false);
  for (int sweep = 0; sweep < 2; ++sweep)
    for (std::size_t i = 0; i < params.size(); ++i) search(f, params, u, i);
  f.use_own_fidelity(true);
  follow_valleys(f, params, u);
  fit.after = f.predictions(params, u);
  Eigen::VectorXd r(static_cast<Eigen::Index>(runs.size()));
  for (std::size_t i = 0; i < runs.size(); ++i)
    r[static_cast<Eigen::Index>(i)] = std::log(fit.after[i] / fit.measured[i]);
  const auto intervals = fitted_intervals(jacobian(f, params, u, r), r, u);
  fit.overlay = f.figures(params, u);
  for (std::size_t i = 0; i < params.size(); ++i) {
    const UncertainParameter& p = *params[i];
    const double value = value_at(p, u[i]), lo = value_at(p, intervals[i].first), hi = value_at(p, intervals[i].second);
    fit.fitted.push_back({p.name, p.low, p.high, value, p.scale, lo, hi});
    // A factor's range is read against the figure the overlay sets, the catalog's times `value`.
    fit.overlay.fitted_ranges[p.name] = p.scale ? std::pair{lo / value, hi / value} : std::pair{lo, hi};
  }
  fit.overlay.header = {"ringsim calibration overlay, fitted by `ringsim calibrate --runs " + runs_file + "` to " +
                        std::to_string(runs.size()) + " measured runs of " + scenario_file};
  for (const auto& x : fit.fitted)
    fit.overlay.header.push_back("  " + x.name + (x.scale ? " (factor)" : "") + " = " + format_number(x.value) + " (" +
                                 format_number(x.fit_low) + " to " + format_number(x.fit_high) +
                                 " 9 times in 10), range " + format_number(x.low) + " to " + format_number(x.high));
  return fit;
}

}  // namespace ringsim
