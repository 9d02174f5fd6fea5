// Where the simulated rings run: along NVLink where it exists, out of each GPU's own NIC, one channel per NIC or
// link (NCCL's rings), through host memory between Xeon sockets (NCCL 2), and the band where that is uncertain.
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <set>
#include <sstream>

#include "collective/collective.h"
#include "execute/analytic/collective_bench.h"
#include "execute/comm_model.h"
#include "execute/simgrid/training_sim.h"
#include "graph/ring_search.h"
#include "graph/topology_graph.h"
#include "load/scenario.h"
#include "load/uncertain.h"
#include "sim_test_support.h"
#include "test_support.h"

using namespace ringsim;
using collective::Space;

namespace {

using ringsim::test::scenario;
using ringsim::test::slurp;
using ringsim::test::timed_in_child;

}  // namespace

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
    const BenchPrediction b = predict_bench(c, s, {1ull << 30, 1ull << 30, 2});
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
