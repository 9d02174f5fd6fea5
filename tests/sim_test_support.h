// Helpers the simulator's tests share: scenarios from text, collectives timed in a child process (one SimGrid
// engine per process), one message as a collective, `ringsim predict`'s JSON, local-host processes.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "collective/collective.h"
#include "execute/estimate/child_process.h"
#include "execute/simgrid/training_sim.h"
#include "load/catalog.h"
#include "load/scenario.h"
#include "test_support.h"

namespace ringsim::test {

inline Scenario scenario(const std::string& text) { return load_scenario_text(text, "test.yaml", test::catalog()); }

// `nodes` NC24rs_v3 nodes with one GPU each, all behind one InfiniBand switch.
inline Scenario one_gpu_per_node(int nodes, const std::string& extra = "") {
  return scenario("cluster: {sku: NC24rs_v3, nodes: " + std::to_string(nodes) +
                  ", gpus_per_node: 1, fabric: infiniband}\n"
                  "model: {name: resnet50, batch_per_gpu: 64}\ntraining: {epochs: 1}\n" +
                  extra);
}

// A simulation run in a child process (one SimGrid engine per process): its duration, and the bytes on
// each link into `edge_bytes`.
inline double timed_in_child(const std::function<CollectiveTiming()>& simulate,
                             std::map<std::string, double>* edge_bytes = nullptr) {
  const std::string out = run_in_child([&] {
    const CollectiveTiming t = simulate();
    std::ostringstream o;
    o.precision(17);
    o << t.duration_s << "\n";
    for (const auto& [name, bytes] : t.edge_bytes) o << name << " " << bytes << "\n";
    return o.str();
  });
  std::istringstream in(out);
  double d = 0;
  in >> d;
  if (edge_bytes) {
    std::string name;
    double b;
    while (in >> name >> b) (*edge_bytes)[name] = b;
  }
  return d;
}

// One message from member 0 to member 1.
class OneTransfer final : public collective::Collective {
 public:
  explicit OneTransfer(std::uint64_t bytes) : Collective(bytes) {}
  std::string_view algorithm() const override { return "one_transfer"; }
  int members() const override { return 2; }
  int steps() const override { return 1; }
  std::vector<collective::StepRun> runs() const override { return {{0, 1, collective::Phase::Push}}; }
  collective::Space home_space(int) const override { return collective::Space::Device; }
  void rank_step(int m, int, collective::RankStep& out) const override {
    out.clear();
    const collective::Transfer t{0, 1, collective::Space::Device, collective::Space::Device, 0, bytes_, false};
    if (m == 0) out.sends.push_back(t);
    if (m == 1) out.recvs.push_back(t);
  }
};

inline double gpu_memory_bandwidth() { return test::catalog().gpu("V100-PCIe-16GB").memory_bandwidth; }

// The prediction alone (--no-band): these tests check the simulator, and the band tests their own runs.
inline nlohmann::json predict_json(const std::string& scenario_file, const std::string& args) {
  const std::string out = std::string("/tmp/ringsim_test_") + std::to_string(::getpid()) + ".json";
  const std::string cmd = std::string(RINGSIM_TEST_BINARY) + " --catalog " + RINGSIM_TEST_CATALOG + " predict " +
                          scenario_file + " " + args + " --no-band --json " + out + " > /dev/null";
  REQUIRE(std::system(cmd.c_str()) == 0);
  std::ifstream in(out);
  nlohmann::json j = nlohmann::json::parse(in);
  std::remove(out.c_str());
  return j;
}

inline double timed_with(const Catalog& catalog, const Scenario& s, const collective::Collective& c, Fidelity f) {
  return std::stod(run_in_child([&] {
    std::ostringstream o;
    o.precision(17);
    o << simulate_collective(catalog, s, c, f).duration_s;
    return o.str();
  }));
}

inline Scenario local_host(int processes) {
  return scenario("cluster: {sku: local-host, nodes: 1, gpus_per_node: " + std::to_string(processes) +
                  ", fabric: ethernet}\nmodel: {name: resnet50, batch_per_gpu: 32}\ntraining: {epochs: 1}\n"
                  "communication: {library: mpi}\n");
}

}  // namespace ringsim::test
