// ringsim-real: the simulator's collective and fusion code on real processes and GPUs, under any MPI
// launcher. `bench` sweeps message sizes like nccl-tests; `train` runs a scenario's iterations.
#include <mpi.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <iostream>
#include <memory>

#include "bench/collective_bench.h"
#include "calibrate/calibration_run.h"
#include "collective/collective.h"
#include "load/catalog.h"
#include "load/input_error.h"
#include "load/units.h"
#include "profile/operator_profile.h"
#include "train/train_run.h"
#include "transport/backend.h"

namespace {

// --probe-cores and --core-to-core-nearest (real/placement/core_to_core.h), for a subcommand whose unit of
// measurement is `unit` ("each size").
void add_probe_options(CLI::App& sub, bool& probe, double& nearest_ns, const std::string& unit) {
  auto* flag = sub.add_flag("--probe-cores", probe,
                            "Time " + unit +
                                " between two core-to-core probes, and again when they show the CPUs "
                                "farther apart than they have been (a VM's vCPUs moved to cores sharing no cache)");
  sub.add_option("--core-to-core-nearest", nearest_ns,
                 "With --probe-cores: the nearest probe (ns) earlier launches saw, waited for from the first one")
      ->check(CLI::PositiveNumber)
      ->needs(flag);
}

// The command line: each subcommand's options, and the run of the one chosen.
struct RealCommandLine {
  RealCommandLine() {
    app.require_subcommand(1);
    app.fallthrough();  // --catalog also after the subcommand
    app.add_option("--catalog", catalog_dir, "Catalog directory (topologies/)");
    define_bench();
    define_train();
    define_calibrate();
#ifndef RINGSIM_SMPI
    define_profile();
#endif
  }
  RealCommandLine(const RealCommandLine&) = delete;  // the app holds pointers into the options
  RealCommandLine& operator=(const RealCommandLine&) = delete;
  void define_bench();
  void define_train();
  void define_calibrate();
  void define_profile();
  int run();  // after parse: the chosen subcommand's exit status

