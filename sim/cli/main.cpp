// ringsim: simulate, plan and validate data-parallel training on GPU clusters.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <filesystem>
#include <iostream>
#include <new>
#include <thread>

#include "cli/commands.h"
#include "load/catalog.h"
#include "load/input_error.h"
#include "plan/capacity_plan.h"
#include "plan/sweep.h"
#ifdef RINGSIM_HAVE_SMPI
#include "emulate/emulate_run.h"
#endif

namespace {
std::string self_path(const char* argv0) {
  char self[4096] = {};
  const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  return n > 0 ? std::string(self, static_cast<std::size_t>(n)) : std::string(argv0);
}
}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"ringsim: simulate, plan and validate data-parallel training on GPU clusters"};
  app.require_subcommand(1);
  app.fallthrough();  // options of the whole program (--catalog) also after the subcommand, as users type them
  std::string catalog_dir = ringsim::Catalog::default_dir();
  app.add_option("--catalog", catalog_dir,
                 "Catalog directory (topologies/); default $RINGSIM_CATALOG or the built-in one");

  std::string section = "all";
  auto* catalog = app.add_subcommand("catalog", "List SKUs, GPUs, models, link classes, storage backends and prices");
  catalog->add_option("section", section, "What to list")
      ->check(CLI::IsMember({"all", "skus", "gpus", "models", "links", "storage", "prices"}));

  ringsim::TopoOptions topo_opts;
  auto* topo = app.add_subcommand("topo", "Show a node's or cluster's topology (nvidia-smi topo -m style)");
  topo->add_option("sku", topo_opts.sku, "SKU name, e.g. NC24rs_v3 or Standard_NC24rs_v3")->required();
  topo->add_option("--nodes", topo_opts.nodes, "Number of nodes")->check(CLI::Range(1, 65536));
  topo->add_option("--fabric", topo_opts.fabric, "Cluster fabric (default: InfiniBand when the SKU has it)")
      ->check(CLI::IsMember({"infiniband", "ethernet"}));
  topo->add_option("--fabric-topology", topo_opts.fabric_topology, "Fabric shape")
      ->check(CLI::IsMember({"star", "fat_tree"}));
  topo->add_option("--nodes-per-leaf", topo_opts.nodes_per_leaf, "fat_tree: nodes per leaf switch")
      ->check(CLI::Range(1, 4096));
  topo->add_option("--oversubscription", topo_opts.oversubscription, "fat_tree: leaf downlink:uplink bandwidth ratio")
      ->check(CLI::Range(1.0, 64.0));
  topo->add_option("--dot", topo_opts.dot_file, "Write the graph as Graphviz DOT");
  topo->add_option("--platform-xml", topo_opts.platform_xml_file,
                   "Write the equivalent SimGrid platform (smpirun -platform)");

  std::string scenario;
  std::vector<std::string> sets;
  auto* check = app.add_subcommand("check", "Validate a scenario and print it with every default filled in");
  check->add_option("scenario", scenario, "Scenario YAML file")->required();
  check->add_option("--set", sets, "Override a key: --set cluster.nodes=8 (repeatable)");

  ringsim::PredictOptions predict_opts;
  auto* predict = app.add_subcommand("predict", "Simulate one training iteration on SimGrid and predict training time");
  predict->add_option("scenario", predict_opts.scenario, "Scenario YAML file")->required();
  predict->add_option("--set", predict_opts.sets, "Override a key: --set cluster.nodes=8 (repeatable)");
  predict
      ->add_option("--fidelity", predict_opts.fidelity,
                   "flow: every chunk a SimGrid communication; step: each collective step evaluated from link "
                   "loads (default: flow up to 64 GPUs)")
      ->check(CLI::IsMember({"flow", "step"}));
  predict->add_option("--calibration", predict_opts.calibration,
                      "Calibration overlay from `ringsim calibrate` (same as the scenario key calibration:)");
  predict->add_option("--json", predict_opts.json_file, "Write the result JSON (schema ringsim.result/1)");
  predict->add_option("--trace", predict_opts.trace_file, "Write a Chrome trace in Horovod's timeline format");
  predict->add_option("--links", predict_opts.links_file, "Write bytes and utilisation per link as CSV");
  predict
      ->add_option("--max-transfers", predict_opts.limits.max_transfers,
                   "Flow fidelity: refuse scenarios estimated above this many transfers per iteration (`ringsim "
                   "check` prints the estimate)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  predict
      ->add_option("--max-seconds", predict_opts.limits.max_seconds,
                   "Refuse scenarios whose run is estimated above this many seconds of wall time")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);

  ringsim::JobCommandOptions job_opts;
  auto* job =
      app.add_subcommand("job", "Write the script that runs the validation (ringsim-real) on the scenario's cluster");
  job->add_option("scenario", job_opts.scenario, "Scenario YAML file")->required();
  job->add_option("--set", job_opts.sets, "Override a key (repeatable)");
  job->add_option("--launcher", job_opts.launcher, "MPI launcher")
      ->check(CLI::IsMember({"mpirun", "slurm", "intel-mpi"}));
  job->add_option("--transport", job_opts.transport, "ringsim-real transport")
      ->check(CLI::IsMember({"host", "cuda-staged", "nccl"}));
  job->add_option("-o,--output", job_opts.out_file, "Write the script to a file instead of standard output");

  ringsim::ValidateOptions val_opts;
  auto* validate = app.add_subcommand("validate", "Predictions next to measured or published figures, with the error");
  validate->add_option("scenario", val_opts.scenario, "Scenario YAML file the measurements ran (with --measured)");
  validate->add_option("--set", val_opts.sets, "Override a scenario key (repeatable)");
  validate->add_option("--measured", val_opts.measured, "Result JSON files from ringsim-real train (repeatable)");
  validate->add_option("--horovod-timeline", val_opts.horovod_timeline,
                       "A real Horovod timeline (HOROVOD_TIMELINE) of the scenario's run");
  validate->add_option("--published", val_opts.published,
                       "Cases file of published figures (validate/data/published.yaml)");
  validate->add_option("--baseline", val_opts.baseline,
                       "Recorded validation JSON: fail when a case's |error| grew by more than --tolerance points");
  validate->add_option("--tolerance", val_opts.tolerance_pp, "Percentage points allowed over the baseline")
      ->check(CLI::Range(0.0, 100.0));
  validate->add_option("--max-mape", val_opts.max_mape, "Fail when the MAPE exceeds this many percent")
      ->check(CLI::Range(0.0, 1e6));
  validate->add_option("--json", val_opts.json_file, "Write the cases and errors as JSON");
  validate->add_option("--plot", val_opts.plot_file, "Draw predicted vs measured as SVG");
  validate->add_flag(
      "--local", val_opts.local,
      "Measure this machine with ringsim-real (calibrate on 2-process exchanges, then allreduce and train) and "
      "predict it");
  validate->add_option("-n,--ranks", val_opts.local_ranks, "--local: allreduce on 2..N processes")
      ->check(CLI::Range(2, 64));
  validate->add_option("--max-bytes", val_opts.local_max_bytes, "--local: largest allreduce and calibration message");
  validate->add_option("--work", val_opts.work_dir, "--local: folder for the measurements and the overlay");
  validate
      ->add_option("--repeats", val_opts.local_repeats,
                   "--local: launches of the calibration and runs of each measurement, in turn; medians are used and "
                   "the spread shown")
      ->check(CLI::Range(1, 20));

  ringsim::CalibrateOptions cal_opts;
  auto* calibrate =
      app.add_subcommand("calibrate", "Fit per-path latency and bandwidth to microbenchmarks; write an overlay");
  calibrate->add_option("scenario", cal_opts.scenario, "Scenario whose SKU, library and fabric the overlay is for")
      ->required();
  calibrate->add_option("--set", cal_opts.sets, "Override a scenario key (repeatable)");
  calibrate->add_option("--data", cal_opts.data_files, "ringsim-real calibrate --json output (repeatable)");
  calibrate->add_option("--nccl-tests", cal_opts.nccl_tests_files,
                        "nccl-tests output (all_reduce_perf, sendrecv_perf; repeatable)");
  calibrate->add_option("--plot", cal_opts.plot_file, "Draw measured and fitted bandwidth vs size as SVG");
  calibrate->add_option("-o,--output", cal_opts.out_file, "Write the overlay YAML here (default: standard output)");

  ringsim::SweepOptions sweep_opts;
  auto* sweep =
      app.add_subcommand("sweep", "Predict the scenario over a grid of key values (its sweep: section, --sweep)");
  sweep->add_option("scenario", sweep_opts.scenario, "Scenario YAML file")->required();
  sweep->add_option("--set", sweep_opts.sets, "Override a key for every point (repeatable)");
  sweep->add_option("--sweep", sweep_opts.axes, "An axis: KEY=V1,V2,... (repeatable; after the file's axes)");
  sweep->add_flag("--zip", sweep_opts.zip, "Take the axes side by side instead of their Cartesian product");
  sweep->add_option("-j,--jobs", sweep_opts.jobs, "Points run at once (default: the number of cores)")
      ->check(CLI::Range(1, 4096));
  sweep->add_option("--fidelity", sweep_opts.fidelity, "flow | step for every point (default: by GPU count)")
      ->check(CLI::IsMember({"flow", "step"}));
  sweep->add_option("--csv", sweep_opts.csv_file, "Write the points as CSV");
  sweep->add_option("--json", sweep_opts.json_file, "Write the points as JSON");
  sweep->add_option("--plot", sweep_opts.plot_file, "Draw images/s vs GPUs per other-axis value as SVG");
  sweep->add_flag("--resume", sweep_opts.resume, "Keep the points already in --csv and run only the others");

  ringsim::PlanOptions plan_opts;
  auto* plan = app.add_subcommand(
      "plan", "Search SKUs x nodes x strategies for the cheapest (or fastest) plan that meets a deadline/budget");
  plan->add_option("scenario", plan_opts.scenario, "Scenario YAML file (its plan: section sets the goal)")->required();
  plan->add_option("--set", plan_opts.sets, "Override a scenario key for every configuration (repeatable)");
  plan->add_option("--deadline", plan_opts.deadline, "Time to train at most, e.g. 24h or 3d (plan.deadline)");
  plan->add_option("--budget", plan_opts.budget, "Cost at most, US dollars (plan.budget)");
  plan->add_option("--region", plan_opts.region, "Price region, e.g. eastus (plan.region)");
  plan->add_option("--skus", plan_opts.skus, "Candidate SKUs, comma-separated (plan.skus; default: every priced SKU)")
      ->delimiter(',');
  plan->add_option("--nodes", plan_opts.nodes, "Node counts, comma-separated (plan.nodes; default 1,2,4,...,32)")
      ->delimiter(',');
  plan->add_option("--strategies", plan_opts.strategies, "ring, hierarchical, parameter_server (plan.strategies)")
      ->delimiter(',');
  plan->add_option("--fusion-thresholds", plan_opts.fusion_thresholds,
                   "Fusion sizes, e.g. 0,64MiB (plan.fusion_thresholds)")
      ->delimiter(',');
  plan->add_option("--low-priority", plan_opts.low_priority,
                   "Also consider low-priority VMs: true|false (plan.low_priority)");
  plan->add_option("--rank-by", plan_opts.rank_by, "cost or time (plan.rank_by)")
      ->check(CLI::IsMember({"cost", "time"}));
  plan->add_option("--headroom", plan_opts.headroom, "Extra VMs in the quota request, e.g. 10% (plan.quota_headroom)");
  plan->add_option("--top", plan_opts.top, "Configurations shown (plan.top; default 10)")->check(CLI::Range(1, 100000));
  plan->add_option("--prices", plan_opts.price_files, "Prices file over topologies/prices.yaml (repeatable)");
  plan->add_option("-j,--jobs", plan_opts.jobs, "Configurations predicted at once (default: the number of cores)")
      ->check(CLI::Range(1, 1024));
  plan->add_option("--fidelity", plan_opts.fidelity, "flow | step for every configuration (default: by GPU count)")
      ->check(CLI::IsMember({"flow", "step"}));
  plan->add_option("--csv", plan_opts.csv_file, "Write every configuration, ranked, as CSV");
  plan->add_option("--json", plan_opts.json_file, "Write the plan (configurations, flags, quota request) as JSON");

