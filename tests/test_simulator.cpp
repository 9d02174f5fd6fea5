// The simulator against closed forms, in both fidelities (each SimGrid run in a forked child), and the
// properties of `ringsim predict`: fidelities agree, outputs are deterministic, bottlenecks are where
// the topology says.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "collective/collective.h"
#include "execute/simgrid/training_sim.h"
#include "graph/routing.h"
#include "graph/topology_graph.h"
#include "load/scenario.h"
#include "sim_test_support.h"
#include "test_support.h"

using namespace ringsim;
using collective::Space;

namespace {

using ringsim::test::gpu_memory_bandwidth;
using ringsim::test::one_gpu_per_node;
using ringsim::test::OneTransfer;
using ringsim::test::predict_json;
using ringsim::test::scenario;
using ringsim::test::slurp;
using ringsim::test::timed_in_child;

double timed(const Scenario& s, const collective::Collective& c, Fidelity f,
             std::map<std::string, double>* edge_bytes = nullptr) {
  return timed_in_child([&] { return simulate_collective(test::catalog(), s, c, f); }, edge_bytes);
}

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
    if (load_scenario(f.string(), test::catalog()).cluster.total_gpus() > 64) continue;  // before its minutes
    const std::string step_cmd = std::string(RINGSIM_TEST_BINARY) + " --catalog " + RINGSIM_TEST_CATALOG + " predict " +
                                 f.string() + " --fidelity step > /dev/null 2>&1";
    if (WEXITSTATUS(std::system(step_cmd.c_str())) != 0) {
      const auto flow = predict_json(f.string(), "--fidelity flow");
      CHECK(flow["scenario"]["communication"]["concurrent_collectives"] != 1);
      continue;
    }
    const auto step = predict_json(f.string(), "--fidelity step");
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
