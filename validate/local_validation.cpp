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

#include "calibrate/calibrate.h"
#include "calibrate/placement.h"
#include "execute/estimate/child_process.h"
#include "load/input_error.h"
#include "load/json_file.h"
#include "load/scenario.h"
#include "load/units.h"
#include "report/output_file.h"
#include "report/progress.h"
#include "schedule/compute_model.h"

namespace ringsim {

namespace {

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

// One `validate --local`: each run's launches (calibration, a bench per process count, training), then
// each run's measurements predicted from its own calibration, then the machine's overlay over all runs.
class LocalValidation {
 public:
  LocalValidation(const Catalog& catalog, const LocalValidationOptions& o, std::ostream& log)
      : catalog_(catalog), o_(o), log_(log), repeats_(std::max(1, o.repeats)) {}

  ValidationReport run() {
    check_inputs();
    log_ << "ringsim validate --local: " << cores_ << " cores, files in " << work_.string() << "\n";
    progress_.emplace("ringsim validate --local", "launches", static_cast<std::size_t>(repeats_ * (o_.ranks + 1)),
                      log_);
    for (int run = 1; run <= repeats_; ++run) runs_.push_back(measure(run));
    progress_.reset();
    std::vector<std::string> notes;
    std::vector<ValidationReport> reports = predict_runs(notes);
    if (seen_.active()) {
      char line[160];
      std::snprintf(line, sizeof line, "placement: the launches waited %.1f s in all for the CPUs to be near",
                    waited_s_);
      notes.push_back(line);
    }
    machine_overlay(notes);
    if (const std::string floor = per_run_floor(reports); !floor.empty()) notes.push_back(floor);
    ValidationReport r = median_over_runs(std::move(reports));
    r.notes = notes;
    r.title = "this machine (" + std::to_string(cores_) + " cores), each run predicted from its own calibration (" +
              std::to_string(repeats_) + " runs, the median error's shown): " + base_.name;
    return r;
  }

 private:
  struct Run {
    std::string overlay;
    std::vector<std::string> measured;
    std::vector<std::string> sets;
    double nearest_ns = 0;  // the nearest probe its calibration was fitted with
  };

  // The tools, the scenario (CPU-process ranks on one node) and the work folder; throws InputError.
  void check_inputs() {
    if (o_.ranks < 2)
      throw InputError({}, "validate --local: -n must be at least 2 (an allreduce needs two processes)");
    mpirun_ = find_in_path("mpirun");
    if (mpirun_.empty())
      throw InputError({}, "validate --local: mpirun is not on PATH (Debian: apt-get install openmpi-bin)");
    if (access(o_.real_binary.c_str(), X_OK) != 0)
      throw InputError({},
                       "validate --local: no ringsim-real at " + o_.real_binary + " (build it: cmake --build build)");
    if (geteuid() == 0) {  // Open MPI refuses root without these
      setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
      setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
    }
    base_ = load_scenario(o_.scenario_file, catalog_, {});
    const SkuSpec& sku = catalog_.sku(base_.cluster.sku);
    if (!catalog_.gpu(sku.gpu).cpu_process)
      throw InputError(
          {o_.scenario_file, 0, 0, ""},
          "validate --local needs a scenario whose SKU's ranks are CPU processes (sku: local-host), not '" +
              base_.cluster.sku + "'");
    if (base_.cluster.nodes != 1) throw InputError({o_.scenario_file, 0, 0, ""}, "validate --local runs on one node");
    if (o_.ranks > sku.gpus)
      throw InputError({}, "validate --local: -n " + std::to_string(o_.ranks) + " exceeds the " +
                               std::to_string(sku.gpus) + " process slots of " + sku.name);
    cores_ = static_cast<int>(std::max(1L, sysconf(_SC_NPROCESSORS_ONLN)));
    work_ = o_.work_dir;
    std::filesystem::create_directories(work_);
    // Training where every process has a core. Its compute stand-ins sleep, as the GPUs the model's ranks
    // stand for leave the host's cores to the communication (validate/HISTORY.md).
    train_ranks_ = std::max(2, std::min(o_.ranks, cores_));
  }

  std::string run_file(const std::string& name, int run) const {
    return (work_ / (name + (repeats_ > 1 ? "_run" + std::to_string(run) : std::string()) + ".json")).string();
  }

