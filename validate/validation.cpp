#include "validate/validation.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <stdexcept>

#include "calibrate/placement.h"
#include "calibrate/runs.h"
#include "collective/collective.h"
#include "execute/buffer_collective.h"
#include "execute/estimate/child_process.h"
#include "execute/estimate/prediction_band.h"
#include "execute/simgrid/training_sim.h"
#include "load/input_error.h"
#include "load/json_file.h"
#include "load/units.h"
#include "load/yaml_reader.h"
#include "report/plot.h"
#include "report/prediction_report.h"
#include "report/progress.h"
#include "report/stats.h"
#include "validate/horovod_timeline.h"
#include "validate/stack_coverage.h"

namespace ringsim {

namespace {

// The predicted nccl-tests bus bandwidth, in GB/s, of an allreduce of `bytes` over `ranks` that
// `simulate` times (one SimGrid run, so in a child process), plus the library's per-call overhead:
// algbw = bytes / seconds, busbw = algbw * 2(n-1)/n.
double predicted_busbw_gbps(const Catalog& catalog, const Scenario& s, std::uint64_t bytes, int ranks,
                            const std::function<CollectiveTiming()>& simulate) {
  const double seconds = std::stod(run_in_child([&] {
    char out[64];
    std::snprintf(out, sizeof out, "%.17g", simulate().duration_s);
    return std::string(out);
  }));
  const double overhead = catalog.library(std::string(to_string(s.communication.library))).collective_overhead;
  return static_cast<double>(bytes) / (seconds + overhead) / 1e9 *
         collective::bus_bandwidth_factor(collective::BusOp::AllReduce, ranks);
}

// predict() in a forked child (SimGrid allows one engine per process); returns the result JSON.
nlohmann::json predict_isolated(const Catalog& catalog, const Scenario& s) {
  return nlohmann::json::parse(
      run_in_child([&] { return result_json(predict(catalog, s, default_fidelity(s)), "predict"); }));
}

// A case's prediction: the scenario's images/s (in a child), and its band over the uncertain figures (those
// a calibration fitted over the ranges it left them) unless `band` is false.
void predict_case(const Catalog& catalog, const Scenario& s, const CatalogOverlay& calibration, bool band,
                  ValidationCase& vc) {
  const Fidelity fidelity = default_fidelity(s);
  const SharedLayouts shared;
  PreparedPrediction point(catalog, s, fidelity);  // where the band runs as it does, its run at the catalog's
  const bool own = band_runs_as_point(s, fidelity);
  BandRatios ratios = band ? band_ratios(catalog, s, calibration, fidelity, own ? &point : nullptr) : BandRatios{};
  const auto result = nlohmann::json::parse(run_in_child([&] { return result_json(point.run(), "predict"); }));
  vc.predicted = result["images_per_sec"].get<double>();
  relate_band(ratios, vc.predicted, result["time_to_train_s"].get<double>());
  vc.low = vc.high = 0;
  if (ratios.samples > 0) {
    vc.low = std::min(vc.predicted, vc.predicted * ratios.rate_low);
    vc.high = std::max(vc.predicted, vc.predicted * ratios.rate_high);
  }
}

}  // namespace

double spread_pct(std::vector<double> runs) {
  if (runs.size() < 2) return -1;
  const double middle = upper_median(runs);
  const auto [lo, hi] = std::minmax_element(runs.begin(), runs.end());
  return middle != 0 ? (*hi - *lo) / std::fabs(middle) * 100 : -1;
}

double against_others_pct(const std::vector<double>& runs, std::size_t i) {
  if (runs.size() < 3 || runs[i] == 0) return -1;
  std::vector<double> others;
  for (std::size_t k = 0; k < runs.size(); ++k)
    if (k != i) others.push_back(runs[k]);
  return std::fabs(runs[i] - median(others)) / std::fabs(runs[i]) * 100;
}

double others_error_pct(const std::vector<double>& runs) {
  std::vector<double> errors;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const double e = against_others_pct(runs, i);
    if (e < 0) return -1;
    errors.push_back(e);
  }
  return errors.empty() ? -1 : median(errors);
}

double mape_of(const std::vector<ValidationCase>& cases) {
  if (cases.empty()) return 0;
  double s = 0;
  for (const auto& c : cases) s += std::fabs(c.error_pct());
  return s / cases.size();
}

double max_abs_error_of(const std::vector<ValidationCase>& cases) {
  double m = 0;
  for (const auto& c : cases) m = std::max(m, std::fabs(c.error_pct()));
  return m;
}

int banded_of(const std::vector<ValidationCase>& cases) {
  return static_cast<int>(std::count_if(cases.begin(), cases.end(), [](const auto& c) { return c.has_band(); }));
}

double band_coverage_of(const std::vector<ValidationCase>& cases) {
  if (banded_of(cases) == 0) return -1;
  const auto inside =
      std::count_if(cases.begin(), cases.end(), [](const auto& c) { return c.has_band() && c.in_band(); });
  return static_cast<double>(inside) / banded_of(cases);
}

