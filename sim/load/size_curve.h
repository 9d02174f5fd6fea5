// A figure that depends on a message's or buffer's size: calibrated copy rates, protocol overheads, size
// regimes of a path, host reduction rates. Every size-keyed figure of the catalog is one of these.
#pragma once

#include <cmath>
#include <utility>
#include <vector>

namespace ringsim {

// Between two points in log(size): y interpolated in log(y) (rates, scales: a cache's effect fades
// gradually); y0 where the points do not allow it.
inline double log_interpolated(double x, double x0, double y0, double x1, double y1) {
  if (!(x > x0) || !(x1 > x0) || !(y0 > 0) || !(y1 > 0)) return y0;
  if (x >= x1) return y1;
  const double t = std::log(x / x0) / std::log(x1 / x0);
  return std::exp(std::log(y0) + t * (std::log(y1) - std::log(y0)));
}

struct SizeCurve {
  // Steps: a size takes the value of the last point it reaches (protocol switches: eager, rendezvous).
  // Geometric: between points, interpolated in log(size) and log(value) (measured curves of rates).
  // Linear: between points, interpolated in log(size), the value itself (overheads, which may be 0).
  enum class Shape { Steps, Geometric, Linear };

  std::vector<std::pair<double, double>> points;  // (from bytes, value), ascending
  Shape shape = Shape::Steps;

  bool empty() const { return points.empty(); }
  std::size_t size() const { return points.size(); }
  const std::pair<double, double>& front() const { return points.front(); }
  const std::pair<double, double>& back() const { return points.back(); }
  bool operator==(const SizeCurve&) const = default;

  // The value at size x; `below` where x is below the first point.
  double at(double x, double below) const {
    std::size_t i = 0;
    while (i < points.size() && x >= points[i].first) ++i;
    if (i == 0) return below;
    const auto& [x0, y0] = points[i - 1];
    if (shape == Shape::Steps || i == points.size()) return y0;
    const auto& [x1, y1] = points[i];
    if (shape == Shape::Geometric) return log_interpolated(x, x0, y0, x1, y1);
    if (!(x > x0) || !(x1 > x0)) return y0;
    const double t = std::log(x / x0) / std::log(x1 / x0);
    return y0 + t * (y1 - y0);
  }
};

}  // namespace ringsim
