// The simulator against closed forms, in both fidelities (each SimGrid run in a forked child), and the
// properties of `ringsim predict`: fidelities agree, outputs are deterministic, bottlenecks are where
// the topology says.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "calibrate/calibrate.h"
#include "collective/collective.h"
#include "execute/allreduce_bench.h"
#include "execute/buffer_collective.h"
#include "execute/child_process.h"
#include "execute/comm_model.h"
#include "execute/prediction_band.h"
#include "execute/step_model.h"
#include "execute/training_sim.h"
#include "execute/work_estimate.h"
#include "graph/ring_search.h"
#include "graph/routing.h"
#include "graph/topology_graph.h"
#include "load/input_error.h"
#include "load/overlay.h"
#include "load/scenario.h"
#include "load/uncertain.h"
#include "schedule/compute_model.h"
#include "test_support.h"
#include "validate/validation.h"

using namespace ringsim;
using collective::Space;

namespace {

Scenario scenario(const std::string& text) { return load_scenario_text(text, "test.yaml", test::catalog()); }

// `nodes` NC24rs_v3 nodes with one GPU each, all behind one InfiniBand switch.
Scenario one_gpu_per_node(int nodes, const std::string& extra = "") {
  return scenario("cluster: {sku: NC24rs_v3, nodes: " + std::to_string(nodes) +
                  ", gpus_per_node: 1, fabric: infiniband}\n"
                  "model: {name: resnet50, batch_per_gpu: 64}\ntraining: {epochs: 1}\n" +
                  extra);
}

// A simulation run in a child process (one SimGrid engine per process): its duration, and the bytes on
// each link into `edge_bytes`.
double timed_in_child(const std::function<CollectiveTiming()>& simulate,
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

double timed(const Scenario& s, const collective::Collective& c, Fidelity f,
             std::map<std::string, double>* edge_bytes = nullptr) {
  return timed_in_child([&] { return simulate_collective(test::catalog(), s, c, f); }, edge_bytes);
}

// One message from member 0 to member 1.
class OneTransfer final : public collective::Collective {
 public:
  explicit OneTransfer(std::uint64_t bytes) : Collective(bytes) {}
  std::string_view algorithm() const override { return "one_transfer"; }
  int members() const override { return 2; }
  int steps() const override { return 1; }
  std::vector<collective::StepRun> runs() const override { return {{0, 1, collective::Phase::Push}}; }
  Space home_space(int) const override { return Space::Device; }
  void rank_step(int m, int, collective::RankStep& out) const override {
    out.clear();
    const collective::Transfer t{0, 1, Space::Device, Space::Device, 0, bytes_, false};
    if (m == 0) out.sends.push_back(t);
    if (m == 1) out.recvs.push_back(t);
  }
};

struct PathFacts {
  double alpha = 0;      // route latency + the library's message overhead
  double bandwidth = 0;  // effective bottleneck bandwidth
};

// From the catalog and the foundation's router, independently of the simulator's own path code.
PathFacts facts(const Scenario& s, VertexId (*pick)(const Topology&), VertexId (*pick_dst)(const Topology&)) {
  const Catalog& c = test::catalog();
  const Topology topo = Topology::build(c, simulated_shape(s));
  const Route r = Router(topo).route(pick(topo), pick_dst(topo));
  const LibraryProfile& lib = c.library(std::string(to_string(s.communication.library)));
  PathFacts f;
  f.alpha = r.latency;
  f.bandwidth = 1e300;
  bool fabric = false;
  for (auto e : r.edges) {
    const Link& l = topo.link(e);
    const bool net = l.kind == LinkKind::InfiniBand || l.kind == LinkKind::Ethernet;
    fabric |= net;
    f.bandwidth =
        std::min(f.bandwidth, l.bandwidth * (net ? lib.fabric(s.cluster.fabric) : lib.intra_node).bandwidth_fraction);
  }
  f.alpha += (fabric ? lib.fabric(s.cluster.fabric) : lib.intra_node).message_overhead;
  return f;
}

double gpu_memory_bandwidth() { return test::catalog().gpu("V100-PCIe-16GB").memory_bandwidth; }

// The prediction alone (--no-band): these tests check the simulator, and the band tests their own runs.
nlohmann::json predict_json(const std::string& scenario_file, const std::string& args) {
  const std::string out = std::string("/tmp/ringsim_test_") + std::to_string(::getpid()) + ".json";
  const std::string cmd = std::string(RINGSIM_TEST_BINARY) + " --catalog " + RINGSIM_TEST_CATALOG + " predict " +
                          scenario_file + " " + args + " --no-band --json " + out + " > /dev/null";
  REQUIRE(std::system(cmd.c_str()) == 0);
  std::ifstream in(out);
  nlohmann::json j = nlohmann::json::parse(in);
  std::remove(out.c_str());
  return j;
}

using ringsim::test::slurp;

}  // namespace

TEST_CASE("one transfer takes latency + size / bandwidth", "[sim]") {
  const Scenario s = one_gpu_per_node(2);
  const PathFacts f = facts(
      s, [](const Topology& t) { return t.gpu(0, 0); }, [](const Topology& t) { return t.gpu(1, 0); });
  for (std::uint64_t bytes : {std::uint64_t{4}, std::uint64_t{1} << 20, std::uint64_t{256} << 20}) {
    const double expected = f.alpha + bytes / f.bandwidth;
    for (Fidelity fid : {Fidelity::Flow, Fidelity::Step}) {
      CAPTURE(bytes, to_string(fid));
      CHECK(timed(s, OneTransfer(bytes), fid) == Approx(expected).epsilon(1e-6));
    }
  }
}

TEST_CASE("ring allreduce on p GPUs behind one switch: 2(p-1)(alpha + S/(pB)) + the last slices' reductions", "[sim]") {
  const std::uint64_t S = std::uint64_t{64} << 20;
  for (int p : {2, 4, 8, 32}) {
    const Scenario s = one_gpu_per_node(p);
    const PathFacts f = facts(
        s, [](const Topology& t) { return t.gpu(0, 0); }, [](const Topology& t) { return t.gpu(1, 0); });
    const double chunk = static_cast<double>(S) / p;
    // Closed form, plus what remains of the p-1 reduce-scatter reductions after each receive: NCCL reduces as
    // the data arrives, so only its last 1 MiB slice's (3 memory passes on the GPU) is left each time.
    const double slice = std::min(chunk, 1048576.0);
    const double expected =
        2 * (p - 1) * (f.alpha + chunk / f.bandwidth) + (p - 1) * 3 * slice / gpu_memory_bandwidth();
    auto ring = collective::make_ring_allreduce(p, S, 4, Space::Device);
    for (Fidelity fid : {Fidelity::Flow, Fidelity::Step}) {
      CAPTURE(p, to_string(fid), expected);
      CHECK(timed(s, *ring, fid) == Approx(expected).epsilon(0.01));
    }
  }
}

TEST_CASE("one parameter server: its link carries 2 n S and bounds the exchange", "[sim]") {
  const int n = 4;
  const std::uint64_t S = std::uint64_t{32} << 20;
  const Scenario s = one_gpu_per_node(
      n, "communication: {strategy: parameter_server, parameter_servers: 1, parameter_server_placement: dedicated}\n");
  auto ps = collective::make_parameter_server_exchange(n, {S}, Space::Device);
  const PathFacts f = facts(
      s, [](const Topology& t) { return t.gpu(0, 0); }, [](const Topology& t) { return t.host_memory(4, 0); });
  const double host_rate = test::catalog().library("nccl").host_reduction_rate;
  // Push: n flows share the server's inbound link; reduce n pushes and update on the server CPU; pull.
  const double expected = 2 * (n * S / f.bandwidth + f.alpha) + (n + 1) * S / host_rate;
  for (Fidelity fid : {Fidelity::Flow, Fidelity::Step}) {
    CAPTURE(to_string(fid));
    std::map<std::string, double> bytes;
    const double d = timed(s, *ps, fid, &bytes);
    CHECK(d == Approx(expected).epsilon(0.01));
    CHECK(d >= 2.0 * n * S / f.bandwidth);
    const double server_link = bytes["switch0->n4.ib0"] + bytes["n4.ib0->switch0"];
    CHECK(server_link == Approx(2.0 * n * S));
    CHECK(bytes["n0.ib0->switch0"] == Approx(S));  // each worker pushes S once
  }
}

TEST_CASE("a parameter server as a process: its exchanges pass through its RPC stack at the library's rpc_rate",
          "[sim]") {
  // As the test above, the server a process of its own (TensorFlow's gRPC): n pushes share its stack's way in
  // and n pulls its way out, each at rpc_rate when that is below the server's link.
  const int n = 4;
  const std::uint64_t S = std::uint64_t{32} << 20;
  const Scenario s = one_gpu_per_node(n,
                                      "communication: {strategy: parameter_server, parameter_servers: 1, "
                                      "parameter_server_placement: dedicated, parameter_server_transport: rpc}\n");
  auto ps = collective::make_parameter_server_exchange(n, {S}, Space::Device);
  const PathFacts f = facts(
      s, [](const Topology& t) { return t.gpu(0, 0); }, [](const Topology& t) { return t.host_memory(4, 0); });
  const double rpc = test::catalog().library("nccl").rpc_rate,
               host_rate = test::catalog().library("nccl").host_reduction_rate;
  REQUIRE(rpc < f.bandwidth);
  const double expected = 2 * (n * S / rpc + f.alpha) + (n + 1) * S / host_rate;
  for (Fidelity fid : {Fidelity::Flow, Fidelity::Step}) {
    CAPTURE(to_string(fid));
    std::map<std::string, double> bytes;
    const double d = timed(s, *ps, fid, &bytes);
    CHECK(d == Approx(expected).epsilon(0.01));
    CHECK(bytes["ps0/rpc-in"] == Approx(n * S));
    CHECK(bytes["ps0/rpc-out"] == Approx(n * S));
    CHECK(bytes["switch0->n4.ib0"] == Approx(n * S));  // the links carry the same bytes as in process
  }
  // In one process (the default) nothing passes through a stack.
  std::map<std::string, double> bytes;
  timed(one_gpu_per_node(n,
                         "communication: {strategy: parameter_server, parameter_servers: 1, "
                         "parameter_server_placement: dedicated}\n"),
        *ps, Fidelity::Step, &bytes);
  CHECK(bytes.count("ps0/rpc-in") == 0);
}

TEST_CASE("parameter servers on the GPUs: n-1 pushes into the serving GPU, reduced and updated there", "[sim]") {
  const int n = 4;
  const std::uint64_t S = std::uint64_t{32} << 20;
  const Scenario s =
      one_gpu_per_node(n, "communication: {strategy: parameter_server, parameter_server_placement: gpus}\n");
  REQUIRE(s.communication.parameter_servers == n);
  REQUIRE(s.communication.server_members() == 0);
  // One tensor, served by GPU 0.
  auto ps = collective::make_parameter_server_on_workers({S, 0, 0, 0}, Space::Device);
  const PathFacts f = facts(
      s, [](const Topology& t) { return t.gpu(1, 0); }, [](const Topology& t) { return t.gpu(0, 0); });
  // Push: n-1 flows share GPU 0's NIC; n-1 reductions and the update on GPU 0 (3 memory passes each); pull.
  const double expected = 2 * ((n - 1) * S / f.bandwidth + f.alpha) + n * 3.0 * S / gpu_memory_bandwidth();
  for (Fidelity fid : {Fidelity::Flow, Fidelity::Step}) {
    CAPTURE(to_string(fid));
    std::map<std::string, double> bytes;
    CHECK(timed(s, *ps, fid, &bytes) == Approx(expected).epsilon(0.01));
    CHECK(bytes["switch0->n0.ib0"] == Approx((n - 1.0) * S));  // GPU 0 keeps its own part local
    CHECK(bytes["n1.ib0->switch0"] == Approx(S));
  }
}

TEST_CASE("node aggregation: each node pushes its GPUs' sum once and pulls once", "[sim]") {
  const std::uint64_t S = std::uint64_t{16} << 20;
  auto two_nodes = [&](const std::string& aggregation) {
    return scenario(
        "cluster: {sku: NC24rs_v3, nodes: 2, gpus_per_node: 4, fabric: infiniband}\n"
        "model: {name: resnet50, batch_per_gpu: 64}\ntraining: {epochs: 1}\n"
        "communication: {strategy: parameter_server, parameter_servers: 1, parameter_server_aggregation: " +
        aggregation + "}\n");
  };
  const Scenario agg = two_nodes("node"), flat = two_nodes("none");
  auto node_ps = collective::make_node_aggregated_parameter_server(2, 4, {S}, 0, Space::Device);
  auto flat_ps = collective::make_parameter_server_exchange(8, {S}, Space::Device);
  for (Fidelity fid : {Fidelity::Flow, Fidelity::Step}) {
    CAPTURE(to_string(fid));
    std::map<std::string, double> a, b;
    const double t_agg = timed(agg, *node_ps, fid, &a), t_flat = timed(flat, *flat_ps, fid, &b);
    // The server lives on node 0: node 1's NIC carries one push out and one pull in, not one per GPU.
    CHECK(a["n1.ib0->switch0"] == Approx(S));
    CHECK(a["switch0->n1.ib0"] == Approx(S));
    CHECK(b["n1.ib0->switch0"] == Approx(4.0 * S));
    CHECK(t_agg < t_flat);
  }
  // Both fidelities agree on the node-aggregated exchange.
  CHECK(timed(agg, *node_ps, Fidelity::Step) == Approx(timed(agg, *node_ps, Fidelity::Flow)).epsilon(0.02));
}

TEST_CASE("ring on one NC24rs_v3 crosses its PCIe links and sockets, nodes of two GPUs are bound by the NIC", "[sim]") {
  const Scenario one = scenario(
      "cluster: {sku: NC24rs_v3, nodes: 1}\nmodel: {name: resnet50, batch_per_gpu: 64}\ntraining: {epochs: 1}\n");
  const std::uint64_t S = std::uint64_t{64} << 20;
  auto ring = collective::make_ring_allreduce(4, S, 4, Space::Device);
  std::map<std::string, double> bytes;
  timed(one, *ring, Fidelity::Flow, &bytes);
  // Ring 0 -> 1 -> 2 -> 3 -> 0: GPU0 and GPU1 meet at cpu0's root ports, 1 -> 2 crosses QPI.
  const double per_link = 2.0 * 3 * S / 4;
  for (const char* link : {"n0.gpu0->n0.cpu0", "n0.cpu0->n0.gpu1", "n0.gpu1->n0.cpu0", "n0.cpu0->n0.cpu1",
                           "n0.cpu1->n0.gpu2", "n0.gpu3->n0.cpu1", "n0.cpu1->n0.cpu0", "n0.cpu0->n0.gpu0"}) {
    CAPTURE(link);
    CHECK(bytes[link] == Approx(per_link));
  }
  // NCCL's SHM between the sockets: the crossing's own path beside the QPI's, both ways.
  CHECK(bytes["n0.cpu0->n0.cpu1/gpu-to-gpu"] == Approx(per_link));
  CHECK(bytes["n0.cpu1->n0.cpu0/gpu-to-gpu"] == Approx(per_link));
  CHECK(bytes.count("n0.cpu0->n0.ib0") == 0);

  const std::string dir = RINGSIM_TEST_SCENARIOS;
  // NCCL's 6 GB/s between the sockets binds a node's four GPUs, ahead of their PCIe links and of FDR
  // InfiniBand; two nodes of GPUs 0 and 1 (one socket) are bound by the NIC.
  const auto j1 = predict_json(dir + "/resnet50_imagenet_8x_nc24rs_v3.yaml", "--set cluster.nodes=1");
  CHECK(j1["bottleneck"]["kind"] == "socket");
  CHECK(j1["bottleneck"]["link"] == "n0.cpu0->n0.cpu1/gpu-to-gpu");
  const auto j2 =
      predict_json(dir + "/resnet50_imagenet_8x_nc24rs_v3.yaml", "--set cluster.nodes=2 --set cluster.gpus_per_node=2");
  CHECK(j2["bottleneck"]["kind"] == "infiniband");
  CHECK(j2["bottleneck"]["link"].get<std::string>().find("ib0") != std::string::npos);
}

TEST_CASE("flow and step fidelities agree within 2 % on every bundled scenario up to 64 GPUs", "[sim][many_runs]") {
  const std::string dir = RINGSIM_TEST_SCENARIOS;
  for (const char* f : {"landolakes_cifar10_2x_nc24rs_v3.yaml", "resnet50_imagenet_8x_nc24rs_v3.yaml",
                        "resnet50_imagenet_nccl_tcp_4x_nc24s_v3.yaml", "sharcnet_alexnet_caffe_monk.yaml"}) {
    for (const char* variant : {"", "--set communication.strategy=hierarchical",
                                "--set communication.strategy=parameter_server --set communication.parameter_servers=1",
                                "--set communication.cycle_time=0 --set communication.fusion_threshold=0"}) {
      CAPTURE(f, variant);
      const auto flow = predict_json(dir + "/" + f, std::string(variant) + " --fidelity flow");
      const auto step = predict_json(dir + "/" + f, std::string(variant) + " --fidelity step");
      REQUIRE(flow["gpus"].get<int>() <= 64);
      CHECK(step["iteration_time_s"].get<double>() == Approx(flow["iteration_time_s"].get<double>()).epsilon(0.02));
      // Communication alone may differ a little more: in the flow fidelity ranks run ahead into the next
      // step and contend with the previous step's slower transfers (host-staged rings), which the
      // step-synchronous evaluation does not see.
      CHECK(step["communication_time_s"].get<double>() ==
            Approx(flow["communication_time_s"].get<double>()).epsilon(0.05));
    }
  }
}

TEST_CASE("flow and step fidelities agree within 2 % on every bundled scenario, as bundled, up to 64 GPUs",
          "[every_scenario]") {
  // Every scenario in scenarios/ and validate/scenarios/, without variants (the test above varies four of
  // them). Scenarios with collectives in flight at once are simulated by the flow fidelity only: the step
  // fidelity refuses them, and the test checks that it does.
  std::vector<std::filesystem::path> files;
  for (const char* dir : {RINGSIM_TEST_SCENARIOS, RINGSIM_TEST_VALIDATION_SCENARIOS})
    for (const auto& e : std::filesystem::directory_iterator(dir))
      if (e.path().extension() == ".yaml") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  REQUIRE(files.size() >= 20);
  int compared = 0;
  for (const auto& f : files) {
    CAPTURE(f.filename().string());
    const std::string step_cmd = std::string(RINGSIM_TEST_BINARY) + " --catalog " + RINGSIM_TEST_CATALOG + " predict " +
                                 f.string() + " --fidelity step > /dev/null 2>&1";
    if (WEXITSTATUS(std::system(step_cmd.c_str())) != 0) {
      const auto flow = predict_json(f.string(), "--fidelity flow");
      CHECK(flow["scenario"]["communication"]["concurrent_collectives"] != 1);
      continue;
    }
    const auto step = predict_json(f.string(), "--fidelity step");
    if (step["gpus"].get<int>() > 64) continue;
    const auto flow = predict_json(f.string(), "--fidelity flow");
    CHECK(step["iteration_time_s"].get<double>() == Approx(flow["iteration_time_s"].get<double>()).epsilon(0.02));
    CHECK(step["communication_time_s"].get<double>() ==
          Approx(flow["communication_time_s"].get<double>()).epsilon(0.05));
    ++compared;
  }
  CHECK(compared >= 14);
}

TEST_CASE("concurrent collectives: never more in flight than the limit, and sharing links they overlap", "[sim]") {
  // Two NC24rs_v3 nodes, ResNet-50's 161 tensors each a collective of its own to one of two dedicated servers.
  const std::string file = std::string(RINGSIM_TEST_SCENARIOS) + "/resnet50_imagenet_8x_nc24rs_v3.yaml";
  const std::string base =
      "--set cluster.nodes=2 --set communication.strategy=parameter_server --set communication.parameter_servers=2 "
      "--set communication.parameter_server_placement=dedicated --set communication.fusion_threshold=0 "
      "--set communication.cycle_time=0 --set communication.concurrent_collectives=";
  struct Run {
    double iteration = 0, communication = 0, union_of_spans = 0, bound = 0;
    int most_in_flight = 0;
  };
  auto run = [&](const std::string& limit) {
    const auto j = predict_json(file, base + limit + " --fidelity flow");
    Run r;
    r.iteration = j["iteration_time_s"].get<double>();
    r.communication = j["communication_time_s"].get<double>();
    std::vector<std::pair<double, int>> events;  // an end before a start at the same instant
    std::vector<std::pair<double, double>> spans;
    for (const auto& c : j["collectives"]) {
      events.push_back({c["start_s"].get<double>(), 1});
      events.push_back({c["end_s"].get<double>(), -1});
      spans.push_back({c["start_s"].get<double>(), c["end_s"].get<double>()});
    }
    REQUIRE(spans.size() == 161);
    std::sort(events.begin(), events.end());
    int now = 0;
    for (const auto& e : events) r.most_in_flight = std::max(r.most_in_flight, now += e.second);
    std::sort(spans.begin(), spans.end());
    double covered_to = 0;
    for (const auto& [a, b] : spans) {
      r.union_of_spans += std::max(0.0, b - std::max(a, covered_to));
      covered_to = std::max(covered_to, b);
    }
    // The busiest server link bounds the exchange from below: its bytes at its bandwidth.
    const auto& l = j["bottleneck"];
    r.bound = l["bytes"].get<double>() / l["bandwidth_bytes_per_s"].get<double>();
    return r;
  };
  const Run one = run("1"), two = run("2"), all = run("unlimited");
  CHECK(one.most_in_flight == 1);
  CHECK(two.most_in_flight == 2);
  CHECK(all.most_in_flight > 2);
  for (const Run* r : {&one, &two, &all}) {
    CHECK(r->communication == Approx(r->union_of_spans).epsilon(1e-9));  // time with one or more in flight
    CHECK(r->communication >= r->bound * 0.999);
  }
  // Pushes to the two servers and pulls from them overlap: the exchange and the iteration get shorter.
  CHECK(two.communication < 0.8 * one.communication);
  CHECK(all.communication <= two.communication * 1.001);
  CHECK(two.iteration < one.iteration);
  CHECK(all.iteration <= two.iteration * 1.001);

  // The step fidelity's collective times assume links to themselves: it refuses, and says what to do.
  const std::string cmd = std::string(RINGSIM_TEST_BINARY) + " --catalog " + RINGSIM_TEST_CATALOG + " predict " + file +
                          " " + base + "2 --fidelity step";
  const test::CommandResult r = test::run_command(cmd);
  CHECK(r.status != 0);
  CHECK_THAT(r.output, Catch::Contains("flow fidelity only") && Catch::Contains("--fidelity flow"));
}

TEST_CASE("predict: the result JSON has the shared schema's fields and consistent numbers", "[sim]") {
  const auto j = predict_json(std::string(RINGSIM_TEST_SCENARIOS) + "/resnet50_imagenet_8x_nc24rs_v3.yaml", "");
  for (const char* k : {"schema", "gpus", "nodes", "iteration_time_s", "images_per_sec", "images_per_sec_per_gpu",
                        "scaling_efficiency", "compute_time_s", "communication_time_s", "exposed_communication_s",
                        "epoch_time_s", "time_to_train_s", "bottleneck", "scenario", "collectives"})
    CHECK(j.contains(k));
  CHECK(j["schema"] == "ringsim.result/1");
  CHECK(j["fidelity"] == "flow");  // 32 GPUs: flow by default
  const double it = j["iteration_time_s"];
  CHECK(j["images_per_sec"].get<double>() == Approx(32 * 64 / it));
  CHECK(it >= j["compute_time_s"].get<double>());
  CHECK(j["exposed_communication_s"].get<double>() == Approx(it - j["compute_time_s"].get<double>()));
  CHECK(j["epoch_time_s"].get<double>() == Approx(std::ceil(1281167.0 / (32 * 64)) * it));
  CHECK(j["compute_source"]["kind"] == "roofline");  // no measured V100 rate in compute.yaml
  std::uint64_t bytes = 0;
  double last_end = 0;
  for (const auto& c : j["collectives"]) {
    bytes += c["bytes"].get<std::uint64_t>();
    CHECK(c["start_s"].get<double>() >= last_end);  // one collective at a time, as Horovod's background thread
    last_end = c["end_s"];
  }
  CHECK(bytes == 25557032ull * 4);  // every gradient exactly once
}

TEST_CASE("predict: the single-GPU rate comes from the scenario, a measured row, or the roofline", "[sim]") {
  const std::string dir = RINGSIM_TEST_SCENARIOS;
  const auto measured = predict_json(dir + "/resnet50_imagenet_8x_nc24rs_v3.yaml",
                                     "--set cluster.sku=NC24r --set cluster.nodes=1 --set cluster.gpus_per_node=1");
  CHECK(measured["compute_source"]["kind"] == "measured");
  CHECK(measured["single_gpu_images_per_sec"].get<double>() == Approx(51.5));  // K80, batch 64 (compute.yaml)
  const auto given = predict_json(dir + "/resnet50_imagenet_8x_nc24rs_v3.yaml",
                                  "--set model.images_per_sec_single_gpu=300 --set cluster.nodes=1");
  CHECK(given["compute_source"]["kind"] == "scenario");
  CHECK(given["single_gpu_images_per_sec"].get<double>() == Approx(300));
}

TEST_CASE("predict: same input twice gives byte-identical JSON, trace and links", "[sim]") {
  const std::string base = std::string("/tmp/ringsim_det_") + std::to_string(::getpid());
  for (int run = 0; run < 2; ++run) {
    const std::string cmd = std::string(RINGSIM_TEST_BINARY) + " --catalog " + RINGSIM_TEST_CATALOG + " predict " +
                            RINGSIM_TEST_SCENARIOS + "/landolakes_cifar10_2x_nc24rs_v3.yaml --json " + base +
                            std::to_string(run) + ".json --trace " + base + std::to_string(run) + ".trace --links " +
                            base + std::to_string(run) + ".csv > /dev/null";
    REQUIRE(std::system(cmd.c_str()) == 0);
  }
  for (const char* ext : {".json", ".trace", ".csv"}) {
    const std::string a = slurp(base + "0" + ext), b = slurp(base + "1" + ext);
    CHECK(!a.empty());
    CHECK(a == b);
    std::remove((base + "0" + ext).c_str());
    std::remove((base + "1" + ext).c_str());
  }
}

TEST_CASE("predict: the trace is a Horovod-style timeline with balanced spans", "[sim]") {
  const std::string file = std::string("/tmp/ringsim_trace_") + std::to_string(::getpid()) + ".json";
  const std::string cmd = std::string(RINGSIM_TEST_BINARY) + " --catalog " + RINGSIM_TEST_CATALOG + " predict " +
                          RINGSIM_TEST_SCENARIOS + "/landolakes_cifar10_2x_nc24rs_v3.yaml --trace " + file +
                          " > /dev/null";
  REQUIRE(std::system(cmd.c_str()) == 0);
  std::ifstream in(file);
  const auto ev = nlohmann::json::parse(in);
  std::remove(file.c_str());
  REQUIRE(ev.is_array());
  std::map<int, int> depth;
  std::set<std::string> names;
  for (const auto& e : ev) {
    const std::string ph = e["ph"];
    if (ph == "B") {
      ++depth[e["pid"].get<int>()];
      names.insert(e["name"].get<std::string>());
    } else if (ph == "E") {
      REQUIRE(--depth[e["pid"].get<int>()] >= 0);
    }
  }
  for (const auto& [pid, d] : depth) CHECK(d == 0);
  for (const char* n : {"NEGOTIATE_ALLREDUCE", "ALLREDUCE", "MPI_ALLREDUCE", "MEMCPY_IN_FUSION_BUFFER",
                        "MEMCPY_OUT_FUSION_BUFFER", "FORWARD", "copy_to_host", "reduce_scatter"})
    CHECK(names.count(n) == 1);
}

TEST_CASE("validate --published: a case whose error grows past the recorded one fails the check", "[validate]") {
  const std::string dir = std::string(RINGSIM_TEST_CATALOG) + "/../validate/data/";
  std::ifstream in(dir + "published_baseline.json");
  auto baseline = nlohmann::json::parse(in);
  // 27 DGX-1 P100 rows, 2 Goyal et al. rows, 21 GCE K80 rows, 21 AWS p2.8xlarge rows, 20 distributed AWS rows,
  // 2 NCCL allreduce busbw rows across DGX-1 nodes
  REQUIRE(baseline["cases"].size() == 93);
  for (auto& c : baseline["cases"]) c["error_pct"] = 0.0;  // pretend every case used to be exact
  // Three of the published cases (the whole set takes minutes under the sanitizers), one of them an
  // allreduce's busbw, in a copy of the published file next to a link to the scenarios.
  const std::filesystem::path tmp = "/tmp/ringsim_strict_" + std::to_string(::getpid());
  std::filesystem::create_directories(tmp / "data");
  std::filesystem::create_directory_symlink(std::filesystem::path(dir) / ".." / "scenarios", tmp / "scenarios");
  std::ofstream cases(tmp / "data" / "published.yaml");
  cases << "cases:\n";
  std::istringstream published(slurp(dir + "published.yaml"));
  for (std::string line; std::getline(published, line);)
    if (line.find("name: vgg16 b32 x8,") != std::string::npos ||
        line.find("name: resnet50 b64 x2,") != std::string::npos ||
        line.find("name: dgx1-p100 nccl allreduce 1G x32,") != std::string::npos)
      cases << line << "\n";
  cases.close();
  const std::string strict = (tmp / "strict.json").string();
  std::ofstream(strict) << baseline.dump();
  const std::string out = (tmp / "out.txt").string();
  const std::string cmd = std::string(RINGSIM_TEST_BINARY) + " --catalog " + RINGSIM_TEST_CATALOG +
                          " validate --published " + (tmp / "data" / "published.yaml").string() + " --baseline " +
                          strict + " > " + out;
  const int status = std::system(cmd.c_str());
  CHECK(WEXITSTATUS(status) == 1);
  const std::string text = slurp(out);
  CHECK(text.find("regression: vgg16 b32 x8 / images_per_sec") != std::string::npos);
  CHECK(text.find("regression: dgx1-p100 nccl allreduce 1G x32 / busbw_gbps") != std::string::npos);
  CHECK(text.find("over 3 cases") != std::string::npos);
  std::filesystem::remove_all(tmp);
}

TEST_CASE("validate --published: few-shot, a series calibrated on its small runs predicts its large ones",
          "[validate][calibrate]") {
  const std::string dir = std::string(RINGSIM_TEST_CATALOG) + "/../validate/data/";
  const std::filesystem::path tmp = "/tmp/ringsim_few_shot_" + std::to_string(::getpid());
  std::filesystem::create_directories(tmp / "data");
  std::filesystem::create_directory_symlink(std::filesystem::path(dir) / ".." / "scenarios", tmp / "scenarios");
  // The distributed AWS ResNet-50 batch-64 series: 1 and 2 instances fit, 4 and 8 are predicted.
  std::string rows;
  std::istringstream published(slurp(dir + "published.yaml"));
  for (std::string line; std::getline(published, line);)
    if (line.find("name: aws dist resnet50 b64 x") != std::string::npos) rows += line + "\n";
  const auto write = [&](const std::string& name, const std::string& few_shot) {
    const std::string f = (tmp / "data" / name).string();
    std::ofstream(f) << few_shot << "cases:\n" << rows;
    return f;
  };
  const std::string file = write("published.yaml", "few_shot: {fit_nodes: 2, series: [model, batch_per_gpu]}\n");
  const ValidationReport r = validate_published(test::catalog(), file, false);
  REQUIRE(r.cases.size() == 4);
  REQUIRE(r.few_shot.size() == 2);
  REQUIRE(r.few_shot_fits.size() == 1);
  CHECK(r.few_shot_fits.front().find("(2 runs)") != std::string::npos);
  for (const auto& c : r.few_shot) {
    CHECK((c.x == 32 || c.x == 64));
    CHECK(c.predicted != c.zero_shot);  // the fitted figures moved it
    // The zero-shot prediction of the same run is the one in the zero-shot cases.
    const auto same = std::find_if(r.cases.begin(), r.cases.end(), [&](const auto& z) { return z.name == c.name; });
    REQUIRE(same != r.cases.end());
    CHECK(c.zero_shot == same->predicted);
  }
  const std::string text = validation_table(r);
  CHECK(text.find("few-shot MAPE") != std::string::npos);
  const auto j = nlohmann::json::parse(validation_json(r));
  CHECK(j.at("few_shot").at("cases").size() == 2);
  CHECK(j.at("few_shot").at("fit_nodes") == 2);
  // The recorded JSON's few-shot cases are checked like the others.
  auto recorded = nlohmann::json::parse(validation_json(r));
  const std::string strict = (tmp / "strict.json").string();
  for (auto& c : recorded["few_shot"]["cases"]) c["error_pct"] = 0.0;
  std::ofstream(strict) << recorded.dump();
  const auto worse = regressions(r, strict, 0.1);
  CHECK(worse.size() == 2);
  for (const auto& w : worse) CHECK(w.rfind("few-shot aws dist resnet50 b64 x", 0) == 0);
  // A file without few_shot has no few-shot cases.
  CHECK(validate_published(test::catalog(), write("none.yaml", ""), false).few_shot.empty());
  // Bad few_shot settings name the file, line and column.
  const std::string bad_nodes = write("bad_nodes.yaml", "few_shot: {fit_nodes: 0}\n");
  CHECK(test::input_error_of([&] {
          validate_published(test::catalog(), bad_nodes, false);
        }).find("bad_nodes.yaml:1:") != std::string::npos);
  const std::string bad_key = write("bad_key.yaml", "few_shot: {fit_nodes: 2, series: [gpus]}\n");
  const std::string e = test::input_error_of([&] { validate_published(test::catalog(), bad_key, false); });
  CHECK(e.find("bad_key.yaml:1:") != std::string::npos);
  CHECK(e.find("model") != std::string::npos);
  const std::string typo = write("typo.yaml", "few_shot: {fit_node: 2}\n");
  CHECK(test::input_error_of([&] { validate_published(test::catalog(), typo, false); }).find("fit_nodes") !=
        std::string::npos);
  std::filesystem::remove_all(tmp);
}

TEST_CASE("rings follow NVLink inside a DGX-1 and stay on PCIe where nothing faster exists", "[sim]") {
  const std::string file = "/tmp/ringsim_links_" + std::to_string(::getpid()) + ".csv";
  auto kinds = [&](const std::string& sku) {
    const std::string cmd = std::string(RINGSIM_TEST_BINARY) + " --catalog " + RINGSIM_TEST_CATALOG + " predict " +
                            RINGSIM_TEST_SCENARIOS + "/resnet50_imagenet_8x_nc24rs_v3.yaml --set cluster.nodes=1 " +
                            "--set cluster.sku=" + sku + " --links " + file + " > /dev/null";
    REQUIRE(std::system(cmd.c_str()) == 0);
    std::set<std::string> k;
    std::istringstream in(slurp(file));
    std::string line;
    std::getline(in, line);
    while (std::getline(in, line)) {
      std::istringstream f(line);
      std::string name, cls, kind;
      std::getline(f, name, ',');
      std::getline(f, cls, ',');
      std::getline(f, kind, ',');
      k.insert(kind);
    }
    std::remove(file.c_str());
    return k;
  };
  CHECK(kinds("DGX-1-P100") == std::set<std::string>{"nvlink"});
  CHECK(kinds("ND40rs_v2") == std::set<std::string>{"nvlink"});
  CHECK(kinds("NC24rs_v3") == std::set<std::string>{"pcie", "socket"});
}

TEST_CASE("simulator: the ring goes through every node the same way, along NVLink on ND40rs_v2", "[simulator]") {
  // The order predict, ringsim-real train and the emulated train all take from RingSearch::ring_order.
  const Scenario s = scenario(
      "cluster: {sku: ND40rs_v2, nodes: 2}\nmodel: {name: resnet50, batch_per_gpu: 64}\ntraining: {epochs: 1}\n");
  const Topology topology = Topology::build(test::catalog(), cluster_shape(s.cluster));
  CommModel cm(test::catalog(), s, topology);  // keeps a reference to the topology
  RingSearch search(cm);
  const std::vector<int> local = search.local_ring_order(), ring = search.ring_order();
  REQUIRE(local.size() == 8);
  REQUIRE(ring.size() == 16);
  CHECK(local != std::vector<int>({0, 1, 2, 3, 4, 5, 6, 7}));  // the cube-mesh has no NVLink 3-4
  for (int i = 0; i < 8; ++i) {
    CHECK(ring[i] == local[i]);
    CHECK(ring[8 + i] == 8 + local[i]);
  }
  CHECK(std::set<int>(ring.begin(), ring.end()).size() == 16);
}

TEST_CASE("DGX-1: four InfiniBand rails, each GPU leaves by the NIC on its PCIe switch", "[simulator]") {
  const Scenario s = scenario(
      "cluster: {sku: DGX-1-V100, nodes: 2}\nmodel: {name: resnet50, batch_per_gpu: 64}\ntraining: {epochs: 1}\n");
  const Topology topology = Topology::build(test::catalog(), cluster_shape(s.cluster));
  REQUIRE(topology.nics_per_node() == 4);
  REQUIRE(topology.fabric_nics().size() == 8);
  CHECK(topology.device(topology.fabric_nics(1)[3]).name == "n1.ib3");
  CommModel cm(test::catalog(), s, topology);
  auto crosses = [&](int from, int to, const std::string& name) {
    const Path& p = cm.path(cm.endpoint(from, Space::Device), cm.endpoint(to, Space::Device));
    for (int e : p.edges)
      if (cm.edge_name(e).find(name) != std::string::npos) return true;
    return false;
  };
  // GPUs 2k and 2k+1 share PCIe switch plx<k> with ib<k>.
  CHECK(crosses(0, 8, "n0.ib0->"));
  CHECK(crosses(0, 8, "->n1.ib0"));
  CHECK(crosses(7, 13, "n0.ib3->"));
  CHECK(crosses(7, 13, "->n1.ib2"));
  CHECK(crosses(3, 12, "n0.ib1->"));
  CHECK(crosses(8, 5, "n1.ib0->"));
  CHECK(crosses(8, 5, "->n0.ib2"));
}

TEST_CASE("channels: NCCL rings across DGX-1 nodes use all four NICs", "[simulator]") {
  const std::string base =
      "cluster: {sku: DGX-1-V100, nodes: 2}\nmodel: {name: resnet50, batch_per_gpu: 64}\ntraining: {epochs: 1}\n";
  const Scenario four = scenario(base);  // channels: auto
  REQUIRE(four.communication.channels == 4);
  const Topology topology = Topology::build(test::catalog(), cluster_shape(four.cluster));
  CommModel cm(test::catalog(), four, topology);
  RingSearch search(cm);
  const auto rings = search.ring_orders(4);
  REQUIRE(rings.size() == 4);
  REQUIRE(rings[0] == search.ring_order());
  for (const auto& r : rings) CHECK(std::set<int>(r.begin(), r.end()).size() == 16);

  const std::uint64_t S = std::uint64_t{256} << 20;
  auto edge_bytes = [&](const Scenario& s) {
    std::map<std::string, double> m;
    m["duration"] = timed_in_child([&] { return simulate_allreduce(test::catalog(), s, S, 4, Fidelity::Flow); }, &m);
    return m;
  };
  const auto spread = edge_bytes(four);
  const auto one = edge_bytes(scenario(base + "communication: {channels: 1}\n"));
  // Every NIC of both nodes sends and receives one ring's inter-node traffic: 2 x 15/16 x S/4 each way.
  for (int node = 0; node < 2; ++node)
    for (int k = 0; k < 4; ++k) {
      const std::string nic = "n" + std::to_string(node) + ".ib" + std::to_string(k);
      CAPTURE(nic);
      CHECK(spread.at(nic + "->switch0") == Approx(2.0 * 15 / 16 * S / 4));
      CHECK(spread.at("switch0->" + nic) == Approx(2.0 * 15 / 16 * S / 4));
    }
  int rails = 0;
  for (int k = 0; k < 4; ++k) rails += static_cast<int>(one.count("n0.ib" + std::to_string(k) + "->switch0"));
  CHECK(rails == 1);  // one ring leaves a node once
  // Bound by the NICs, four rails move the buffer more than three times as fast as one.
  CHECK(one.at("duration") / spread.at("duration") > 3.0);
}

TEST_CASE("channels: rings across GB200 NVL72 racks leave each rack by every VM", "[simulator]") {
  // 2 racks of 18 VMs (4 GPUs each): 64 rings, each visiting a rack's VMs from another on.
  const Scenario s = scenario(
      "cluster: {sku: ND128isr_NDR_GB200_v6, nodes: 36}\nmodel: {name: resnet50, batch_per_gpu: 64}\n"
      "training: {epochs: 1}\n");
  REQUIRE(s.communication.channels == 64);
  const Topology topology = Topology::build(test::catalog(), cluster_shape(s.cluster));
  CommModel cm(test::catalog(), s, topology);
  CHECK(cm.domain_nodes() == 18);
  RingSearch search(cm);
  const auto rings = search.ring_orders(64);
  REQUIRE(rings.size() == 64);
  std::set<int> exits;  // the VMs of rack 0 from which a ring crosses to rack 1
  for (const auto& r : rings) {
    CHECK(std::set<int>(r.begin(), r.end()).size() == 144);
    int crossings = 0;
    for (std::size_t i = 0; i < r.size(); ++i) {
      const int a = r[i] / 4, b = r[(i + 1) % r.size()] / 4;
      if ((a < 18) != (b < 18)) ++crossings;
      if (a < 18 && b >= 18) exits.insert(a);
    }
    CHECK(crossings == 2);  // once each way
  }
  CHECK(exits.size() == 18);
}

TEST_CASE("channels: four rings over a DGX-1 (P100)'s NVLinks take each link one way once", "[simulator]") {
  // The hybrid cube mesh has two NVLink-only cycles sharing no link; a ring and its reverse take a link's
  // two directions. Rings chosen one at a time put two on one NVLink (busbw bound at 8 GB/s a ring).
  const Scenario s = scenario(
      "cluster: {sku: DGX-1-P100, nodes: 4}\nmodel: {name: resnet50, batch_per_gpu: 64}\ntraining: {epochs: 1}\n");
  const Topology topology = Topology::build(test::catalog(), cluster_shape(s.cluster));
  CommModel cm(test::catalog(), s, topology);
  RingSearch search(cm);
  const auto rings = search.ring_orders(4);
  REQUIRE(rings.size() == 4);
  std::map<std::string, int> uses;
  for (const auto& r : rings)
    for (std::size_t i = 0; i + 1 < r.size(); ++i)
      for (int e : cm.hop(r[i], r[i + 1]).edges) ++uses[cm.edge_name(e)];
  int nvlinks = 0;
  for (const auto& [name, n] : uses) {
    CAPTURE(name);
    CHECK(name.find("n0.cpu") == std::string::npos);  // no GPU pair goes through the sockets
    if (name.rfind("n0.gpu", 0) == 0 && name.find("->n0.gpu") != std::string::npos) {
      CHECK(n == 1);
      ++nvlinks;
    }
    if (name.rfind("n0.ib", 0) == 0) CHECK(n == 1);  // each NIC sends one ring
  }
  CHECK(nvlinks == 4 * 7);
}

TEST_CASE("bench: NCCL 2's GPUs on two Xeon sockets talk through host memory, AMD's sockets pass peer traffic",
          "[bench]") {
  // NCCL 2.4 uses P2P within a socket only (p2p.cc PATH_NODE): a 4-GPU NC24rs_v3 ring crosses the QPI pair
  // (38.4 GB/s) once each way at nccl's cross_socket fraction; 2 GPUs stay at 0.8 of PCIe gen3 x16. An AMD
  // host (NC96ads_A100_v4) gives peer access across its sockets: 0.8 of PCIe gen4 x16 at 4 GPUs too.
  const Catalog& c = ringsim::test::catalog();
  auto busbw = [&](const std::string& sku, int gpus) {
    const Scenario s = load_scenario(
        std::string(RINGSIM_TEST_SCENARIOS) + "/resnet50_imagenet_8x_nc24rs_v3.yaml", c,
        {parse_override("cluster.sku=" + sku), parse_override("cluster.nodes=1"),
         parse_override("cluster.fabric=ethernet"), parse_override("cluster.gpus_per_node=" + std::to_string(gpus))});
    const BenchPrediction b = predict_allreduce_bench(c, s, {1ull << 30, 1ull << 30, 2});
    REQUIRE(b.rows.size() == 1);
    return b.rows[0].algbw() * b.bus_factor;
  };
  const double fraction = c.library("nccl").cross_socket->bandwidth_fraction;
  CHECK(busbw("NC24rs_v3", 2) == Approx(0.8 * 15.754e9).epsilon(0.01));
  CHECK(busbw("NC24rs_v3", 4) == Approx(fraction * 38.4e9).epsilon(0.01));
  CHECK(busbw("NC96ads_A100_v4", 4) == Approx(0.8 * 31.5e9).epsilon(0.01));
  // The path of its own is for GPU pairs of the library's collectives: parameter servers' copies keep the
  // link (no twin edges), and a GPU's way to a host buffer across the sockets takes the link itself.
  const std::string base =
      "cluster: {sku: NC24rs_v3, nodes: 1}\nmodel: {name: resnet50, batch_per_gpu: 64}\n"
      "training: {epochs: 1}\n";
  const Scenario ring = scenario(base), ps = scenario(base + "communication: {strategy: parameter_server}\n");
  const Topology topology = Topology::build(c, cluster_shape(ring.cluster));
  const int links = static_cast<int>(boost::num_edges(topology.graph()));
  CommModel ring_cm(c, ring, topology), ps_cm(c, ps, topology);
  CHECK(ring_cm.edge_count() == links + 2);  // the QPI pair's two directions
  CHECK(ps_cm.edge_count() == links);
  auto through = [&](CommModel& cm, VertexId a, VertexId b) {
    std::vector<std::string> names;
    for (int e : cm.path(a, b).edges) names.push_back(cm.edge_name(e));
    return names;
  };
  const auto pair = through(ring_cm, topology.gpu(0, 0), topology.gpu(0, 3));
  CHECK(std::count(pair.begin(), pair.end(), "n0.cpu0->n0.cpu1/gpu-to-gpu") == 1);
  CHECK(std::count(pair.begin(), pair.end(), "n0.cpu0->n0.cpu1") == 1);
  const auto host = through(ring_cm, topology.gpu(0, 0), topology.host_memory(0, 1));
  CHECK(std::count(host.begin(), host.end(), "n0.cpu0->n0.cpu1/gpu-to-gpu") == 0);
}

TEST_CASE("bands: NCCL's cross-socket figure is uncertain only where a collective's GPUs sit on two Xeon sockets",
          "[band]") {
  const auto& uncertain = test::catalog().uncertain();
  const auto p = std::find_if(uncertain.begin(), uncertain.end(), [](const UncertainParameter& u) {
    return u.figure == "libraries.nccl.paths.cross_socket.bandwidth_fraction";
  });
  REQUIRE(p != uncertain.end());
  auto on = [&](const std::string& sku, int gpus, const std::string& comm = "{library: nccl}") {
    return applies_to(*p,
                      scenario("cluster: {sku: " + sku + ", nodes: 1, gpus_per_node: " + std::to_string(gpus) +
                               "}\nmodel: {name: resnet50, batch_per_gpu: 64}\ntraining: {epochs: 1}\n"
                               "communication: " +
                               comm + "\n"),
                      test::catalog());
  };
  CHECK(on("NC24rs_v3", 4));
  CHECK(on("NC24rs_v3", 3));
  CHECK_FALSE(on("NC24rs_v3", 2));                                                 // GPUs 0 and 1 share socket 0
  CHECK_FALSE(on("NC96ads_A100_v4", 4));                                           // AMD: peer access across sockets
  CHECK_FALSE(on("NC24rs_v3", 4, "{library: nccl, strategy: parameter_server}"));  // copies, not NCCL's SHM
  CHECK_FALSE(on("NC24rs_v3", 4, "{library: mpi}"));
  CHECK(on("DGX-1-P100", 8));  // the searched ring avoids the QPI, but a sampled figure may not
}

TEST_CASE("work estimate: the flow fidelity runs the estimated transfers, the graph size is exact",
          "[simulator][many_runs]") {
  const std::string file = std::string(RINGSIM_TEST_SCENARIOS) + "/resnet50_imagenet_8x_nc24rs_v3.yaml";
  const Scenario base = load_scenario(file, test::catalog());
  // Without fusion every tensor is one collective, so the count is exact: 161 tensors x 2(p-1) steps x p
  // sends for the ring; the hierarchical collective's own step programs for the other.
  for (const char* strategy : {"ring", "hierarchical"}) {
    const std::string sets =
        std::string("--set communication.fusion_threshold=0 --set communication.strategy=") + strategy;
    const Scenario s = load_scenario(file, test::catalog(),
                                     {parse_override("communication.fusion_threshold=0"),
                                      parse_override(std::string("communication.strategy=") + strategy)});
    const WorkEstimate e = estimate_work(test::catalog(), s, Fidelity::Flow);
    CHECK(e.fusion_buffers == 161);
    const auto j = predict_json(file, sets + " --fidelity flow");
    CHECK(e.transfers_per_iteration == j["represented_transfers"].get<double>());
  }
  CHECK(estimate_work(test::catalog(), base, Fidelity::Flow).transfers_per_buffer == 2.0 * 31 * 32);
  {  // Channels multiply the transfers: 4 rings across 2 DGX-1 nodes.
    const std::string sets =
        "--set cluster.sku=DGX-1-V100 --set cluster.nodes=2 --set cluster.gpus_per_node=8 "
        "--set communication.fusion_threshold=0";
    const Scenario s =
        load_scenario(file, test::catalog(),
                      {parse_override("cluster.sku=DGX-1-V100"), parse_override("cluster.nodes=2"),
                       parse_override("cluster.gpus_per_node=8"), parse_override("communication.fusion_threshold=0")});
    REQUIRE(s.communication.channels == 4);
    const WorkEstimate e = estimate_work(test::catalog(), s, Fidelity::Flow);
    CHECK(e.transfers_per_buffer == 4.0 * 2 * 15 * 16);
    CHECK(e.transfers_per_iteration ==
          predict_json(file, sets + " --fidelity flow")["represented_transfers"].get<double>());
  }
  // With fusion the buffers come from the threshold and the negotiation cycles: close, not exact.
  const WorkEstimate fused = estimate_work(test::catalog(), base, Fidelity::Flow);
  const auto j = predict_json(file, "--fidelity flow");
  CHECK(fused.transfers_per_iteration == Approx(j["represented_transfers"].get<double>()).epsilon(0.25));
  // The graph: extrapolated from two and three nodes, equal to the one predict builds.
  for (int nodes : {1, 2, 5, 64}) {
    const Scenario s = load_scenario(file, test::catalog(), {parse_override("cluster.nodes=" + std::to_string(nodes))});
    const Topology t = Topology::build(test::catalog(), cluster_shape(s.cluster));
    CHECK(estimate_work(test::catalog(), s, Fidelity::Step).graph_elements ==
          static_cast<std::int64_t>(boost::num_vertices(t.graph()) + boost::num_edges(t.graph())));
  }
}

TEST_CASE("work estimate: the step fidelity counts the transfers of each distinct step", "[simulator]") {
  // BERT-Large bf16 under Horovod on ND96isr_H100_v5: a tree's pipeline has many distinct steps, each a
  // max-min over the transfers of each node class's first node and every node's to other nodes; the ring's
  // steps repeat. Measured without the band (sim/HISTORY.md, 2-core development machine, 2026-11-28): 64 GPUs
  // 0.32 s (tree); 512 GPUs 0.49 s (tree) and 0.27 s (ring).
  const std::string file = std::string(RINGSIM_TEST_SCENARIOS) + "/bert_large_bf16_plan.yaml";
  auto estimate = [&](int nodes, const std::string& strategy) {
    const Scenario s = load_scenario(file, test::catalog(),
                                     {parse_override("cluster.nodes=" + std::to_string(nodes)),
                                      parse_override("communication.strategy=" + strategy)});
    return estimate_work(test::catalog(), s, Fidelity::Step);
  };
  const WorkEstimate tree_8vms = estimate(8, "tree"), tree_64vms = estimate(64, "tree"),
                     ring_64vms = estimate(64, "ring");
  CHECK(tree_64vms.step_transfers_per_buffer > 10 * ring_64vms.step_transfers_per_buffer);
  CHECK(tree_64vms.seconds > 0.49 / 3);
  CHECK(tree_64vms.seconds < 0.49 * 3);
  CHECK(tree_8vms.seconds > 0.32 / 3);
  CHECK(tree_8vms.seconds < 0.32 * 3);
  CHECK(ring_64vms.seconds < 1);
}

TEST_CASE("work estimate: DDP's buckets count once per distinct size, as the step fidelity evaluates them",
          "[simulator]") {
  // GPT-2 XL bf16 under DDP on 128 x ND96isr_H100_v5 with the tree: 145 buckets of 4 sizes (25 MiB
  // buckets of FP32 gradients; the first 1 MiB). Measured without the band on the 2-core development
  // machine: 0.44 s (sim/HISTORY.md, 2026-11-28); counting every bucket, the estimate had said about 2 min.
  const Scenario s = load_scenario(
      std::string(RINGSIM_TEST_SCENARIOS) + "/bert_large_bf16_plan.yaml", test::catalog(),
      {parse_override("cluster.nodes=128"), parse_override("model.name=gpt2_xl"), parse_override("model.seq_len=1024"),
       parse_override("model.batch_per_gpu=8"), parse_override("communication.framework=pytorch_ddp"),
       parse_override("communication.strategy=tree")});
  const WorkEstimate e = estimate_work(test::catalog(), s, Fidelity::Step);
  CHECK(e.fusion_buffers == 145);
  CHECK(e.distinct_buffers == 4);
  CHECK(e.seconds > 0.44 / 3);
  CHECK(e.seconds < 0.44 * 3);
}

TEST_CASE("work estimate: predict refuses the flow fidelity above --max-transfers, before it starts", "[simulator]") {
  const std::string file = std::string(RINGSIM_TEST_SCENARIOS) + "/resnet50_imagenet_8x_nc24rs_v3.yaml";
  const auto refused = test::run_command(std::string(RINGSIM_TEST_BINARY) + " --catalog " + RINGSIM_TEST_CATALOG +
                                         " predict " + file + " --fidelity flow --max-transfers 1000");
  CHECK(refused.status == 2);
  CHECK_THAT(refused.output, Catch::Contains("predict: the flow fidelity of 32 ranks would run"));
  CHECK_THAT(refused.output, Catch::Contains("the limit is 1000. Use --fidelity step"));
  // The step fidelity has no transfer limit; the default limit lets this size run.
  CHECK(test::run_command(std::string(RINGSIM_TEST_BINARY) + " --catalog " + RINGSIM_TEST_CATALOG + " predict " + file +
                          " --fidelity step --max-transfers 1000")
            .status == 0);
}

namespace {

double timed_with(const Catalog& catalog, const Scenario& s, const collective::Collective& c, Fidelity f) {
  return std::stod(run_in_child([&] {
    std::ostringstream o;
    o.precision(17);
    o << simulate_collective(catalog, s, c, f).duration_s;
    return o.str();
  }));
}

Scenario local_host(int processes) {
  return scenario("cluster: {sku: local-host, nodes: 1, gpus_per_node: " + std::to_string(processes) +
                  ", fabric: ethernet}\nmodel: {name: resnet50, batch_per_gpu: 32}\ntraining: {epochs: 1}\n"
                  "communication: {library: mpi}\n");
}

}  // namespace

TEST_CASE("cpu processes: a ring on p processes sharing c cores copies and reduces at 1/ceil(p/c) of a core",
          "[simulator]") {
  // local-host: shm_process links of 10 GB/s and 0.2 us, two per route, mpi's 0.8 fraction and 0.5 us
  // overhead, 8 GB/s host reduction, 2 cores, and each message waits for the core to be handed over from
  // the other ceil(p/c) - 1 processes on it, at both ends (skus.yaml, links.yaml, libraries.yaml, gpus.yaml).
  const Catalog& cat = test::catalog();
  REQUIRE(cat.gpu("cpu-process").cpu_process);
  REQUIRE(cat.sku("local-host").vcpus == 2);
  // Both handoffs: the processes are spread over the 2 cores.
  const double handoff = cat.gpu("cpu-process").core_handoff + cat.gpu("cpu-process").cross_core_handoff;
  REQUIRE(cat.gpu("cpu-process").cross_core_handoff > 0);
  const double bw = 10e9 * 0.8, reduce = 8e9;
  const std::uint64_t bytes = 64ull << 20;
  for (int p : {2, 3, 4}) {
    const int per_core = (p + 1) / 2;
    const double share = 1.0 / per_core, chunk = static_cast<double>(bytes) / p;
    const double alpha = 2 * 0.2e-6 + 0.5e-6 + (per_core - 1) * handoff;
    const double expected = 2 * (p - 1) * (alpha + chunk / (bw * share)) + (p - 1) * chunk / (reduce * share);
    auto ring = collective::make_ring_allreduce(p, bytes, 4, Space::Device);
    for (Fidelity f : {Fidelity::Flow, Fidelity::Step}) {
      CAPTURE(p, to_string(f));
      CHECK(timed_with(cat, local_host(p), *ring, f) == Approx(expected).epsilon(0.01));
    }
  }
}

TEST_CASE("cpu processes: an MPI ring stages nothing, as ringsim-real runs it on the fusion buffer", "[simulator]") {
  // A host-staged library copies GPU buffers to host memory and back; a CPU process's buffer is host
  // memory already. With staging, each buffer's collective had copy_to_host and copy_to_device phases.
  for (Fidelity f : {Fidelity::Flow, Fidelity::Step}) {
    CAPTURE(to_string(f));
    const std::string phases = run_in_child([&] {
      std::string out;
      for (const auto& c : predict(test::catalog(), local_host(2), f).collectives) {
        for (const auto& ph : c.phases) out += ph.phase + " ";
        out += "\n";
      }
      return out;
    });
    REQUIRE(!phases.empty());
    std::istringstream lines(phases);
    for (std::string line; std::getline(lines, line);) CHECK(line == "reduce_scatter allgather ");
  }
}

TEST_CASE("size regimes keyed by buffer follow the collective's buffer, not its messages", "[simulator]") {
  // A 2-process ring of 16 MiB sends 8 MiB messages. Copies run at 2x the link below 16 MiB and reductions
  // at 16 GB/s; from 16 MiB at 1x and 8 GB/s. Keyed by buffer the ring is in the 16 MiB regime; keyed by
  // message, in the one below. shm_process: 10 GB/s and 0.2 us, two per route (links.yaml).
  const std::uint64_t bytes = 16ull << 20;
  const double chunk = static_cast<double>(bytes) / 2, latency = 2 * 0.2e-6;
  for (const std::string key : {"buffer", "message"}) {
    const std::string file = "/tmp/ringsim_regime_key_" + std::to_string(getpid()) + ".yaml";
    std::ofstream(file)
        << "libraries:\n  mpi:\n    host_reduction_regimes_by: " << key
        << "\n    host_reduction_regimes:\n      - {from: 1 B, rate: 16 GB/s}\n"
           "      - {from: 16 MiB, rate: 8 GB/s}\n    paths:\n      intra_node: {bandwidth_fraction: 1, "
           "message_overhead: 0 s, regimes_by: "
        << key
        << ", regimes: [{from: 1 B, bandwidth_scale: 2, message_overhead: 0 s}, {from: 16 MiB, "
           "bandwidth_scale: 1, message_overhead: 0 s}]}\n";
    Catalog cat = test::catalog();
    cat.apply_overlay(file);
    std::remove(file.c_str());
    const double scale = key == "buffer" ? 1 : 2, reduce = key == "buffer" ? 8e9 : 16e9;
    const double expected = 2 * (latency + chunk / (10e9 * scale)) + chunk / reduce;
    auto ring = collective::make_ring_allreduce(2, bytes, 4, Space::Device);
    for (Fidelity f : {Fidelity::Flow, Fidelity::Step}) {
      CAPTURE(key, to_string(f));
      CHECK(timed_with(cat, local_host(2), *ring, f) == Approx(expected).epsilon(0.001));
    }
  }
  // Anything else is refused, naming the choices.
  const std::string bad = "/tmp/ringsim_regime_key_bad_" + std::to_string(getpid()) + ".yaml";
  std::ofstream(bad) << "libraries:\n  mpi:\n    host_reduction_regimes_by: bytes\n";
  Catalog cat = test::catalog();
  try {
    cat.apply_overlay(bad);
    FAIL("regimes_by: bytes was accepted");
  } catch (const InputError& e) {
    const std::string what = e.what();
    CHECK(what.find(":3:") != std::string::npos);
    CHECK(what.find("buffer") != std::string::npos);
    CHECK(what.find("message") != std::string::npos);
    CHECK(what.find("footprint") != std::string::npos);
  }
  std::remove(bad.c_str());
}

TEST_CASE("size regimes keyed by footprint follow what the host's processes hold, interpolated", "[simulator]") {
  // A 2-process ring of 16 MiB: each process holds its buffer and receives 8 MiB a step, so the two hold
  // 48 MiB. Regimes measured at 32 MiB (copies at 1.5x the link, reductions at 12 GB/s) and 64 MiB (1x,
  // 8 GB/s): keyed by footprint, a cache curve, 48 MiB lies between them in log(size), log(48/32) /
  // log(64/32) = 0.585 of the way. shm_process: 10 GB/s and 0.2 us, two per route (links.yaml).
  const std::uint64_t bytes = 16ull << 20;
  const double chunk = static_cast<double>(bytes) / 2, latency = 2 * 0.2e-6;
  const std::string file = "/tmp/ringsim_regime_footprint_" + std::to_string(getpid()) + ".yaml";
  std::ofstream(file) << "libraries:\n  mpi:\n    host_reduction_regimes_by: footprint\n"
                         "    host_reduction_regimes:\n      - {from: 1 B, rate: 16 GB/s}\n"
                         "      - {from: 32 MiB, rate: 12 GB/s}\n      - {from: 64 MiB, rate: 8 GB/s}\n"
                         "    paths:\n      intra_node: {bandwidth_fraction: 1, message_overhead: 0 s, "
                         "regimes_by: footprint, regimes: [{from: 1 B, bandwidth_scale: 2, message_overhead: 0 s}, "
                         "{from: 32 MiB, bandwidth_scale: 1.5, message_overhead: 0 s}, {from: 64 MiB, "
                         "bandwidth_scale: 1, message_overhead: 0 s}]}\n";
  Catalog cat = test::catalog();
  cat.apply_overlay(file);
  std::remove(file.c_str());
  const double t = std::log(1.5) / std::log(2.0);
  const double scale = 1.5 * std::pow(1 / 1.5, t), reduce = 12e9 * std::pow(8.0 / 12.0, t);
  const double expected = 2 * (latency + chunk / (10e9 * scale)) + chunk / reduce;
  auto ring = collective::make_ring_allreduce(2, bytes, 4, Space::Device);
  for (Fidelity f : {Fidelity::Flow, Fidelity::Step}) {
    CAPTURE(to_string(f));
    CHECK(timed_with(cat, local_host(2), *ring, f) == Approx(expected).epsilon(0.001));
  }
  // Three processes of a 12 MiB ring hold 3 x (12 + 4) MiB = 48 MiB too, though their messages are smaller.
  Scenario three = local_host(3);
  Topology topo = Topology::build(cat, cluster_shape(three.cluster));
  CommModel cm(cat, three, topo);
  auto ring3 = collective::make_ring_allreduce(3, 12ull << 20, 4, Space::Device);
  const CollectiveSize size = cm.collective_size(*ring3);
  CHECK(size.buffer == Approx(12.0 * (1 << 20)));
  CHECK(size.footprint == Approx(48.0 * (1 << 20)));
  // Without regimes keyed by footprint it is not computed (a ring over thousands of GPUs need not walk it).
  Catalog plain = test::catalog();
  CommModel cm_plain(plain, three, topo);
  CHECK(cm_plain.collective_size(*ring3).footprint == 0);
}

TEST_CASE("protocol overheads follow a message's own size, whatever its regimes are keyed by", "[simulator]") {
  // A 2-process ring of 512 KiB sends 256 KiB messages and holds 1.5 MiB. Messages pay 2 us more from
  // 4 KiB (a rendezvous) and 10 us more from 1 MiB: these pay 2 us, though the footprint that picks their
  // copies' regime is above 1 MiB. shm_process: 10 GB/s and 0.2 us, two per route (links.yaml).
  const std::uint64_t bytes = 512 * 1024;
  const double chunk = static_cast<double>(bytes) / 2, latency = 2 * 0.2e-6;
  const std::string file = "/tmp/ringsim_protocol_" + std::to_string(getpid()) + ".yaml";
  std::ofstream(file) << "libraries:\n  mpi:\n    host_reduction_rate: 16 GB/s\n    paths:\n      intra_node: "
                         "{bandwidth_fraction: 1, message_overhead: 0 s, regimes_by: footprint, regimes: [{from: 1 B, "
                         "bandwidth_scale: 1, message_overhead: 0 s}], protocol_overheads: [{from: 4 KiB, overhead: "
                         "2 us}, {from: 1 MiB, overhead: 10 us}]}\n";
  Catalog cat = test::catalog();
  cat.apply_overlay(file);
  const double expected = 2 * (latency + 2e-6 + chunk / 10e9) + chunk / 16e9;
  auto ring = collective::make_ring_allreduce(2, bytes, 4, Space::Device);
  for (Fidelity f : {Fidelity::Flow, Fidelity::Step}) {
    CAPTURE(to_string(f));
    CHECK(timed_with(cat, local_host(2), *ring, f) == Approx(expected).epsilon(0.001));
  }
  // Out of order is refused where it is written.
  std::ofstream(file) << "libraries:\n  mpi:\n    paths:\n      intra_node:\n        protocol_overheads:\n"
                         "          - {from: 1 MiB, overhead: 10 us}\n          - {from: 4 KiB, overhead: 2 us}\n";
  Catalog bad = test::catalog();
  try {
    bad.apply_overlay(file);
    FAIL("descending protocol overheads were accepted");
  } catch (const InputError& e) {
    const std::string what = e.what();
    CHECK(what.find(":7:") != std::string::npos);
    CHECK(what.find("ascending") != std::string::npos);
  }
  std::remove(file.c_str());
}

TEST_CASE("calibrate: a protocol switch stays a message's own cost where copies are keyed by footprint",
          "[calibrate]") {
  // Exchanges of 2 processes take 1 us + S / 12 GB/s below 4 KiB and 3 us + S / 12 GB/s from 4 KiB (the
  // library's rendezvous). A 2-process ring of 256 KiB sends 128 KiB messages and holds 768 KiB, what an
  // exchange of 192 KiB holds: keyed by footprint, it is costed at that exchange's rate per byte, but each
  // message still pays its own rendezvous, 2 us, not 2 us x 128 / 192 spread over the bytes.
  nlohmann::json ex = nlohmann::json::array(), red = nlohmann::json::array();
  for (double s = 8; s <= 64.0 * (1 << 20); s *= 2)
    ex.push_back({{"bytes", s}, {"seconds", (s < 4096 ? 1e-6 : 3e-6) + s / 12e9}});
  for (double s = 4096; s <= 64.0 * (1 << 20); s *= 2) red.push_back({{"bytes", s}, {"seconds", s / 16e9}});
  // A ring allreduce of 16 B - 1 KiB: its two exchanges of half the buffer, the reduction of that half, and
  // 0.3 us a call.
  nlohmann::json calls = nlohmann::json::array();
  for (double s = 16; s <= 1024; s *= 2)
    calls.push_back({{"bytes", s}, {"seconds", 2 * (1e-6 + s / 2 / 12e9) + s / 2 / 16e9 + 0.3e-6}});
  const nlohmann::json data = {
      {"schema", "ringsim.calibration-data/1"},
      {"transport", "host"},
      {"ranks", 2},
      {"pingpong",
       {{{"class", "same_socket"}, {"ranks", {0, 1}}, {"hosts", {"h", "h"}}, {"sockets", {0, 0}}, {"points", ex}}}},
      {"sendrecv", {{{"class", "same_socket"}, {"ranks", {0, 1}}, {"points", ex}}}},
      {"allreduce_small", {{"class", "same_socket"}, {"ranks", {0, 1}}, {"points", calls}}},
      {"reduction", red},
      {"compute_stand_in", nlohmann::json::array()}};
  const std::string file = "/tmp/ringsim_protocol_data_" + std::to_string(getpid()) + ".json";
  std::ofstream(file) << data.dump();
  const CalibrationResult r = calibrate(test::catalog(), local_host(2), {{file}, {}});
  INFO(r.overlay_yaml);
  CHECK(r.overlay_yaml.find("regimes_by: footprint") != std::string::npos);
  CHECK(r.overlay_yaml.find("protocol_overheads: [{from: 4096 B, overhead: 2e-06 s}]") != std::string::npos);
  // The calls' own cost replaces the library's assumed one.
  CHECK(r.collective_overhead == Approx(0.3e-6).epsilon(1e-6));
  CHECK(r.overlay_yaml.find("    collective_overhead: 3e-07 s") != std::string::npos);
  const std::string overlay = file + ".yaml";
  std::ofstream(overlay) << r.overlay_yaml;
  Catalog cat = test::catalog();
  cat.apply_overlay(overlay);
  const double chunk = 128 * 1024;
  const double expected = 2 * (3e-6 + chunk / 12e9) + chunk / 16e9;
  auto ring = collective::make_ring_allreduce(2, 256 * 1024, 4, Space::Device);
  for (Fidelity f : {Fidelity::Flow, Fidelity::Step}) {
    CAPTURE(to_string(f));
    CHECK(timed_with(cat, local_host(2), *ring, f) == Approx(expected).epsilon(0.001));
  }
  CHECK(cat.library("mpi").collective_overhead == Approx(0.3e-6).epsilon(1e-6));
  std::remove(file.c_str());
  std::remove(overlay.c_str());
}

TEST_CASE("calibrate: size regimes are found in ping-pong data and predict follows them", "[calibrate]") {
  // Two processes whose copies run at 10 GB/s with 1 us up to 4 MiB and at 5 GB/s with 20 us from 8 MiB
  // (buffers outgrowing the caches): ringsim-real calibrate's layout, sizes 8 B - 256 MiB by factors of 2.
  auto t = [](double s) { return s < 6e6 ? 1e-6 + s / 10e9 : 20e-6 + s / 5e9; };
  nlohmann::json pts = nlohmann::json::array(), red = nlohmann::json::array();
  for (double s = 8; s <= 256.0 * (1 << 20); s *= 2) pts.push_back({{"bytes", s}, {"seconds", t(s)}});
  for (double s = 65536; s <= 64.0 * (1 << 20); s *= 2) red.push_back({{"bytes", s}, {"seconds", s / 20e9}});
  const nlohmann::json data = {
      {"schema", "ringsim.calibration-data/1"},
      {"transport", "host"},
      {"ranks", 2},
      {"pingpong",
       {{{"class", "same_socket"}, {"ranks", {0, 1}}, {"hosts", {"h", "h"}}, {"sockets", {0, 0}}, {"points", pts}}}},
      {"reduction", red},
      {"compute_stand_in", nlohmann::json::array()}};
  const std::string file = "/tmp/ringsim_regimes_" + std::to_string(getpid()) + ".json";
  std::ofstream(file) << data.dump();
  const CalibrationResult r = calibrate(test::catalog(), local_host(2), {{file}, {}});
  INFO(r.overlay_yaml);
  std::vector<const LinearFit*> regimes;
  for (const auto& f : r.fits)
    if (f.path_class == "same_socket") regimes.push_back(&f);
  REQUIRE(regimes.size() == 2);
  CHECK(regimes[1]->from_bytes == 8 << 20);
  CHECK(1 / regimes[0]->beta == Approx(10e9).epsilon(1e-6));
  CHECK(1 / regimes[1]->beta == Approx(5e9).epsilon(1e-6));
  CHECK(regimes[1]->alpha == Approx(20e-6).epsilon(1e-6));
  // One reduction regime: the data is one line.
  CHECK(std::count_if(r.fits.begin(), r.fits.end(), [](const LinearFit& f) { return f.path_class == "reduction"; }) ==
        1);

  const std::string overlay = file + ".yaml";
  std::ofstream(overlay) << r.overlay_yaml;
  Catalog cat = test::catalog();
  cat.apply_overlay(overlay);
  // One message in each regime costs what was measured, in both fidelities.
  for (double s : {65536.0, 1048576.0, 16777216.0, 268435456.0}) {
    const OneTransfer one(static_cast<std::uint64_t>(s));
    for (Fidelity f : {Fidelity::Flow, Fidelity::Step}) {
      CAPTURE(s, to_string(f));
      CHECK(timed_with(cat, local_host(2), one, f) == Approx(t(s)).epsilon(0.001));
    }
  }
  std::remove(file.c_str());
  std::remove(overlay.c_str());
}

TEST_CASE("cpu processes: a copy costs the measured rate at its size, interpolated in log(size)", "[calibrate]") {
  GpuSpec g;
  g.memory_bandwidth = 40e9;
  CHECK(g.copy_time(1 << 20) == Approx(2.0 * (1 << 20) / 40e9));  // none measured: reads and writes each byte
  g.copy_rates.points = {{64 * 1024, 10e9}, {1 << 20, 5e9}};
  CHECK(g.copy_time(32 * 1024) == Approx(32 * 1024 / 10e9));  // below the first size: its rate
  CHECK(g.copy_time(64 * 1024) == Approx(64 * 1024 / 10e9));
  CHECK(g.copy_time(256 * 1024) == Approx(256 * 1024 / std::sqrt(10e9 * 5e9)));  // halfway in log(size)
  CHECK(g.copy_time(1 << 20) == Approx((1 << 20) / 5e9));
  CHECK(g.copy_time(4 << 20) == Approx((4 << 20) / 5e9));  // above the last: its rate
  // A calibration overlay's copy rates are what a fusion buffer's copies cost in a prediction.
  const std::string overlay = "/tmp/ringsim_copy_rates_" + std::to_string(getpid()) + ".yaml";
  std::ofstream(overlay) << "gpus:\n  cpu-process: {copy_rates: [{from: 64 KiB, rate: 10 GB/s}, {from: 1 MiB, "
                            "rate: 5 GB/s}]}\n";
  Catalog cat = test::catalog();
  cat.apply_overlay(overlay);
  std::remove(overlay.c_str());
  REQUIRE(cat.gpu("cpu-process").copy_rates.size() == 2);
  const Scenario s = local_host(2);
  const Topology topo = Topology::build(cat, cluster_shape(s.cluster));
  const CommModel cm(cat, s, topo);
  CHECK(cm.device_copy_time(256 * 1024) == Approx(256 * 1024 / std::sqrt(10e9 * 5e9)));
}

TEST_CASE("placement: samples taken with the CPUs farther apart than twice the nearest probe are left out",
          "[calibrate]") {
  // ringsim-real --probe-cores: each sample carries the core-to-core probes taken before and after it. Per
  // size, two samples with the CPUs 30-32 ns apart (cores of one cache) at 1 us + S / 12 GB/s, and three
  // with them 170-180 ns apart (cores sharing none) five times slower: the median of all five, the point's
  // "seconds", is a far one. The largest size was measured only far.
  auto point = [](double bytes, double near_seconds, bool any_near) {
    nlohmann::json samples = nlohmann::json::array();
    for (int i = 0; i < 2 && any_near; ++i)
      samples.push_back({{"seconds", near_seconds}, {"core_to_core_ns", {30.0 + i, 32.0}}, {"retakes", 0}});
    for (int i = 0; i < 3; ++i)
      samples.push_back({{"seconds", 5 * near_seconds}, {"core_to_core_ns", {170.0, 175.0 + i}}, {"retakes", 3}});
    return nlohmann::json{{"bytes", bytes}, {"seconds", 5 * near_seconds}, {"samples", samples}};
  };
  nlohmann::json ex = nlohmann::json::array(), red = nlohmann::json::array();
  for (double s = 8; s <= 64.0 * (1 << 20); s *= 2) ex.push_back(point(s, 1e-6 + s / 12e9, s < 64.0 * (1 << 20)));
  for (double s = 4096; s <= 64.0 * (1 << 20); s *= 2) red.push_back(point(s, s / 16e9, true));
  const nlohmann::json pair = {{"class", "same_socket"}, {"ranks", {0, 1}}, {"points", ex}};
  const nlohmann::json data = {
      {"schema", "ringsim.calibration-data/1"},
      {"transport", "host"},
      {"ranks", 2},
      {"pingpong", {pair}},
      {"sendrecv", {pair}},
      {"reduction", red},
      {"copy", nlohmann::json::array()},
      {"compute_stand_in", nlohmann::json::array()},
      {"core_to_core", {{"cpus", {0, 1}}, {"nearest_ns", 30.0}, {"retake_above_nearest", 2.0}, {"waited_s", 0}}}};
  const std::string file = "/tmp/ringsim_placed_" + std::to_string(getpid()) + ".json";
  std::ofstream(file) << data.dump();
  const CalibrationResult r = calibrate(test::catalog(), local_host(2), {{file}, {}});
  INFO(r.overlay_yaml);
  for (const auto& f : r.fits)
    if (f.path_class == "same_socket") CHECK(1 / f.beta == Approx(12e9).epsilon(1e-6));
  CHECK(r.overlay_yaml.find("host_reduction_rate: 1.6e+10 B/s") != std::string::npos);
  auto note = [&](const std::string& start) {
    return std::any_of(r.notes.begin(), r.notes.end(), [&](const std::string& n) { return n.rfind(start, 0) == 0; });
  };
  // Each size's three far samples of the exchanges (twice: ping-pong too) and the reduction; the largest
  // exchange had no other, and is left out.
  const int points = 2 * static_cast<int>(ex.size()) + static_cast<int>(red.size());
  CHECK(note("placement: " + std::to_string(3 * points) + " of " + std::to_string(5 * points - 2 * 2) +
             " samples taken with CPUs 0 and 1 more than 60 ns apart (2 times the nearest probe, 30 ns) left out"));
  CHECK(note("placement: 2 points had no sample that counts, and are left out"));
  // A nearest probe seen by another launch counts: at 14 ns, none of these samples does.
  const CalibrationResult nearer = calibrate(test::catalog(), local_host(2), {{file}, {}, 14});
  CHECK(std::none_of(nearer.fits.begin(), nearer.fits.end(),
                     [](const LinearFit& f) { return f.path_class == "same_socket"; }));
  std::remove(file.c_str());

  // A bench file's rows: the one measured with the CPUs far apart is not compared, and a note says so.
  nlohmann::json rows = nlohmann::json::array();
  for (double ns : {31.0, 178.0, 33.0})
    rows.push_back({{"bytes", 1 << 20},
                    {"count", 1 << 18},
                    {"type", "float"},
                    {"op", "allreduce"},
                    {"busbw_gbps", 5.0},
                    {"core_to_core_ns", {ns, 31.0}},
                    {"retakes", 0}});
  const nlohmann::json bench = {
      {"schema", "ringsim.bench/1"},
      {"ranks", 2},
      {"transport", "host"},
      {"op", "allreduce"},
      {"algorithm", "ring"},
      {"type", "float"},
      {"rows", rows},
      {"core_to_core", {{"cpus", {0, 1}}, {"nearest_ns", 31.0}, {"retake_above_nearest", 2.0}, {"waited_s", 0}}}};
  const std::string bench_file = "/tmp/ringsim_placed_bench_" + std::to_string(getpid()) + ".json";
  std::ofstream(bench_file) << bench.dump();
  const ValidationReport v = validate_measured(test::catalog(), local_host(2), {bench_file});
  CHECK(v.cases.size() == 2);
  REQUIRE(v.notes.size() == 1);
  CHECK(v.notes[0] ==
        "placement: 1 of 3 bench rows taken with CPUs 0 and 1 more than 62 ns apart (2 times the nearest probe, 31 ns) "
        "left out");
  CHECK(validation_table(v).find("  note: placement: 1 of 3 bench rows") != std::string::npos);
  std::remove(bench_file.c_str());
}

TEST_CASE("calibrate: exchanges set a class's figures, launches are merged by the median, copies set the memory rate",
          "[calibrate]") {
  // Three launches of ringsim-real calibrate on 2 processes. Exchanges (both ranks send and receive at once)
  // take 1 us + S / 12 GB/s, ping-pong 1 us + S / 8 GB/s; one launch is 3x slower at every measurement (a
  // state that lasts a launch on a shared VM), which the median per size drops. Copies run at 20 GB/s.
  auto launch = [](double slow) {
    nlohmann::json pp = nlohmann::json::array(), ex = nlohmann::json::array(), red = nlohmann::json::array(),
                   cp = nlohmann::json::array();
    for (double s = 8; s <= 64.0 * (1 << 20); s *= 2) {
      pp.push_back({{"bytes", s}, {"seconds", slow * (1e-6 + s / 8e9)}});
      ex.push_back({{"bytes", s}, {"seconds", slow * (1e-6 + s / 12e9)}});
    }
    for (double s = 4096; s <= 64.0 * (1 << 20); s *= 2) {
      red.push_back({{"bytes", s}, {"seconds", slow * s / 16e9}});
      if (s >= 65536) cp.push_back({{"bytes", s}, {"seconds", slow * s / 20e9}});
    }
    nlohmann::json one = nlohmann::json::array();  // both processes on one core: 7 us more, copies in turn
    nlohmann::json two = nlohmann::json::array();  // on two cores, each shared with a yielding thread: 4 us more
    for (double s = 8; s <= 256.0 * 1024; s *= 2) {
      one.push_back({{"bytes", s}, {"seconds", slow * (8e-6 + s / 6e9)}});
      two.push_back({{"bytes", s}, {"seconds", slow * (5e-6 + s / 12e9)}});
    }
    const nlohmann::json pair = {{"class", "same_socket"}, {"ranks", {0, 1}}};
    nlohmann::json with_points = pair;
    with_points["points"] = pp;
    nlohmann::json exchanged = pair;
    exchanged["points"] = ex;
    return nlohmann::json{
        {"schema", "ringsim.calibration-data/1"},
        {"transport", "host"},
        {"ranks", 2},
        {"pingpong", {with_points}},
        {"sendrecv", {exchanged}},
        {"sendrecv_one_core", {{"class", "same_socket"}, {"ranks", {0, 1}}, {"cpu", 0}, {"points", one}}},
        {"sendrecv_shared_cores", {{"class", "same_socket"}, {"ranks", {0, 1}}, {"cpus", {0, 1}}, {"points", two}}},
        {"reduction", red},
        {"copy", cp},
        {"compute_stand_in", nlohmann::json::array()}};
  };
  std::vector<std::string> files;
  for (double slow : {1.0, 3.0, 1.0}) {
    files.push_back("/tmp/ringsim_launch" + std::to_string(files.size()) + "_" + std::to_string(getpid()) + ".json");
    std::ofstream(files.back()) << launch(slow).dump();
  }
  const CalibrationResult r = calibrate(test::catalog(), local_host(2), {files, {}});
  INFO(r.overlay_yaml);
  auto fits_of = [&](const std::string& cls) {
    std::vector<const LinearFit*> v;
    for (const auto& f : r.fits)
      if (f.path_class == cls) v.push_back(&f);
    return v;
  };
  // The exchanges are the class's figures, the ping-pong is fitted beside them; both at the fast launches'
  // rates: the slow launch is the odd one out at every size.
  REQUIRE(fits_of("same_socket").size() == 1);
  CHECK(1 / fits_of("same_socket")[0]->beta == Approx(12e9).epsilon(1e-6));
  REQUIRE(fits_of("same_socket ping-pong").size() == 1);
  CHECK(1 / fits_of("same_socket ping-pong")[0]->beta == Approx(8e9).epsilon(1e-6));
  CHECK(r.overlay_yaml.find("shm_process: {bandwidth: 1.2e+10 B/s") != std::string::npos);
  CHECK(r.overlay_yaml.find("host_reduction_rate: 1.6e+10 B/s") != std::string::npos);
  // Copies read and write each byte: the processes' memory streams at twice the copy rate. Sharing a core
  // costs each message the one-core exchanges' latency above the exchanges', and sharing cores that the
  // processes are spread over the shared-cores exchanges' latency above them as well.
  // Copies cost their size's measured rate (here 20 GB/s at every size).
  CHECK(r.overlay_yaml.find("gpus:\n  cpu-process: {memory_bandwidth: 4e+10 B/s, copy_rates: [{from: 65536 B, rate: "
                            "2e+10 B/s}, {from: 131072 B, rate: 2e+10 B/s}, ") != std::string::npos);
  CHECK(r.overlay_yaml.find(
            "{from: 67108864 B, rate: 2e+10 B/s}], core_handoff: 7e-06 s, cross_core_handoff: 4e-06 s}") !=
        std::string::npos);

  const std::string overlay = files.front() + ".yaml";
  std::ofstream(overlay) << r.overlay_yaml;
  Catalog cat = test::catalog();
  cat.apply_overlay(overlay);
  CHECK(cat.gpu("cpu-process").memory_bandwidth == Approx(40e9));
  CHECK(cat.gpu("cpu-process").core_handoff == Approx(7e-6));
  CHECK(cat.gpu("cpu-process").cross_core_handoff == Approx(4e-6));
  // An exchange's message of 16 MiB costs what the exchanges measured; with 4 processes on the 2 cores,
  // both handoffs more and half the core, in both fidelities. On a host of one core, whose processes all
  // share it, only the core handoff: no message crosses cores.
  const std::string one_cpu = files.front() + ".cores.yaml";
  std::ofstream(one_cpu) << "skus:\n  local-host:\n    vcpus: 1\n";
  Catalog single = cat;
  single.apply_overlay(one_cpu);
  const OneTransfer one(16u << 20);
  for (Fidelity f : {Fidelity::Flow, Fidelity::Step}) {
    CAPTURE(to_string(f));
    CHECK(timed_with(cat, local_host(2), one, f) == Approx(1e-6 + (16u << 20) / 12e9).epsilon(0.001));
    CHECK(timed_with(cat, local_host(4), one, f) == Approx(12e-6 + (16u << 20) / 6e9).epsilon(0.001));
    CHECK(timed_with(single, local_host(2), one, f) == Approx(8e-6 + (16u << 20) / 6e9).epsilon(0.001));
  }
  std::remove(one_cpu.c_str());
  // Data without the shared-cores exchanges (one CPU, or an older ringsim-real): the catalog's figure stays,
  // and a note says so.
  const std::string older = files.front() + ".older.json";
  auto without = launch(1.0);
  without.erase("sendrecv_shared_cores");
  std::ofstream(older) << without.dump();
  const CalibrationResult r_older = calibrate(test::catalog(), local_host(2), {{older}, {}});
  CHECK(r_older.overlay_yaml.find("core_handoff: 7e-06 s}") != std::string::npos);
  CHECK(r_older.overlay_yaml.find("cross_core_handoff") == std::string::npos);
  CHECK(std::any_of(r_older.notes.begin(), r_older.notes.end(), [](const std::string& n) {
    return n.find("two shared cores: none measured") == 0 && n.find("the catalog's cross_core_handoff stays") != n.npos;
  }));
  std::remove(older.c_str());
  // Ranks that are GPUs copy in GPU memory: the host's copies are not applied to them.
  const Scenario gpus = scenario(
      "cluster: {sku: NC24rs_v3, nodes: 1}\nmodel: {name: resnet50, batch_per_gpu: 64}\ntraining: {epochs: 1}\n"
      "communication: {library: mpi}\n");
  const CalibrationResult on_gpus = calibrate(test::catalog(), gpus, {files, {}});
  CHECK(on_gpus.overlay_yaml.find("gpus:") == std::string::npos);
  CHECK(on_gpus.overlay.gpus.empty());
  for (const char* note : {"copy: V100-PCIe-16GB ranks copy in GPU memory", "one core: V100-PCIe-16GB ranks do not"})
    CHECK(std::any_of(on_gpus.notes.begin(), on_gpus.notes.end(),
                      [&](const std::string& n) { return n.find(note) == 0; }));
  for (const auto& f : files) std::remove(f.c_str());
  std::remove(overlay.c_str());
}

TEST_CASE("host data path: shared-memory copy-out and fusion copies at one core's memcpy rate", "[model]") {
  // Two GPUs of one NC24rs_v3 (one socket) on MPI's host path: each member receives S/2 in each of the
  // ring's two steps and copies it out of shared memory, so the ring takes S / host_copy_rate longer than
  // with free copies; the same ring between two nodes copies nothing out of shared memory.
  const std::uint64_t S = std::uint64_t{64} << 20;
  const auto mpi = [](int nodes, int gpus) {
    return scenario("cluster: {sku: NC24rs_v3, nodes: " + std::to_string(nodes) +
                    ", gpus_per_node: " + std::to_string(gpus) +
                    ", fabric: infiniband}\nmodel: {name: resnet50, batch_per_gpu: 64}\ntraining: {epochs: 1}\n"
                    "communication: {library: mpi}\n");
  };
  const double rate = test::catalog().library("mpi").host_copy_rate;
  REQUIRE(rate > 0);
  Catalog fast = test::catalog();
  CatalogOverlay o;
  o.libraries["mpi"].host_copy_rate = 1e30;
  fast.apply(o);
  auto ring = collective::make_ring_allreduce(2, S, 4, Space::Host);
  for (Fidelity f : {Fidelity::Flow, Fidelity::Step}) {
    CAPTURE(to_string(f));
    const double with = timed_with(test::catalog(), mpi(1, 2), *ring, f);
    const double without = timed_with(fast, mpi(1, 2), *ring, f);
    CHECK(with - without == Approx(static_cast<double>(S) / rate).epsilon(1e-6));
    CHECK(timed_with(test::catalog(), mpi(2, 1), *ring, f) == Approx(timed_with(fast, mpi(2, 1), *ring, f)));
  }
  // Horovod's fusion copies: by its CPU thread on the host path, in GPU memory with NCCL.
  const auto fusion_rate = [](const Scenario& s) {
    const Topology topo = Topology::build(test::catalog(), simulated_shape(s));
    CommModel cm(test::catalog(), s, topo);
    return static_cast<double>(S) / cm.fusion_copy_time(S);
  };
  CHECK(fusion_rate(mpi(1, 2)) == Approx(rate));
  CHECK(fusion_rate(one_gpu_per_node(2)) == Approx(gpu_memory_bandwidth() / 2));  // read + write
  // The copies are in the result: per step of each phase, where there are any.
  const auto has_copies = [](const nlohmann::json& j) {
    bool any = false;
    for (const auto& c : j["collectives"])
      for (const auto& ph : c["phases"]) any = any || ph.value("shared_memory_copy_s", 0.0) > 0;
    return any;
  };
  const std::string dir = RINGSIM_TEST_SCENARIOS;
  CHECK(has_copies(predict_json(dir + "/landolakes_cifar10_2x_nc24rs_v3.yaml", "")));  // Intel MPI, 4 GPUs a node
  CHECK_FALSE(has_copies(predict_json(dir + "/resnet50_imagenet_8x_nc24rs_v3.yaml", "--set cluster.nodes=1")));
}

TEST_CASE("interference: a collective's kernels hold SMs and memory bandwidth while compute runs beside them",
          "[model]") {
  // Two P100s of a DGX-1, a ring allreduce of S on the GPUs: each member sends S, receives S (half of it
  // reduced, which reads its own operand too): 2.5 S through its memory. Over T seconds it holds the
  // library's 2 channels of 56 SMs and 2.5 S / T of 732 GB/s.
  const std::uint64_t S = std::uint64_t{64} << 20;
  const auto dgx1 = [](const std::string& comm) {
    return scenario(
        "cluster: {sku: DGX-1-P100, nodes: 1, gpus_per_node: 2}\nmodel: {name: resnet50, batch_per_gpu: "
        "64}\ntraining: {epochs: 1}\ncommunication: {" +
        comm + "}\n");
  };
  const GpuSpec& p100 = test::catalog().gpu("P100-SXM2");
  REQUIRE(p100.multiprocessors == 56);
  const double channels = test::catalog().library("nccl").kernel_channels;
  REQUIRE(channels == 2);
  const auto share = [&](const Scenario& s, Space space, double seconds) {
    const Topology topo = Topology::build(test::catalog(), simulated_shape(s));
    CommModel cm(test::catalog(), s, topo);
    return cm.compute_interference(*collective::make_ring_allreduce(2, S, 4, space), seconds).most();
  };
  const double T = 0.01;
  CHECK(share(dgx1("library: nccl"), Space::Device, T) ==
        Approx(channels / 56 + 2.5 * static_cast<double>(S) / T / p100.memory_bandwidth));
  CHECK(share(dgx1("library: mpi"), Space::Host, T) == 0);  // host data path: no kernels, host memory
  // Parameter servers' exchanges are copies: memory bandwidth only.
  CHECK(share(dgx1("library: nccl, strategy: parameter_server"), Space::Device, T) ==
        Approx(2.5 * static_cast<double>(S) / T / p100.memory_bandwidth));
  // So the channels' uncertainty takes part in allreduces' bands only.
  const auto& uncertain = test::catalog().uncertain();
  const auto it = std::find_if(uncertain.begin(), uncertain.end(), [](const UncertainParameter& p) {
    return p.figure == "libraries.nccl.kernel_channels";
  });
  REQUIRE(it != uncertain.end());
  CHECK(applies_to(*it, dgx1("library: nccl"), test::catalog()));
  CHECK_FALSE(applies_to(*it, dgx1("library: nccl, strategy: parameter_server"), test::catalog()));

  // In a training step the compute running beside each collective is slowed by its share: with one
  // collective at a time (step fidelity), rank 0's passes take longer by the sum of share x overlap.
  const std::string file = "/tmp/ringsim_interference_" + std::to_string(::getpid()) + ".yaml";
  std::ofstream(file) << "cluster: {sku: DGX-1-P100, nodes: 1}\nmodel: {name: vgg16, batch_per_gpu: 32}\n"
                         "training: {epochs: 1}\ncommunication: {library: nccl}\n";
  const auto j = predict_json(file, "--fidelity step");
  std::remove(file.c_str());
  const double fwd = j["forward_time_s"], slowed = j["compute_interference_s"];
  const double bwd_end = fwd + j["backward_time_s"].get<double>() + slowed;
  double expected = 0;
  for (const auto& c : j["collectives"]) {
    const double from = std::max(fwd, c["collective_start_s"].get<double>());
    const double to = std::min(bwd_end, c["collective_end_s"].get<double>());
    if (to > from) expected += c.value("compute_share", 0.0) * (to - from);
  }
  REQUIRE(expected > 0);
  CHECK(slowed == Approx(expected).epsilon(0.02));
  CHECK(j["exposed_communication_s"].get<double>() >= slowed);
}

TEST_CASE("stragglers: the expected slowest of n ranks, and the compute it adds", "[model]") {
  CHECK(expected_max_of_normals(1) == 0);
  CHECK(expected_max_of_normals(2) == Approx(1 / std::sqrt(M_PI)).epsilon(1e-6));  // closed form
  CHECK(expected_max_of_normals(3) == Approx(1.5 / std::sqrt(M_PI)).epsilon(1e-6));
  CHECK(expected_max_of_normals(32) == Approx(2.0697).epsilon(1e-3));  // order-statistics tables
  const Scenario s = one_gpu_per_node(4);
  const ComputeModel alone = build_compute_model(test::catalog(), s, false);
  const ComputeModel with = build_compute_model(test::catalog(), s);
  const double cv = test::catalog().compute().straggler_cv();
  REQUIRE(cv > 0);
  const double fwd_bwd = alone.forward_s + alone.backward_s;
  CHECK(with.straggler_s == Approx(fwd_bwd * cv * expected_max_of_normals(4)));
  CHECK(with.forward_s + with.backward_s == Approx(fwd_bwd + with.straggler_s));
  CHECK(with.single_gpu_images_per_sec == Approx(alone.single_gpu_images_per_sec));  // the rate stays the one rank's
  CHECK(build_compute_model(test::catalog(), one_gpu_per_node(1)).straggler_s == 0);
}

TEST_CASE("reference GPU: the run's GPUs are score x gpu_to_gpu_cv slower than the one that gave the rate", "[model]") {
  Catalog c = test::catalog();
  CatalogOverlay o;
  o.compute.gpu_to_gpu_cv = 0.02;
  o.compute.reference_gpu_score = 1.5;
  const Scenario s = one_gpu_per_node(4);
  const ComputeModel before = build_compute_model(c, s, false);
  c.apply(o);
  const ComputeModel after = build_compute_model(c, s, false);
  CHECK(after.forward_s + after.backward_s == Approx((before.forward_s + before.backward_s) * 1.03));
  CHECK(after.single_gpu_images_per_sec == Approx(before.single_gpu_images_per_sec));  // the given rate stays
  // One GPU is the measured one: nothing moves.
  CHECK(build_compute_model(c, one_gpu_per_node(1), false).backward_s ==
        Approx(build_compute_model(test::catalog(), one_gpu_per_node(1), false).backward_s));
  // An overlay file carries it.
  const std::string file = "/tmp/ringsim_reference_gpu_" + std::to_string(::getpid()) + ".yaml";
  std::ofstream(file) << o.to_yaml();
  CHECK(test::catalog().read_overlay(file).compute.reference_gpu_score == Approx(1.5));
  std::remove(file.c_str());
}

TEST_CASE("co-run: a GPU among busy neighbours in its node is co_run_slowdown slower than one alone", "[model]") {
  Catalog c = test::catalog();
  CatalogOverlay none, o;
  none.compute.co_run_slowdown = 0;
  o.compute.co_run_slowdown = 0.05;
  c.apply(none);
  const Scenario node = scenario(
      "cluster: {sku: DGX-1-P100, nodes: 1}\nmodel: {name: resnet50, batch_per_gpu: 64}\n"
      "training: {epochs: 1}\ncommunication: {library: nccl}\n");
  const ComputeModel before = build_compute_model(c, node, false);
  c.apply(o);
  const ComputeModel after = build_compute_model(c, node, false);
  CHECK(after.co_run_s == Approx((before.forward_s + before.backward_s) * 0.05));
  CHECK(after.forward_s + after.backward_s == Approx((before.forward_s + before.backward_s) * 1.05));
  CHECK(after.single_gpu_images_per_sec == Approx(before.single_gpu_images_per_sec));  // the given rate stays
  // One GPU in each node: no neighbours, nothing moves, and the band leaves the figure out.
  CHECK(build_compute_model(c, one_gpu_per_node(4), false).co_run_s == 0);
  // Processes on a host's CPU are not GPUs: their sharing is the catalog's handoff figures.
  const Scenario host = scenario(
      "cluster: {sku: local-host, nodes: 1, gpus_per_node: 2}\n"
      "model: {name: resnet50, batch_per_gpu: 8, images_per_sec_single_gpu: 10}\n"
      "training: {epochs: 1}\ncommunication: {library: mpi}\n");
  CHECK(build_compute_model(c, host, false).co_run_s == 0);
  const auto* p = [&]() -> const UncertainParameter* {
    for (const auto& u : test::catalog().uncertain())
      if (u.figure == "compute.co_run_slowdown") return &u;
    return nullptr;
  }();
  REQUIRE(p != nullptr);
  CHECK(applies_to(*p, node, test::catalog()));
  CHECK_FALSE(applies_to(*p, one_gpu_per_node(4), test::catalog()));
  // An overlay file carries it.
  const std::string file = "/tmp/ringsim_co_run_" + std::to_string(::getpid()) + ".yaml";
  std::ofstream(file) << o.to_yaml();
  CHECK(test::catalog().read_overlay(file).compute.co_run_slowdown == Approx(0.05));
  std::remove(file.c_str());
}

TEST_CASE("uncertain: a device library's host sums are in the band only where parameter servers sit on CPUs",
          "[model]") {
  const auto* p = [&]() -> const UncertainParameter* {
    for (const auto& u : test::catalog().uncertain())
      if (u.figure == "libraries.nccl.host_reduction_rate") return &u;
    return nullptr;
  }();
  REQUIRE(p != nullptr);
  const std::string common = "model: {name: vgg16, batch_per_gpu: 32}\ntraining: {epochs: 1}\n";
  const std::string node = "cluster: {sku: DGX-1-P100, nodes: 1}\n" + common;
  CHECK(
      applies_to(*p, scenario(node + "communication: {library: nccl, strategy: parameter_server}\n"), test::catalog()));
  // NCCL's allreduce sums on the GPUs; servers on the GPUs sum there too; MPI's own figure is another one.
  CHECK_FALSE(applies_to(*p, scenario(node + "communication: {library: nccl}\n"), test::catalog()));
  CHECK_FALSE(applies_to(*p,
                         scenario(node + "communication: {library: nccl, strategy: parameter_server, "
                                         "parameter_server_placement: gpus}\n"),
                         test::catalog()));
  CHECK_FALSE(
      applies_to(*p, scenario(node + "communication: {library: mpi, strategy: parameter_server}\n"), test::catalog()));
}

TEST_CASE("uncertain: the RPC rate is in the band only where parameter servers are processes of their own", "[model]") {
  const auto* p = [&]() -> const UncertainParameter* {
    for (const auto& u : test::catalog().uncertain())
      if (u.figure == "libraries.nccl.rpc_rate") return &u;
    return nullptr;
  }();
  REQUIRE(p != nullptr);
  const std::string node =
      "cluster: {sku: AWS-p2.8xlarge, nodes: 2}\nmodel: {name: resnet50, batch_per_gpu: 32}\n"
      "training: {epochs: 1}\n";
  CHECK(applies_to(*p,
                   scenario(node + "communication: {strategy: parameter_server, parameter_server_transport: rpc}\n"),
                   test::catalog()));
  CHECK_FALSE(applies_to(*p, scenario(node + "communication: {strategy: parameter_server}\n"), test::catalog()));
  CHECK_FALSE(applies_to(*p, scenario(node + "communication: {strategy: ring}\n"), test::catalog()));
}

TEST_CASE("band: it holds the prediction, and a calibration that measures a figure narrows it", "[model]") {
  // Two NC24r nodes over Ethernet with NCCL: the socket transport's fraction and the VMs' Ethernet rate are
  // assumptions, so the band is wide and below the prediction.
  const Scenario s = scenario(
      "cluster: {sku: NC24r, nodes: 2, fabric: ethernet}\nmodel: {name: resnet50, batch_per_gpu: 32}\n"
      "training: {epochs: 1}\ncommunication: {library: nccl}\n");
  const Catalog& catalog = test::catalog();
  const BandRatios band = band_ratios(catalog, s);
  CHECK(band.samples == kBandSamples);
  CHECK(std::count(band.parameters.begin(), band.parameters.end(), "nccl_socket_fraction") == 1);
  CHECK(std::count(band.parameters.begin(), band.parameters.end(), "mpi_host_reduction_rate") == 0);  // not MPI
  Prediction p;
  p.images_per_sec = 100;
  p.time_to_train_s = 1000;
  apply_band(band, p);
  CHECK(p.images_per_sec_low <= 100);
  CHECK(p.images_per_sec_high >= 100);
  CHECK(p.time_to_train_s_low <= 1000);
  CHECK(p.time_to_train_s_high >= 1000);
  CHECK(p.images_per_sec_low < 95);  // the network's figures matter here
  // The single-GPU rate came from one GPU, and the GPUs' spread is uncertain: where that GPU stands is too.
  CHECK(std::count(band.parameters.begin(), band.parameters.end(), "reference_gpu_score") == 1);
  CHECK(std::count(band.parameters.begin(), band.parameters.end(), "nccl_kernel_channels") == 1);
  // The same figures measured (a calibration overlay sets them): only the rest stays uncertain.
  CatalogOverlay measured;
  measured.libraries["nccl"].paths["ethernet"].bandwidth_fraction = 0.5;
  measured.skus["NC24r"].ethernet_bandwidth = 10e9 / 8;
  const BandRatios narrower = band_ratios(catalog, s, measured);
  CHECK(std::count(narrower.parameters.begin(), narrower.parameters.end(), "nccl_socket_fraction") == 0);
  CHECK(std::count(narrower.parameters.begin(), narrower.parameters.end(), "azure_ethernet_rate") == 0);
  CHECK(narrower.rate_high / narrower.rate_low < band.rate_high / band.rate_low);
  // Fitted to runs instead (calibrate --runs), the figures keep what the runs leave them: sampled over those
  // narrower ranges, between the band of nothing measured and the band of both measured exactly.
  CatalogOverlay fitted = measured;
  fitted.fitted_ranges["nccl_socket_fraction"] = {0.45, 0.55};
  fitted.fitted_ranges["azure_ethernet_rate"] = {0.9, 1.1};  // factors of the figure the overlay sets
  const BandRatios ranged = band_ratios(catalog, s, fitted);
  CHECK(std::count(ranged.parameters.begin(), ranged.parameters.end(), "nccl_socket_fraction") == 1);
  CHECK(ranged.rate_high / ranged.rate_low < band.rate_high / band.rate_low);
  CHECK(ranged.rate_high / ranged.rate_low > narrower.rate_high / narrower.rate_low);
  // Runs that measured the GPUs' spread measured the run's GPUs: the reference GPU leaves the band too,
  // whether the spread is set exactly or over a fitted range.
  measured.compute.gpu_to_gpu_cv = 0.015;
  const BandRatios gpus_measured = band_ratios(catalog, s, measured);
  CHECK(std::count(gpus_measured.parameters.begin(), gpus_measured.parameters.end(), "reference_gpu_score") == 0);
  measured.fitted_ranges["gpu_to_gpu_cv"] = {0.01, 0.02};
  const BandRatios gpus_fitted = band_ratios(catalog, s, measured);
  CHECK(std::count(gpus_fitted.parameters.begin(), gpus_fitted.parameters.end(), "gpu_to_gpu_cv") == 1);
  CHECK(std::count(gpus_fitted.parameters.begin(), gpus_fitted.parameters.end(), "reference_gpu_score") == 0);
  // One node of NVLink GPUs, compute-bound: the reference GPU alone spreads the band both ways by more than
  // one standard deviation of the catalog's spread.
  const BandRatios node = band_ratios(catalog, scenario("cluster: {sku: DGX-1-P100, nodes: 1}\n"
                                                        "model: {name: resnet50, batch_per_gpu: 64}\n"
                                                        "training: {epochs: 1}\ncommunication: {library: nccl}\n"));
  CHECK(node.rate_low < 1 - catalog.compute().gpu_to_gpu_cv);
  CHECK(node.rate_high > 1 + 0.5 * catalog.compute().gpu_to_gpu_cv);
  // One GPU with a given rate: nothing uncertain takes part, no band.
  CHECK(band_ratios(catalog, scenario("cluster: {sku: NC24rs_v3, nodes: 1, gpus_per_node: 1}\n"
                                      "model: {name: resnet50, batch_per_gpu: 64, images_per_sec_single_gpu: 300}\n"
                                      "training: {epochs: 1}\n"))
            .samples == 0);
}

TEST_CASE(
    "roofline efficiency: a rate from the roofline is as uncertain as the stacks behind it, a measured one is not",
    "[model]") {
  Catalog c = test::catalog();
  const Scenario roofline = one_gpu_per_node(1);  // a V100 and ResNet-50 at batch 64: no measured row
  const Scenario measured = scenario(
      "cluster: {sku: DGX-1-P100, nodes: 1, gpus_per_node: 1}\n"
      "model: {name: resnet50, batch_per_gpu: 64}\ntraining: {epochs: 1}\n");
  REQUIRE(build_compute_model(c, roofline, false).source == "roofline");
  REQUIRE(build_compute_model(c, measured, false).source == "measured");
  const auto pass = [&](const Scenario& s) {
    const ComputeModel m = build_compute_model(c, s, false);
    return m.forward_s + m.backward_s;
  };
  const double roofline_before = pass(roofline), measured_before = pass(measured);
  CatalogOverlay o;
  o.compute.roofline_efficiency_scale = 0.5;
  c.apply(o);
  CHECK(pass(roofline) == Approx(2 * roofline_before));
  CHECK(pass(measured) == Approx(measured_before));
  // An overlay file carries it.
  const std::string file = "/tmp/ringsim_roofline_" + std::to_string(::getpid()) + ".yaml";
  std::ofstream(file) << o.to_yaml();
  CHECK(test::catalog().read_overlay(file).compute.roofline_efficiency_scale == Approx(0.5));
  std::remove(file.c_str());
  // The band samples it for the roofline's rate only: one GPU, where nothing else is uncertain, spreads
  // mostly below (a tuned stack is the catalog's figure, most others reach less).
  const BandRatios band = band_ratios(test::catalog(), roofline);
  CHECK(band.parameters == std::vector<std::string>{"roofline_efficiency"});
  CHECK(band.rate_low < 0.5);
  CHECK(band.rate_high <= 1.2);
  // The rate follows the figure (nearly: a little less at the top), so the ends are the extreme samples':
  // Halton's 1/32 (sample 16) and 15/16 (sample 15) along the range, log-uniform over 0.25-1.2. The second
  // most extreme (1/16 and 7/8) would be 5 % higher and 9 % lower.
  CHECK(band.rate_low == Approx(0.25 * std::pow(4.8, 1.0 / 32)).epsilon(0.01));
  CHECK(band.rate_high == Approx(0.25 * std::pow(4.8, 15.0 / 16)).epsilon(0.02));
  CHECK(band_ratios(test::catalog(), measured).samples == 0);
}

TEST_CASE("children: side by side, results in the tasks' order, failures and RINGSIM_JOBS reported", "[model]") {
  std::vector<std::function<std::string()>> tasks;
  for (int i = 0; i < 7; ++i)
    tasks.push_back([i] {
      usleep(static_cast<useconds_t>((7 - i) * 2000));                // the later tasks end first
      return std::string(70000 * (i == 3), 'x') + std::to_string(i);  // one beyond a pipe's buffer
    });
  for (const char* jobs : {"1", "3", "16"}) {
    CAPTURE(jobs);
    ::setenv("RINGSIM_JOBS", jobs, 1);
    CHECK(child_jobs() == std::stoi(jobs));
    const std::vector<std::string> out = run_in_children(tasks);
    REQUIRE(out.size() == 7);
    for (std::size_t i = 0; i < 7; ++i) CHECK(out[i].substr(out[i].size() - 1) == std::to_string(i));
    CHECK(out[3].size() == 70001);
  }
  tasks[5] = []() -> std::string { throw std::runtime_error("task five failed"); };
  CHECK_THROWS_WITH(run_in_children(tasks), Catch::Contains("task five failed"));
  for (const char* bad : {"0", "two", "3x", ""}) {
    ::setenv("RINGSIM_JOBS", bad, 1);
    CHECK_THROWS_WITH(child_jobs(),
                      Catch::Contains("RINGSIM_JOBS=" + std::string(bad) + ": error: expected a whole number"));
  }
  ::unsetenv("RINGSIM_JOBS");
  CHECK(child_jobs() >= 1);
}

TEST_CASE("band: the same with its predictions one at a time and side by side", "[model]") {
  const Scenario s = scenario(
      "cluster: {sku: NC24r, nodes: 2, fabric: ethernet}\nmodel: {name: resnet50, batch_per_gpu: 32}\n"
      "training: {epochs: 1}\ncommunication: {library: nccl}\n");
  ::setenv("RINGSIM_JOBS", "1", 1);
  const BandRatios one = band_ratios(test::catalog(), s);
  ::setenv("RINGSIM_JOBS", "4", 1);
  const BandRatios four = band_ratios(test::catalog(), s);
  ::unsetenv("RINGSIM_JOBS");
  CHECK(one.rate_low == four.rate_low);
  CHECK(one.rate_high == four.rate_high);
  CHECK(one.time_high == four.time_high);
  CHECK(one.rate_low < 1);
}

TEST_CASE("band: where the flow fidelity runs collectives at once, the band samples it too", "[model]") {
  const std::string text =
      "cluster: {sku: NC24r, nodes: 2, fabric: ethernet}\nmodel: {name: resnet50, batch_per_gpu: 32}\n"
      "training: {epochs: 1}\ncommunication: {library: nccl, concurrent_collectives: unlimited}\n";
  const Scenario at_once = scenario(text);
  const Scenario one_at_a_time = scenario(
      "cluster: {sku: NC24r, nodes: 2, fabric: ethernet}\nmodel: {name: resnet50, batch_per_gpu: 32}\n"
      "training: {epochs: 1}\ncommunication: {library: nccl}\n");
  CHECK_FALSE(band_samples_step(at_once, Fidelity::Flow));
  CHECK(band_samples_step(at_once, Fidelity::Step));  // the step fidelity runs one at a time anyway
  CHECK(band_samples_step(one_at_a_time, Fidelity::Flow));
  // The links the collectives share make the network's figures move the prediction otherwise than one
  // collective at a time: the two bands differ.
  const BandRatios flow = band_ratios(test::catalog(), at_once, {}, Fidelity::Flow);
  const BandRatios step = band_ratios(test::catalog(), at_once, {}, Fidelity::Step);
  CHECK(flow.samples == kBandSamples);
  CHECK(std::fabs(flow.rate_low / step.rate_low - 1) > 0.01);
  CHECK(flow.rate_low < 1);
}

TEST_CASE("band: predict writes it in the JSON and the table, and --no-band leaves it out", "[model]") {
  const std::string file = std::string(RINGSIM_TEST_SCENARIOS) + "/resnet50_imagenet_nccl_tcp_4x_nc24s_v3.yaml";
  const std::string json = "/tmp/ringsim_band_" + std::to_string(::getpid()) + ".json";
  for (const bool band : {true, false}) {
    CAPTURE(band);
    const test::CommandResult r =
        test::run_command(std::string(RINGSIM_TEST_BINARY) + " --catalog " + RINGSIM_TEST_CATALOG + " predict " + file +
                          (band ? "" : " --no-band") + " --json " + json);
    REQUIRE(r.status == 0);
    std::ifstream in(json);
    const auto j = nlohmann::json::parse(in);
    CHECK(j.contains("images_per_sec_low") == band);
    CHECK(j.contains("time_to_train_s_high") == band);
    CHECK((r.output.find("band from") != std::string::npos) == band);
    if (band) CHECK(j["images_per_sec_low"].get<double>() < j["images_per_sec"].get<double>());
    // The scenario's V100 rate is the roofline's: the table says what takes that figure out.
    CHECK((r.output.find("the single-GPU rate is the roofline's") != std::string::npos) == band);
  }
  std::remove(json.c_str());
}

TEST_CASE("uncertain.yaml: a figure that is not one is refused with file, line and column", "[catalog]") {
  const std::filesystem::path dir = "/tmp/ringsim_uncertain_" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  for (const auto& e : std::filesystem::directory_iterator(RINGSIM_TEST_CATALOG))
    std::filesystem::create_symlink(std::filesystem::absolute(e.path()), dir / e.path().filename());
  std::filesystem::remove(dir / "uncertain.yaml");
  std::ofstream(dir / "uncertain.yaml") << "parameters:\n  x:\n    figure: libraries.ncl.host_reduction_rate\n"
                                           "    range: [1 GB/s, 2 GB/s]\n    source: test\n";
  std::string msg = test::input_error_of([&] { Catalog::load(dir.string()); });
  CHECK_THAT(msg, Catch::Contains("uncertain.yaml:3:13"));
  CHECK_THAT(msg, Catch::Contains("did you mean nccl"));
  std::ofstream(dir / "uncertain.yaml") << "parameters:\n  x:\n    figure: compute.step_time_cv\n"
                                           "    range: [0.02, 0.01]\n    source: test\n";
  CHECK_THAT(test::input_error_of([&] { Catalog::load(dir.string()); }), Catch::Contains("below its LOW"));
  std::filesystem::remove_all(dir);
}

TEST_CASE(
    "plan --confidence high: plans are timed at the pessimistic end of their band, and a deadline met only "
    "at the optimistic end is flagged",
    "[plan]") {
  const std::string out = "/tmp/ringsim_plan_confidence_" + std::to_string(::getpid()) + ".json";
  const auto plan = [&](const std::string& args) {
    const std::string cmd = std::string(RINGSIM_TEST_BINARY) + " --catalog " + RINGSIM_TEST_CATALOG + " plan " +
                            RINGSIM_TEST_CATALOG + "/../scenarios/resnet50_imagenet_plan.yaml --skus NC24r --nodes 8 " +
                            "--strategies ring --fidelity step --json " + out + " " + args + " > /dev/null 2>&1";
    REQUIRE(std::system(cmd.c_str()) == 0);
    std::ifstream in(out);
    return nlohmann::json::parse(in);
  };
  const auto typical = plan("--deadline 1000d");
  const auto& t = typical["configurations"][0];
  CHECK(typical["goal"]["confidence"] == "typical");
  CHECK(t["time_to_train_s"] == t["predicted_time_to_train_s"]);
  CHECK(t["time_to_train_s_high"].get<double>() > t["time_to_train_s"].get<double>());  // K80s over Ethernet
  const auto high = plan("--deadline 1000d --confidence high");
  CHECK(high["goal"]["confidence"] == "high");
  CHECK(high["configurations"][0]["time_to_train_s"] == t["time_to_train_s_high"]);
  CHECK(high["configurations"][0]["cost_usd"].get<double>() > t["cost_usd"].get<double>());
  // The rate shown beside that time is the band's low end too; the prediction's is kept beside it.
  CHECK(t["images_per_sec"] == t["predicted_images_per_sec"]);
  CHECK(high["configurations"][0]["images_per_sec"].get<double>() < t["images_per_sec"].get<double>());
  CHECK(high["configurations"][0]["predicted_images_per_sec"] == t["images_per_sec"]);
  // A deadline between the prediction and its pessimistic end.
  const double between = (t["time_to_train_s"].get<double>() + t["time_to_train_s_high"].get<double>()) / 2;
  const auto flagged = plan("--deadline " + std::to_string(static_cast<long long>(between)) + "s");
  bool flag = false;
  for (const auto& f : flagged["flags"]) flag = flag || f["flag"] == "deadline_at_optimistic_end";
  CHECK(flag);
  std::remove(out.c_str());
}

TEST_CASE("bench: a predicted allreduce over NVSwitch in closed form", "[bench]") {
  // One ND96isr_H100_v5: a ring over eight ports of 18 x 25 GB/s at NCCL's intra-node fraction 0.8; each
  // of the 7 reduce-scatter steps ends with its last 1 MiB slice's reduction on the GPU (3 x bytes / HBM),
  // every one of the 14 steps pays the GPU-NVSwitch-GPU latency, and the call NCCL's 8.4 us.
  const Catalog& c = ringsim::test::catalog();
  const Scenario s = load_scenario(std::string(RINGSIM_TEST_SCENARIOS) + "/nccl_tests_nd96isr_h100_v5.yaml", c);
  const BenchPrediction b = predict_allreduce_bench(c, s, {1ull << 30, 1ull << 30, 2});
  REQUIRE(b.rows.size() == 1);
  CHECK(b.ranks == 8);
  CHECK(b.bus_factor == Approx(1.75));
  const double chunk = (1ull << 30) / 8.0;
  const double expect = 14 * chunk / (0.8 * 450e9) + 7 * 3 * 1048576.0 / 3350e9 + 14 * 0.7e-6 + 8.4e-6;
  CHECK(b.rows[0].time_s == Approx(expect).epsilon(0.01));
  CHECK(b.rows[0].count == (1ull << 28));
}

TEST_CASE("bench: NCCL 1's one ring in device order crosses a DGX-1's sockets through host memory at 8 GPUs",
          "[bench]") {
  // GPUs 0-3 and 4-7 of a DGX-1 (P100) are NVLink cliques; 3-4 and 7-0 are not linked and sit on different
  // sockets. NCCL 2's searched ring stays on NVLink (0.8 x 20 GB/s), and by default it runs four of them (a
  // DGX-1's `rings`); NCCL 1's ring 0..7 crosses the QPI pair (38.4 GB/s) twice at its cross_socket fraction,
  // one crossing each way. Four GPUs: one clique, alike with one ring each.
  Catalog c = ringsim::test::catalog();
  auto busbw = [&](int gpus, const char* library, const char* channels = "auto") {
    const Scenario s =
        load_scenario(std::string(RINGSIM_TEST_VALIDATION_SCENARIOS) + "/dgx1_p100_tf_replicated_nccl.yaml", c,
                      {parse_override("cluster.gpus_per_node=" + std::to_string(gpus)),
                       parse_override(std::string("communication.library=") + library),
                       parse_override(std::string("communication.channels=") + channels)});
    const BenchPrediction b = predict_allreduce_bench(c, s, {1ull << 30, 1ull << 30, 2});
    REQUIRE(b.rows.size() == 1);
    return b.rows[0].algbw() * b.bus_factor;
  };
  const double fraction = c.library("nccl1").cross_socket->bandwidth_fraction;
  CHECK(busbw(8, "nccl1") == Approx(fraction * 38.4e9).epsilon(0.01));
  CHECK(busbw(8, "nccl", "1") == Approx(0.8 * 20e9).epsilon(0.01));
  CHECK(busbw(8, "nccl") == Approx(4 * 0.8 * 20e9).epsilon(0.01));
  // NCCL 2's Simple protocol: steps of at least its 3.4 us on NVLink, against microseconds of bytes.
  CHECK(busbw(4, "nccl1") == Approx(busbw(4, "nccl", "1")).epsilon(1e-3));
  CHECK(busbw(4, "nccl1") == Approx(0.8 * 20e9).epsilon(0.01));
  // An overlay sets the figure (one written for a library without one would start from intra_node's), and
  // NCCL 2's searched ring on NVLink does not cross the sockets, so it is unmoved.
  const std::string file = "/tmp/ringsim_cross_socket_" + std::to_string(getpid()) + ".yaml";
  std::ofstream(file) << "libraries:\n  nccl1:\n    paths:\n      cross_socket: {bandwidth_fraction: 0.16}\n"
                         "  nccl:\n    paths:\n      cross_socket: {bandwidth_fraction: 0.1}\n";
  c.apply_overlay(file);
  std::remove(file.c_str());
  CHECK(c.library("nccl1").cross_socket->bandwidth_fraction == 0.16);
  CHECK(c.library("nccl").cross_socket->message_overhead == c.library("nccl").intra_node.message_overhead);
  CHECK(busbw(8, "nccl1") == Approx(0.16 * 38.4e9).epsilon(0.01));
  CHECK(busbw(8, "nccl", "1") == Approx(0.8 * 20e9).epsilon(0.01));
}

TEST_CASE("bench: NVLS on one ND96isr_H100_v5 in closed form, and refused where the switch cannot reduce", "[bench]") {
  // 256 slices of 4 MiB, each GPU's shard 512 KiB: in a full step every GPU port carries a slice and a shard
  // each way at 0.85 (NCCL's nvlsEfficiency) of 0.8 x 18 x 25 GB/s. A step's busiest port carries 4 MiB in
  // the pipeline's first two and last two steps and 4.5 MiB in the 255 between (4.5 x 256 + 11.5 MiB), every
  // one of the 259 steps pays the GPU-NVSwitch hop (0.35 us), and the call NCCL's NVLS latency, 23 us.
  const Catalog& c = ringsim::test::catalog();
  const std::string file = std::string(RINGSIM_TEST_SCENARIOS) + "/nccl_tests_nd96isr_h100_v5.yaml";
  const Scenario s = load_scenario(file, c, {parse_override("communication.strategy=nvls")});
  const BenchPrediction b = predict_allreduce_bench(c, s, {1ull << 30, 1ull << 30, 2});
  REQUIRE(b.rows.size() == 1);
  const double mib = 1048576.0;
  const double expect = (4.5 * 256 + 11.5) * mib / (0.85 * 0.8 * 450e9) + 259 * 0.35e-6 + 23e-6;
  CHECK(b.rows[0].time_s == Approx(expect).epsilon(0.01));
  CHECK(b.rows[0].algbw() * b.bus_factor / 1e9 == Approx(460).epsilon(0.02));  // Azure measured 466 at 1 GiB
  // NVLS runs NCCL's 16 channels, an SM each of the H100's 132, while the ring holds kernel_channels (2).
  const Topology topo = Topology::build(c, cluster_shape(s.cluster));
  CommModel cm(c, s, topo);
  const auto nvls = make_buffer_collective(s, buffer_collective_layout(s, cm.data_space(), cm), 1 << 20, 4);
  CHECK(cm.compute_interference(*nvls, 1.0).sms == Approx(16.0 / 132));
  const std::string a100 = ringsim::test::input_error_of([&] {
    load_scenario(file, c, {parse_override("communication.strategy=nvls"), parse_override("cluster.sku=ND96asr_v4")});
  });
  CHECK_THAT(a100, Catch::Contains("has no NVSwitch that reduces in the switch"));
  const std::string nodes = ringsim::test::input_error_of([&] {
    load_scenario(file, c, {parse_override("communication.strategy=nvls"), parse_override("cluster.nodes=2")});
  });
  CHECK_THAT(nodes, Catch::Contains("nvls runs inside one NVLink domain (1 node of ND96isr_H100_v5)"));
}

TEST_CASE("bench: NCCL's tree across ND96isr_H100_v5 nodes, latency in closed form, bandwidth flat in nodes",
          "[bench]") {
  const Catalog& c = ringsim::test::catalog();
  const std::string file = std::string(RINGSIM_TEST_SCENARIOS) + "/nccl_tests_nd96isr_h100_v5.yaml";
  auto bench = [&](std::vector<std::string> sets, std::uint64_t bytes) {
    std::vector<Override> o;
    for (const auto& s : sets) o.push_back(parse_override(s));
    return predict_allreduce_bench(c, load_scenario(file, c, o), {bytes, bytes, 2}).rows.at(0).time_s;
  };
  // NCCL's Simple protocol throughout: a tree's call costs nothing more (NCCL's baseLat), a ring's 8.4 us
  // and each of its steps at least NCCL's mean step latency. One NVLink step (a chain in one node: 14
  // steps) and one InfiniBand step (a tree of two nodes of one GPU: 2 steps).
  const std::string simple = "communication.protocol=simple", tree = "communication.strategy=tree";
  const double nvlink = bench({simple, tree}, 8) / 14;
  const double ib = bench({simple, tree, "cluster.nodes=2", "cluster.gpus_per_node=1"}, 8) / 2;
  CHECK(nvlink == Approx(0.7e-6).epsilon(1e-3));
  for (int nodes : {4, 32}) {
    CAPTURE(nodes);
    const std::string n = "cluster.nodes=" + std::to_string(nodes);
    // 8 B: up the chain (7 NVLink steps), up the node tree (log2 nodes InfiniBand steps) and down again.
    const double levels = std::log2(nodes);
    CHECK(bench({n, simple, tree}, 8) == Approx(14 * nvlink + 2 * levels * ib).epsilon(1e-4));
    // A ring of 8 x nodes GPUs takes 2 (8 nodes - 1) steps, each with a hop across nodes, each at least
    // NCCL's mean: 2 x nodes steps at 14 us, the others at 3.4.
    const double steps = 2 * (8 * nodes - 1), floor = ((steps - 2 * nodes) * 3.4e-6 + 2 * nodes * 14e-6) / steps;
    CHECK(bench({n, simple}, 8) == Approx(8.4e-6 + steps * std::max(ib, floor)).epsilon(1e-4));
  }
  // 256 MiB: each node's NICs carry 2 S in the tree at any node count (a ring: 2 S (n - 1) / n); the
  // pipeline's fill and drain cost the tree 10-20 %.
  const std::uint64_t big = 256ull << 20;
  const double tree4 = bench({"cluster.nodes=4", "communication.strategy=tree"}, big);
  const double tree32 = bench({"cluster.nodes=32", "communication.strategy=tree"}, big);
  const double ring4 = bench({"cluster.nodes=4"}, big);
  CHECK(tree32 == Approx(tree4).epsilon(0.05));
  CHECK(tree4 / ring4 > 1.1);
  CHECK(tree4 / ring4 < 1.3);
  CHECK(bench({"cluster.nodes=32"}, big) > 1.5 * tree32);  // the ring's 510 latencies
  // A tree channel enters and leaves every node by its head's NIC: on a rail-optimised fabric with 2:1
  // leaves its traffic stays on its rail's leaf within a group, and crosses the spines between groups as in
  // the fat tree.
  const std::vector<std::string> fabric = {"cluster.nodes=64", "communication.strategy=tree",
                                           "cluster.nodes_per_leaf=16", "cluster.oversubscription=2"};
  auto with = [&](std::string topology) {
    auto sets = fabric;
    sets.push_back("cluster.fabric_topology=" + topology);
    return bench(sets, big);
  };
  CHECK(with("rail_optimized") == Approx(with("fat_tree")).epsilon(1e-9));
}

TEST_CASE("bench: GB200 NVL72, rings over NVLink within a rack, over every NIC between racks", "[bench]") {
  const Catalog& c = ringsim::test::catalog();
  const std::string file = std::string(RINGSIM_TEST_SCENARIOS) + "/nccl_tests_nd96isr_h100_v5.yaml";
  auto busbw = [&](int nodes, std::uint64_t bytes) {
    const std::vector<Override> o = {parse_override("cluster.sku=ND128isr_NDR_GB200_v6"),
                                     parse_override("cluster.nodes=" + std::to_string(nodes))};
    const BenchPrediction p = predict_allreduce_bench(c, load_scenario(file, c, o), {bytes, bytes, 2});
    return p.rows.at(0).algbw() * p.bus_factor;
  };
  // One VM, 4 GPUs: Azure's ring measured 679.61 GB/s at 8 GiB (Azure/AI-benchmarking-guide, NCCL 2.25.1).
  const double one = busbw(1, 8ull << 30);
  CHECK(one == Approx(679.61e9).epsilon(0.10));
  // A whole rack (18 VMs, 72 GPUs): every hop is NVLink, so the bus bandwidth stays near one VM's, less
  // the ring's 142 steps of NCCL's 3.4 us (one VM's 6) against 1 GiB / 72 a step.
  const std::uint64_t g = 1ull << 30;
  const double rack = busbw(18, g);
  CHECK(rack > 0.8 * busbw(1, g));
  // Two racks: the rings cross between racks on InfiniBand, one ring per NIC of a rack up to NCCL's 64
  // channels, each leaving its rack by another VM: far more than one VM's four NDR NICs carry (4 x 48.8
  // GB/s, what the rings had when they all left by the boundary VM), below one rack's NVLink ring.
  const double ndr = 50e9 * c.library("nccl").infiniband.bandwidth_fraction;
  CHECK(
      load_scenario(file, c, {parse_override("cluster.sku=ND128isr_NDR_GB200_v6"), parse_override("cluster.nodes=18")})
          .communication.channels == 4);
  CHECK(
      load_scenario(file, c, {parse_override("cluster.sku=ND128isr_NDR_GB200_v6"), parse_override("cluster.nodes=36")})
          .communication.channels == 64);
  const double racks = busbw(36, g);
  CHECK(racks > 8 * ndr);
  CHECK(racks < rack);
  // NVLS over a whole rack (NCCL's multi-node NVLink treats the clique as one node), at Blackwell's NVLS
  // efficiency (0.74, Hopper's 0.85): each port carries S (1 + 1/n) each way, so the bus bandwidth is
  // 2 (n - 1) / n / (1 + 1/n) = 2 (n - 1) / (n + 1) of the port's share, at most twice the port.
  auto nvls = [&](int nodes) {
    const std::vector<Override> o = {parse_override("cluster.sku=ND128isr_NDR_GB200_v6"),
                                     parse_override("cluster.nodes=" + std::to_string(nodes)),
                                     parse_override("communication.strategy=nvls")};
    const BenchPrediction p = predict_allreduce_bench(c, load_scenario(file, c, o), {8ull << 30, 8ull << 30, 2});
    return p.rows.at(0).algbw() * p.bus_factor;
  };
  const double port = 900e9 * c.library("nccl").intra_node.bandwidth_fraction * 0.74;
  CHECK(nvls(1) == Approx(port * 2 * 3 / 5).epsilon(0.03));
  CHECK(nvls(18) == Approx(port * 2 * 71 / 73).epsilon(0.03));
  CHECK_THROWS_AS(load_scenario(file, c,
                                {parse_override("cluster.sku=ND128isr_NDR_GB200_v6"),
                                 parse_override("cluster.nodes=19"), parse_override("communication.strategy=nvls")}),
                  InputError);
}

namespace {
AlgorithmChoice tuning_choice(int nodes, int ranks, bool nvlink, double bus_bandwidth, double capability = 0) {
  AlgorithmChoice c;
  c.tuning = *ringsim::test::catalog().library("nccl").tuning;
  c.nodes = nodes;
  c.ranks = ranks;
  c.nvlink = nvlink;
  c.gpudirect = true;
  c.bus_bandwidth = bus_bandwidth;
  c.compute_capability = capability;
  return c;
}
}  // namespace

TEST_CASE("bench: a mesh's rings on one node (channels auto): MI300X over every xGMI link each way", "[bench]") {
  const Catalog& c = ringsim::test::catalog();
  const std::string file = std::string(RINGSIM_TEST_SCENARIOS) + "/nccl_tests_nd96isr_h100_v5.yaml";
  const Scenario s = load_scenario(file, c, {parse_override("cluster.sku=ND96isr_MI300X_v5")});
  CHECK(s.communication.channels == 14);  // the layout's rings: seven links, each way
  const BenchPrediction b = predict_allreduce_bench(c, s, {4ull << 30, 4ull << 30, 2});
  const double busbw = b.rows.at(0).algbw() * b.bus_factor;
  // Every link at the library's fraction (0.8 of 64 GB/s) each way: 358 GB/s at most; Azure's health check
  // fails a VM below 314 (RCCL measured 312.9 at 4 GiB).
  CHECK(busbw < 0.8 * 7 * 64e9);
  CHECK(busbw > 314e9);
  // One ring: one link each way per GPU.
  const Scenario one = load_scenario(
      file, c, {parse_override("cluster.sku=ND96isr_MI300X_v5"), parse_override("communication.channels=1")});
  const BenchPrediction b1 = predict_allreduce_bench(c, one, {4ull << 30, 4ull << 30, 2});
  CHECK(b1.rows.at(0).algbw() * b1.bus_factor == Approx(0.8 * 64e9).epsilon(0.01));
  // NCCL's rings on one DGX-1 (P100: four) and on the V100 cube-mesh (a ring per NVLink brick: six); across
  // nodes a ring per rail, as before.
  auto channels = [&](const std::string& sku, int nodes) {
    return load_scenario(
               file, c,
               {parse_override("cluster.sku=" + sku), parse_override("cluster.nodes=" + std::to_string(nodes))})
        .communication.channels;
  };
  CHECK(channels("DGX-1-P100", 1) == 4);
  CHECK(channels("ND40rs_v2", 1) == 6);
  CHECK(channels("DGX-1-V100", 4) == 4);
}

TEST_CASE("strategy auto: ring or tree per message, as NCCL's tuning model picks", "[bench]") {
  const Catalog& c = ringsim::test::catalog();
  // 32 nodes of 8 on NVLink (NCCL 2.18.5's figures), a GPU without LL128: at 8 B the ring's LL 6.6 + 446 x
  // 1.0 + 64 x 2.7 = 625 us against the tree's LL 6.8 + 2 (7 x 0.6 + 5 x 5.0) = 65 us; at 256 MiB the
  // ring's Simple latency, 2,421 us, x 1.9 and 3.7 ms of bytes against the tree's 196 us and 0.92 x 0.9 / 2
  // of 143 GB/s (4.5 ms).
  const AlgorithmChoice big = tuning_choice(32, 256, true, 143e9);
  CHECK(picks_tree(big, 8));
  CHECK(pick_algorithm(big, 8, true, true).protocol->name == "ll");
  CHECK(picks_tree(big, 256ull << 20));
  CHECK(pick_algorithm(big, 256ull << 20, true, true).protocol->name == "simple");
  // 4 nodes: at 8 B the tree's LL, 35 us against the ring's 82 us; at 1 GiB the ring (7.9 ms against 8.3).
  const AlgorithmChoice small = tuning_choice(4, 32, true, 284e9);
  CHECK(picks_tree(small, 8));
  CHECK_FALSE(picks_tree(small, 1ull << 30));
  // One node: the ring's LL, 15.0 us against the tree's 15.2.
  CHECK_FALSE(picks_tree(tuning_choice(1, 8, true, 350e9), 8));
  // The bench runs what it picks.
  const std::string file = std::string(RINGSIM_TEST_SCENARIOS) + "/nccl_tests_nd96isr_h100_v5.yaml";
  auto time = [&](const std::string& nodes, const std::string& strategy, std::uint64_t bytes,
                  const std::string& sku = "ND96isr_H100_v5") {
    const Scenario s = load_scenario(file, c,
                                     {parse_override(nodes), parse_override("communication.strategy=" + strategy),
                                      parse_override("cluster.sku=" + sku)});
    return predict_allreduce_bench(c, s, {bytes, bytes, 2}).rows.at(0).time_s;
  };
  CHECK(time("cluster.nodes=32", "auto", 8) == time("cluster.nodes=32", "tree", 8));
  // (A100: no NVLSTree, which H100 nodes pick at 1 GiB.)
  CHECK(time("cluster.nodes=4", "auto", 1ull << 30, "ND96asr_v4") ==
        time("cluster.nodes=4", "ring", 1ull << 30, "ND96asr_v4"));
  // Only a library with a tuning model picks.
  const std::string mpi = ringsim::test::input_error_of([&] {
    load_scenario(file, c,
                  {parse_override("communication.strategy=auto"), parse_override("communication.library=mpi")});
  });
  CHECK_THAT(mpi, Catch::Contains("library mpi has no tuning"));
}

TEST_CASE("strategy auto: NVLSTree across H100 nodes for large messages, as NCCL 2.18 picks it", "[bench]") {
  const Catalog& c = ringsim::test::catalog();
  const std::string file = std::string(RINGSIM_TEST_SCENARIOS) + "/nccl_tests_nd96isr_h100_v5.yaml";
  auto bench = [&](int nodes, const std::string& sku, std::uint64_t bytes) {
    const Scenario s = load_scenario(
        file, c,
        {parse_override("cluster.nodes=" + std::to_string(nodes)), parse_override("communication.strategy=auto"),
         parse_override("cluster.fabric_topology=rail_optimized"), parse_override("cluster.sku=" + sku)});
    const BenchPrediction b = predict_allreduce_bench(c, s, {bytes, bytes, 2});
    return std::make_pair(b.rows.at(0).algbw() * b.bus_factor, b.rows.at(0).algorithm);
  };
  // Two ND96isr_H100_v5: NVLS in each node, the tree across, each NIC carrying an eighth of the buffer
  // once each way where the ring's carries it nearly twice. A user's 2 x (8 H100, 8 x 400 Gb/s) reached 470
  // GB/s with NCCL 2.26.2's default algorithm (NVIDIA/nccl-tests #309); NVIDIA puts the ring's ceiling at
  // about 396 (8 x 48 GB/s a NIC, nccl-tests #319).
  const auto [two, algorithm] = bench(2, "ND96isr_H100_v5", 4ull << 30);
  CHECK(algorithm == "nvls_tree_allreduce");
  CHECK(two == Approx(470e9).epsilon(0.10));
  CHECK(two > 396e9);
  // The same user's 4 nodes: 365.84 GB/s.
  CHECK(bench(4, "ND96isr_H100_v5", 4ull << 30).first == Approx(365.84e9).epsilon(0.10));
  // Small messages stay on the tree or the ring; A100 nodes (no NVLink SHARP) never take it: their rings
  // reach NVIDIA's 192 GB/s on DGX-A100 with 8 x 200 Gb/s (NVIDIA/nccl #812).
  CHECK(bench(2, "ND96isr_H100_v5", 1 << 20).second != "nvls_tree_allreduce");
  const auto [a100, a100_algorithm] = bench(2, "ND96asr_v4", 4ull << 30);
  CHECK(a100_algorithm == "ring_allreduce");
  CHECK(a100 == Approx(192e9).epsilon(0.10));
  CHECK(nvls_tree_unavailable(c, load_scenario(file, c, {parse_override("cluster.nodes=2")})).empty());
  // Strategy nvls_tree runs it alone, as NCCL_ALGO=NVLSTree: what auto runs where it picks it.
  auto time = [&](const std::string& strategy) {
    const Scenario s =
        load_scenario(file, c,
                      {parse_override("cluster.nodes=2"), parse_override("communication.strategy=" + strategy),
                       parse_override("cluster.fabric_topology=rail_optimized")});
    return predict_allreduce_bench(c, s, {4ull << 30, 4ull << 30, 2}).rows.at(0).time_s;
  };
  CHECK(time("nvls_tree") == time("auto"));
  CHECK_THAT(nvls_tree_unavailable(c, load_scenario(file, c, {})), Catch::Contains("across nodes"));
}

TEST_CASE("step model: flows sharing no edge are solved apart and equal groups once (same result)", "[sim]") {
  // 40 H100 nodes: in every node GPU 0 sends to GPU 1; in node 0 GPU 2 also sends to GPU 1, so node 0's
  // two flows share GPU 1's port and take twice as long. Each node is a component of its own; nodes 1-39
  // are alike.
  const Catalog& c = ringsim::test::catalog();
  const Scenario s = load_scenario(std::string(RINGSIM_TEST_SCENARIOS) + "/nccl_tests_nd96isr_h100_v5.yaml", c,
                                   {parse_override("cluster.nodes=40")});
  const Topology topo = Topology::build(c, cluster_shape(s.cluster));
  CommModel cm(c, s, topo);
  const double bytes = 64e6;
  auto flow = [&](int node, int from, int to) {
    const Path& p = cm.path(cm.endpoint(8 * node + from, collective::Space::Device),
                            cm.endpoint(8 * node + to, collective::Space::Device));
    return Flow{&p, bytes, 0, bytes};
  };
  std::vector<Flow> all, node0 = {flow(0, 0, 1), flow(0, 2, 1)}, node1 = {flow(1, 0, 1)};
  all = node0;
  for (int n = 1; n < 40; ++n) all.push_back(flow(n, 0, 1));
  REQUIRE(all.size() >= 40);
  const double alone = flows_duration(node0, cm), one = flows_duration(node1, cm);
  CHECK(alone == Approx(2 * one).epsilon(0.01));  // the shared port halves each flow's rate
  CHECK(flows_duration(all, cm) == Approx(alone).epsilon(1e-12));
  // More flows than the split's threshold: node 0 last changes nothing.
  std::vector<Flow> twice;
  for (int k = 0; k < 2; ++k)
    for (int n = 1; n < 40; ++n) twice.push_back(flow(n, k == 0 ? 0 : 3, 1 + k * 3));
  twice.insert(twice.end(), node0.begin(), node0.end());
  CHECK(twice.size() >= 64);
  CHECK(flows_duration(twice, cm) == alone);
}

TEST_CASE("protocols: NCCL's LL, LL128 and Simple per message size, and what each costs", "[bench]") {
  // One H100 node (compute capability 9.0, NVLink, ring bus bandwidth 360 GB/s), NCCL 2.18.5's model:
  // LL 15.0 us + bytes at 87.7 GB/s (its limit on one node, under 360 / 4) x 8 / 14; LL128 40.6 us + bytes
  // at 0.92 x 360 x 8 / 14; Simple 56.0 us + bytes at 360 x 8 / 14.
  const AlgorithmChoice h100 = tuning_choice(1, 8, true, 360e9, 9.0);
  auto protocol = [&](std::uint64_t bytes) { return pick_algorithm(h100, bytes, true, false).protocol->name; };
  CHECK(protocol(1024) == "ll");
  CHECK(protocol(1 << 20) == "ll");       // 35.9 us against LL128's 46.1
  CHECK(protocol(4 << 20) == "ll128");    // 62.8 us against Simple's 76.4 and LL's 98.7
  CHECK(protocol(64 << 20) == "simple");  // 382 us against LL128's 395
  // LL128 needs NVLink (and, in 2.18.5, a Volta, Ampere or Hopper GPU).
  CHECK(pick_algorithm(tuning_choice(1, 8, false, 360e9, 9.0), 4 << 20, true, false).protocol->name != "ll128");
  CHECK(pick_algorithm(tuning_choice(1, 8, true, 360e9, 6.0), 4 << 20, true, false).protocol->name != "ll128");
  // What the simulators charge: LL's call, its mean step latency as each step's floor, its share of the
  // bandwidth (87.7 of 360 GB/s).
  const auto ll = protocol_cost(h100, pick_algorithm(h100, 1024, true, false));
  CHECK(ll.name == "ll");
  CHECK(ll.call_s == Approx(6.6e-6));
  CHECK(ll.step_floor_s == Approx(0.6e-6));
  CHECK(ll.bandwidth == Approx(87.7 / 360));
  // Across 4 nodes each intra-node step costs at least NCCL's network post (Simple x 3): (54 x 3.4 + 8 x
  // 14) / 62 us per step.
  AlgorithmChoice four = tuning_choice(4, 32, true, 284e9, 9.0);
  four.protocol = "simple";
  const auto simple = protocol_cost(four, pick_algorithm(four, 1 << 30, true, false));
  CHECK(simple.step_floor_s == Approx((54 * 3.4 + 8 * 14) / 62 * 1e-6));
  CHECK(simple.bandwidth == 1);
}

TEST_CASE("strategy auto weighs NVLS where the switch reduces (as NCCL does)", "[bench]") {
  const Catalog& c = ringsim::test::catalog();
  const std::string file = std::string(RINGSIM_TEST_SCENARIOS) + "/nccl_tests_nd96isr_h100_v5.yaml";
  auto rows = [&](std::vector<std::string> sets) {
    std::vector<Override> o = {parse_override("communication.strategy=auto")};
    for (const auto& x : sets) o.push_back(parse_override(x));
    return predict_allreduce_bench(c, load_scenario(file, c, o), {64 << 10, 1ull << 30, 16384}).rows;
  };
  // One H100 node: the ring's LL at 64 KiB (NVLS's 23 us call is more than LL's whole allreduce); NVLS at
  // 1 GiB, the time strategy nvls takes.
  const auto h100 = rows({});
  REQUIRE(h100.size() == 2);
  CHECK(h100[0].algorithm == "ring_allreduce");
  CHECK(h100[0].protocol == "ll");
  CHECK(h100[1].algorithm == "nvls_allreduce");
  const Scenario nvls = load_scenario(file, c, {parse_override("communication.strategy=nvls")});
  CHECK(h100[1].time_s == predict_allreduce_bench(c, nvls, {1ull << 30, 1ull << 30, 2}).rows.at(0).time_s);
  // No NVLS where the switch does not reduce (A100), across nodes, or with another protocol forced.
  CHECK(rows({"cluster.sku=ND96asr_v4"})[1].algorithm == "ring_allreduce");
  CHECK(rows({"cluster.nodes=2"})[1].algorithm != "nvls_allreduce");
  CHECK(rows({"communication.protocol=ll128"})[1].algorithm == "ring_allreduce");
  // ringsim-real's transports have no multicast: its layout leaves NVLS out.
  const Scenario s = load_scenario(file, c, {parse_override("communication.strategy=auto")});
  const Topology topo = Topology::build(c, cluster_shape(s.cluster));
  CommModel cm(c, s, topo);
  const auto real = buffer_collective_layout(s, cm.data_space(), cm, false);
  CHECK(make_buffer_collective(s, real, 1ull << 30, 4)->algorithm() == "ring_allreduce");
  // An NVLS collective holds NVLS's 16 SMs of the H100's 132, a ring the library's 2.
  const auto layout = buffer_collective_layout(s, cm.data_space(), cm);
  CHECK(cm.compute_interference(*make_buffer_collective(s, layout, 1ull << 30, 4), 1.0).sms == Approx(16.0 / 132));
  CHECK(cm.compute_interference(*make_buffer_collective(s, layout, 64 << 10, 4), 1.0).sms == Approx(2.0 / 132));
}

TEST_CASE("protocols: the bench charges the protocol it picks, and communication.protocol forces one", "[bench]") {
  const Catalog& c = ringsim::test::catalog();
  const std::string file = std::string(RINGSIM_TEST_SCENARIOS) + "/nccl_tests_nd96isr_h100_v5.yaml";
  auto row = [&](const std::string& protocol, std::uint64_t bytes) {
    const Scenario s = load_scenario(file, c, {parse_override("communication.protocol=" + protocol)});
    return predict_allreduce_bench(c, s, {bytes, bytes, 2}).rows.at(0);
  };
  // 1 KiB on one H100 node: LL, its 6.6 us call and 14 steps of at least 0.6 us (the NVSwitch route's own
  // latency, 0.7 us, is more); Simple forced: 8.4 us and 14 steps of 3.4 us.
  const BenchRow ll = row("auto", 1024), simple = row("simple", 1024);
  CHECK(ll.protocol == "ll");
  CHECK(ll.algorithm == "ring_allreduce");
  CHECK(ll.time_s == Approx(6.6e-6 + 14 * 0.7e-6).epsilon(0.02));
  CHECK(simple.protocol == "simple");
  CHECK(simple.time_s == Approx(8.4e-6 + 14 * 3.4e-6).epsilon(0.02));
  // Large messages: Simple either way.
  CHECK(row("auto", 1ull << 30).time_s == row("simple", 1ull << 30).time_s);
  // Bad input: a protocol where no tuning model applies, or an unknown one.
  auto error_of = [&](std::vector<std::string> sets) {
    return ringsim::test::input_error_of([&] {
      std::vector<Override> o;
      for (const auto& x : sets) o.push_back(parse_override(x));
      load_scenario(file, c, o);
    });
  };
  CHECK_THAT(error_of({"communication.protocol=ll", "communication.library=mpi"}),
             Catch::Contains("library mpi has no protocols"));
  CHECK_THAT(error_of({"communication.protocol=ll", "communication.strategy=nvls"}),
             Catch::Contains("applies only to strategy: ring, tree or auto"));
  CHECK_THAT(error_of({"communication.protocol=ll12"}), Catch::Contains("ll128"));
}

TEST_CASE("strategy auto: both fidelities run the ring and the tree each buffer picks, alike", "[bench]") {
  // 32 nodes of one V100: NCCL's model gives the tree (2 x 5 levels against the ring's 62 steps, all of
  // them across nodes) to small buffers and the ring to large ones (16 MiB: its 2 S (n - 1) / n at the
  // ring's bus bandwidth against the tree's 2 S at 0.92 x 0.7 of it).
  const Catalog& c = ringsim::test::catalog();
  const Scenario s = load_scenario(
      std::string(RINGSIM_TEST_SCENARIOS) + "/resnet50_imagenet_8x_nc24rs_v3.yaml", c,
      {parse_override("communication.strategy=auto"), parse_override("cluster.nodes=32"),
       parse_override("cluster.gpus_per_node=1"), parse_override("communication.fusion_threshold=16MiB")});
  auto run = [&](Fidelity f) {
    return run_in_child([&] {
      const Prediction p = predict(c, s, f);
      std::set<std::string> algorithms;
      for (const auto& r : p.collectives) algorithms.insert(r.algorithm);
      std::ostringstream o;
      o.precision(17);
      o << p.iteration_time_s;
      for (const auto& a : algorithms) o << " " << a;
      return o.str();
    });
  };
  const std::string flow = run(Fidelity::Flow), step = run(Fidelity::Step);
  CHECK_THAT(flow, Catch::EndsWith(" ring_allreduce tree_allreduce"));
  CHECK_THAT(step, Catch::EndsWith(" ring_allreduce tree_allreduce"));
  CHECK(std::stod(flow) == Approx(std::stod(step)).epsilon(0.02));
}

namespace {
// A collective as it is, but knowing no node classes: the step model evaluates every member.
class Unclassed final : public collective::Collective {
 public:
  explicit Unclassed(const Collective& c) : Collective(c.bytes()), c_(c) { protocol = c.protocol; }
  std::string_view algorithm() const override { return c_.algorithm(); }
  int members() const override { return c_.members(); }
  int steps() const override { return c_.steps(); }
  void rank_step(int m, int s, collective::RankStep& out) const override { c_.rank_step(m, s, out); }
  std::vector<collective::StepRun> runs() const override { return c_.runs(); }
  collective::Space home_space(int m) const override { return c_.home_space(m); }

