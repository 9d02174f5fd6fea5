#include "report/goodput_report.h"

#include <algorithm>
#include <cmath>

#include "load/units.h"

namespace ringsim {

nlohmann::ordered_json goodput_json(const GoodputEstimate& g) {
  const CheckpointCost& c = g.checkpoint;
  return {{"ettr", g.ettr},
          {"ettr_low", g.ettr_low},
          {"ettr_high", g.ettr_high},
          {"expected_interruptions", g.expected_interruptions},
          {"interruptions_per_day", g.interruptions_per_day},
          {"mtbf_s", g.mtbf_s},
          {"checkpoint_bytes", c.bytes},
          {"checkpoint_writers", c.writers},
          {"checkpoint_write_s", c.write_s},
          {"checkpoint_copy_s", c.copy_s},
          {"checkpoint_write_bandwidth", c.write_bandwidth},
          {"checkpoint_write_limit", c.limit},
          {"checkpoint_interval_s", g.checkpoint_interval_s},
          {"checkpoint_interval", g.interval_auto ? "auto" : "given"},
          {"young_daly_interval_s", g.young_daly_interval_s},
          {"wall_time_to_train_s", g.wall_time_to_train_s},
          {"wall_time_to_train_s_low", g.wall_time_to_train_s_low},
          {"wall_time_to_train_s_high", g.wall_time_to_train_s_high},
          {"completes", g.completes},
          {"band_unbounded", g.band_unbounded},
          {"lost_gpu_hours", g.lost_gpu_hours},
          {"spare_gpu_hours", g.spare_gpu_hours},
          {"monte_carlo",
           {{"runs", g.monte_carlo.runs},
            {"mean_s", g.monte_carlo.mean_s},
            {"p10_s", g.monte_carlo.p10_s},
            {"p90_s", g.monte_carlo.p90_s}}}};
}

namespace {

std::string checkpoint_text(const Scenario& s, const CheckpointCost& c) {
  const std::string who = c.writers == 1
                              ? "rank 0 writes"
                              : std::to_string(c.writers) + " ranks write " + format_bytes(c.writer_bytes) + " each";
  const std::string stops = s.reliability.checkpoint_async
                                ? "asynchronous: training stops " + format_time(c.copy_s) + " to copy it to host memory"
                                : "synchronous: training stops for the write";
  return format_bytes(c.bytes) + " (" + who + ") at " + format_bandwidth(c.write_bandwidth) + " (" + c.limit +
         "): " + format_time(c.write_s) + "; " + stops;
}

std::string interruptions_text(const Scenario& s, const GoodputEstimate& g, bool in_run = true) {
  const ReliabilityConfig& r = s.reliability;
  std::string why = format_number(r.failures_per_1000_node_days.value) + " failures per 1000 node-days";
  if (s.cluster.low_priority) why += ", " + format_number(r.evictions_per_node_day.value) + " evictions per node-day";
  return format_number(std::round(g.interruptions_per_day * 100) / 100) + " a day (one every " + format_time(g.mtbf_s) +
         ": " + why + " on " + std::to_string(s.cluster.nodes) + " nodes)" +
         (in_run ? "; " + format_number(std::round(g.expected_interruptions * 10) / 10) + " in the run" : "");
}

std::string wall_text(const GoodputEstimate& g) {
  if (!g.completes) return "never: " + g.advice;
  const MonteCarloRuns& mc = g.monte_carlo;
  return format_time(g.wall_time_to_train_s) + " (band " + format_time(g.wall_time_to_train_s_low) + " to " +
         (g.band_unbounded ? "never: at the pessimistic figures an interval rarely completes"
                           : format_time(g.wall_time_to_train_s_high)) +
         (mc.runs > 0 ? "; " + std::to_string(mc.runs) + " simulated runs: P10 " + format_time(mc.p10_s) + ", P90 " +
                            format_time(mc.p90_s)
                      : "; too many interruptions to simulate run by run") +
         ")";
}

}  // namespace

std::vector<std::pair<std::string, std::string>> goodput_rows(const Prediction& p) {
  const GoodputEstimate& g = p.goodput;
  if (!g.modelled) return {};
  const Scenario& s = p.scenario;
  auto ratio = [](double v) { return format_number(std::round(v * 1000) / 1000); };
  if (!g.completes)
    return {{"checkpoint", checkpoint_text(s, g.checkpoint)},
            {"interruptions", interruptions_text(s, g, false)},
            {"wall time to train", wall_text(g)}};
  return {
      {"checkpoint", checkpoint_text(s, g.checkpoint)},
      {"checkpoint interval",
       format_time(g.checkpoint_interval_s) + " of training (" +
           (g.interval_auto ? "auto: the least expected wall time" : "given") +
           (g.young_daly_interval_s > 0 ? "; Young-Daly " + format_time(g.young_daly_interval_s) : std::string()) +
           ")"},
      {"interruptions", g.mtbf_s > 0 ? interruptions_text(s, g) : "none (no failure or eviction rate)"},
      {"goodput (ETTR)", ratio(g.ettr) + " (band " + ratio(g.ettr_low) + " to " + ratio(g.ettr_high) + ")"},
      {"wall time to train", wall_text(g)},
      {"lost GPU hours",
       format_number(std::round(g.lost_gpu_hours)) +
           (g.spare_gpu_hours > 0 ? " (+ " + format_number(std::round(g.spare_gpu_hours)) + " held by spare nodes)"
                                  : "")},
  };
}

namespace {

PlotPanel ettr_panel(const Catalog& catalog, const Prediction& p) {
  const Scenario& s = p.scenario;
  std::vector<int> nodes;
  for (double f : {1.0 / 16, 1.0 / 8, 1.0 / 4, 1.0 / 2, 1.0, 2.0, 4.0, 8.0}) {
    const int n = static_cast<int>(std::clamp(std::round(s.cluster.nodes * f), 1.0, 65536.0));
    if (nodes.empty() || n != nodes.back()) nodes.push_back(n);
  }
  const double chosen = p.goodput.checkpoint_interval_s;
  const std::vector<double> intervals = {0, chosen / 4, chosen, chosen * 4};
  const auto rows = ettr_by_nodes(catalog, s, p.time_to_train_s, p.iteration_time_s, nodes, intervals);
  PlotPanel panel{"Goodput against cluster size (the failure-free time scaled as 1 / nodes)",
                  "nodes (" + s.cluster.sku + ")",
                  "ETTR (training time / wall time)",
                  2,
                  0,
                  {"set yrange [0:1]"},
                  {},
                  {}};
  for (std::size_t k = 0; k < intervals.size(); ++k) {
    PlotSeries series{
        k == 0 ? "auto (each size's best interval)" : "every " + format_time(intervals[k]) + " of training",
        k == 0 ? "lines lw 2" : "linespoints pt 7",
        0,
        {},
        {}};
    for (const auto& r : rows)
      if (!std::isnan(r[k + 1])) series.rows.push_back({r[0], r[k + 1]});
    panel.series.push_back(series);
  }
  panel.setup.push_back("set arrow from " + std::to_string(s.cluster.nodes) + ", graph 0 to " +
                        std::to_string(s.cluster.nodes) + ", graph 1 nohead dt 2");
  return panel;
}

PlotPanel runs_panel(const GoodputEstimate& g) {
  PlotPanel panel{"Completion time of " + std::to_string(g.monte_carlo.runs) + " simulated runs",
                  "wall time (h)",
                  "fraction of runs finished",
                  0,
                  0,
                  {"set yrange [0:1]"},
                  {},
                  {}};
  PlotSeries cdf{"simulated runs", "lines lw 2", 0, {}, {}};
  const auto& q = g.monte_carlo.percentiles_s;
  for (std::size_t i = 0; i < q.size(); ++i) cdf.rows.push_back({q[i] / 3600, static_cast<double>(i) / 100});
  PlotSeries mean{"expected (closed form)", "impulses lw 2", 0, {{g.wall_time_to_train_s / 3600, 1}}, {}};
  panel.series = {cdf, mean};
  return panel;
}

}  // namespace

Plot goodput_plot(const Catalog& catalog, const Prediction& p) {
  Plot plot;
  plot.title = p.scenario.name + ": goodput";
  plot.source = "ringsim predict --plot";
  plot.panels.push_back(ettr_panel(catalog, p));
  if (p.goodput.monte_carlo.runs > 0) plot.panels.push_back(runs_panel(p.goodput));
  return plot;
}

}  // namespace ringsim
