// The statistics results are summarised with, written once: medians of repeated measurements.
#pragma once

#include <algorithm>
#include <vector>

namespace ringsim {

// The middle value; for an even count the upper of the two middle ones (a value that was measured); 0 for
// none. Repeated iterations and bench samples are summarised by it.
inline double upper_median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
  return v[v.size() / 2];
}

// The median: for an even count the mean of the two middle values; 0 for none.
inline double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
}

}  // namespace ringsim
