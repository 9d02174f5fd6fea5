#include "report/svg_chart.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <sstream>

namespace ringsim {

namespace {

const char* kPalette[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf"};

std::string num(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.1f", v);
  return b;
}

std::string label(double v) {
  char b[32];
  const double a = std::fabs(v);
  if (a >= 1e9)
    std::snprintf(b, sizeof b, "%gG", v / 1e9);
  else if (a >= 1e6)
    std::snprintf(b, sizeof b, "%gM", v / 1e6);
  else if (a >= 1e4)
    std::snprintf(b, sizeof b, "%gk", v / 1e3);
  else
    std::snprintf(b, sizeof b, "%g", v);
  return b;
}

std::string escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '<')
      o += "&lt;";
    else if (c == '>')
      o += "&gt;";
    else if (c == '&')
      o += "&amp;";
    else
      o += c;
  }
  return o;
}

}  // namespace

std::string render_svg(const Chart& c) {
  const double W = 880, H = 520, left = 80, right = 250, top = 50, bottom = 60;
  const double pw = W - left - right, ph = H - top - bottom;
  double xmin = std::numeric_limits<double>::infinity(), xmax = -xmin, ymax = 0;
  for (const auto& s : c.series)
    for (const auto& [x, y] : s.points) {
      if (c.log_x && x <= 0) continue;
      xmin = std::min(xmin, x);
      xmax = std::max(xmax, x);
      ymax = std::max(ymax, y);
    }
  if (!(xmin < xmax)) {
    xmin = (xmin == std::numeric_limits<double>::infinity()) ? 0 : xmin - 1;
    xmax = xmin + 2;
  }
  if (ymax <= 0) ymax = 1;
  // Round the y axis up to five "nice" steps (1, 2 or 5 times a power of ten).
  const double raw = ymax * 1.05 / 5, mag = std::pow(10.0, std::floor(std::log10(raw)));
  const double step = mag * (raw <= mag ? 1 : raw <= 2 * mag ? 2 : raw <= 5 * mag ? 5 : 10);
  ymax = 5 * step;
  auto fx = [&](double x) {
    const double t =
        c.log_x ? (std::log(x) - std::log(xmin)) / (std::log(xmax) - std::log(xmin)) : (x - xmin) / (xmax - xmin);
    return left + t * pw;
  };
  auto fy = [&](double y) { return top + ph - y / ymax * ph; };

  std::ostringstream o;
  o << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << W << "\" height=\"" << H << "\" viewBox=\"0 0 " << W
    << ' ' << H << "\" font-family=\"sans-serif\" font-size=\"12\">\n";
  o << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  o << "<text x=\"" << num(left) << "\" y=\"28\" font-size=\"16\">" << escape(c.title) << "</text>\n";
  // Axes and grid.
  o << "<g stroke=\"#999\" stroke-width=\"1\">\n";
  o << "<line x1=\"" << num(left) << "\" y1=\"" << num(top + ph) << "\" x2=\"" << num(left + pw) << "\" y2=\""
    << num(top + ph) << "\"/>\n";
  o << "<line x1=\"" << num(left) << "\" y1=\"" << num(top) << "\" x2=\"" << num(left) << "\" y2=\"" << num(top + ph)
    << "\"/>\n</g>\n";
  std::vector<double> xt;
  if (c.log_x) {
    const double step = std::max(1.0, std::ceil((std::log2(xmax) - std::log2(xmin)) / 10));
    for (double e = std::ceil(std::log2(xmin)); e <= std::log2(xmax) + 1e-9; e += step) xt.push_back(std::pow(2.0, e));
  } else {
    for (int i = 0; i <= 8; ++i) xt.push_back(xmin + (xmax - xmin) * i / 8);
  }
  for (double x : xt)
    o << "<text x=\"" << num(fx(x)) << "\" y=\"" << num(top + ph + 18) << "\" text-anchor=\"middle\">" << label(x)
      << "</text>\n";
  for (int i = 0; i <= 5; ++i) {
    const double y = ymax * i / 5;
    o << "<line x1=\"" << num(left) << "\" y1=\"" << num(fy(y)) << "\" x2=\"" << num(left + pw) << "\" y2=\""
      << num(fy(y)) << "\" stroke=\"#eee\"/>\n";
    o << "<text x=\"" << num(left - 6) << "\" y=\"" << num(fy(y) + 4) << "\" text-anchor=\"end\">" << label(y)
      << "</text>\n";
  }
  o << "<text x=\"" << num(left + pw / 2) << "\" y=\"" << num(H - 15) << "\" text-anchor=\"middle\">"
    << escape(c.x_label) << "</text>\n";
  o << "<text transform=\"translate(18," << num(top + ph / 2) << ") rotate(-90)\" text-anchor=\"middle\">"
    << escape(c.y_label) << "</text>\n";
  // Series and legend.
  int row = 0;
  for (const auto& s : c.series) {
    const char* col = kPalette[static_cast<std::size_t>(s.color) % (sizeof kPalette / sizeof *kPalette)];
    if (s.markers) {
      for (const auto& [x, y] : s.points)
        if (!c.log_x || x > 0)
          o << "<circle cx=\"" << num(fx(x)) << "\" cy=\"" << num(fy(y)) << "\" r=\"4\" fill=\"none\" stroke=\"" << col
            << "\" stroke-width=\"1.5\"/>\n";
    } else if (!s.points.empty()) {
      o << "<polyline fill=\"none\" stroke=\"" << col << "\" stroke-width=\"1.8\" points=\"";
      for (const auto& [x, y] : s.points)
        if (!c.log_x || x > 0) o << num(fx(x)) << ',' << num(fy(y)) << ' ';
      o << "\"/>\n";
    }
    const double ly = top + 10 + 18 * row++;
    const double lx = left + pw + 20;
    if (s.markers)
      o << "<circle cx=\"" << num(lx + 10) << "\" cy=\"" << num(ly - 4) << "\" r=\"4\" fill=\"none\" stroke=\"" << col
        << "\" stroke-width=\"1.5\"/>\n";
    else
      o << "<line x1=\"" << num(lx) << "\" y1=\"" << num(ly - 4) << "\" x2=\"" << num(lx + 20) << "\" y2=\""
        << num(ly - 4) << "\" stroke=\"" << col << "\" stroke-width=\"1.8\"/>\n";
    o << "<text x=\"" << num(lx + 28) << "\" y=\"" << num(ly) << "\">" << escape(s.name) << "</text>\n";
  }
  o << "</svg>\n";
  return o.str();
}

}  // namespace ringsim
