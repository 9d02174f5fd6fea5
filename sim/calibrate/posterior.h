// Calibration from runs as inference: where the runs leave the catalog's uncertain figures. Each figure is a
// coordinate u, 0..1 along its range (topologies/uncertain.yaml); its prior is the band's own, uniform over
// the range, taken as the normal of the same mean and spread (0.5, 1/sqrt(12)). Each run's log rate is a
// measurement with noise. The posterior about the fit (Laplace: the log errors linear in u near the fit) has
// covariance (J^T J / noise^2 + I / prior_sd^2)^-1, J the runs' log errors against u.
#pragma once

#include <Eigen/Dense>
#include <utility>
#include <vector>

namespace ringsim {

inline constexpr double kPriorMean = 0.5;
inline constexpr double kPriorSd = 0.28867513459481287;  // 1 / sqrt(12): a uniform's spread over [0, 1]
// How closely a measured rate repeats: a step varies by 1-3 % ([tacc] in uncertain.yaml) and a measured
// rate averages about a hundred of them, so the noise assumed of one run is 1 %. Where the runs leave degrees
// of freedom, what their residuals show takes its place when it is larger (the model's own error).
inline constexpr double kRunNoise = 0.01;

struct Posterior {
  Eigen::MatrixXd cov;   // of u about the fit
  double noise = 0;      // of a run's log rate, as used: the assumed noise or the residuals' spread
  double effective = 0;  // how many figures' worth the runs determined (the trace of the fit's hat matrix)
};

// The posterior about the fit u, from the runs' log errors there (r) and their Jacobian against u;
// `noise`: what a run's log rate is assumed to vary by (widened where the residuals show more).
Posterior laplace(const Eigen::MatrixXd& jac, const Eigen::VectorXd& r, double noise);

// Where each coordinate lies 9 times in 10 (u +/- 1.645 sd, inside [0, 1]); a coordinate the runs barely
// narrow (sd over 0.9 of the prior's) keeps all of [0, 1], as the band samples it uncalibrated.
std::vector<std::pair<double, double>> intervals(const Posterior& p, const std::vector<double>& u);

// How much of its prior spread a coordinate keeps (1: the runs say nothing of it).
double prior_share(const Posterior& p, Eigen::Index j);

// The variance of a prediction whose log moves by `g` against u, now and were one more run measured whose
// log rate moves by `candidate` (the posterior updated by that run alone, its noise p.noise).
double prediction_variance(const Posterior& p, const Eigen::VectorXd& g);
double prediction_variance_after(const Posterior& p, const Eigen::VectorXd& g, const Eigen::VectorXd& candidate);

// The old entry point, for tests and callers that only want the intervals.
std::vector<std::pair<double, double>> fitted_intervals(const Eigen::MatrixXd& jac, const Eigen::VectorXd& r,
                                                        const std::vector<double>& u, double noise = kRunNoise);

}  // namespace ringsim