#ifdef RINGSIM_HAVE_SMPI
  ringsim::EmulateOptions emu_opts;
  auto* emulate = app.add_subcommand(
      "emulate", "Run ringsim-real's code on the scenario's cluster simulated by SimGrid SMPI (train, or --bench)");
  emulate->add_option("scenario", emu_opts.scenario, "Scenario YAML file")->required();
  emulate->add_option("--set", emu_opts.sets, "Override a key (repeatable)");
  emulate->add_option("--calibration", emu_opts.calibration, "Calibration overlay (as for predict)");
  emulate->add_option("--iterations", emu_opts.iterations, "Timed training iterations")->check(CLI::Range(1, 1000));
  emulate->add_option("--warmup", emu_opts.warmup, "Warm-up training iterations")->check(CLI::Range(0, 1000));
  emulate->add_option("--json", emu_opts.json_file,
                      "Write the result JSON (train: schema ringsim.result/1; --bench: the bench rows)");
  emulate->add_option("--trace", emu_opts.trace_file, "Write a Horovod-style timeline of rank 0 (train)");
  emulate->add_flag("--bench", emu_opts.bench, "Run the nccl-tests-style bench sweep instead of training");
  emulate->add_option("-b,--minbytes", emu_opts.min_bytes, "--bench: smallest message (e.g. 1M)");
  emulate->add_option("-e,--maxbytes", emu_opts.max_bytes, "--bench: largest message (e.g. 256M)");
  emulate->add_option("-f,--stepfactor", emu_opts.factor, "--bench: size multiplier")->check(CLI::Range(1.01, 1024.0));
  emulate->add_option("-n,--iters", emu_opts.bench_iters, "--bench: timed iterations per size")
      ->check(CLI::Range(1, 1000));
  emulate->add_option("-w,--warmup_iters", emu_opts.bench_warmup, "--bench: warm-up iterations per size")
      ->check(CLI::Range(0, 1000));
  emulate->add_option("--op", emu_opts.op, "--bench: collective")
      ->check(CLI::IsMember({"allreduce", "reduce_scatter", "allgather"}));
  emulate->add_option("--algorithm", emu_opts.algorithm, "--bench: our allreduce, ring or halving_doubling")
      ->check(CLI::IsMember({"ring", "halving_doubling"}));
  emulate->add_flag("--baseline", emu_opts.bench_baseline,
                    "--bench: also time SMPI's MPI_Allreduce (its temporaries take memory per rank)");
  emulate
      ->add_option("--max-transfers", emu_opts.limits.max_transfers,
                   "Refuse training emulations estimated above this many transfers per iteration")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  emulate
      ->add_option("--max-seconds", emu_opts.limits.max_seconds,
                   "Refuse training emulations estimated above this many seconds of wall time per iteration")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  bool emu_compare = false;
  emulate->add_flag("--compare", emu_compare,
                    "Also predict the scenario and show where emulation and prediction differ, part by part");
  emulate->add_option("--keep", emu_opts.keep_dir, "Keep the generated spec, cost profile and host file here");
