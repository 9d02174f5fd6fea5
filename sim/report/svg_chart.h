// A small, dependency-free SVG line/marker chart for the reports' --plot options: series of (x, y)
// points drawn as lines (predicted, fitted) or markers (measured, published), optional log-scale x.
// Output is deterministic text.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace ringsim {

struct ChartSeries {
  std::string name;
  std::vector<std::pair<double, double>> points;  // drawn in the given order
  bool markers = false;                           // markers only (measured); otherwise a line
  int color = 0;                                  // palette index; series of one color belong together
};

struct Chart {
  std::string title, x_label, y_label;
  bool log_x = false;
  std::vector<ChartSeries> series;
};

std::string render_svg(const Chart& c);

}  // namespace ringsim
