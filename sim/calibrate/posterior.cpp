#include "calibrate/posterior.h"

#include <algorithm>
#include <cmath>

namespace ringsim {

namespace {

Eigen::MatrixXd covariance(const Eigen::MatrixXd& jac, double noise) {
  Eigen::MatrixXd h = jac.transpose() * jac / (noise * noise);
  h.diagonal().array() += 1 / (kPriorSd * kPriorSd);
  return h.ldlt().solve(Eigen::MatrixXd::Identity(h.rows(), h.cols()));
}

}  // namespace

Posterior laplace(const Eigen::MatrixXd& jac, const Eigen::VectorXd& r, double noise) {
  Posterior p;
  const Eigen::MatrixXd first = covariance(jac, noise);
  p.effective = (jac * first * jac.transpose()).trace() / (noise * noise);
  // The residuals' spread per degree of freedom left (at least one: a run or two that the fit meets
  // exactly still say nothing of the noise), where it is larger than the assumed.
  const double left = std::max(1.0, static_cast<double>(r.size()) - p.effective);
  p.noise = std::max(noise, std::sqrt(r.squaredNorm() / left));
  p.cov = p.noise == noise ? first : covariance(jac, p.noise);
  return p;
}

double prior_share(const Posterior& p, Eigen::Index j) { return std::sqrt(std::max(0.0, p.cov(j, j))) / kPriorSd; }

std::vector<std::pair<double, double>> intervals(const Posterior& p, const std::vector<double>& u) {
  std::vector<std::pair<double, double>> out(u.size(), {0.0, 1.0});
  for (std::size_t j = 0; j < u.size(); ++j) {
    const auto k = static_cast<Eigen::Index>(j);
    if (prior_share(p, k) > 0.9) continue;
    const double half = 1.6449 * std::sqrt(p.cov(k, k));
    out[j] = {std::clamp(u[j] - half, 0.0, 1.0), std::clamp(u[j] + half, 0.0, 1.0)};
  }
  return out;
}

double prediction_variance(const Posterior& p, const Eigen::VectorXd& g) { return g.dot(p.cov * g); }

double prediction_variance_after(const Posterior& p, const Eigen::VectorXd& g, const Eigen::VectorXd& candidate) {
  const Eigen::VectorXd sc = p.cov * candidate;
  const double cross = g.dot(sc);
  return prediction_variance(p, g) - cross * cross / (p.noise * p.noise + candidate.dot(sc));
}

std::vector<std::pair<double, double>> fitted_intervals(const Eigen::MatrixXd& jac, const Eigen::VectorXd& r,
                                                        const std::vector<double>& u, double noise) {
  return intervals(laplace(jac, r, noise), u);
}

}  // namespace ringsim
