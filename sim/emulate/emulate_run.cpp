#include "emulate/emulate_run.h"

#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <stdexcept>

#include "emulate/emulation_spec.h"
#include "execute/comm_model.h"
#include "execute/emulation_profile.h"
#include "execute/estimate/child_process.h"
#include "execute/simgrid/platform_builder.h"
#include "execute/simgrid/training_sim.h"
#include "graph/topology_graph.h"
#include "load/input_error.h"
#include "load/scenario.h"
#include "load/units.h"
#include "report/output_file.h"

namespace fs = std::filesystem;

namespace ringsim {

namespace {

std::string find_smpirun() {
  if (const char* p = std::getenv("RINGSIM_SMPIRUN")) return p;
  return RINGSIM_SMPIRUN_PATH;
}

// The emulation libraries: beside the binary in the build tree (bin/../lib), or lib/ringsim when installed.
std::string find_library(const std::string& self, const std::string& name) {
  const fs::path bin = fs::path(self).parent_path();
  for (const fs::path& dir : {bin / ".." / "lib", bin / ".." / "lib" / "ringsim"})
    if (fs::exists(dir / name)) return fs::canonical(dir / name).string();
  throw std::runtime_error("cannot find " + name + " beside " + self +
                           " (this build has no SMPI emulation, or it was not built)");
}

class TempDir {
 public:
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "ringsim-emulate-XXXXXX").string();
    if (!mkdtemp(pattern.data())) throw std::runtime_error("cannot create a temporary directory");
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

int spawn_and_wait(const std::vector<std::string>& args, const std::vector<std::string>& extra_env) {
  std::cout.flush();
  return run_program({args, "", "", extra_env});
}

std::string read_text(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

int run_emulate(const std::string& catalog_dir, const EmulateOptions& o) {
  EmulationSpec spec{fs::absolute(catalog_dir).string(), fs::absolute(o.scenario).string(), o.sets};
  if (o.calibration) spec.sets.push_back("calibration=" + fs::absolute(*o.calibration).string());
  const auto [catalog, s] = spec.load();  // bad input is reported here, before anything runs
  std::vector<NamedFile> out;
  add_file(out, "--json", o.json_file);
  add_file(out, "--trace", o.trace_file);
  check_outputs(run_inputs(catalog_dir, o.scenario, s.calibration), out);
  if (const std::string why = real_run_refusal(s); !why.empty()) throw InputError({}, "emulate: " + why);
  const int ranks = o.bench ? s.cluster.total_gpus() : emulated_ranks(s);
  if (ranks > kMaxEmulatedRanks)
    throw InputError({}, "emulate: " + std::to_string(ranks) + " ranks is more than emulation handles (" +
                             std::to_string(kMaxEmulatedRanks) + "); use `ringsim predict` for this size");
  if (!o.bench)
    check_work_limits(estimate_work(catalog, s, Fidelity::Emulated), Fidelity::Emulated, o.limits, "emulate");
  if (o.bench && s.communication.strategy == Strategy::ParameterServer)
    throw InputError({},
                     "emulate --bench: the bench runs ring collectives over the GPU ranks; the scenario's "
                     "strategy parameter_server has server ranks (use `ringsim emulate` without --bench)");

  // The cost profile from the same CommModel `predict` uses.
  const Topology topo = Topology::build(catalog, simulated_shape(s));
  CommModel cm(catalog, s, topo);
  if (s.communication.strategy == Strategy::ParameterServer) cm.set_servers(parameter_server_places(s, topo));
  const EmulationProfile profile = EmulationProfile::from(cm, emulated_ranks(s));

  const std::string program = find_library(o.self, "libringsim_real_smpi.so");
  const std::string plugin = find_library(o.self, "libringsim_platform.so");
  TempDir tmp;
  const fs::path dir = o.keep_dir ? fs::path(*o.keep_dir) : tmp.path();
  if (o.keep_dir) fs::create_directories(dir);
  write_file_atomically((dir / "spec.json").string(), spec.to_json());
  write_file_atomically((dir / "profile.json").string(), profile.to_json());
  std::string hosts;
  for (int r = 0; r < ranks; ++r) hosts += "rank" + std::to_string(r) + "\n";
  write_file_atomically((dir / "hostfile").string(), hosts);

  std::vector<std::string> args = {find_smpirun(), "-np",       std::to_string(ranks),      "-platform",
                                   plugin,         "-hostfile", (dir / "hostfile").string()};
  for (const auto& c : network_model_config()) args.push_back("--cfg=" + c);
  for (const char* c : {// time comes from the profile and the platform, not from this machine's CPU
                        "smpi/simulate-computation:no",
                        // SMPI's own collective algorithms for the few blocking collectives (the
                        // timing MPI_Allreduce after each iteration, bench barriers): with the ompi
                        // and mpich selectors SimGrid 3.32 deadlocked in that MPI_Allreduce at 16 ranks
                        "smpi/coll-selector:default",
                        // SMPI_SHARED_MALLOC buffers map the same pages in every rank
                        "smpi/shared-malloc:global",
                        // ... folded onto one 64 MiB file: with 1 MiB blocks 256 ranks of ResNet-50
                        // needed more mappings than vm.max_map_count allows
                        "smpi/shared-malloc-blocksize:67108864"})
    args.push_back(std::string("--cfg=") + c);
  args.push_back("--log=root.thres:warning");
  args.push_back(program);
  args.push_back("--catalog");
  args.push_back(spec.catalog_dir);
  if (o.bench) {
    args.insert(args.end(), {"bench", "-b", o.min_bytes, "-e", o.max_bytes, "-f", std::to_string(o.factor), "-n",
                             std::to_string(o.bench_iters), "-w", std::to_string(o.bench_warmup), "--op", o.op,
                             "--algorithm", o.algorithm});
    if (!o.bench_baseline) args.push_back("--no-baseline");
  } else {
    args.insert(args.end(), {"train", spec.scenario_file, "--iterations", std::to_string(o.iterations), "--warmup",
                             std::to_string(o.warmup)});
    for (const auto& x : spec.sets) args.insert(args.end(), {"--set", x});
    args.insert(args.end(), {"--trace", (dir / "timeline.json").string()});
  }
  // Always a result file: its absence is how a run that SimGrid ended early (a deadlock it detected
  // exits with status 0) shows.
  const fs::path result = dir / "result.json";
  args.insert(args.end(), {"--json", result.string()});

  std::cout << "ringsim emulate: " << s.name << ", " << ranks << " SMPI ranks on the simulated " << s.cluster.nodes
            << " x " << s.cluster.sku << " (" << profile.library << " costs, CM02 network model)\n";
  const auto t0 = std::chrono::steady_clock::now();
  const int status = spawn_and_wait(args, {"RINGSIM_EMULATION_SPEC=" + (dir / "spec.json").string(),
                                           "RINGSIM_EMULATION_PROFILE=" + (dir / "profile.json").string()});
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (status != 0) {
    std::cerr << "ringsim emulate: smpirun ended with status " << status << "\n";
    return status == 2 ? 2 : 1;
  }
  if (!fs::exists(result)) {
    std::cerr << "ringsim emulate: the emulated program did not finish (see SimGrid's messages above)\n";
    return 1;
  }
  if (o.json_file) write_file_atomically(*o.json_file, read_text(result));
  if (o.trace_file) write_file_atomically(*o.trace_file, read_text(dir / "timeline.json"));
  std::cout << "  emulation wall time         " << format_time(wall) << "\n";
  return 0;
}

}  // namespace ringsim
