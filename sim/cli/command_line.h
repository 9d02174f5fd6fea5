// The `ringsim` command line: every subcommand's options, parsed into its options struct, and the run of
// the one chosen. main() parses and reports errors; the CLI fuzz target parses the same definition.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "emulate/emulate_run.h"
#include "plan/capacity_plan.h"
#include "plan/sweep.h"

namespace ringsim {

struct CommandLine {
  CommandLine();
  CommandLine(const CommandLine&) = delete;  // the app holds pointers into the options below
  CommandLine& operator=(const CommandLine&) = delete;

  // Runs the chosen subcommand; `self` is this executable (children, ringsim-real beside it).
  int run(const std::string& self);
  // What the chosen subcommand does: only reads and prints (catalog, topo and check writing no file).
  bool prints_only() const;

  CLI::App app{"ringsim: simulate, plan and validate data-parallel training on GPU clusters"};
  std::string catalog_dir;
  std::string section = "all";
  TopoOptions topo;
  std::string check_scenario;
  std::vector<std::string> check_sets;
  PredictOptions predict;
  BenchCommandOptions bench;
  JobCommandOptions job;
  ValidateOptions validate;
  CalibrateOptions calibrate;
  SweepOptions sweep;
  PlanOptions plan;
  EmulateOptions emulate;
  bool emulate_compare = false;

 private:
  void define_inspection();  // catalog, topo, check
  void define_predict();
  void define_bench();
  void define_job();
  void define_validate();
  void define_calibrate();
  void define_sweep();
  void define_plan();
  void define_emulate();
  int run_sweep_or_plan(const std::string& self);

 public:
  CLI::App *catalog_cmd = nullptr, *topo_cmd = nullptr, *check_cmd = nullptr, *predict_cmd = nullptr,
           *bench_cmd = nullptr, *job_cmd = nullptr, *validate_cmd = nullptr, *calibrate_cmd = nullptr,
           *sweep_cmd = nullptr, *plan_cmd = nullptr, *emulate_cmd = nullptr;
};

}  // namespace ringsim
