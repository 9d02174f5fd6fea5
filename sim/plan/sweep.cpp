#include "plan/sweep.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "load/catalog.h"
#include "load/scenario.h"
#include "load/units.h"
#include "load/yaml_reader.h"
#include "plan/charts.h"
#include "plan/point_runner.h"
#include "report/output_file.h"
#include "report/plot.h"

namespace ringsim {

namespace {

// "1 value", "2 values".
std::string count_of(std::size_t n, const std::string& noun) {
  return std::to_string(n) + " " + noun + (n == 1 ? "" : "s");
}

std::string scalar_text(const YamlField& f) {
  if (!f.is_scalar()) f.fail("expected a value (number, size, name)");
  return f.node().Scalar();
}

[[noreturn]] void too_many(const YamlField& f) {
  f.fail("the range has more than " + std::to_string(kMaxSweepPoints) +
         " values, more points than a sweep runs; use a larger step or factor");
}

std::vector<std::string> range_values(const YamlField& f) {
  f.require_map({"from", "to", "step", "factor"});
  const double from = f.get("from").number(-1e18, 1e18), to = f.get("to").number(-1e18, 1e18);
  const bool has_step = f.has("step"), has_factor = f.has("factor");
  if (has_step == has_factor) f.fail("a range needs exactly one of step or factor, e.g. {from: 1, to: 32, factor: 2}");
  std::vector<std::string> v;
  if (has_step) {
    const double step = f.get("step").positive_number();
    for (double x = from; x <= to * (1 + 1e-12); x += step) {
      if (v.size() == static_cast<std::size_t>(kMaxSweepPoints)) too_many(f);
      v.push_back(format_number(x));
    }
  } else {
    const double factor = f.get("factor").number(1.000001, 1e9);
    if (from <= 0) f.get("from").fail("a geometric range needs from > 0");
    for (double x = from; x <= to * (1 + 1e-12); x *= factor) {
      if (v.size() == static_cast<std::size_t>(kMaxSweepPoints)) too_many(f);
      v.push_back(format_number(x));
    }
  }
  if (v.empty()) f.fail("the range is empty (from > to)");
  return v;
}

void check_key(const std::string& key, const SourceLocation& where) {
  const auto& keys = scenario_keys();
  if (std::find(keys.begin(), keys.end(), key) == keys.end() || key == "sweep" || key == "plan")
    throw InputError(where, "sweep: unknown key '" + key + "'" + suggestion_suffix(key, keys));
}

const std::vector<std::string> kResultColumns = {"gpus",
                                                 "nodes",
                                                 "fidelity",
                                                 "iteration_time_s",
                                                 "images_per_sec",
                                                 "images_per_sec_per_gpu",
                                                 "scaling_efficiency",
                                                 "communication_time_s",
                                                 "exposed_communication_s",
                                                 "epoch_time_s",
                                                 "time_to_train_s",
                                                 "bottleneck_link",
                                                 "bottleneck_utilisation",
                                                 "data_wait_s",
                                                 "first_epoch_time_s",
                                                 "data_limited_by"};

std::vector<std::string> result_row(const nlohmann::json& j) {
  return {std::to_string(j["gpus"].get<int>()), std::to_string(j["nodes"].get<int>()), j["fidelity"].get<std::string>(),
          csv_number(j["iteration_time_s"]), csv_number(j["images_per_sec"]), csv_number(j["images_per_sec_per_gpu"]),
          csv_number(j["scaling_efficiency"]), csv_number(j["communication_time_s"]),
          csv_number(j["exposed_communication_s"]), csv_number(j["epoch_time_s"]), csv_number(j["time_to_train_s"]),
          j["bottleneck"]["link"].get<std::string>(), csv_number(j["bottleneck"]["utilisation"]),
          // The input pipeline (storage: section; synthetic data: no wait, epoch 1 = every epoch).
          csv_number(j["data_pipeline"]["steady_state"]["data_wait_s"]),
          csv_number(j["data_pipeline"]["first_epoch"]["epoch_time_s"]),
          j["data_pipeline"]["steady_state"]["limited_by"].get<std::string>()};
}

// Splits one CSV line (fields as csv_field writes them).
std::vector<std::string> split_csv(const std::string& line) {
  std::vector<std::string> out;
  std::string cur;
  bool quoted = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        cur += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        cur += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  out.push_back(cur);
  return out;
}

// This process's place when an MPI launcher (Open MPI, MPICH/PMI, Slurm) started several copies.
std::pair<int, int> launcher_rank() {
  for (auto [r, n] : {std::pair{"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"}, std::pair{"PMI_RANK", "PMI_SIZE"},
                      std::pair{"SLURM_PROCID", "SLURM_NTASKS"}}) {
    const char* rank = std::getenv(r);
    const char* size = std::getenv(n);
    if (rank && size && std::atoi(size) > 1) return {std::atoi(rank), std::atoi(size)};
  }
  return {0, 1};
}

// The chart of the rows: against GPUs where the sweep varies them, else against its first axis; a line
// per value of the other axes.
Plot sweep_chart(const std::string& scenario, const std::vector<SweepAxis>& axes,
                 const std::map<int, std::vector<std::string>>& rows, const std::string& noun) {
  const std::size_t gpus_col = 1 + axes.size(), ips_col = gpus_col + 4, per_gpu_col = gpus_col + 5,
                    eff_col = gpus_col + 6;
  std::set<std::string> gpu_counts;
  for (const auto& [idx, row] : rows) gpu_counts.insert(row[gpus_col]);
  const bool gpus_on_x = gpu_counts.size() > 1 || axes.empty();
  auto on_x = [&](std::size_t k) {
    return gpus_on_x ? axes[k].key == "cluster.nodes" || axes[k].key == "cluster.gpus_per_node" : k == 0;
  };
  std::vector<SweepChartPoint> points;
  for (const auto& [idx, row] : rows) {
    SweepChartPoint q;
    for (std::size_t k = 0; k < axes.size(); ++k)
      if (!on_x(k))
        q.series += (q.series.empty() ? "" : ", ") + axes[k].key.substr(axes[k].key.find('.') + 1) + "=" + row[1 + k];
    if (q.series.empty()) q.series = "predicted";
    q.x_text = gpus_on_x ? row[gpus_col] : row[1];
    const auto& values = axes.empty() ? std::vector<std::string>{} : axes[0].values;
    const auto pos = std::find(values.begin(), values.end(), q.x_text) - values.begin();
    char* end = nullptr;
    q.x = std::strtod(q.x_text.c_str(), &end);
    if (end != q.x_text.c_str() + q.x_text.size() || q.x_text.empty()) q.x = static_cast<double>(pos + 1);
    q.images_per_sec = std::stod(row[ips_col]);
    q.scaling_efficiency = std::stod(row[eff_col]);
    if (q.scaling_efficiency > 0) q.single_gpu_images_per_sec = std::stod(row[per_gpu_col]) / q.scaling_efficiency;
    points.push_back(q);
  }
  return sweep_plot("ringsim sweep: " + std::filesystem::path(scenario).filename().string(),
                    gpus_on_x ? "GPUs" : axes[0].key, gpus_on_x, points, noun);
}

}  // namespace

std::vector<SweepAxis> read_sweep_axes(const std::string& scenario_file, const std::vector<std::string>& cli_axes) {
  std::vector<SweepAxis> axes;
  auto doc = std::make_shared<YamlDocument>(YamlDocument::load_file(scenario_file, "scenario"));
  YamlField root = YamlField::root(doc);
  if (root.is_map()) {
    if (auto sw = root.find("sweep")) {
      if (!sw->is_map()) sw->fail("expected a mapping of scenario keys to value lists, e.g. cluster.nodes: [1, 2, 4]");
      sw->require_map();
      for (auto& [key, f] : sw->entries()) {
        SweepAxis a;
        a.key = key;
        a.where = f.location();
        check_key(key, a.where);
        if (f.is_sequence()) {
          for (auto& v : f.items()) {
            a.values.push_back(scalar_text(v));
            a.value_where.push_back(v.location());
          }
          if (a.values.empty()) f.fail("the list of values is empty");
        } else if (f.is_map()) {
          a.values = range_values(f);
        } else {
          f.fail("expected a list of values or a range {from, to, step|factor}");
        }
        axes.push_back(std::move(a));
      }
    }
  }
  for (const auto& arg : cli_axes) {
    SourceLocation where{"", 0, 0, "--sweep " + arg};
    const auto eq = arg.find('=');
    if (eq == std::string::npos || eq == 0)
      throw InputError(where, "expected KEY=V1,V2,... e.g. --sweep cluster.nodes=1,2,4");
    SweepAxis a;
    a.key = arg.substr(0, eq);
    a.where = where;
    check_key(a.key, where);
    std::stringstream vals(arg.substr(eq + 1));
    for (std::string v; std::getline(vals, v, ',');) {
      if (v.empty()) throw InputError(where, a.key + ": an empty value in the list");
      a.values.push_back(v);
    }
    if (a.values.empty()) throw InputError(where, a.key + ": the list of values is empty");
    axes.push_back(std::move(a));
  }
  std::set<std::string> seen;
  for (const auto& a : axes)
    if (!seen.insert(a.key).second) throw InputError(a.where, "sweep: axis '" + a.key + "' is given twice");
  return axes;
}

std::vector<SweepPoint> expand_sweep(const std::vector<SweepAxis>& axes, bool zip) {
  std::vector<SweepPoint> pts;
  if (axes.empty()) return {{0, {}}};
  if (!zip) {
    double total = 1;
    std::string sizes;
    for (const auto& a : axes) {
      total *= static_cast<double>(a.values.size());
      sizes += (sizes.empty() ? "" : " x ") + std::to_string(a.values.size()) + " (" + a.key + ")";
    }
    if (total > kMaxSweepPoints) {
      char n[32];
      std::snprintf(n, sizeof n, "%.3g", total);
      throw InputError(axes.front().where, "sweep: " + sizes + " = " + n + " points; a sweep runs at most " +
                                               std::to_string(kMaxSweepPoints) +
                                               " (each is a `ringsim predict`): narrow an axis or split the sweep");
    }
  }
  if (zip) {
    for (const auto& a : axes)
      if (a.values.size() != axes[0].values.size())
        throw InputError(a.where, "--zip: axis '" + a.key + "' has " + count_of(a.values.size(), "value") + ", axis '" +
                                      axes[0].key + "' has " + count_of(axes[0].values.size(), "value") +
                                      "; zipped axes need as many values each");
    for (std::size_t i = 0; i < axes[0].values.size(); ++i) {
      SweepPoint p{static_cast<int>(i), {}};
      for (const auto& a : axes) p.values.push_back(a.values[i]);
      pts.push_back(p);
    }
    return pts;
  }
  std::vector<std::size_t> idx(axes.size(), 0);
  for (int n = 0;; ++n) {
    SweepPoint p{n, {}};
    for (std::size_t k = 0; k < axes.size(); ++k) p.values.push_back(axes[k].values[idx[k]]);
    pts.push_back(p);
    std::size_t k = axes.size();
    while (k > 0) {  // the last axis varies fastest
      --k;
      if (++idx[k] < axes[k].values.size()) break;
      idx[k] = 0;
      if (k == 0) return pts;
    }
  }
}

namespace {

using Rows = std::map<int, std::vector<std::string>>;  // point index -> CSV row

std::vector<std::string> point_sets(const SweepOptions& o, const std::vector<SweepAxis>& axes, const SweepPoint& p) {
  std::vector<std::string> sets = o.sets;
  for (std::size_t k = 0; k < axes.size(); ++k) sets.push_back(axes[k].key + "=" + p.values[k]);
  return sets;
}

// Every point must be a valid scenario before anything runs; a value the scenario refuses on its own is
// reported where the sweep gives it. Returns what the points' rates count ("samples" when models differ).
std::string check_points(const SweepOptions& o, const Catalog& catalog, const std::vector<SweepAxis>& axes,
                         const std::vector<SweepPoint>& points) {
  std::set<std::string> nouns;
  for (const auto& p : points) {
    std::vector<Override> ov;
    for (const auto& s : point_sets(o, axes, p)) ov.push_back(parse_override(s));
    try {
      nouns.insert(catalog.model(load_scenario(o.scenario, catalog, ov).model.name).sample_noun());
    } catch (const InputError& e) {
      for (std::size_t k = 0; k < axes.size(); ++k) {
        const auto& a = axes[k];
        if (e.where().origin != "--set " + a.key + "=" + p.values[k]) continue;
        const auto v = std::find(a.values.begin(), a.values.end(), p.values[k]) - a.values.begin();
        const SourceLocation at = static_cast<std::size_t>(v) < a.value_where.size() ? a.value_where[v] : a.where;
        throw InputError(at, "sweep value " + a.key + "=" + p.values[k] + ": " + e.message());
      }
      std::string at;
      for (std::size_t k = 0; k < axes.size(); ++k) at += (k ? ", " : "") + axes[k].key + "=" + p.values[k];
      throw InputError(axes.empty() ? e.where() : axes.front().where,
                       "sweep point " + std::to_string(p.index) + " (" + at + "): " + e.what());
    }
  }
  return nouns.size() == 1 ? *nouns.begin() : "samples";
}

std::vector<std::string> sweep_header(const std::vector<SweepAxis>& axes) {
  std::vector<std::string> header = {"point"};
  for (const auto& a : axes) header.push_back(a.key);
  header.insert(header.end(), kResultColumns.begin(), kResultColumns.end());
  return header;
}

// With --resume, the rows already in the CSV file (each checked against this sweep's points).
Rows resumed_rows(const SweepOptions& o, const std::vector<std::string>& header,
                  const std::vector<SweepPoint>& points) {
  Rows rows;
  std::error_code exists_error;
  if (!o.resume || !o.csv_file || !std::filesystem::exists(*o.csv_file, exists_error)) return rows;
  std::ifstream in(*o.csv_file);
  std::string line;
  std::getline(in, line);
  if (split_csv(line) != header)
    throw InputError({*o.csv_file, 1, 1, ""}, "--resume: the file's columns are not this sweep's");
  int line_no = 1;
  while (std::getline(in, line)) {
    ++line_no;
    auto f = split_csv(line);
    if (f.size() != header.size())
      throw InputError({*o.csv_file, line_no, 1, ""}, "--resume: a row with the wrong number of fields");
    const int idx = std::stoi(f[0]);
    if (idx < 0 || idx >= static_cast<int>(points.size()) ||
        !std::equal(points[idx].values.begin(), points[idx].values.end(), f.begin() + 1))
      throw InputError({*o.csv_file, line_no, 1, ""}, "--resume: row for a point this sweep does not have");
    rows[idx] = f;
  }
  return rows;
}

std::string csv_line(const std::vector<std::string>& fields) {
  std::string out;
  for (std::size_t i = 0; i < fields.size(); ++i) out += (i ? "," : "") + csv_field(fields[i]);
  return out + "\n";
}

// Under an MPI launcher rank 0 gathers the other ranks' rows through part files next to its output (a
// shared file system, as on any cluster); the others write theirs there.
void exchange_parts(const SweepOptions& o, int rank, int size, const std::vector<int>& mine, Rows& rows) {
  const std::string part_base = o.csv_file ? *o.csv_file : *o.json_file;  // one of them, checked before
  auto part = [&](int r) { return part_base + ".part" + std::to_string(r); };
  if (rank != 0) {
    std::string text;
    for (int idx : mine) text += csv_line(rows[idx]);
    write_file_atomically(part(rank), text);
    return;
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::hours(24);
  for (int r = 1; r < size; ++r) {
    while (!std::filesystem::exists(part(r))) {
      if (std::chrono::steady_clock::now() > deadline)
        throw std::runtime_error("sweep: rank " + std::to_string(r) + " wrote no results (" + part(r) + ")");
      usleep(100000);
    }
    std::ifstream in(part(r));
    for (std::string line; std::getline(in, line);) {
      auto f = split_csv(line);
      rows[std::stoi(f[0])] = f;
    }
    in.close();
    std::filesystem::remove(part(r));
  }
}

std::string sweep_json(const SweepOptions& o, const std::vector<SweepAxis>& axes, const Rows& rows) {
  nlohmann::ordered_json j = {{"schema", "ringsim.sweep/1"}, {"scenario", o.scenario}, {"zip", o.zip}};
  nlohmann::ordered_json ax = nlohmann::ordered_json::array();
  for (const auto& a : axes) ax.push_back({{"key", a.key}, {"values", a.values}});
  j["axes"] = ax;
  nlohmann::ordered_json pts = nlohmann::ordered_json::array();
  for (const auto& [idx, row] : rows) {
    nlohmann::ordered_json pt = {{"point", idx}};
    nlohmann::ordered_json vals;
    for (std::size_t k = 0; k < axes.size(); ++k) vals[axes[k].key] = row[1 + k];
    pt["values"] = vals;
    nlohmann::ordered_json res;
    for (std::size_t c = 0; c < kResultColumns.size(); ++c) res[kResultColumns[c]] = row[1 + axes.size() + c];
    pt["result"] = res;
    pts.push_back(pt);
  }
  j["points"] = pts;
  return j.dump(2) + "\n";
}

}  // namespace

int run_sweep(const SweepOptions& o) {
  const Catalog catalog = Catalog::load(o.catalog_dir);
  const std::vector<SweepAxis> axes = read_sweep_axes(o.scenario, o.axes);
  const std::vector<SweepPoint> points = expand_sweep(axes, o.zip);
  std::vector<NamedFile> out;
  add_file(out, "--csv", o.csv_file);  // read first with --resume, and meant to be rewritten
  add_file(out, "--json", o.json_file);
  add_plot_files(out, o.plot_file);
  check_outputs(run_inputs(o.catalog_dir, o.scenario), out);
  if (o.plot_file) check_plot_file(*o.plot_file);
  const std::string noun = check_points(o, catalog, axes, points);
  const std::vector<std::string> header = sweep_header(axes);
  Rows rows = resumed_rows(o, header, points);

  // Under an MPI launcher every copy runs every size-th point; rank 0 writes the outputs.
  const auto [rank, size] = launcher_rank();
  if (size > 1 && !o.csv_file && !o.json_file)
    throw InputError({}, "sweep: under an MPI launcher give --csv or --json (rank 0 gathers the points there)");
  std::vector<int> todo;
  std::vector<PredictPoint> jobs;
  for (const auto& p : points)
    if (!rows.count(p.index) && p.index % size == rank) {
      todo.push_back(p.index);
      jobs.push_back({p.index, point_sets(o, axes, p)});
    }
  // The missing points, `jobs` at a time, as `ringsim predict` children.
  const PointRunOptions run{.self = o.self,
                            .catalog_dir = o.catalog_dir,
                            .scenario = o.scenario,
                            .fidelity = o.fidelity,
                            .jobs = o.jobs,
                            .label = "sweep",
                            .band = false};
  run_predict_points(run, jobs, [&](int idx, const nlohmann::json& j) {
    std::vector<std::string> row = {std::to_string(idx)};
    row.insert(row.end(), points[idx].values.begin(), points[idx].values.end());
    for (auto& f : result_row(j)) row.push_back(f);
    rows[idx] = row;
  });
  if (size > 1) exchange_parts(o, rank, size, todo, rows);
  if (rank != 0) return 0;

  // Outputs, in point order.
  std::string csv = csv_line(header);
  for (const auto& [idx, row] : rows) csv += csv_line(row);
  if (o.csv_file) write_file_atomically(*o.csv_file, csv);
  if (o.json_file) write_file_atomically(*o.json_file, sweep_json(o, axes, rows));
  if (o.plot_file) write_plot(*o.plot_file, sweep_chart(o.scenario, axes, rows, noun));
  if (!o.csv_file && !o.json_file) std::cout << csv;
  return 0;
}

}  // namespace ringsim