  // One mpirun launch of ringsim-real; its output goes to LOG_NAME in the work folder. Throws with the
  // command and the log's tail on failure.
  void launch(int processes, const std::vector<std::string>& args, const std::string& log_name) {
    std::vector<std::string> argv = {mpirun_, "-n", std::to_string(processes), "--oversubscribe", o_.real_binary};
    argv.insert(argv.end(), args.begin(), args.end());
    const std::string log_file = (work_ / log_name).string();
    const int status = run_program({argv, log_file, "", {}});
    if (status != 0) {
      std::ifstream in(log_file);
      std::string tail((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      if (tail.size() > 2000) tail = "..." + tail.substr(tail.size() - 2000);
      throw std::runtime_error("validate --local: this run failed (status " + std::to_string(status) + "):\n  " +
                               shell_words(argv) + " > " + shell_words({log_file}) + " 2>&1\n" + tail);
    }
    progress_->done("$ mpirun -n " + std::to_string(processes) + " " +
                    shell_words(std::vector<std::string>(argv.begin() + 4, argv.end())));
  }

  // Calibration and bench probe where the processes' CPUs are (--probe-cores): a VM's vCPUs move for spells
  // to cores that share no cache, so each launch waits from its first sample for the CPUs to be as near as
  // earlier launches saw them (calibrate/placement.h).
  std::vector<std::string> probe_args() const {
    if (!seen_.active()) return {"--probe-cores"};
    char nearest[64];
    std::snprintf(nearest, sizeof nearest, "%.1f", seen_.nearest_ns());
    return {"--probe-cores", "--core-to-core-nearest", nearest};
  }
  // A launch's probes: its nearest, and how long it waited for the CPUs to be near.
  void add_probes(const std::string& file) {
    const auto j = read_json_file(file);
    try {
      seen_.add_file(j);
      if (j.contains("core_to_core")) waited_s_ += j.at("core_to_core").at("waited_s").get<double>();
    } catch (const nlohmann::json::exception& e) {
      throw InputError({file, 0, 0, ""}, std::string("malformed core_to_core block: ") + e.what());
    }
  }
  static std::vector<std::string> with(std::vector<std::string> a, const std::vector<std::string>& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
  }

  // The calibration fitted to DATA files, written to FILE with this machine's core count.
  CalibrationResult write_overlay(const std::vector<std::string>& data, const std::string& file, double nearest_ns) {
    Scenario two = base_;
    two.cluster.gpus_per_node = 2;
    CalibrationResult fit = calibrate(catalog_, two, {data, {}, nearest_ns});
    const std::string sku = catalog_.sku(base_.cluster.sku).name;
    fit.overlay.skus[sku].vcpus = cores_;
    fit.overlay.comments["skus." + sku] = "sysconf(_SC_NPROCESSORS_ONLN) on this machine";
    fit.overlay_yaml = fit.overlay.to_yaml();
    write_file_atomically(file, fit.overlay_yaml);
    return fit;
  }

  // A run: calibrate on what the validation does not measure (2 processes exchanging messages, on two
  // cores and on one, and ping-pong; the reduction; memory copies), then measure what it did not fit on
  // (ring allreduce on 2..N processes, and training iterations calibrated by this run).
  Run measure(int run) {
    Run r;
    const std::string data = run_file("calibration", run);
    calibrations_.push_back(data);
    r.overlay = std::filesystem::absolute(
                    work_ / ("overlay" + (repeats_ > 1 ? "_run" + std::to_string(run) : std::string()) + ".yaml"))
                    .string();
    auto calibrate_run = [&] {
      launch(2, with(with({"calibrate"}, probe_args()), {"-e", o_.max_bytes, "--json", data}), "calibrate.log");
      add_probes(data);
      r.nearest_ns = seen_.nearest_ns();
      write_overlay({data}, r.overlay, r.nearest_ns);
    };
    calibrate_run();
    for (int p = 2; p <= o_.ranks; ++p) {
      r.measured.push_back(run_file("bench_" + std::to_string(p) + "_ranks", run));
      launch(p,
             with(with({"bench"}, probe_args()), {"-b", "64K", "-e", o_.max_bytes, "-f", "2", "-n", "10", "-w", "3",
                                                  "--no-baseline", "--json", r.measured.back()}),
             "bench.log");
      add_probes(r.measured.back());
    }
    // A calibration taken before the launches had seen the CPUs this near measured the far placement
    // (its launch began there and it lasted): taken again, now waiting for the near one.
    if (seen_.active() && r.nearest_ns > seen_.limit_ns()) {
      progress_->note("  (run " + std::to_string(run) + "'s calibration was taken with the CPUs " +
                      std::to_string(static_cast<int>(r.nearest_ns)) + " ns apart, its benches " +
                      std::to_string(static_cast<int>(seen_.nearest_ns())) + " ns: calibrating again)");
      progress_->add(1);
      calibrate_run();
    }
    r.sets = {"cluster.gpus_per_node=" + std::to_string(train_ranks_), "calibration=" + r.overlay};
    if (auto rate = stand_in_rate(catalog_, base_, r.overlay)) r.sets.push_back(*rate);
    std::vector<std::string> train = with({"train"}, probe_args());
    train.push_back(o_.scenario_file);
    for (const auto& v : r.sets) train.insert(train.end(), {"--set", v});
    r.measured.push_back(run_file("train_" + std::to_string(train_ranks_) + "_ranks", run));
    launch(train_ranks_,
           with(train, {"--compute-stand-in", "sleep", "--iterations", std::to_string(o_.train_iterations), "--warmup",
                        "1", "--json", r.measured.back()}),
           "train.log");
    return r;
  }

  // Each run's measurements predicted from its calibration, with the nearest probe of all the launches: a
  // run whose calibration was fitted before its launches had seen the CPUs that near measured another
  // placement, and is left out.
  std::vector<ValidationReport> predict_runs(std::vector<std::string>& notes) const {
    std::vector<ValidationReport> reports;
    for (std::size_t i = 0; i < runs_.size(); ++i) {
      const Run& r = runs_[i];
      const std::string run = "run " + std::to_string(i + 1);
      if (seen_.active() && r.nearest_ns > seen_.limit_ns()) {
        char line[200];
        std::snprintf(line, sizeof line,
                      "%s left out: its calibration's nearest probe was %.0f ns, more than %.0f ns (the nearest of "
                      "all launches, %.0f ns, times %g)",
                      run.c_str(), r.nearest_ns, seen_.limit_ns(), seen_.nearest_ns(),
                      seen_.limit_ns() / seen_.nearest_ns());
        notes.push_back(line);
        continue;
      }
      Catalog calibrated = catalog_;
      calibrated.apply_overlay(r.overlay);
      std::vector<Override> overrides;
      for (const auto& v : r.sets) overrides.push_back(parse_override(v));
      reports.push_back(validate_measured(calibrated, load_scenario(o_.scenario_file, calibrated, overrides),
                                          r.measured, seen_.nearest_ns()));
      for (const auto& n : reports.back().notes) notes.push_back(run + ": " + n);
      write_file_atomically(run_file("validation", static_cast<int>(i + 1)), validation_json(reports.back()));
    }
    if (reports.empty())
      throw std::runtime_error(
          "validate --local: no run's calibration was taken with the CPUs as near as its launches "
          "later saw them (files in " +
          work_.string() + ")");
    return reports;
  }

  // The machine's calibration over all runs (the median per size), to keep: `ringsim predict
  // --calibration`. Fusion buffers whose ring messages are larger than its largest exchange are costed by
  // extrapolation, which predicts them too fast (validate/HISTORY.md): a note says so.
  void machine_overlay(std::vector<std::string>& notes) {
    const std::string file = (work_ / "overlay.yaml").string();
    const CalibrationResult fit = write_overlay(calibrations_, file, seen_.nearest_ns());
    log_ << "  calibration over the " << repeats_ << " runs (" << file << "):\n";
    for (const auto& f : fit.fits) log_ << "  fit " << fit_summary(f) << "\n";
    for (const auto& n : fit.notes) log_ << "  note: " << n << "\n";
    double largest = 0;
    for (const auto& f : fit.fits)
      for (const auto& p : f.data)
        if (f.path_class == "same_socket" || f.path_class == "cross_socket") largest = std::max(largest, p.x_beta);
    const double message = base_.communication.fusion_threshold_bytes / train_ranks_;
    if (largest > 0 && message > largest)
      notes.push_back("the training's fusion buffers (" + format_bytes(base_.communication.fusion_threshold_bytes) +
                      ") send messages of up to " + format_bytes(message) +
                      ", larger than the largest calibrated exchange (" + format_bytes(largest) +
                      "): their cost is extrapolated; raise --max-bytes");
  }

  const Catalog& catalog_;
  const LocalValidationOptions& o_;
  std::ostream& log_;
  const int repeats_;
  std::string mpirun_;
  Scenario base_;
  int cores_ = 1, train_ranks_ = 2;
  std::filesystem::path work_;
  std::optional<Progress> progress_;
  PlacementFilter seen_;  // every launch's probes so far
  double waited_s_ = 0;
  std::vector<std::string> calibrations_;
  std::vector<Run> runs_;
};

}  // namespace

ValidationReport validate_local(const Catalog& catalog, const LocalValidationOptions& o, std::ostream& log) {
  return LocalValidation(catalog, o, log).run();
}

}  // namespace ringsim