double band_median_width_of(const std::vector<ValidationCase>& cases) {
  std::vector<double> widths;
  for (const auto& c : cases)
    if (c.has_band() && c.low > 0) widths.push_back(c.high / c.low);
  return widths.empty() ? -1 : upper_median(widths);
}

namespace {

// A published throughput run, as the few-shot check uses it: its series (its scenario, and the case keys that
// `few_shot: series` names) and the keys that make it this run of the series.
struct SeriesRun {
  ValidationCase zero_shot;
  std::string scenario_file, series;
  std::vector<Override> series_sets, run_sets;
  std::vector<int> columns;  // of run_sets, in the cases file
  std::int64_t nodes = 1;
  int line = 0;
};

// "step_time_cv 0.023 (0.018 to 0.029)": the figures one series' fit found, and where the runs leave them.
std::string fitted_figures(const RunsFit& fit) {
  std::string out;
  for (const auto& x : fit.fitted)
    out += (out.empty() ? "" : ", ") + x.name + (x.scale ? " x" : " ") + format_number(x.value) + " (" +
           format_number(x.fit_low) + " to " + format_number(x.fit_high) + ")";
  return out;
}

// One series' larger runs, predicted with the figures fitted to its runs of up to `fit_nodes` nodes.
void few_shot_series(const Catalog& catalog, const std::vector<const SeriesRun*>& runs, std::int64_t fit_nodes,
                     bool with_band, const std::string& cases_file, ValidationReport& r, Progress& progress) {
  std::vector<MeasuredRun> small;
  for (const auto* x : runs)
    if (x->nodes <= fit_nodes) small.push_back({x->run_sets, x->columns, x->zero_shot.measured, x->line});
  const SeriesRun& first = *runs.front();
  progress.note("ringsim validate: few-shot " + first.series + ": fitting on " + std::to_string(small.size()) +
                " runs");
  RunsFit fit;
  try {
    fit = fit_runs(catalog, first.scenario_file, first.series_sets, small, cases_file, false);  // no advice
  } catch (const InputError& e) {
    r.notes.push_back("few-shot " + first.series + ": not fitted: " + e.message());
    return;
  }
  r.few_shot_fits.push_back(first.series + " (" + std::to_string(small.size()) + " runs): " + fitted_figures(fit));
  Catalog calibrated = catalog;
  calibrated.apply(fit.overlay);
  progress.add(runs.size() - small.size());
  for (const auto* x : runs) {
    if (x->nodes <= fit_nodes) continue;
    std::vector<Override> sets = x->series_sets;
    sets.insert(sets.end(), x->run_sets.begin(), x->run_sets.end());
    const Scenario s = load_scenario(x->scenario_file, calibrated, sets);
    ValidationCase vc = x->zero_shot;
    vc.zero_shot = vc.predicted;
    predict_case(calibrated, s, fit.overlay, with_band, vc);
    r.few_shot.push_back(vc);
    progress.done("few-shot case " + vc.name + " done");
  }
}

// Every series with runs on at most `fit_nodes` nodes and runs on more, in the order the file has them.
void add_few_shot(const Catalog& catalog, const std::vector<SeriesRun>& runs, std::int64_t fit_nodes, bool with_band,
                  const std::string& cases_file, ValidationReport& r, Progress& progress) {
  r.few_shot_nodes = fit_nodes;
  std::vector<std::string> order;
  std::map<std::string, std::vector<const SeriesRun*>> series;
  for (const auto& x : runs) {
    if (!series.count(x.series)) order.push_back(x.series);
    series[x.series].push_back(&x);
  }
  for (const auto& name : order) {
    const auto& members = series[name];
    const auto small = std::count_if(members.begin(), members.end(), [&](auto* x) { return x->nodes <= fit_nodes; });
    if (small > 0 && small < static_cast<std::ptrdiff_t>(members.size()))
      few_shot_series(catalog, members, fit_nodes, with_band, cases_file, r, progress);
  }
}

}  // namespace

