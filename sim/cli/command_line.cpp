#include "cli/command_line.h"

#include <algorithm>
#include <filesystem>

#include "execute/estimate/child_process.h"
#include "load/catalog.h"
#include "load/input_error.h"

namespace ringsim {

CommandLine::CommandLine() : catalog_dir(Catalog::default_dir()) {
  app.require_subcommand(1);
  app.fallthrough();  // options of the whole program (--catalog) also after the subcommand, as users type them
  app.add_option("--catalog", catalog_dir,
                 "Catalog directory (topologies/); default $RINGSIM_CATALOG or the built-in one");
  define_inspection();
  define_predict();
  define_bench();
  define_job();
  define_validate();
  define_calibrate();
  define_sweep();
  define_plan();
#ifdef RINGSIM_HAVE_SMPI
  define_emulate();
#endif
}

void CommandLine::define_inspection() {
  catalog_cmd = app.add_subcommand("catalog", "List SKUs, GPUs, models, link classes, storage backends and prices");
  catalog_cmd->add_option("section", section, "What to list")
      ->check(CLI::IsMember({"all", "skus", "gpus", "models", "links", "storage", "prices"}));

  topo_cmd = app.add_subcommand("topo", "Show a node's or cluster's topology (nvidia-smi topo -m style)");
  topo_cmd->add_option("sku", topo.sku, "SKU name, e.g. NC24rs_v3 or Standard_NC24rs_v3")->required();
  topo_cmd->add_option("--nodes", topo.nodes, "Number of nodes")->check(CLI::Range(1, 65536));
  topo_cmd->add_option("--fabric", topo.fabric, "Cluster fabric (default: InfiniBand when the SKU has it)")
      ->check(CLI::IsMember({"infiniband", "ethernet"}));
  topo_cmd->add_option("--fabric-topology", topo.fabric_topology, "Fabric shape")
      ->check(CLI::IsMember({"star", "fat_tree", "rail_optimized"}));
  topo_cmd->add_option("--nodes-per-leaf", topo.nodes_per_leaf, "fat_tree, rail_optimized: nodes per leaf switch")
      ->check(CLI::Range(1, 4096));
  topo_cmd
      ->add_option("--oversubscription", topo.oversubscription,
                   "fat_tree, rail_optimized: leaf downlink:uplink bandwidth ratio")
      ->check(CLI::Range(1.0, 64.0));
  topo_cmd->add_option("--dot", topo.dot_file, "Write the graph as Graphviz DOT");
  topo_cmd->add_option("--platform-xml", topo.platform_xml_file,
                       "Write the equivalent SimGrid platform (smpirun -platform)");

  check_cmd = app.add_subcommand("check", "Validate a scenario and print it with every default filled in");
  check_cmd->add_option("scenario", check_scenario, "Scenario YAML file")->required();
  check_cmd->add_option("--set", check_sets, "Override a key: --set cluster.nodes=8 (repeatable)");
}

void CommandLine::define_predict() {
  predict_cmd = app.add_subcommand("predict", "Simulate one training iteration on SimGrid and predict training time");
  predict_cmd->add_option("scenario", predict.scenario, "Scenario YAML file")->required();
  predict_cmd->add_option("--set", predict.sets, "Override a key: --set cluster.nodes=8 (repeatable)");
  predict_cmd
      ->add_option("--fidelity", predict.fidelity,
                   "flow: every chunk a SimGrid communication; step: each collective step evaluated from link "
                   "loads (default: flow up to 64 GPUs)")
      ->check(CLI::IsMember({"flow", "step"}));
  predict_cmd->add_option("--calibration", predict.calibration,
                          "Calibration overlay from `ringsim calibrate` (same as the scenario key calibration:)");
  predict_cmd->add_flag("--no-band", predict.no_band,
                        "Leave out the band (the prediction alone: none of the band's step-fidelity runs)");
  predict_cmd->add_option("--json", predict.json_file, "Write the result JSON (schema ringsim.result/1)");
  predict_cmd->add_option("--trace", predict.trace_file, "Write a Chrome trace in Horovod's timeline format");
  predict_cmd->add_option("--links", predict.links_file, "Write bytes and utilisation per link as CSV");
  predict_cmd->add_option("--plot", predict.plot_file,
                          "Draw goodput against node count for three checkpoint intervals and the simulated runs' "
                          "completion times, with gnuplot (.png, .svg or .pdf)");
  predict_cmd
      ->add_option("--max-transfers", predict.limits.max_transfers,
                   "Flow fidelity: refuse scenarios estimated above this many transfers per iteration (`ringsim "
                   "check` prints the estimate)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  predict_cmd
      ->add_option("--max-seconds", predict.limits.max_seconds,
                   "Refuse scenarios whose run is estimated above this many seconds of wall time")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
}

void CommandLine::define_bench() {
  bench_cmd = app.add_subcommand(
      "bench",
      "Predict nccl-tests' all_reduce_perf, all_gather_perf or reduce_scatter_perf table (size, count, time, algbw, "
      "busbw) for the scenario's cluster");
  bench_cmd->add_option("scenario", bench.scenario, "Scenario YAML file (its cluster and communication)")->required();
  bench_cmd->add_option("--set", bench.sets, "Override a key: --set cluster.nodes=2 (repeatable)");
  bench_cmd->add_option("--calibration", bench.calibration, "Calibration overlay (as the scenario key calibration:)");
  bench_cmd->add_option("-b,--minbytes", bench.min_bytes, "Smallest message (e.g. 8, 64K, 1M)")->capture_default_str();
  bench_cmd->add_option("-e,--maxbytes", bench.max_bytes, "Largest message")->capture_default_str();
  bench_cmd->add_option("-f,--stepfactor", bench.factor, "Size multiplier between rows")
      ->capture_default_str()
      ->check(CLI::Range(1.01, 1024.0));
  bench_cmd->add_option("--op", bench.op, "Collective, as nccl-tests names its tests")
      ->capture_default_str()
      ->check(CLI::IsMember(collective::kBenchOps));
  bench_cmd->add_option("--json", bench.json_file, "Write the rows as JSON (schema ringsim.bench/1, as ringsim-real)");
  bench_cmd->add_flag("--no-band", bench.no_band,
                      "Leave out the band (the table alone: none of the band's 16 tables at sampled figures)");
}

void CommandLine::define_job() {
  job_cmd =
      app.add_subcommand("job", "Write the script that runs the validation (ringsim-real) on the scenario's cluster");
  job_cmd->add_option("scenario", job.scenario, "Scenario YAML file")->required();
  job_cmd->add_option("--set", job.sets, "Override a key (repeatable)");
  job_cmd->add_option("--launcher", job.launcher, "MPI launcher")
      ->check(CLI::IsMember({"mpirun", "slurm", "intel-mpi"}));
  job_cmd->add_option("--transport", job.transport, "ringsim-real transport")
      ->check(CLI::IsMember({"host", "cuda-staged", "nccl"}));
  job_cmd->add_option("-o,--output", job.out_file, "Write the script to a file instead of standard output");
}

void CommandLine::define_validate() {
  validate_cmd = app.add_subcommand("validate", "Predictions next to measured or published figures, with the error");
  validate_cmd->add_option("scenario", validate.scenario, "Scenario YAML file the measurements ran (with --measured)");
  validate_cmd->add_option("--set", validate.sets, "Override a scenario key (repeatable)");
  validate_cmd->add_option("--measured", validate.measured, "Result JSON files from ringsim-real train (repeatable)");
  validate_cmd->add_option("--horovod-timeline", validate.horovod_timeline,
                           "A real Horovod timeline (HOROVOD_TIMELINE) of the scenario's run");
  validate_cmd->add_option("--published", validate.published,
                           "Cases file of published figures (validate/data/published.yaml)");
  validate_cmd->add_option("--single-gpu", validate.single_gpu,
                           "Public single-GPU training rates (topologies/single_gpu_rates.yaml): the operator "
                           "model leave-one-out");
  validate_cmd->add_option("--baseline", validate.baseline,
                           "Recorded validation JSON: fail when a case's |error| grew by more than --tolerance points");
  validate_cmd->add_flag("--no-band", validate.no_band,
                         "--published: the predictions without their bands (16 or 17 predictions fewer per case)");
  validate_cmd->add_option("--tolerance", validate.tolerance_pp, "Percentage points allowed over the baseline")
      ->check(CLI::Range(0.0, 100.0));
  validate_cmd->add_option("--max-mape", validate.max_mape, "Fail when the MAPE exceeds this many percent")
      ->check(CLI::Range(0.0, 1e6));
  validate_cmd->add_option("--json", validate.json_file, "Write the cases and errors as JSON");
  validate_cmd->add_option(
      "--plot", validate.plot_file,
      "Draw predicted against measured with gnuplot (.png, .svg or .pdf; its script and data beside)");
  validate_cmd->add_flag(
      "--local", validate.local,
      "Measure this machine with ringsim-real (calibrate on 2-process exchanges, then allreduce and train) and "
      "predict it");
  validate_cmd->add_option("-n,--ranks", validate.local_ranks, "--local: allreduce on 2..N processes")
      ->check(CLI::Range(2, 64));
  validate_cmd->add_option("--max-bytes", validate.local_max_bytes,
                           "--local: largest allreduce and calibration message");
  validate_cmd->add_option("--work", validate.work_dir, "--local: folder for the measurements and the overlay");
  validate_cmd
      ->add_option("--repeats", validate.local_repeats,
                   "--local: launches of the calibration and runs of each measurement, in turn; medians are used and "
                   "the spread shown")
      ->check(CLI::Range(1, 20));
}

void CommandLine::define_calibrate() {
  calibrate_cmd =
      app.add_subcommand("calibrate", "Fit per-path latency and bandwidth to microbenchmarks; write an overlay");
  calibrate_cmd->add_option("scenario", calibrate.scenario,
                            "Scenario whose SKU, library and fabric the overlay is for");
  calibrate_cmd->add_option("--runs", calibrate.runs_file,
                            "Measured training runs (CSV: images_per_sec and scenario keys such as cluster.nodes): fit "
                            "the catalog's uncertain figures (topologies/uncertain.yaml) to them");
  calibrate_cmd->add_flag("--effects", calibrate.list_effects,
                          "List the calibrated effects: what each measures, how it is fitted, what it writes");
  calibrate_cmd->callback([this] {
    if (!calibrate.list_effects && calibrate.scenario.empty()) throw CLI::RequiredError("scenario");
  });
  calibrate_cmd->add_option("--set", calibrate.sets, "Override a scenario key (repeatable)");
  calibrate_cmd->add_option("--data", calibrate.data_files, "ringsim-real calibrate --json output (repeatable)");
  calibrate_cmd->add_option("--nccl-tests", calibrate.nccl_tests_files,
                            "nccl-tests output (all_reduce_perf, sendrecv_perf; repeatable)");
  calibrate_cmd->add_option("--plot", calibrate.plot_file,
                            "Draw measured and fitted bandwidth against size with gnuplot (.png, .svg or .pdf)");
  calibrate_cmd->add_option("-o,--output", calibrate.out_file,
                            "Write the overlay YAML here (default: standard output)");
}

void CommandLine::define_sweep() {
  sweep_cmd =
      app.add_subcommand("sweep", "Predict the scenario over a grid of key values (its sweep: section, --sweep)");
  sweep_cmd->add_option("scenario", sweep.scenario, "Scenario YAML file")->required();
  sweep_cmd->add_option("--set", sweep.sets, "Override a key for every point (repeatable)");
  sweep_cmd->add_option("--sweep", sweep.axes, "An axis: KEY=V1,V2,... (repeatable; after the file's axes)");
  sweep_cmd->add_flag("--zip", sweep.zip, "Take the axes side by side instead of their Cartesian product");
  sweep_cmd->add_option("-j,--jobs", sweep.jobs, "Points run at once (default: RINGSIM_JOBS, else the number of cores)")
      ->check(CLI::Range(1, 4096));
  sweep_cmd->add_option("--fidelity", sweep.fidelity, "flow | step for every point (default: by GPU count)")
      ->check(CLI::IsMember({"flow", "step"}));
  sweep_cmd->add_option("--csv", sweep.csv_file, "Write the points as CSV");
  sweep_cmd->add_option("--json", sweep.json_file, "Write the points as JSON");
  sweep_cmd->add_option("--plot", sweep.plot_file,
                        "Draw throughput and scaling efficiency against GPUs with gnuplot (.png, .svg or .pdf)");
  sweep_cmd->add_flag("--resume", sweep.resume, "Keep the points already in --csv and run only the others");
}

void CommandLine::define_plan() {
  plan_cmd = app.add_subcommand(
      "plan", "Search SKUs x nodes x strategies for the cheapest (or fastest) plan that meets a deadline/budget");
  plan_cmd->add_option("scenario", plan.scenario, "Scenario YAML file (its plan: section sets the goal)")->required();
  plan_cmd->add_option("--set", plan.sets, "Override a scenario key for every configuration (repeatable)");
  plan_cmd->add_option("--deadline", plan.deadline, "Time to train at most, e.g. 24h or 3d (plan.deadline)");
  plan_cmd->add_option("--budget", plan.budget, "Cost at most, US dollars (plan.budget)");
  plan_cmd->add_option("--region", plan.region, "Price region, e.g. eastus (plan.region)");
  plan_cmd->add_option("--skus", plan.skus, "Candidate SKUs, comma-separated (plan.skus; default: every priced SKU)")
      ->delimiter(',');
  plan_cmd->add_option("--nodes", plan.nodes, "Node counts, comma-separated (plan.nodes; default 1,2,4,...,32)")
      ->delimiter(',');
  plan_cmd->add_option("--strategies", plan.strategies, "ring, hierarchical, parameter_server (plan.strategies)")
      ->delimiter(',');
  plan_cmd
      ->add_option("--fusion-thresholds", plan.fusion_thresholds, "Fusion sizes, e.g. 0,64MiB (plan.fusion_thresholds)")
      ->delimiter(',');
  plan_cmd
      ->add_option("--shardings", plan.shardings,
                   "FSDP shardings to try, e.g. full_shard,hybrid_shard (plan.shardings)")
      ->delimiter(',');
  plan_cmd->add_option("--zero-stages", plan.zero_stages, "DeepSpeed ZeRO stages to try, e.g. 2,3 (plan.zero_stages)")
      ->delimiter(',');
  plan_cmd
      ->add_option("--activation-checkpointing", plan.checkpointing,
                   "Checkpointing modes to try: none,selective,full (plan.activation_checkpointing)")
      ->delimiter(',');
  plan_cmd
      ->add_option("--batch-per-gpu", plan.batch_sizes, "Micro-batches per GPU to try, e.g. 1,2,4 (plan.batch_per_gpu)")
      ->delimiter(',');
  plan_cmd->add_option("--low-priority", plan.low_priority,
                       "Also consider low-priority VMs: true|false (plan.low_priority)");
  plan_cmd->add_option("--rank-by", plan.rank_by, "cost or time (plan.rank_by)")
      ->check(CLI::IsMember({"cost", "time"}));
  plan_cmd
      ->add_option("--confidence", plan.confidence,
                   "typical: plan on the prediction; high: on the pessimistic end of its band (plan.confidence)")
      ->check(CLI::IsMember({"typical", "high"}));
  plan_cmd->add_option("--headroom", plan.headroom, "Extra VMs in the quota request, e.g. 10% (plan.quota_headroom)");
  plan_cmd->add_option("--top", plan.top, "Configurations shown (plan.top; default 10)")->check(CLI::Range(1, 100000));
  plan_cmd->add_option("--prices", plan.price_files, "Prices file over topologies/prices.yaml (repeatable)");
  plan_cmd
      ->add_option("-j,--jobs", plan.jobs,
                   "Configurations predicted at once (default: RINGSIM_JOBS, else the number of cores)")
      ->check(CLI::Range(1, 1024));
  plan_cmd
      ->add_option(
          "--fidelity", plan.fidelity,
          "flow | step for every configuration (default: step where collectives run one at a time, else by GPU count)")
      ->check(CLI::IsMember({"flow", "step"}));
  plan_cmd->add_option("--csv", plan.csv_file, "Write every configuration, ranked, as CSV");
  plan_cmd->add_option("--json", plan.json_file, "Write the plan (configurations, flags, quota request) as JSON");
  plan_cmd->add_option(
      "--plot", plan.plot_file,
      "Draw cost against time to train, the deadline, budget and frontier, with gnuplot (.png, .svg, .pdf)");
}

void CommandLine::define_emulate() {
  emulate_cmd = app.add_subcommand(
      "emulate", "Run ringsim-real's code on the scenario's cluster simulated by SimGrid SMPI (train, or --bench)");
  emulate_cmd->add_option("scenario", emulate.scenario, "Scenario YAML file")->required();
  emulate_cmd->add_option("--set", emulate.sets, "Override a key (repeatable)");
  emulate_cmd->add_option("--calibration", emulate.calibration, "Calibration overlay (as for predict)");
  emulate_cmd->add_option("--iterations", emulate.iterations, "Timed training iterations")->check(CLI::Range(1, 1000));
  emulate_cmd->add_option("--warmup", emulate.warmup, "Warm-up training iterations")->check(CLI::Range(0, 1000));
  emulate_cmd->add_option("--json", emulate.json_file,
                          "Write the result JSON (train: schema ringsim.result/1; --bench: the bench rows)");
  emulate_cmd->add_option("--trace", emulate.trace_file, "Write a Horovod-style timeline of rank 0 (train)");
  emulate_cmd->add_flag("--bench", emulate.bench, "Run the nccl-tests-style bench sweep instead of training");
  emulate_cmd->add_option("-b,--minbytes", emulate.min_bytes, "--bench: smallest message (e.g. 1M)");
  emulate_cmd->add_option("-e,--maxbytes", emulate.max_bytes, "--bench: largest message (e.g. 256M)");
  emulate_cmd->add_option("-f,--stepfactor", emulate.factor, "--bench: size multiplier")
      ->check(CLI::Range(1.01, 1024.0));
  emulate_cmd->add_option("-n,--iters", emulate.bench_iters, "--bench: timed iterations per size")
      ->check(CLI::Range(1, 1000));
  emulate_cmd->add_option("-w,--warmup_iters", emulate.bench_warmup, "--bench: warm-up iterations per size")
      ->check(CLI::Range(0, 1000));
  emulate_cmd->add_option("--op", emulate.op, "--bench: collective")->check(CLI::IsMember(collective::kBenchOps));
  emulate_cmd->add_option("--algorithm", emulate.algorithm, "--bench: our allreduce, ring or halving_doubling")
      ->check(CLI::IsMember({"ring", "halving_doubling"}));
  emulate_cmd->add_flag("--baseline", emulate.bench_baseline,
                        "--bench: also time SMPI's MPI_Allreduce (its temporaries take memory per rank)");
  emulate_cmd
      ->add_option("--max-transfers", emulate.limits.max_transfers,
                   "Refuse training emulations estimated above this many transfers per iteration")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  emulate_cmd
      ->add_option("--max-seconds", emulate.limits.max_seconds,
                   "Refuse training emulations estimated above this many seconds of wall time per iteration")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  emulate_cmd->add_flag("--compare", emulate_compare,
                        "Also predict the scenario and show where emulation and prediction differ, part by part");
  emulate_cmd->add_option("--keep", emulate.keep_dir, "Keep the generated spec, cost profile and host file here");
}

bool CommandLine::prints_only() const {
  if (*catalog_cmd) return true;
  if (*topo_cmd) return !topo.dot_file && !topo.platform_xml_file;
  return static_cast<bool>(*check_cmd);
}

int CommandLine::run_sweep_or_plan(const std::string& self) {
  const int cores = child_jobs();  // RINGSIM_JOBS where set, as every command's children
  if (*sweep_cmd) {
    sweep.catalog_dir = catalog_dir;
    if (sweep_cmd->count("--jobs") == 0) sweep.jobs = cores;
    sweep.self = self;
    if (sweep.resume && !sweep.csv_file) throw InputError({}, "sweep: --resume needs --csv FILE");
    return run_sweep(sweep);
  }
  plan.catalog_dir = catalog_dir;
  if (plan_cmd->count("--jobs") == 0) plan.jobs = cores;
  plan.self = self;
  return run_plan(plan);
}

int CommandLine::run(const std::string& self) {
  if (*catalog_cmd) return run_catalog(catalog_dir, section);
  if (*topo_cmd) return run_topo(catalog_dir, topo);
  if (*check_cmd) return run_check(catalog_dir, check_scenario, check_sets);
  if (*predict_cmd) return run_predict(catalog_dir, predict);
  if (*bench_cmd) return run_bench(catalog_dir, bench);
  if (*job_cmd) return run_job(catalog_dir, job);
  if (*validate_cmd) {
    validate.real_binary = (std::filesystem::path(self).parent_path() / "ringsim-real").string();
    return run_validate(catalog_dir, validate);
  }
  if (*calibrate_cmd) return run_calibrate(catalog_dir, calibrate);
#ifdef RINGSIM_HAVE_SMPI
  if (*emulate_cmd) {
    emulate.self = self;
    return emulate_compare ? run_emulate_compare(catalog_dir, emulate) : run_emulate(catalog_dir, emulate);
  }
#endif
  if (*sweep_cmd || *plan_cmd) return run_sweep_or_plan(self);
  return 0;
}

}  // namespace ringsim
