// The `ringsim` subcommands. Each returns the process exit status; InputError propagates to main,
// which prints it and exits 2.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "execute/estimate/work_estimate.h"

namespace ringsim {

struct TopoOptions {
  std::string sku;
  int nodes = 1;
  std::optional<std::string> fabric;     // infiniband | ethernet; default: InfiniBand when present
  std::string fabric_topology = "star";  // star | fat_tree
  std::optional<int> nodes_per_leaf;
  std::optional<double> oversubscription;
  std::optional<std::string> dot_file;
  std::optional<std::string> platform_xml_file;
};

int run_catalog(const std::string& catalog_dir, const std::string& section);
int run_topo(const std::string& catalog_dir, const TopoOptions& options);
struct PredictOptions {
  std::string scenario;
  std::vector<std::string> sets;
  std::optional<std::string> fidelity;     // flow | step; default by GPU count
  std::optional<std::string> calibration;  // overlay file (as the scenario key `calibration`)
  std::optional<std::string> json_file, trace_file, links_file;
  std::optional<std::string> plot_file;  // goodput's chart (report/goodput_report.h)
  WorkLimits limits;                     // refuse runs estimated above them
  bool no_band = false;                  // the prediction alone, without the band's runs
};

// `ringsim bench`: the predicted nccl-tests all_reduce_perf table for the scenario's cluster.
struct BenchCommandOptions {
  std::string scenario;
  std::vector<std::string> sets;
  std::optional<std::string> calibration;
  std::string min_bytes = "8", max_bytes = "128M";  // nccl-tests style: 8, 64K, 1G
  double factor = 2;
  std::string op = "all_reduce";  // all_reduce | all_gather | reduce_scatter (nccl-tests' names)
  std::optional<std::string> json_file;
  bool no_band = false;
};
int run_bench(const std::string& catalog_dir, const BenchCommandOptions& options);

struct JobCommandOptions {
  std::string scenario;
  std::vector<std::string> sets;
  std::string launcher = "mpirun";
  std::string transport = "nccl";
  std::optional<std::string> out_file;
};
int run_job(const std::string& catalog_dir, const JobCommandOptions& options);

struct ValidateOptions {
  std::optional<std::string> scenario;
  std::vector<std::string> sets;
  std::vector<std::string> measured;
  std::optional<std::string> horovod_timeline;
  std::optional<std::string> published;   // cases file
  std::optional<std::string> single_gpu;  // single-GPU rates file
  std::optional<std::string> baseline;    // recorded validation JSON to check against
  bool no_band = false;                   // --published: the predictions without their bands
  double tolerance_pp = 2;
  std::optional<double> max_mape;
  std::optional<std::string> json_file;
  std::optional<std::string> plot_file;
  // --local: measure this machine with ringsim-real, then predict it.
  bool local = false;
  int local_ranks = 4;
  std::string local_max_bytes = "256M";
  int local_repeats = 3;
  std::optional<std::string> work_dir;
  std::string real_binary;  // ringsim-real, next to this binary
};
int run_validate(const std::string& catalog_dir, const ValidateOptions& options);

// `ringsim emulate --compare`: emulate, then validate the emulated result against predict.
struct EmulateOptions;
int run_emulate_compare(const std::string& catalog_dir, EmulateOptions options);

struct CalibrateOptions {
  std::string scenario;
  std::vector<std::string> sets;
  std::vector<std::string> data_files, nccl_tests_files;
  std::optional<std::string> out_file;
  std::optional<std::string> plot_file;
  bool list_effects = false;             // --effects: the registry, nothing fitted
  std::optional<std::string> runs_file;  // --runs: measured training runs (calibrate/runs.h)
};
int run_calibrate(const std::string& catalog_dir, const CalibrateOptions& options);

int run_predict(const std::string& catalog_dir, const PredictOptions& options);
int run_check(const std::string& catalog_dir, const std::string& scenario, const std::vector<std::string>& sets);

}  // namespace ringsim