ValidationReport validate_published(const Catalog& catalog, const std::string& cases_file, bool with_band) {
  auto doc = std::make_shared<YamlDocument>(YamlDocument::load_file(cases_file, "published cases"));
  YamlField root = YamlField::root(doc);
  root.require_map({"cases", "few_shot"});
  const std::filesystem::path scenario_dir =
      std::filesystem::path(cases_file).parent_path().parent_path() / "scenarios";
  ValidationReport r;
  r.title = "published: " + cases_file;
  std::vector<SeriesRun> series_runs;  // the throughput cases, for the few-shot check
  const auto few_shot = root.find("few_shot");
  std::vector<std::string> split_by;  // case keys that split a scenario's cases into series
  std::int64_t fit_nodes = 0;
  if (few_shot) {
    few_shot->require_map({"fit_nodes", "series"});
    fit_nodes = few_shot->get("fit_nodes").integer(1, 65536);
    if (auto k = few_shot->find("series"))
      for (const auto& key : k->items()) split_by.push_back(key.choice({"model", "batch_per_gpu"}));
  }
  std::vector<YamlField> cases = root.get("cases").items();
  Progress progress("ringsim validate", "cases", cases.size(), std::cerr);  // minutes for the whole file
  for (auto& c : cases) {
    c.require_map({"name", "scenario", "model", "batch_per_gpu", "gpus", "nodes", "parameter_servers",
                   "published_images_per_sec", "bytes", "published_busbw_GBps"});
    // Two kinds of case: training throughput (model, batch, images/s) or one allreduce's bus bandwidth
    // (bytes, busbw, as nccl-tests' all_reduce_perf prints it).
    const bool bench = c.has("published_busbw_GBps");
    const std::vector<std::string> own =
        bench ? std::vector<std::string>{"bytes", "published_busbw_GBps"}
              : std::vector<std::string>{"model", "batch_per_gpu", "published_images_per_sec"};
    const std::vector<std::string> other =
        bench ? std::vector<std::string>{"model", "batch_per_gpu", "published_images_per_sec", "parameter_servers"}
              : std::vector<std::string>{"bytes"};
    for (const auto& k : own)
      if (!c.has(k))
        c.fail("a " + std::string(bench ? "bus-bandwidth" : "throughput") + " case needs '" + k + "'" +
               (bench ? " (with published_busbw_GBps: bytes)" : " (or bytes and published_busbw_GBps)"));
    for (const auto& k : other)
      if (c.has(k))
        c.get(k).fail(std::string("does not apply to a ") + (bench ? "bus-bandwidth case (published_busbw_GBps)"
                                                                   : "throughput case (published_images_per_sec)"));
    const std::string file = (scenario_dir / c.get("scenario").str()).string();
    std::error_code ec;
    if (!std::filesystem::exists(file, ec)) c.get("scenario").fail("no scenario file " + file);
    // gpus: over all nodes (one node unless `nodes` says), spread evenly.
    const std::int64_t gpus = c.get("gpus").integer(1, 1 << 20);
    const std::int64_t nodes = c.has("nodes") ? c.get("nodes").integer(1, 65536) : 1;
    if (gpus % nodes != 0)
      c.get("gpus").fail(std::to_string(gpus) + " GPUs do not spread evenly over " + std::to_string(nodes) + " nodes");
    std::vector<Override> sets = {parse_override("cluster.nodes=" + std::to_string(nodes)),
                                  parse_override("cluster.gpus_per_node=" + std::to_string(gpus / nodes))};
    if (bench) {
      const Scenario s = load_scenario(file, catalog, sets);
      if (s.communication.strategy == Strategy::ParameterServer)
        c.get("scenario")
            .fail("a bus-bandwidth case times one allreduce; " + c.get("scenario").str() +
                  " uses strategy parameter_server (expected ring, hierarchical or halving_doubling)");
      const auto bytes = static_cast<std::uint64_t>(c.get("bytes").positive_quantity(Quantity::Bytes));
      if (bytes % 4 != 0) c.get("bytes").fail("expected a whole number of 4-byte floats");
      const double predicted = predicted_busbw_gbps(catalog, s, bytes, static_cast<int>(gpus), [&] {
        return simulate_allreduce(catalog, s, bytes, 4, default_fidelity(s));
      });
      ValidationCase vc{c.get("name").str(), "busbw_gbps", predicted, c.get("published_busbw_GBps").positive_number()};
      vc.group = s.cluster.sku + " allreduce busbw";
      vc.stack = stack_of(s);
      vc.x = static_cast<double>(gpus);
      r.cases.push_back(vc);
      progress.done("case " + vc.name + " done");
      continue;
    }
    sets.push_back(parse_override("model.name=" + c.get("model").str()));
    sets.push_back(parse_override("model.batch_per_gpu=" + std::to_string(c.get("batch_per_gpu").integer(1, 1 << 20))));
    if (auto f = c.find("parameter_servers"))  // as the published set-up ran, where it says
      sets.push_back(parse_override("communication.parameter_servers=" + std::to_string(f->integer(1, 65536))));
    const Scenario s = load_scenario(file, catalog, sets);
    // Its few-shot series: the scenario, and the keys `few_shot: series` names; the other keys vary by run.
    SeriesRun run{{}, file, c.get("scenario").str(), {}, {}, {}, nodes, c.location().line};
    const std::vector<std::string> keys = {"nodes", "gpus", "model", "batch_per_gpu", "parameter_servers"};
    for (std::size_t i = 0; i < sets.size(); ++i) {
      const bool splits = std::find(split_by.begin(), split_by.end(), keys[i]) != split_by.end();
      (splits ? run.series_sets : run.run_sets).push_back(sets[i]);
      if (splits)
        run.series += " " + c.get(keys[i]).str();
      else
        run.columns.push_back(c.has(keys[i]) ? c.get(keys[i]).location().column : c.location().column);
    }
    ValidationCase vc{c.get("name").str(), "images_per_sec", 0, c.get("published_images_per_sec").positive_number()};
    predict_case(catalog, s, {}, with_band, vc);
    vc.group =
        s.cluster.sku + " " + c.get("model").str() + " b" + std::to_string(c.get("batch_per_gpu").integer(1, 1 << 20));
    vc.x = static_cast<double>(gpus);
    vc.stack = stack_of(s);
    r.cases.push_back(vc);
    progress.done("case " + vc.name + " done");
    run.zero_shot = vc;
    series_runs.push_back(std::move(run));
  }
  if (few_shot) add_few_shot(catalog, series_runs, fit_nodes, with_band, cases_file, r, progress);
  return r;
}

