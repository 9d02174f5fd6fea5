#include "validate/local_validation.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <stdexcept>

#include "load/input_error.h"
#include "load/scenario.h"
#include "load/units.h"
#include "report/output_file.h"
#include "report/progress.h"
#include "schedule/compute_model.h"
#include "validate/calibration_fit.h"
#include "validate/json_file.h"
#include "validate/placement.h"

namespace ringsim {

namespace {

std::string shell_quoted(const std::string& s) {
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
            Progress& progress) {
  const std::string cmd = shell_quoted(mpirun) + " -n " + std::to_string(processes) + " --oversubscribe " + args +
                          " > " + shell_quoted(log_file) + " 2>&1";
  const int status = std::system(cmd.c_str());
  if (status != 0) {
    std::ifstream in(log_file);
    std::string tail((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (tail.size() > 2000) tail = "..." + tail.substr(tail.size() - 2000);
    throw std::runtime_error("validate --local: this run failed (status " + std::to_string(status) + "):\n  " + cmd +
                             "\n" + tail);
  }
  progress.done("$ mpirun -n " + std::to_string(processes) + " " + args);
}

// A case's name without its run's suffix: "bench_2_ranks_run3.json 1 MiB" -> "bench_2_ranks.json 1 MiB".
std::string run_free_name(std::string n) {
  const auto at = n.find("_run");
  if (at != std::string::npos) n.erase(at, n.find_first_of(".", at) - at);
  return n;
}

// Per run, on average: the prediction's MAPE, and each case's measurement against the median of the
// other runs' (cases measured in three runs or more): what a prediction that knew the typical run exactly
// would miss a run by, the measurements' own floor for the error.
std::string per_run_floor(const std::vector<ValidationReport>& runs) {
  std::map<std::pair<std::string, std::string>, std::vector<std::pair<std::size_t, double>>> measured;
  for (std::size_t r = 0; r < runs.size(); ++r)
    for (const auto& c : runs[r].cases) measured[{run_free_name(c.name), c.metric}].emplace_back(r, c.measured);
  double model = 0, floor = 0;
  int counted = 0;
  for (std::size_t r = 0; r < runs.size(); ++r) {
    double sum = 0;
    int n = 0;
    for (const auto& [key, values] : measured) {
      std::vector<double> v;
      std::size_t mine = values.size();
      for (const auto& [run, m] : values) {
        if (run == r) mine = v.size();
        v.push_back(m);
      }
      if (mine == values.size()) continue;  // not measured in this run
      if (const double e = against_others_pct(v, mine); e >= 0) {
        sum += e;
        ++n;
      }
    }
    if (n == 0) continue;
    model += runs[r].mape();
    floor += sum / n;
    ++counted;
  }
  if (counted == 0) return {};
  char line[300];
  std::snprintf(line, sizeof line,
                "per run, on average over %d runs: the prediction's MAPE %.1f %%; each measurement against the "
                "median of the other runs' %.1f %% (what a prediction of the typical run misses a run by)",
                counted, model / counted, floor / counted);
  return line;
}

// The cases of every run, each predicted from that run's own calibration, as one report: per case (the
// run's suffix dropped from its name) the run whose error is the median, and the spread of the measured
// values over the runs. A shared machine changes state between runs, visibly in every measurement of a
// run (validate/HISTORY.md), so a run's measurements are predicted from the calibration taken just before
// them, and the error is a ratio within one run.
ValidationReport median_over_runs(std::vector<ValidationReport> runs) {
  std::map<std::pair<std::string, std::string>, std::vector<std::pair<const ValidationCase*, std::size_t>>> by_case;
  std::vector<std::pair<std::string, std::string>> order;
  for (std::size_t r = 0; r < runs.size(); ++r)
    for (auto& c : runs[r].cases) {
      c.name = run_free_name(c.name);
      auto& v = by_case[{c.name, c.metric}];
      if (v.empty()) order.emplace_back(c.name, c.metric);
      v.emplace_back(&c, r);
    }
  ValidationReport out;
  if (!runs.empty()) out.x_label = runs.front().x_label;  // the runs' cases are the same
  for (const auto& key : order) {
    auto v = by_case.at(key);
    std::sort(v.begin(), v.end(),
              [](const auto& a, const auto& b) { return a.first->error_pct() < b.first->error_pct(); });
    const auto [median, run] = v[(v.size() - 1) / 2];
    ValidationCase c = *median;
    std::vector<double> measured;
    for (const auto& [m, r] : v) measured.push_back(m->measured);
    c.spread_pct = spread_pct(measured);
    c.others_error_pct = others_error_pct(measured);
    out.cases.push_back(c);
    // The part-by-part comparison of a result file: the one of the run whose iteration is compared.
    if (key.second == "iteration_time_s")
      for (auto& [name, diff] : runs[run].differences)
        out.differences.emplace_back(run_free_name(name), std::move(diff));
  }
  return out;
}

// The scenario's single-GPU rate sets the stand-in compute; the optimizer update is this machine's (its
// calibrated memory rate), on top: a slow machine's update would otherwise leave no time for compute.
std::optional<std::string> stand_in_rate(const Catalog& catalog, const Scenario& base, const std::string& overlay) {
  if (!base.model.images_per_sec_single_gpu) return std::nullopt;
  Catalog calibrated = catalog;
  calibrated.apply_overlay(overlay);
  const double update =
      optimizer_update_s(calibrated.model(base.model.name), calibrated.gpu(calibrated.sku(base.cluster.sku).gpu));
  const double compute = base.model.batch_per_gpu / *base.model.images_per_sec_single_gpu;
  char set[96];
  std::snprintf(set, sizeof set, "model.images_per_sec_single_gpu=%.17g",
                base.model.batch_per_gpu / (compute + update));
  return std::string(set);
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
  const std::string real = shell_quoted(o.real_binary);
  const std::string size = shell_quoted(o.max_bytes);
  log << "ringsim validate --local: " << cores << " cores, files in " << work.string() << "\n";

  const int repeats = std::max(1, o.repeats);
  auto run_file = [&](const std::string& name, int run) {
    return (work / (name + (repeats > 1 ? "_run" + std::to_string(run) : std::string()) + ".json")).string();
  };

  // Training where every process has a core. Its compute stand-ins sleep, as the GPUs the model's ranks
  // stand for leave the host's cores to the communication: spinning, they take the core from their own
  // process's communication thread and slow its collectives (validate/HISTORY.md).
  const int train_ranks = std::max(2, std::min(o.ranks, cores));
  const std::string train_name = "train_" + std::to_string(train_ranks) + "_ranks";
  Scenario two = base;
  two.cluster.gpus_per_node = 2;
  auto write_overlay = [&](const std::vector<std::string>& data, const std::string& file, double nearest_ns) {
    const CalibrationResult fit = calibrate(catalog, two, {data, {}, nearest_ns});
    write_file_atomically(file, fit.overlay_yaml + "skus:\n  " + sku.name + ":\n    vcpus: " + std::to_string(cores) +
                                    "   # sysconf(_SC_NPROCESSORS_ONLN) on this machine\n");
    return fit;
  };

  // Each run: 1. calibrate on what the validation does not measure (2 processes exchanging messages, on
  // two cores and on one, and ping-pong; the reduction; memory copies); 2. measure what it did not fit on:
  // ring allreduce on 2..N processes, then training iterations of the scenario calibrated by this run (its
  // stand-ins last what the prediction's do); 3. predict each measurement from this run's calibration.
  // Calibration and bench probe where the processes' CPUs are (--probe-cores): a VM's vCPUs move for
  // spells to cores that share no cache, where exchanges run several times slower, so samples count only
  // where the CPUs were as near as the validation has seen them (validate/placement.h).
  struct Run {
    std::string overlay;
    std::vector<std::string> measured;
    std::vector<std::string> sets;
    double nearest_ns = 0;  // the nearest probe its calibration was fitted with
  };
  std::vector<std::string> calibrations;
  std::vector<Run> runs;
  PlacementFilter seen;  // every launch's probes so far
  // Each launch waits from its first sample for the CPUs to be as near as earlier launches saw them.
  auto probe_args = [&] {
    if (!seen.active()) return std::string(" --probe-cores");
    char nearest[64];
    std::snprintf(nearest, sizeof nearest, "%.1f", seen.nearest_ns());
    return std::string(" --probe-cores --core-to-core-nearest ") + nearest;
  };
  double waited_s = 0;
  // A launch's probes: its nearest, and how long it waited for the CPUs to be near.
  auto probes_of = [&](const std::string& file) {
    const auto j = read_json_file(file);
    try {
      seen.add_file(j);
      if (j.contains("core_to_core")) waited_s += j.at("core_to_core").at("waited_s").get<double>();
    } catch (const nlohmann::json::exception& e) {
      throw InputError({file, 0, 0, ""}, std::string("malformed core_to_core block: ") + e.what());
    }
  };
  // Each run launches a calibration, a bench per process count and a training.
  Progress progress("ringsim validate --local", "launches", static_cast<std::size_t>(repeats * (o.ranks + 1)), log);
  for (int run = 1; run <= repeats; ++run) {
    Run r;
    const std::string data = run_file("calibration", run);
    calibrations.push_back(data);
    r.overlay = std::filesystem::absolute(
                    work / ("overlay" + (repeats > 1 ? "_run" + std::to_string(run) : std::string()) + ".yaml"))
                    .string();
    auto calibrate_run = [&] {
      launch(mpirun, 2, real + " calibrate" + probe_args() + " -e " + size + " --json " + shell_quoted(data),
             (work / "calibrate.log").string(), progress);
      probes_of(data);
      r.nearest_ns = seen.nearest_ns();
      write_overlay({data}, r.overlay, r.nearest_ns);
    };
    calibrate_run();
    for (int p = 2; p <= o.ranks; ++p) {
      r.measured.push_back(run_file("bench_" + std::to_string(p) + "_ranks", run));
      launch(mpirun, p,
             real + " bench" + probe_args() + " -b 64K -e " + size + " -f 2 -n 10 -w 3 --no-baseline --json " +
                 shell_quoted(r.measured.back()),
             (work / "bench.log").string(), progress);
      probes_of(r.measured.back());
    }
    // A calibration taken before the launches had seen the CPUs this near measured the far placement
    // (its launch began there and it lasted): taken again, now waiting for the near one.
    if (seen.active() && r.nearest_ns > seen.limit_ns()) {
      progress.note("  (run " + std::to_string(run) + "'s calibration was taken with the CPUs " +
                    std::to_string(static_cast<int>(r.nearest_ns)) + " ns apart, its benches " +
                    std::to_string(static_cast<int>(seen.nearest_ns())) + " ns: calibrating again)");
      progress.add(1);
      calibrate_run();
    }
    r.sets = {"cluster.gpus_per_node=" + std::to_string(train_ranks), "calibration=" + r.overlay};
    if (auto rate = stand_in_rate(catalog, base, r.overlay)) r.sets.push_back(*rate);
    std::string set_args;
    for (const auto& v : r.sets) set_args += " --set " + shell_quoted(v);
    r.measured.push_back(run_file(train_name, run));
    launch(mpirun, train_ranks,
           real + " train" + probe_args() + " " + shell_quoted(o.scenario_file) + set_args +
               " --compute-stand-in sleep --iterations " + std::to_string(o.train_iterations) + " --warmup 1 --json " +
               shell_quoted(r.measured.back()),
           (work / "train.log").string(), progress);
    runs.push_back(std::move(r));
  }

  // Each run's measurements predicted from its calibration, with the nearest probe of all the launches: a
  // run whose calibration was fitted before its launches had seen the CPUs that near measured another
  // placement, and is left out.
  std::vector<ValidationReport> reports;
  std::vector<std::string> notes;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const Run& r = runs[i];
    const std::string run = "run " + std::to_string(i + 1);
    if (seen.active() && r.nearest_ns > seen.limit_ns()) {
      char line[200];
      std::snprintf(line, sizeof line,
                    "%s left out: its calibration's nearest probe was %.0f ns, more than %.0f ns (the nearest of all "
                    "launches, %.0f ns, times %g)",
                    run.c_str(), r.nearest_ns, seen.limit_ns(), seen.nearest_ns(), seen.limit_ns() / seen.nearest_ns());
      notes.push_back(line);
      continue;
    }
    Catalog calibrated = catalog;
    calibrated.apply_overlay(r.overlay);
    std::vector<Override> overrides;
    for (const auto& v : r.sets) overrides.push_back(parse_override(v));
    reports.push_back(validate_measured(calibrated, load_scenario(o.scenario_file, calibrated, overrides), r.measured,
                                        seen.nearest_ns()));
    for (const auto& n : reports.back().notes) notes.push_back(run + ": " + n);
    write_file_atomically(run_file("validation", static_cast<int>(i + 1)), validation_json(reports.back()));
  }
  if (reports.empty())
    throw std::runtime_error(
        "validate --local: no run's calibration was taken with the CPUs as near as its launches "
        "later saw them (files in " +
        work.string() + ")");
  if (seen.active()) {
    char line[160];
    std::snprintf(line, sizeof line, "placement: the launches waited %.1f s in all for the CPUs to be near", waited_s);
    notes.push_back(line);
  }

  // The machine's calibration over all runs (the median per size), to keep: `ringsim predict --calibration`.
  const CalibrationResult fit = write_overlay(calibrations, (work / "overlay.yaml").string(), seen.nearest_ns());
  log << "  calibration over the " << repeats << " runs (" << (work / "overlay.yaml").string() << "):\n";
  for (const auto& f : fit.fits) log << "  fit " << fit_summary(f) << "\n";
  for (const auto& n : fit.notes) log << "  note: " << n << "\n";
  // The training's fusion buffers are costed from the calibration's largest exchange where their ring's
  // messages are larger, which predicts them too fast (validate/HISTORY.md): a note says so.
  double largest = 0;
  for (const auto& f : fit.fits)
    for (const auto& p : f.data)
      if (f.path_class == "same_socket" || f.path_class == "cross_socket") largest = std::max(largest, p.x_beta);
  const double message = base.communication.fusion_threshold_bytes / train_ranks;
  if (largest > 0 && message > largest)
    notes.push_back("the training's fusion buffers (" + format_bytes(base.communication.fusion_threshold_bytes) +
                    ") send messages of up to " + format_bytes(message) +
                    ", larger than the largest calibrated exchange (" + format_bytes(largest) +
                    "): their cost is extrapolated; raise --max-bytes");
  if (const std::string floor = per_run_floor(reports); !floor.empty()) notes.push_back(floor);
  ValidationReport r = median_over_runs(std::move(reports));
  r.notes = notes;
  r.title = "this machine (" + std::to_string(cores) + " cores), each run predicted from its own calibration (" +
            std::to_string(repeats) + " runs, the median error's shown): " + base.name;
  return r;
}

}  // namespace ringsim