 private:
  const Collective& c_;
};

// The step model on `c` by node class and member by member: the same time, step costs, link loads and memory
// held. Returns whether the first took any step by class.
bool require_classes_change_nothing(const collective::Collective& c, CommModel& cm) {
  std::vector<double> by_class(cm.edge_count(), 0), whole(cm.edge_count(), 0);
  std::vector<RunCost> class_runs, whole_runs;
  const double t = collective_duration(c, cm, &by_class, &class_runs);
  const Unclassed plain(c);
  CHECK(t == collective_duration(plain, cm, &whole, &whole_runs));
  REQUIRE(class_runs.size() == whole_runs.size());
  for (std::size_t r = 0; r < class_runs.size(); ++r) {
    CHECK(class_runs[r].step_s == whole_runs[r].step_s);
    CHECK(class_runs[r].transfers == whole_runs[r].transfers);
    CHECK(class_runs[r].copy_s == whole_runs[r].copy_s);
  }
  for (int e = 0; e < cm.edge_count(); ++e) CHECK(by_class[e] == Approx(whole[e]).epsilon(1e-12));
  CHECK(cm.compute_interference(c, t).memory == cm.compute_interference(plain, t).memory);
  CHECK(std::none_of(whole_runs.begin(), whole_runs.end(), [](const RunCost& r) { return r.by_class; }));
  return std::any_of(class_runs.begin(), class_runs.end(), [](const RunCost& r) { return r.by_class; });
}
}  // namespace

TEST_CASE("step model: nodes by class give what every member gives", "[sim]") {
  const Catalog& c = ringsim::test::catalog();
  const std::string file = std::string(RINGSIM_TEST_SCENARIOS) + "/nccl_tests_nd96isr_h100_v5.yaml";
  auto check = [&](const std::vector<std::string>& sets, std::uint64_t bytes, bool classed) {
    CAPTURE(sets, bytes);
    std::vector<Override> o;
    for (const auto& set : sets) o.push_back(parse_override(set));
    const Scenario s = load_scenario(file, c, o);
    const Topology topo = Topology::build(c, cluster_shape(s.cluster));
    CommModel cm(c, s, topo);
    const auto coll = make_buffer_collective(s, buffer_collective_layout(s, cm.data_space(), cm), bytes, 4);
    CHECK(require_classes_change_nothing(*coll, cm) == classed);
  };
  // The tree on 16 H100 VMs (8 classes), rail-optimised and not, small (LL) and large; NVLSTree.
  for (const std::string fabric : {"fat_tree", "rail_optimized"})
    for (std::uint64_t bytes : {64ull << 10, 256ull << 20})
      check({"cluster.nodes=16", "communication.strategy=tree", "cluster.fabric_topology=" + fabric}, bytes, true);
  check({"cluster.nodes=16", "communication.strategy=nvls_tree", "cluster.fabric_topology=rail_optimized"},
        256ull << 20, true);
  // The tree through host memory (Intel MPI's on NC24rs_v3: staged copies inside each node).
  check({"cluster.sku=NC24rs_v3", "cluster.nodes=8", "communication.library=mpi", "communication.strategy=tree"},
        64ull << 20, true);
  // GB200 racks: a VM's GPUs reach each other through the rack's switches, outside the VM, so every step
  // falls back to every member.
  check({"cluster.sku=ND128isr_NDR_GB200_v6", "cluster.nodes=36", "communication.strategy=tree"}, 64ull << 20, false);
}