namespace {

// A `ringsim-real bench --json` file: each row's allreduce predicted alone on the scenario's node (the
// bench's ranks as its GPUs or processes, in rank order), busbw against busbw.
void add_bench_cases(const Catalog& catalog, const Scenario& scenario, const nlohmann::json& m, const std::string& f,
                     PlacementFilter& placement, ValidationReport& r) {
  auto fail = [&](const std::string& what) { throw InputError({f, 0, 0, ""}, what); };
  auto field = [&](const nlohmann::json& j, const char* key) -> const nlohmann::json& {
    if (!j.contains(key)) fail(std::string("\"") + key + "\" is missing");
    return j[key];
  };
  const std::string op = field(m, "op").get<std::string>(), algorithm = field(m, "algorithm").get<std::string>();
  if (op != "allreduce") fail("bench op '" + op + "': only allreduce rows are predicted");
  if (algorithm != "ring" && algorithm != "halving_doubling")
    fail("bench algorithm '" + algorithm + "': expected ring or halving_doubling");
  const int ranks = field(m, "ranks").get<int>();
  Scenario s = scenario;
  if (ranks != s.cluster.total_gpus()) {
    if (s.cluster.nodes != 1 || ranks < 2 || ranks > catalog.sku(s.cluster.sku).gpus)
      fail("measured on " + std::to_string(ranks) + " ranks; the scenario has " +
           std::to_string(s.cluster.total_gpus()) + " GPUs on " + std::to_string(s.cluster.nodes) +
           " nodes (one-node scenarios take any rank count up to the node's GPUs)");
    s.cluster.gpus_per_node = ranks;
  }
  const std::string name = std::filesystem::path(f).filename().string();
  for (const auto& row : field(m, "rows")) {
    const auto bytes = field(row, "bytes").get<std::uint64_t>();
    if (bytes == 0) continue;
    if (!placement.accept(row)) continue;  // measured with the CPUs farther apart than the nearest
    const std::string type = field(row, "type").get<std::string>();
    const int elem = type == "double" ? 8 : type == "float" || type == "int32" ? 4 : 0;
    if (elem == 0) fail("row type '" + type + "': expected float, int32 or double");
    const double predicted = predicted_busbw_gbps(catalog, s, bytes, ranks, [&] {
      auto c = algorithm == "ring"
                   ? collective::make_ring_allreduce(ranks, bytes, elem, collective::Space::Device)
                   : collective::make_halving_doubling_allreduce(ranks, bytes, elem, collective::Space::Device);
      return simulate_collective(catalog, s, *c, Fidelity::Flow);
    });
    ValidationCase vc{name + " " + format_bytes(static_cast<double>(bytes)), "busbw_gbps", predicted,
                      field(row, "busbw_gbps").get<double>()};
    vc.group = algorithm + ", " + std::to_string(ranks) + " ranks";
    vc.x = static_cast<double>(bytes);
    if (row.contains("busbw_runs_gbps")) vc.spread_pct = spread_pct(row["busbw_runs_gbps"].get<std::vector<double>>());
    r.cases.push_back(vc);
  }
  r.x_label = "bytes";
}

}  // namespace

namespace {

// One --measured file's JSON; an nccl-tests log is named as such, with the commands that take one.
nlohmann::json read_measured(const std::string& f) {
  const std::string text = read_input_file(f, kMaxJsonInputBytes, "measured result");
  if (text.find("out-of-place") != std::string::npos || text.find("Avg bus bandwidth") != std::string::npos ||
      text.find("nccl-tests") != std::string::npos)
    throw InputError({f, 0, 0, ""},
                     "this is an nccl-tests log, not a result JSON: `ringsim bench SCENARIO` predicts the same "
                     "table to hold beside it, `ringsim calibrate SCENARIO --nccl-tests FILE` fits the "
                     "scenario's links to it, and --measured takes `ringsim-real bench --json` files");
  return parse_json_text(
      text, f, "not JSON (--measured takes `ringsim-real train --json` or `ringsim-real bench --json` files)");
}

}  // namespace