  CLI::App app{"ringsim-real: run ringsim's collectives and fusion for real (MPI, CUDA, NCCL) and measure"};
  std::string catalog_dir = ringsim::Catalog::default_dir();
  ringsim::real::BenchOptions bo;
  std::string min_size = "8", max_size = "32M", fault;
  bool no_baseline = false;
  ringsim::real::TrainOptions to;
  ringsim::real::CalibrateOptions co;
  std::string cal_max = "64M";
  ringsim::real::ProfileOptions po;
  CLI::App *bench = nullptr, *train = nullptr, *calibrate = nullptr, *profile = nullptr;
};

void RealCommandLine::define_bench() {
  bench = app.add_subcommand("bench", "nccl-tests-style sweep: our ring vs the library's collective");
  bench->add_option("-b,--minbytes", min_size, "Smallest message (e.g. 8, 64K, 1M)");
  bench->add_option("-e,--maxbytes", max_size, "Largest message");
  bench->add_option("-f,--stepfactor", bo.factor, "Size multiplier between rows")->check(CLI::Range(1.01, 1024.0));
  bench->add_option("-n,--iters", bo.iters, "Timed iterations per size")->check(CLI::Range(1, 1000000));
  bench->add_option("-w,--warmup_iters", bo.warmup, "Warm-up iterations per size")->check(CLI::Range(0, 1000000));
  bench->add_option("-d,--datatype", bo.type, "Element type")->check(CLI::IsMember({"float", "int32", "double"}));
  bench->add_option("--op", bo.op, "Collective (nccl-tests' names, or allreduce, allgather)")
      ->check(CLI::IsMember(ringsim::collective::kBenchOps));
  bench
      ->add_option("--algorithm", bo.algorithm,
                   "Our allreduce: ring, halving_doubling (Rabenseifner) or tree (NCCL's double binary tree)")
      ->check(CLI::IsMember({"ring", "halving_doubling", "tree"}));
  bench->add_option("--transport", bo.transport, "Transport")->check(CLI::IsMember({"host", "cuda-staged", "nccl"}));
  bench->add_option("--timeout", bo.timeout_s, "Seconds a step may wait before the run is aborted")
      ->check(CLI::Range(0.1, 1e6));
  bench->add_option("--json", bo.json_file, "Write the rows as JSON (rank 0)");
  bench->add_flag("--no-baseline", no_baseline, "Do not time the library's collective (its columns read 0)");
  add_probe_options(*bench, bo.probe_cores, bo.core_to_core_nearest_ns, "each size");
  bench->add_option("--inject-fault", fault, "Testing aid: RANK:STEP:exit|hang makes that rank fail there");
}

void RealCommandLine::define_train() {
  train = app.add_subcommand("train", "Run training iterations of a scenario with the real fusion and collectives");
  train->add_option("scenario", to.scenario, "Scenario YAML file")->required();
  train->add_option("--set", to.sets, "Override a scenario key (repeatable)");
  train->add_option("--iterations", to.iterations, "Timed iterations")->check(CLI::Range(1, 100000));
  train->add_option("--warmup", to.warmup, "Warm-up iterations")->check(CLI::Range(0, 100000));
  train->add_option("--transport", to.transport, "Transport")->check(CLI::IsMember({"host", "cuda-staged", "nccl"}));
  train
      ->add_option("--compute-scale", to.compute_scale,
                   "Multiply the modelled per-layer compute time (e.g. 0.01 for a quick functional run)")
      ->check(CLI::Range(0.0, 1e6));
  train
      ->add_option("--compute-stand-in", to.compute_stand_in,
                   "Host transport: the compute stand-in spins on the CPU (a CPU computing) or sleeps (a GPU "
                   "computing, leaving the cores to the communication)")
      ->check(CLI::IsMember({"spin", "sleep"}));
  train->add_option("--timeout", to.timeout_s, "Seconds a step may wait before the run is aborted")
      ->check(CLI::Range(0.1, 1e6));
  add_probe_options(*train, to.probe_cores, to.core_to_core_nearest_ns, "each iteration");
  train->add_option("--json", to.json_file, "Write the measured result (schema ringsim.result/1)");
  train->add_option("--trace", to.trace_file, "Write a Horovod-style timeline of rank 0");
  train->add_option("--inject-fault", fault, "Testing aid: RANK:STEP:exit|hang makes that rank fail there");
}

void RealCommandLine::define_calibrate() {
  calibrate = app.add_subcommand(
      "calibrate", "Ping-pong and sendrecv per rank-pair class, reduction, copy and compute rates, as JSON");
  calibrate->add_option("-e,--maxbytes", cal_max, "Largest message (ping-pong, sendrecv), reduction and copy");
  calibrate->add_option("-n,--repetitions", co.repetitions, "Timed repetitions per size (median kept)")
      ->check(CLI::Range(1, 100000));
  add_probe_options(*calibrate, co.probe_cores, co.core_to_core_nearest_ns, "each sample");
  calibrate->add_option("--json", co.json_file, "Output file (rank 0)")->required();
}

#ifndef RINGSIM_SMPI
void RealCommandLine::define_profile() {
  profile = app.add_subcommand(
      "profile", "Time the scenario model's kernels (the operator model's) here and write a compute overlay");
  profile->add_option("scenario", po.scenario, "Scenario YAML file")->required();
  profile->add_option("--set", po.sets, "Override a key: --set model.batch_per_gpu=64 (repeatable)");
  profile->add_option("--out", po.out_file, "The compute overlay to write (for ringsim predict --calibration)")
      ->required();
  profile->add_option("-n,--repetitions", po.repetitions, "Timed runs of each distinct kernel (median kept)")
      ->check(CLI::Range(1, 1000));
}
#endif

int RealCommandLine::run() {
  if (!fault.empty()) bo.fault = to.fault = ringsim::real::Fault::parse(fault);
  if (*bench) {
    bo.baseline = !no_baseline;
    bo.min_bytes = ringsim::parse_message_size(min_size);
    bo.max_bytes = ringsim::parse_message_size(max_size);
    if (bo.min_bytes > bo.max_bytes) throw std::invalid_argument("-b must not exceed -e");
    bo.op = std::string(ringsim::collective::op_name(*ringsim::collective::parse_op(bo.op)));
    if (bo.algorithm != "ring" && bo.op != "allreduce")
      throw ringsim::real::UsageError("--algorithm " + bo.algorithm + " applies to --op allreduce only");
    return ringsim::real::run_bench(bo, MPI_COMM_WORLD) == 0 ? 0 : 1;
  }
  if (*calibrate) {
    co.max_bytes = ringsim::parse_message_size(cal_max);
    return ringsim::real::run_calibrate(co, MPI_COMM_WORLD);
  }
#ifndef RINGSIM_SMPI
  if (*profile) {
    po.catalog_dir = catalog_dir;
    return ringsim::real::run_profile(po);
  }
#endif
  to.catalog_dir = catalog_dir;
  return ringsim::real::run_train(to, MPI_COMM_WORLD);
}

}  // namespace

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  const auto cl = std::make_unique<RealCommandLine>();
  int status = 0;
  try {
    cl->app.parse(argc, argv);
    status = cl->run();
  } catch (const CLI::ParseError& e) {
    if (rank == 0) cl->app.exit(e);
    status = e.get_exit_code() ? 2 : 0;
    MPI_Finalize();
    return status;
  } catch (const ringsim::real::TimeoutError& e) {
    std::fprintf(stderr, "ringsim-real: error: %s\n", e.what());
    MPI_Abort(MPI_COMM_WORLD, 3);
  } catch (const ringsim::InputError& e) {
    if (rank == 0) std::fprintf(stderr, "%s\n", e.what());
    status = 2;
  } catch (const ringsim::real::UsageError& e) {
    if (rank == 0) std::fprintf(stderr, "ringsim-real: error: %s\n", e.what());
    status = 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ringsim-real: error (rank %d): %s\n", rank, e.what());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  MPI_Finalize();
  return status;
}