#endif

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help and --version exit 0; a bad command line exits 2, as every other input error does.
    return app.exit(e) == 0 ? 0 : 2;
  }
  try {
    if (*catalog) return ringsim::run_catalog(catalog_dir, section);
    if (*topo) return ringsim::run_topo(catalog_dir, topo_opts);
    if (*check) return ringsim::run_check(catalog_dir, scenario, sets);
    if (*predict) return ringsim::run_predict(catalog_dir, predict_opts);
    if (*job) return ringsim::run_job(catalog_dir, job_opts);
    if (*validate) {
      val_opts.real_binary = (std::filesystem::path(self_path(argv[0])).parent_path() / "ringsim-real").string();
      return ringsim::run_validate(catalog_dir, val_opts);
    }
    if (*calibrate) return ringsim::run_calibrate(catalog_dir, cal_opts);
#ifdef RINGSIM_HAVE_SMPI
    if (*emulate) {
      emu_opts.self = self_path(argv[0]);
      return emu_compare ? ringsim::run_emulate_compare(catalog_dir, emu_opts)
                         : ringsim::run_emulate(catalog_dir, emu_opts);
    }
#endif
    if (*sweep) {
      sweep_opts.catalog_dir = catalog_dir;
      if (sweep->count("--jobs") == 0)
        sweep_opts.jobs = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
      sweep_opts.self = self_path(argv[0]);
      if (sweep_opts.resume && !sweep_opts.csv_file) throw ringsim::InputError({}, "sweep: --resume needs --csv FILE");
      return ringsim::run_sweep(sweep_opts);
    }
    if (*plan) {
      plan_opts.catalog_dir = catalog_dir;
      if (plan->count("--jobs") == 0)
        plan_opts.jobs = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
      plan_opts.self = self_path(argv[0]);
      return ringsim::run_plan(plan_opts);
    }
  } catch (const ringsim::InputError& e) {
    std::cerr << e.what() << "\n";
    return 2;
  } catch (const std::bad_alloc&) {
    std::cerr << "ringsim: error: out of memory; `ringsim check SCENARIO` prints what a scenario needs\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "ringsim: error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