ValidationReport validate_measured(const Catalog& catalog, const Scenario& s, const std::vector<std::string>& files,
                                   double nearest_core_to_core_ns) {
  ValidationReport r;
  r.title = "measured vs predicted: " + s.name;
  std::optional<nlohmann::json> prediction;  // of the training iteration, for result files
  // Bench rows count where the CPUs were as near as the files (and the caller) saw them.
  std::vector<nlohmann::json> measured;
  PlacementFilter placement;
  for (const auto& f : files) {
    measured.push_back(read_measured(f));
    const auto& m = measured.back();
    try {
      if (m.is_object() && m.contains("schema") && m["schema"] == "ringsim.bench/1") placement.add_file(m);
    } catch (const nlohmann::json::exception& e) {
      throw InputError({f, 0, 0, ""}, std::string("not a ringsim-real bench file: ") + e.what());
    }
  }
  placement.add_nearest(nearest_core_to_core_ns);
  for (std::size_t i = 0; i < files.size(); ++i) {
    const std::string& f = files[i];
    nlohmann::json& m = measured[i];
    if (m.is_object() && m.contains("schema") && m["schema"] == "ringsim.bench/1") {
      try {
        add_bench_cases(catalog, s, m, f, placement, r);
      } catch (const nlohmann::json::exception& e) {
        throw InputError({f, 0, 0, ""}, std::string("not a ringsim-real bench file: ") + e.what());
      }
      continue;
    }
    if (!m.is_object() || !m.contains("schema") || m["schema"] != kResultSchema)
      throw InputError({f, 0, 0, ""},
                       std::string("expected a result file with \"schema\": \"") + kResultSchema +
                           "\" (ringsim-real train --json) or \"ringsim.bench/1\" (ringsim-real bench --json)");
    if (!prediction) prediction = predict_isolated(catalog, s);
    const nlohmann::json& p = *prediction;
    if (!m.contains("gpus") || m["gpus"] != p["gpus"])
      throw InputError({f, 0, 0, ""},
                       "measured on " + m["gpus"].dump() + " GPUs, the scenario has " + p["gpus"].dump());
    const std::string name = std::filesystem::path(f).filename().string();
    for (const char* metric : {"iteration_time_s", "images_per_sec", "communication_time_s"}) {
      if (!m.contains(metric) || !m[metric].is_number())
        throw InputError({f, 0, 0, ""}, std::string("\"") + metric + "\" is missing or not a number");
      r.cases.push_back({name, metric, p[metric].get<double>(), m[metric].get<double>()});
    }
    const std::string label =
        m.contains("source") && m["source"].is_string() ? m["source"].get<std::string>() : std::string("measured");
    try {
      r.differences.emplace_back(name, compare_results(p, "predicted", m, label, f));
    } catch (const nlohmann::json::exception& e) {
      throw InputError({f, 0, 0, ""}, std::string("not a ringsim result file: ") + json_error_text(e.what()));
    }
  }
  if (placement.active()) r.notes.push_back("placement: " + placement.summary("bench rows"));
  return r;
}

ValidationReport validate_timeline(const Catalog& catalog, const Scenario& s, const std::string& timeline) {
  const TimelineSummary t = read_horovod_timeline(timeline);
  const nlohmann::json p = predict_isolated(catalog, s);
  ValidationReport r;
  r.title = "Horovod timeline " + timeline + " vs predicted: " + s.name;
  if (t.truncated)
    r.notes.push_back(timeline + " ends mid-array (a run stopped, or the file cut): read up to its last whole event, " +
                      std::to_string(t.buffers.size()) + " allreduce spans");
  const std::string name = std::filesystem::path(timeline).filename().string();
  const auto& cols = p["collectives"];
  double predicted_total = 0;
  for (const auto& c : cols) predicted_total += c["end_s"].get<double>() - c["start_s"].get<double>();
  const double predicted_mean = cols.empty() ? 0 : predicted_total / cols.size();
  if (t.iteration_s > 0)
    r.cases.push_back({name, "iteration_time_s", p["iteration_time_s"].get<double>(), t.iteration_s});
  r.cases.push_back(
      {name, "fusion_buffers_per_iteration", static_cast<double>(cols.size()), t.buffers_per_iteration()});
  r.cases.push_back({name, "mean_allreduce_s", predicted_mean, t.mean_buffer_s()});
  r.cases.push_back({name, "allreduce_s_per_iteration", predicted_total,
                     t.iterations ? t.mean_buffer_s() * t.buffers.size() / t.iterations : 0});
  return r;
}

namespace {

// The few-shot cases: each against the zero-shot prediction of the same run, then what each fit found.
std::string few_shot_table(const ValidationReport& r) {
  if (r.few_shot.empty()) return "";
  std::ostringstream o;
  char line[256];
  o << "  few-shot: each series calibrated on its runs of up to " << r.few_shot_nodes
    << " nodes (calibrate --runs), its larger runs predicted with the fitted figures\n";
  std::snprintf(line, sizeof line, "  %-32s %-22s %14s %14s %9s %11s\n", "case", "metric", "predicted", "measured",
                "error", "zero-shot");
  o << line;
  for (const auto& c : r.few_shot) {
    std::snprintf(line, sizeof line, "  %-32s %-22s %14.6g %14.6g %+8.1f%% %+10.1f%%\n", c.name.c_str(),
                  c.metric.c_str(), c.predicted, c.measured, c.error_pct(), c.zero_shot_error_pct());
    o << line;
  }
  double zero = 0;
  for (const auto& c : r.few_shot) zero += std::fabs(c.zero_shot_error_pct()) / r.few_shot.size();
  std::snprintf(line, sizeof line, "  few-shot MAPE %.1f %%, max |error| %.1f %% over %zu cases (zero-shot %.1f %%)\n",
                mape_of(r.few_shot), max_abs_error_of(r.few_shot), r.few_shot.size(), zero);
  o << line;
  if (banded_of(r.few_shot) > 0) {
    std::snprintf(line, sizeof line, "  few-shot bands: %d of %d inside, median width high / low %.2f\n",
                  static_cast<int>(std::lround(band_coverage_of(r.few_shot) * banded_of(r.few_shot))),
                  banded_of(r.few_shot), band_median_width_of(r.few_shot));
    o << line;
  }
  o << stack_table(r.few_shot);
  for (const auto& f : r.few_shot_fits) o << "    fitted " << f << "\n";
  return o.str();
}

}  // namespace

