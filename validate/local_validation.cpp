#include "validate/local_validation.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>

#include "load/input_error.h"
#include "load/scenario.h"
#include "load/units.h"
#include "report/output_file.h"
#include "validate/calibration_fit.h"
#include "validate/json_file.h"

namespace ringsim {

namespace {

std::string quoted(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

std::string find_in_path(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::istringstream dirs(path ? path : "");
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    const std::filesystem::path p = std::filesystem::path(dir.empty() ? "." : dir) / name;
    if (access(p.c_str(), X_OK) == 0) return p.string();
  }
  return {};
}

// One mpirun launch; its output goes to LOG_FILE. Throws with the command and the log's tail on failure.
void launch(const std::string& mpirun, int processes, const std::string& args, const std::string& log_file,
            std::ostream& log) {
  const std::string cmd = quoted(mpirun) + " -n " + std::to_string(processes) + " --oversubscribe " + args + " > " +
                          quoted(log_file) + " 2>&1";
  log << "  $ mpirun -n " << processes << " " << args << "\n" << std::flush;
  const int status = std::system(cmd.c_str());
  if (status != 0) {
    std::ifstream in(log_file);
    std::string tail((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (tail.size() > 2000) tail = "..." + tail.substr(tail.size() - 2000);
    throw std::runtime_error("validate --local: this run failed (status " + std::to_string(status) + "):\n  " + cmd +
                             "\n" + tail);
  }
}

using RunFile = std::function<std::string(const std::string&, int)>;

// The bench runs merged into NAME.json: per size the run with the median busbw, and every run's busbw
// (`busbw_runs_gbps`, which validate shows as the spread).
std::string median_bench(const std::filesystem::path& work, const std::string& name, int repeats,
                         const RunFile& run_file) {
  std::vector<nlohmann::json> runs;
  for (int run = 1; run <= repeats; ++run) runs.push_back(read_json_file(run_file(name, run)));
  nlohmann::json merged = runs.front();
  for (std::size_t i = 0; i < merged["rows"].size(); ++i) {
    std::vector<nlohmann::json> rows;
    for (const auto& j : runs) {
      rows.push_back(j.at("rows").at(i));
      if (rows.back().at("bytes") != merged["rows"][i]["bytes"])
        throw std::runtime_error("validate --local: the runs of " + name + " measured different sizes");
    }
    std::sort(rows.begin(), rows.end(),
              [](const nlohmann::json& a, const nlohmann::json& b) { return a["busbw_gbps"] < b["busbw_gbps"]; });
    nlohmann::json row = rows[rows.size() / 2];
    row["busbw_runs_gbps"] = nlohmann::json::array();
    for (const auto& j : runs) row["busbw_runs_gbps"].push_back(j["rows"][i]["busbw_gbps"]);
    merged["rows"][i] = row;
  }
  const std::string f = (work / (name + ".json")).string();
  if (repeats > 1) write_file_atomically(f, merged.dump(2) + "\n");
  return f;
}

// The train run with the median iteration time, as NAME.json; each compared metric's value per run.
std::string median_train(const std::filesystem::path& work, const std::string& name, int repeats,
                         const RunFile& run_file, std::map<std::string, std::vector<double>>& metric_runs) {
  std::vector<std::pair<double, std::string>> runs;
  for (int run = 1; run <= repeats; ++run) {
    const nlohmann::json j = read_json_file(run_file(name, run));
    for (const char* m : {"iteration_time_s", "images_per_sec", "communication_time_s"})
      if (j.contains(m) && j[m].is_number()) metric_runs[m].push_back(j[m].get<double>());
    runs.emplace_back(j.at("iteration_time_s").get<double>(), run_file(name, run));
  }
  std::sort(runs.begin(), runs.end());
  const std::string f = (work / (name + ".json")).string();
  if (repeats > 1)
    std::filesystem::copy_file(runs[runs.size() / 2].second, f, std::filesystem::copy_options::overwrite_existing);
  return f;
}

}  // namespace

ValidationReport validate_local(const Catalog& catalog, const LocalValidationOptions& o, std::ostream& log) {
  if (o.ranks < 2) throw InputError({}, "validate --local: -n must be at least 2 (an allreduce needs two processes)");
  const std::string mpirun = find_in_path("mpirun");
  if (mpirun.empty())
    throw InputError({}, "validate --local: mpirun is not on PATH (Debian: apt-get install openmpi-bin)");
  if (access(o.real_binary.c_str(), X_OK) != 0)
    throw InputError({}, "validate --local: no ringsim-real at " + o.real_binary + " (build it: cmake --build build)");
  if (geteuid() == 0) {  // Open MPI refuses root without these
    setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
    setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
  }
  const Scenario base = load_scenario(o.scenario_file, catalog, {});
  const SkuSpec& sku = catalog.sku(base.cluster.sku);
  if (!catalog.gpu(sku.gpu).cpu_process)
    throw InputError({o.scenario_file, 0, 0, ""},
                     "validate --local needs a scenario whose SKU's ranks are CPU processes (sku: local-host), not '" +
                         base.cluster.sku + "'");
  if (base.cluster.nodes != 1) throw InputError({o.scenario_file, 0, 0, ""}, "validate --local runs on one node");
  if (o.ranks > sku.gpus)
    throw InputError({}, "validate --local: -n " + std::to_string(o.ranks) + " exceeds the " +
                             std::to_string(sku.gpus) + " process slots of " + sku.name);
  const long cores_found = sysconf(_SC_NPROCESSORS_ONLN);
  const int cores = static_cast<int>(std::max(1L, cores_found));
  const std::filesystem::path work(o.work_dir);
  std::filesystem::create_directories(work);
  const std::string real = quoted(o.real_binary);
  const std::string size = quoted(o.max_bytes);
  log << "ringsim validate --local: " << cores << " cores, files in " << work.string() << "\n";

  // 1. Calibrate on what the validation does not measure: ping-pong between 2 processes, the reduction.
  const std::string cal = (work / "calibration.json").string();
  launch(mpirun, 2, real + " calibrate -e " + size + " --json " + quoted(cal), (work / "calibrate.log").string(), log);
  Scenario two = base;
  two.cluster.gpus_per_node = 2;
  const CalibrationResult fit = calibrate(catalog, two, {{cal}, {}});
  for (const auto& f : fit.fits) log << "  fit " << fit_summary(f) << "\n";
  const std::string overlay = (work / "overlay.yaml").string();
  write_file_atomically(overlay, fit.overlay_yaml + "skus:\n  " + sku.name + ":\n    vcpus: " + std::to_string(cores) +
                                     "   # sysconf(_SC_NPROCESSORS_ONLN) on this machine\n");
  Catalog calibrated = catalog;
  calibrated.apply_overlay(overlay);

  // 2. Measure: ring allreduce on 2..N processes, then training iterations; `repeats` runs of each, one
  // run of every measurement in turn.
  // Training where every process has a core: the stand-in compute spins, and processes that wait for a
  // core would measure the scheduler rather than the collectives.
  const int train_ranks = std::max(2, std::min(o.ranks, cores));
  const std::string set = "cluster.gpus_per_node=" + std::to_string(train_ranks);
  const std::string train_name = "train_" + std::to_string(train_ranks) + "_ranks";
  const int repeats = std::max(1, o.repeats);
  auto run_file = [&](const std::string& name, int run) {
    return (work / (name + (repeats > 1 ? "_run" + std::to_string(run) : std::string()) + ".json")).string();
  };
  for (int run = 1; run <= repeats; ++run) {
    for (int p = 2; p <= o.ranks; ++p) {
      const std::string name = "bench_" + std::to_string(p) + "_ranks";
      launch(mpirun, p,
             real + " bench -b 64K -e " + size + " -f 2 -n 10 -w 3 --no-baseline --json " + quoted(run_file(name, run)),
             (work / (name + ".log")).string(), log);
    }
    launch(mpirun, train_ranks,
           real + " train " + quoted(o.scenario_file) + " --set " + set + " --iterations " +
               std::to_string(o.train_iterations) + " --warmup 1 --json " + quoted(run_file(train_name, run)),
           (work / "train.log").string(), log);
  }
  std::vector<std::string> measured;
  for (int p = 2; p <= o.ranks; ++p)
    measured.push_back(median_bench(work, "bench_" + std::to_string(p) + "_ranks", repeats, run_file));
  std::map<std::string, std::vector<double>> train_runs;  // metric: its value in each run
  measured.push_back(median_train(work, train_name, repeats, run_file, train_runs));

  // 3. Predict each with the calibrated catalog.
  Scenario s = load_scenario(o.scenario_file, calibrated, {parse_override(set)});
  ValidationReport r = validate_measured(calibrated, s, measured);
  for (auto& c : r.cases)
    if (auto it = train_runs.find(c.metric); it != train_runs.end() && c.name == train_name + ".json")
      c.spread_pct = spread_pct(it->second);
  r.title = "this machine (" + std::to_string(cores) + " cores), calibrated on 2-process ping-pong: " + s.name;
  return r;
}

}  // namespace ringsim
