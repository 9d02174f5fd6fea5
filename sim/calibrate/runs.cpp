#include "calibrate/runs.h"

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

#include "execute/prediction_band.h"
#include "load/input_error.h"
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
                       "expected images_per_sec, samples_per_sec or a scenario key such as cluster.nodes, got '" + h +
                           "'" + suggestion_suffix(h, {"images_per_sec", "samples_per_sec"}));
    }
  }
  if (rate < 0) throw InputError({file, 1, 1, ""}, "expected a column images_per_sec (or samples_per_sec)");
  return rate;
}

}  // namespace

std::vector<MeasuredRun> read_runs(const std::string& file) {
  std::ifstream in(file);
  if (!in) throw InputError({file, 0, 0, ""}, "cannot open file");
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
        throw InputError(at, "expected a measured rate above 0, got '" + row[i].first + "'");
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

class RunsFitter {
 public:
  RunsFitter(const Catalog& c, std::vector<Scenario> runs, std::vector<double> measured, std::string sku)
      : catalog_(c), runs_(std::move(runs)), measured_(std::move(measured)), sku_(std::move(sku)) {}

  // The predicted images/s of every run with the figures at `u` (0..1 along each parameter's range).
  std::vector<double> predictions(const std::vector<const UncertainParameter*>& params, const std::vector<double>& u) {
    const CatalogOverlay o = figures(params, u);
    std::vector<double> out;
    for (const auto& s : runs_) out.push_back(predict_in_child(catalog_, s, o, step(s)).first);
    return out;
  }
  // The log errors of the runs' predictions, and the sum of their squares.
  Eigen::VectorXd residuals(const std::vector<const UncertainParameter*>& params, const std::vector<double>& u) {
    const std::vector<double> p = predictions(params, u);
    Eigen::VectorXd r(static_cast<Eigen::Index>(p.size()));
    for (std::size_t i = 0; i < p.size(); ++i) r[static_cast<Eigen::Index>(i)] = std::log(p[i] / measured_[i]);
    return r;
  }
  double cost(const std::vector<const UncertainParameter*>& params, const std::vector<double>& u) {
    return residuals(params, u).squaredNorm();
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

 private:
  const Catalog& catalog_;
  std::vector<Scenario> runs_;
  std::vector<double> measured_;
  std::string sku_;
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
  double a = 0, b = 1;
  auto at = [&](double x) {
    std::vector<double> v = u;
    v[i] = x;
    return f.cost(params, v);
  };
  double c = b - g * (b - a), d = a + g * (b - a), fc = at(c), fd = at(d);
  for (int k = 0; k < 10; ++k) {
    if (fc < fd) {
      b = d, d = c, fd = fc, c = b - g * (b - a), fc = at(c);
    } else {
      a = c, c = d, fc = fd, d = a + g * (b - a), fd = at(d);
    }
  }
  const double best = (a + b) / 2;
  for (double end : {0.0, 1.0})  // the optimum may sit at an end of the range
    if (at(end) < at(best)) {
      u[i] = end;
      return;
    }
  u[i] = best;
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
    Eigen::MatrixXd jac(r.size(), n);
    for (Eigen::Index j = 0; j < n; ++j) {
      std::vector<double> x = u;
      const double h = u[j] < 0.9 ? 0.1 : -0.1;
      x[j] += h;
      jac.col(j) = (f.residuals(params, x) - r) / h;
    }
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

RunsFit fit_runs(const Catalog& catalog, const std::string& scenario_file, const std::vector<Override>& sets,
                 const std::string& runs_file) {
  const std::vector<MeasuredRun> runs = read_runs(runs_file);
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
  // The figures these runs depend on: any run's prediction moves by more than 0.5 % across the range.
  std::vector<const UncertainParameter*> all, params;
  for (const auto& p : catalog.uncertain())
    if (!overlay_sets(catalog, measured, p)) all.push_back(&p);
  fit.before = f.predictions({}, {});
  for (const auto* p : all) {
    const std::vector<double> lo = f.predictions({p}, {0.0}), hi = f.predictions({p}, {1.0});
    bool moves = false;
    for (std::size_t i = 0; i < lo.size(); ++i) moves = moves || std::fabs(std::log(hi[i] / lo[i])) > 0.005;
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
  // Each figure's valley by a search along it, twice over, then along the valleys across figures.
  std::vector<double> u(params.size(), 0.5);
  for (int sweep = 0; sweep < 2; ++sweep)
    for (std::size_t i = 0; i < params.size(); ++i) search(f, params, u, i);
  follow_valleys(f, params, u);
  fit.after = f.predictions(params, u);
  for (std::size_t i = 0; i < params.size(); ++i)
    fit.fitted.push_back(
        {params[i]->name, params[i]->low, params[i]->high, value_at(*params[i], u[i]), params[i]->scale});
  fit.overlay = f.figures(params, u);
  fit.overlay.header = {"ringsim calibration overlay, fitted by `ringsim calibrate --runs " + runs_file + "` to " +
                        std::to_string(runs.size()) + " measured runs of " + scenario_file};
  for (const auto& x : fit.fitted)
    fit.overlay.header.push_back("  " + x.name + (x.scale ? " (factor)" : "") + " = " + format_number(x.value) +
                                 ", range " + format_number(x.low) + " to " + format_number(x.high));
  return fit;
}

}  // namespace ringsim