std::string validation_table(const ValidationReport& r) {
  std::ostringstream o;
  char line[256];
  std::vector<double> spreads;
  for (const auto& c : r.cases)
    if (c.spread_pct >= 0) spreads.push_back(c.spread_pct);
  o << "ringsim validate: " << r.title << "\n";
  std::snprintf(line, sizeof line, "  %-32s %-22s %14s %14s %9s%s\n", "case", "metric", "predicted", "measured",
                "error", spreads.empty() ? "" : "   runs' spread");
  o << line;
  for (const auto& c : r.cases) {
    std::snprintf(line, sizeof line, "  %-32s %-22s %14.6g %14.6g %+8.1f%%", c.name.c_str(), c.metric.c_str(),
                  c.predicted, c.measured, c.error_pct());
    o << line;
    if (c.spread_pct >= 0) {
      std::snprintf(line, sizeof line, " %13.1f%%", c.spread_pct);
      o << line;
    }
    o << "\n";
  }
  std::snprintf(line, sizeof line, "  MAPE %.1f %%, max |error| %.1f %% over %zu cases\n", r.mape(), r.max_abs_error(),
                r.cases.size());
  o << line;
  if (r.banded() > 0) {
    std::snprintf(line, sizeof line,
                  "  bands: %d of %d measurements inside their prediction's band (%.0f %%), median width high / low "
                  "%.2f\n",
                  static_cast<int>(std::lround(r.band_coverage() * r.banded())), r.banded(), r.band_coverage() * 100,
                  r.band_median_width());
    o << line;
    for (const auto& c : r.cases)
      if (c.has_band() && !c.in_band()) {
        std::snprintf(line, sizeof line, "    outside: %-32s band %.6g to %.6g, measured %.6g\n", c.name.c_str(), c.low,
                      c.high, c.measured);
        o << line;
      }
  }
  o << stack_table(r.cases);
  o << few_shot_table(r);
  for (const auto& n : r.notes) o << "  note: " << n << "\n";
  if (!spreads.empty()) {
    std::snprintf(line, sizeof line,
                  "  the measurements themselves: runs' spread (largest - smallest) / median, median %.1f %%, "
                  "max %.1f %%\n",
                  upper_median(spreads), *std::max_element(spreads.begin(), spreads.end()));
    o << line;
  }
  for (const auto& [name, d] : r.differences) o << "\n" << name << ":\n" << diff_table(d);
  return o.str();
}

namespace {

nlohmann::ordered_json few_shot_json(const ValidationReport& r) {
  nlohmann::ordered_json j{{"fit_nodes", r.few_shot_nodes},
                           {"mape_pct", mape_of(r.few_shot)},
                           {"max_abs_error_pct", max_abs_error_of(r.few_shot)}};
  if (banded_of(r.few_shot) > 0) {
    j["band_coverage"] = band_coverage_of(r.few_shot);
    j["band_median_width"] = band_median_width_of(r.few_shot);
  }
  nlohmann::ordered_json cases = nlohmann::ordered_json::array();
  for (const auto& c : r.few_shot) {
    nlohmann::ordered_json one{{"case", c.name},
                               {"metric", c.metric},
                               {"predicted", c.predicted},
                               {"measured", c.measured},
                               {"error_pct", c.error_pct()},
                               {"zero_shot_predicted", c.zero_shot},
                               {"zero_shot_error_pct", c.zero_shot_error_pct()}};
    if (c.has_band()) one.update({{"predicted_low", c.low}, {"predicted_high", c.high}, {"in_band", c.in_band()}});
    cases.push_back(one);
  }
  j["cases"] = cases;
  if (auto by = stack_json(r.few_shot); !by.empty()) j["by_stack"] = by;
  j["fits"] = r.few_shot_fits;
  return j;
}

}  // namespace

