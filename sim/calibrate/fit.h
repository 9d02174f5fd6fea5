// The fits calibration is made of: a message of S bytes takes alpha + beta * S, fitted by least squares on
// relative error (Eigen), in one line or in size regimes (segmented least squares).
#pragma once

#include <string>
#include <vector>

namespace ringsim {

struct FitPoint {
  double x_alpha = 1;  // multiplier of alpha
  double x_beta = 0;   // multiplier of beta (bytes, scaled by the collective's factor)
  double seconds = 0;
};

struct LinearFit {
  std::string path_class;  // same_socket | cross_socket | network | reduction | copy | ...
  std::string source;      // file(s)
  double alpha = 0, beta = 0;
  double r2 = 0;
  double worst_residual_pct = 0;  // largest |fit - measured| / measured
  std::size_t points = 0;
  std::vector<FitPoint> data;  // the points fitted
  double from_bytes = 0;       // a size regime's first message size (0: the first regime)
};

// Weighted least squares t ~ alpha * x_alpha + beta * x_beta, minimising relative residuals; alpha is
// clamped at zero (refit with beta alone) when the unconstrained fit makes it negative.
LinearFit fit_linear(const std::vector<FitPoint>& points);

// Point-to-point and reduction data (x_alpha 1, x_beta the message size): up to `max_regimes` fits over
// consecutive size ranges of at least `min_points` points each (segmented least squares), the count
// chosen by Akaike's criterion on the relative residuals, so a regime is added only where it explains
// the data (caches, protocol switches) beyond its extra parameters. Sorted by from_bytes.
std::vector<LinearFit> fit_regimes(std::vector<FitPoint> points, int max_regimes = 4, std::size_t min_points = 3);

// One line for people: "same_socket from 8 MiB: alpha 3.4 us, 1/beta 11.1 GB/s, R^2 0.98, worst residual
// 11 % (4 points)".
std::string fit_summary(const LinearFit& f);

// Several runs of one measurement (launches): per size the median, so that one launch's state does not
// carry into every prediction.
std::vector<FitPoint> median_per_size(std::vector<FitPoint> points);

}  // namespace ringsim
