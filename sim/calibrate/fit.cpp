#include "calibrate/fit.h"

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <limits>
#include <tuple>

#include "load/units.h"
#include "report/stats.h"

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

}  // namespace ringsim