std::string validation_json(const ValidationReport& r) {
  nlohmann::ordered_json j;
  j["schema"] = "ringsim.validation/1";
  j["title"] = r.title;
  j["mape_pct"] = r.mape();
  j["max_abs_error_pct"] = r.max_abs_error();
  if (r.banded() > 0) {
    j["band_coverage"] = r.band_coverage();
    j["band_median_width"] = r.band_median_width();
  }
  nlohmann::ordered_json cases = nlohmann::ordered_json::array();
  for (const auto& c : r.cases)
    cases.push_back({{"case", c.name},
                     {"metric", c.metric},
                     {"predicted", c.predicted},
                     {"measured", c.measured},
                     {"error_pct", c.error_pct()}});
  for (std::size_t i = 0; i < r.cases.size(); ++i) {
    if (!r.cases[i].stack.empty()) cases[i]["stack"] = r.cases[i].stack;
    if (r.cases[i].spread_pct >= 0) cases[i]["measured_spread_pct"] = r.cases[i].spread_pct;
    if (r.cases[i].others_error_pct >= 0) cases[i]["measured_others_error_pct"] = r.cases[i].others_error_pct;
    if (r.cases[i].has_band()) {
      cases[i]["predicted_low"] = r.cases[i].low;
      cases[i]["predicted_high"] = r.cases[i].high;
      cases[i]["in_band"] = r.cases[i].in_band();
    }
  }
  j["cases"] = cases;
  if (auto by = stack_json(r.cases); !by.empty()) j["by_stack"] = by;
  if (!r.few_shot.empty()) j["few_shot"] = few_shot_json(r);
  if (!r.notes.empty()) j["notes"] = r.notes;
  if (!r.differences.empty()) {
    nlohmann::ordered_json diffs = nlohmann::ordered_json::array();
    for (const auto& [name, d] : r.differences) {
      nlohmann::ordered_json one{{"case", name}};
      one.update(diff_json(d));
      diffs.push_back(one);
    }
    j["differences"] = diffs;
  }
  return j.dump(2) + "\n";
}

namespace {

// The smallest and largest x of the grouped cases.
std::pair<double, double> x_range(const ValidationReport& r) {
  double lo = 1e300, hi = 0;
  for (const auto& c : r.cases)
    if (!c.group.empty()) lo = std::min(lo, c.x), hi = std::max(hi, c.x);
  return {lo, hi};
}

// A log axis where values span a decade or more.
int log_base_for(double lo, double hi) { return lo > 0 && hi / lo >= 10 ? 10 : 0; }

// Grouped cases of the first case's metric against x: predicted as lines, measured as open circles.
PlotPanel grouped_panel(const ValidationReport& r, const std::string& metric, const std::vector<std::string>& groups) {
  PlotPanel pn{
      metric + " against " + r.x_label + " (lines: predicted, circles: measured)", r.x_label, metric, 0, 0, {}, {}, {}};
  double lo = 1e300, hi = 0;
  for (std::size_t g = 0; g < groups.size(); ++g) {
    PlotSeries pred{groups[g] + " predicted", "linespoints pt 7 ps 0.8", static_cast<int>(g) + 1, {}, {}};
    PlotSeries meas{groups[g] + " measured", "points pt 6 ps 1.6", static_cast<int>(g) + 1, {}, {}};
    std::vector<const ValidationCase*> cs;
    for (const auto& c : r.cases)
      if (c.group == groups[g] && c.metric == metric) cs.push_back(&c);
    std::stable_sort(cs.begin(), cs.end(), [](auto* a, auto* b) { return a->x < b->x; });
    for (const auto* c : cs) {
      pred.rows.push_back({c->x, c->predicted});
      meas.rows.push_back({c->x, c->measured});
      lo = std::min(lo, c->x);
      hi = std::max(hi, c->x);
    }
    pn.series.push_back(std::move(pred));
    pn.series.push_back(std::move(meas));
  }
  pn.x_log_base = lo > 0 && hi / lo >= 4 ? 2 : 0;
  return pn;
}

// The signed error of every grouped case against x, a colour per group (among many, per group family: the
// group's first word, a machine or a source), with the +/- 10 % band: where errors grow with scale.
PlotPanel error_panel(const ValidationReport& r, bool few_groups) {
  PlotPanel pn{"signed error (predicted / measured - 1) against " + r.x_label,
               r.x_label,
               "error (%)",
               0,
               0,
               {},
               {"0 with lines lw 1.5 lc rgb 'black' notitle", "10 with lines dt 2 lc rgb '#888888' title \"+/- 10 %\"",
                "-10 with lines dt 2 lc rgb '#888888' notitle"},
               {}};
  std::vector<std::string> families;
  double lo = 1e300, hi = 0;
  for (const auto& c : r.cases) {
    if (c.group.empty() || c.measured == 0) continue;
    const std::string family = few_groups ? c.group : c.group.substr(0, c.group.find(' '));
    auto it = std::find(families.begin(), families.end(), family);
    if (it == families.end()) {
      families.push_back(family);
      pn.series.push_back({family, "points pt 7 ps 1.1", static_cast<int>(families.size()), {}, {}});
      it = families.end() - 1;
    }
    pn.series[static_cast<std::size_t>(it - families.begin())].rows.push_back({c.x, c.error_pct()});
    lo = std::min(lo, c.x);
    hi = std::max(hi, c.x);
  }
  pn.x_log_base = lo > 0 && hi / lo >= 4 ? 2 : 0;
  return pn;
}

// Every case, predicted against measured, a colour per metric; on the line y = x a prediction is exact.
PlotPanel agreement_panel(const ValidationReport& r) {
  PlotPanel pn{"predicted against measured (above the line: predicted higher), each case in its metric's unit",
               "measured",
               "predicted",
               0,
               0,
               {},
               {},
               {}};
  std::vector<std::string> metrics;
  double lo = 1e300, hi = 0;
  for (const auto& c : r.cases) {
    if (std::find(metrics.begin(), metrics.end(), c.metric) == metrics.end()) metrics.push_back(c.metric);
    for (double v : {c.predicted, c.measured})
      if (v > 0) lo = std::min(lo, v), hi = std::max(hi, v);
  }
  for (std::size_t m = 0; m < metrics.size(); ++m) {
    PlotSeries s{metrics[m], "points pt 7 ps 1.1", static_cast<int>(m) + 1, {}, {}};
    for (const auto& c : r.cases)
      if (c.metric == metrics[m] && c.measured > 0 && c.predicted > 0) s.rows.push_back({c.measured, c.predicted});
    pn.series.push_back(std::move(s));
  }
  if (hi <= 0) lo = 1, hi = 10;
  pn.x_log_base = pn.y_log_base = log_base_for(lo, hi);
  char range[96];
  std::snprintf(range, sizeof range, "[%.6g:%.6g]", pn.x_log_base ? lo / 1.3 : 0.0, hi * 1.1);
  pn.setup = {std::string("set xrange ") + range, std::string("set yrange ") + range};
  pn.functions = {"x with lines lw 1.5 lc rgb 'black' title \"predicted = measured\"",
                  "1.1*x with lines dt 2 lc rgb '#888888' title \"+/- 10 %\"",
                  "0.9*x with lines dt 2 lc rgb '#888888' notitle"};
  return pn;
}

}  // namespace

