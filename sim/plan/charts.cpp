#include "plan/charts.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>

namespace ringsim {

namespace {

std::string fixed(double v, int digits) {
  char b[64];
  std::snprintf(b, sizeof b, "%.*g", digits, v);
  return b;
}

bool is_number(const std::string& s) {
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  return !s.empty() && end == s.c_str() + s.size() && std::isfinite(v);
}

// Series in the order their first point comes.
template <class T, class Key>
std::vector<std::pair<std::string, std::vector<const T*>>> group(const std::vector<T>& items, Key key) {
  std::vector<std::pair<std::string, std::vector<const T*>>> out;
  std::map<std::string, std::size_t> at;
  for (const auto& it : items) {
    const std::string k = key(it);
    if (!at.count(k)) {
      at[k] = out.size();
      out.push_back({k, {}});
    }
    out[at[k]].second.push_back(&it);
  }
  return out;
}

// A log axis where the values span a decade or more; [lo, hi] padded so that lines at the ends show.
std::string range(double lo, double hi, bool log) {
  if (log) return "[" + fixed(lo / 1.5, 6) + ":" + fixed(hi * 1.5, 6) + "]";
  return "[0:" + fixed(hi * 1.1, 6) + "]";
}

// Tics at 1, 2 and 5 times the powers of ten within [lo, hi] (a log axis spanning few decades shows
// one or two labels otherwise).
std::string log_tics(const std::string& axis, double lo, double hi) {
  std::string t;
  for (double decade = std::pow(10.0, std::floor(std::log10(lo))); decade <= hi; decade *= 10)
    for (double m : {1.0, 2.0, 5.0})
      if (m * decade >= lo && m * decade <= hi) t += (t.empty() ? "" : ", ") + fixed(m * decade, 6);
  return "set " + axis + "tics (" + t + ")";
}

}  // namespace

Plot sweep_plot(const std::string& title, const std::string& x_label, bool gpus_on_x,
                const std::vector<SweepChartPoint>& points, const std::string& noun) {
  Plot p;
  p.title = title;
  p.source = "ringsim sweep --plot: predicted throughput and scaling efficiency";
  PlotPanel rate{"Throughput", x_label, noun + "/s, all GPUs", 0, 0, {}, {}, {}};
  PlotPanel eff{"Scaling efficiency", x_label, "% of linear scaling from one GPU", 0, 0, {"set yrange [0:*]"}, {}, {}};
  bool numeric = gpus_on_x;
  double lo = std::numeric_limits<double>::infinity(), hi = 0;
  if (!numeric) numeric = std::all_of(points.begin(), points.end(), [](const auto& q) { return is_number(q.x_text); });
  for (const auto& q : points) {
    lo = std::min(lo, q.x);
    hi = std::max(hi, q.x);
  }
  if (gpus_on_x) {
    rate.x_log_base = eff.x_log_base = 2;
  } else if (numeric && lo > 0 && hi / lo >= 16) {
    rate.x_log_base = eff.x_log_base = 10;
  } else if (!numeric) {  // names on x: their positions, labelled
    std::string tics = "set xtics (";
    std::map<double, std::string> names;
    for (const auto& q : points) names[q.x] = q.x_text;
    for (const auto& [x, n] : names)
      tics += (x == names.begin()->first ? "" : ", ") + ("\"" + gnuplot_quote(n) + "\" " + fixed(x, 6));
    rate.setup.push_back(tics + ")");
    eff.setup.push_back(tics + ")");
    rate.setup.push_back("set xrange [" + fixed(lo - 0.5, 6) + ":" + fixed(hi + 0.5, 6) + "]");
    eff.setup.push_back("set xrange [" + fixed(lo - 0.5, 6) + ":" + fixed(hi + 0.5, 6) + "]");
  }
  const auto series = group(points, [](const SweepChartPoint& q) { return q.series; });
  std::map<std::string, int> ideal_color;  // single-GPU rate (as shown) -> colour of its first series
  for (std::size_t k = 0; k < series.size(); ++k) {
    std::vector<const SweepChartPoint*> pts = series[k].second;
    std::stable_sort(pts.begin(), pts.end(), [](auto* a, auto* b) { return a->x < b->x; });
    PlotSeries r{series[k].first, "linespoints pt 7", static_cast<int>(k) + 1, {}, {}};
    PlotSeries e = r;
    for (const auto* q : pts) {
      r.rows.push_back({q->x, q->images_per_sec});
      e.rows.push_back({q->x, 100 * q->scaling_efficiency});
      if (gpus_on_x && q->single_gpu_images_per_sec > 0)
        ideal_color.emplace(fixed(q->single_gpu_images_per_sec, 6), static_cast<int>(k) + 1);
    }
    rate.series.push_back(std::move(r));
    eff.series.push_back(std::move(e));
  }
  // Linear scaling, r samples/s per GPU: a straight line on linear axes, a curve on this log2 axis.
  for (const auto& [r, color] : ideal_color)
    rate.functions.push_back(r + "*x with lines dt 2 lw 1.5 lc " +
                             (ideal_color.size() > 1 ? std::to_string(color) : "rgb 'black'") +
                             " title \"linear scaling: GPUs x " + r + " " + noun + "/s\"");
  if (gpus_on_x) eff.functions.push_back("100 with lines dt 2 lw 1.5 lc rgb 'black' notitle");
  eff.setup.push_back("unset key");  // the same lines as above, named there
  p.panels = {rate, eff};
  return p;
}

Plot plan_plot(const std::string& title, const std::vector<PlanEvaluation>& evaluations,
               std::optional<double> deadline_s, std::optional<double> budget_usd) {
  Plot p;
  p.title = title;
  p.source = "ringsim plan --plot: every priced configuration's cost against its time to train";
  PlotPanel pn{"each point a configuration: SKU x nodes x strategy x fusion",
               "time to train (h)",
               "cost (USD)",
               0,
               0,
               {},
               {},
               {}};
  std::vector<PlanEvaluation> ev;
  for (const auto& e : evaluations)
    if (e.time_to_train_s > 0 && e.cost_usd > 0 && std::isfinite(e.time_to_train_s) && std::isfinite(e.cost_usd))
      ev.push_back(e);
  double t_lo = std::numeric_limits<double>::infinity(), t_hi = 0, c_lo = t_lo, c_hi = 0;
  for (const auto& e : ev) {
    t_lo = std::min(t_lo, e.time_to_train_s / 3600);
    t_hi = std::max(t_hi, e.time_to_train_s / 3600);
    c_lo = std::min(c_lo, e.cost_usd);
    c_hi = std::max(c_hi, e.cost_usd);
  }
  if (deadline_s) t_lo = std::min(t_lo, *deadline_s / 3600), t_hi = std::max(t_hi, *deadline_s / 3600);
  if (budget_usd) c_lo = std::min(c_lo, *budget_usd), c_hi = std::max(c_hi, *budget_usd);
  if (ev.empty()) t_lo = c_lo = 1, t_hi = c_hi = 10;
  const bool log_t = t_hi / t_lo >= 10, log_c = c_hi / c_lo >= 10;
  pn.x_log_base = log_t ? 10 : 0;
  pn.y_log_base = log_c ? 10 : 0;
  pn.setup.push_back("set xrange " + range(t_lo, t_hi, log_t));
  pn.setup.push_back("set yrange " + range(c_lo, c_hi, log_c));
  if (log_t) pn.setup.push_back(log_tics("x", t_lo / 1.5, t_hi * 1.5));
  if (log_c) pn.setup.push_back(log_tics("y", c_lo / 1.5, c_hi * 1.5));
  pn.setup.push_back("set key outside right top vertical");
  if (deadline_s) {
    const std::string d = fixed(*deadline_s / 3600, 6);
    pn.setup.push_back("set arrow from " + d + ", graph 0 to " + d + ", graph 1 nohead dt 2 lw 1.5 lc rgb '#cc0000'");
    pn.setup.push_back("set label \"deadline " + d + " h\" at " + d +
                       ", graph 0.96 right offset -0.5,0 tc rgb '#cc0000'");
  }
  if (budget_usd) {
    const std::string b = fixed(*budget_usd, 8);
    pn.setup.push_back("set arrow from graph 0, first " + b + " to graph 1, first " + b +
                       " nohead dt 2 lw 1.5 lc rgb '#0044cc'");
    pn.setup.push_back("set label \"budget $" + b + "\" at graph 0.98, first " + b +
                       " right offset 0,0.7 tc rgb '#0044cc'");
  }
  const auto by_sku =
      group(ev, [](const PlanEvaluation& e) { return e.sku + (e.low_priority ? " (low priority)" : ""); });
  for (std::size_t k = 0; k < by_sku.size(); ++k) {
    PlotSeries s{by_sku[k].first, "points pt 7 ps 1.2", static_cast<int>(k) + 1, {}, {}};
    for (const auto* e : by_sku[k].second) s.rows.push_back({e->time_to_train_s / 3600, e->cost_usd});
    pn.series.push_back(std::move(s));
  }
  PlotSeries meets{"meets the goal", "points pt 6 ps 2.2 lc rgb 'black'", 0, {}, {}};
  for (const auto& e : ev)
    if (e.feasible() && (deadline_s || budget_usd)) meets.rows.push_back({e.time_to_train_s / 3600, e.cost_usd});
  if (!meets.rows.empty()) pn.series.push_back(std::move(meets));
  // The frontier: by time, each configuration cheaper than every faster one.
  std::vector<const PlanEvaluation*> order;
  for (const auto& e : ev) order.push_back(&e);
  std::stable_sort(order.begin(), order.end(), [](auto* a, auto* b) {
    return a->time_to_train_s != b->time_to_train_s ? a->time_to_train_s < b->time_to_train_s
                                                    : a->cost_usd < b->cost_usd;
  });
  PlotSeries front{"frontier (none faster and cheaper)", "linespoints pt 1 lw 1.5 lc rgb '#555555'", 0, {}, {}};
  double cheapest = std::numeric_limits<double>::infinity();
  for (const auto* e : order)
    if (e->cost_usd < cheapest) {
      cheapest = e->cost_usd;
      front.rows.push_back({e->time_to_train_s / 3600, e->cost_usd});
      front.labels.push_back(e->sku + " x" + std::to_string(e->vms) + " " + e->strategy);
    }
  if (!front.rows.empty()) pn.series.push_back(std::move(front));
  p.panels = {pn};
  return p;
}

}  // namespace ringsim