Plot validation_plot(const ValidationReport& r) {
  Plot p;
  p.title = "ringsim validate: " + r.title;
  p.source = "ringsim validate --plot: predictions next to measurements";
  const std::string metric = r.cases.empty() ? std::string() : r.cases.front().metric;
  std::vector<std::string> groups;
  for (const auto& c : r.cases)
    if (!c.group.empty() && c.metric == metric && std::find(groups.begin(), groups.end(), c.group) == groups.end())
      groups.push_back(c.group);
  // Each group's own lines where there are few enough to tell apart; the errors against x wherever grouped.
  if (!groups.empty() && groups.size() <= 6) p.panels.push_back(grouped_panel(r, metric, groups));
  if (!groups.empty()) p.panels.push_back(error_panel(r, groups.size() <= 6));
  for (auto& pn : p.panels)  // message sizes on x: named in bytes
    if (pn.x_label == "bytes" && pn.x_log_base > 0)
      pn.setup.push_back(byte_tics("x", x_range(r).first, x_range(r).second));
  p.panels.push_back(agreement_panel(r));
  return p;
}

namespace {

// "case / metric" -> recorded error, of one list of cases in a validation JSON.
std::map<std::string, double> recorded_errors(const nlohmann::json& cases) {
  std::map<std::string, double> out;
  for (const auto& c : cases)
    out[c.at("case").get<std::string>() + " / " + c.at("metric").get<std::string>()] = c.at("error_pct").get<double>();
  return out;
}

void compare(const std::vector<ValidationCase>& cases, const std::map<std::string, double>& recorded,
             const std::string& prefix, const std::string& recorded_json, double tolerance,
             std::vector<std::string>& out) {
  char buf[320];
  for (const auto& c : cases) {
    const std::string key = prefix + c.name + " / " + c.metric;
    auto it = recorded.find(key);
    if (it == recorded.end()) {
      out.push_back(key + ": not in " + recorded_json);
      continue;
    }
    if (std::fabs(c.error_pct()) > std::fabs(it->second) + tolerance) {
      std::snprintf(buf, sizeof buf, "%s: |error| %.1f %% exceeds the recorded %.1f %% by more than %.1f points",
                    key.c_str(), std::fabs(c.error_pct()), std::fabs(it->second), tolerance);
      out.push_back(buf);
    }
  }
}

}  // namespace

std::vector<std::string> regressions(const ValidationReport& r, const std::string& recorded_json, double tolerance) {
  const std::string expected = "not a validation JSON (ringsim validate --json)";
  const auto j = read_json_file(recorded_json, expected);
  std::map<std::string, double> recorded, few_shot;
  try {
    recorded = recorded_errors(j.at("cases"));
    if (j.contains("few_shot"))
      for (const auto& [key, error] : recorded_errors(j.at("few_shot").at("cases")))
        few_shot["few-shot " + key] = error;
  } catch (const nlohmann::json::exception& e) {
    throw InputError({recorded_json, 0, 0, ""}, expected + ": " + e.what());
  }
  std::vector<std::string> out;
  compare(r.cases, recorded, "", recorded_json, tolerance, out);
  compare(r.few_shot, few_shot, "few-shot ", recorded_json, tolerance, out);
  return out;
}

}  // namespace ringsim
