#include "graph/routing.h"
#include "load/uncertain.h"
#include "test_support.h"

using namespace ringsim;

namespace {

Topology build(const std::string& sku, int nodes, FabricKind fabric = FabricKind::InfiniBand,
               FabricTopology shape = FabricTopology::Star, int per_leaf = 0, double oversub = 1) {
  return Topology::build(test::catalog(), ClusterShape{sku, nodes, fabric, shape, per_leaf, oversub});
}

std::vector<std::string> path_names(const Topology& t, const Route& r) {
  std::vector<std::string> names{t.device(r.src).name};
  for (EdgeId e : r.edges) names.push_back(t.device(boost::target(e, t.graph())).name);
  return names;
}

}  // namespace

TEST_CASE("routing: two V100s on one NC24rs_v3 meet at the expected PCIe level", "[routing]") {
  const Topology t = build("NC24rs_v3", 1);
  const Router router(t);
  const Route same_socket = router.route(t.gpu(0, 0), t.gpu(0, 1));
  CHECK(same_socket.kind == ConnectionKind::Phb);
  CHECK(path_names(t, same_socket) == std::vector<std::string>{"n0.gpu0", "n0.cpu0", "n0.gpu1"});
  CHECK(same_socket.bottleneck_bandwidth == Approx(15.75e9));
  CHECK(same_socket.latency == Approx(1.0e-6));

  const Route cross_socket = router.route(t.gpu(0, 0), t.gpu(0, 3));
  CHECK(cross_socket.kind == ConnectionKind::Sys);
  CHECK(path_names(t, cross_socket) == std::vector<std::string>{"n0.gpu0", "n0.cpu0", "n0.cpu1", "n0.gpu3"});
  CHECK(cross_socket.latency == Approx(1.1e-6));
  CHECK(boost::num_vertices(t.graph()) == 10);  // 2 cpu, 2 mem, 4 gpu, eth0, ib0; no switch on one node
}

TEST_CASE("routing: K80 pairs share the board's PCIe switch", "[routing]") {
  const Topology t = build("NC24", 1, FabricKind::Ethernet);
  const Router router(t);
  const Route board = router.route(t.gpu(0, 0), t.gpu(0, 1));
  CHECK(board.kind == ConnectionKind::Pix);
  CHECK(path_names(t, board) == std::vector<std::string>{"n0.gpu0", "n0.k80sw0", "n0.gpu1"});
  const Route across = router.route(t.gpu(0, 1), t.gpu(0, 2));
  CHECK(across.kind == ConnectionKind::Sys);
  CHECK(path_names(t, across) ==
        std::vector<std::string>{"n0.gpu1", "n0.k80sw0", "n0.cpu0", "n0.cpu1", "n0.k80sw1", "n0.gpu2"});
}

TEST_CASE("routing: GPUs on two nodes cross the InfiniBand NICs", "[routing]") {
  const Topology t = build("NC24rs_v3", 2);
  const Router router(t);
  const Route r = router.route(t.gpu(0, 2), t.gpu(1, 1));
  CHECK(r.kind == ConnectionKind::Net);
  CHECK(path_names(t, r) ==
        std::vector<std::string>{"n0.gpu2", "n0.cpu1", "n0.cpu0", "n0.ib0", "switch0", "n1.ib0", "n1.cpu0", "n1.gpu1"});
  const Catalog& c = test::catalog();
  CHECK(r.bottleneck_bandwidth == Approx(c.link("ib_fdr").bandwidth));
  // gpu2-cpu1, cpu0-ib0, ib0-cpu0, cpu0-gpu1: four PCIe hops; one QPI hop; two IB hops and one switch.
  const double expected_latency = 4 * c.link("pcie3_x16").latency + c.link("qpi_2x9.6GTs").latency +
                                  2 * c.link("ib_fdr").latency + c.fabric(FabricKind::InfiniBand).switch_latency;
  CHECK(r.latency == Approx(expected_latency));
}

TEST_CASE("routing: Ethernet fabric uses the Ethernet NIC at the size's speed", "[routing]") {
  const Topology t = build("NC24s_v3", 2, FabricKind::Ethernet);
  const Router router(t);
  const Route r = router.route(t.gpu(0, 0), t.gpu(1, 0));
  CHECK(r.kind == ConnectionKind::Net);
  CHECK(path_names(t, r)[2] == "n0.eth0");
  CHECK(r.bottleneck_bandwidth == Approx(test::catalog().sku("NC24s_v3").ethernet_bandwidth));
  CHECK_THROWS_AS(build("NC24s_v3", 2, FabricKind::InfiniBand), InputError);
}

TEST_CASE("routing: NVLink pairs on ND40rs_v2, PCIe where no NVLink exists", "[routing]") {
  const Topology t = build("ND40rs_v2", 1);
  const Router router(t);
  const Route nv2 = router.route(t.gpu(0, 0), t.gpu(0, 3));
  CHECK(nv2.label() == "NV2");
  CHECK(nv2.bottleneck_bandwidth == Approx(50e9));
  CHECK(router.route(t.gpu(0, 0), t.gpu(0, 1)).label() == "NV1");
  const Route sys = router.route(t.gpu(0, 0), t.gpu(0, 5));
  CHECK(sys.kind == ConnectionKind::Sys);  // never routed through another GPU
  for (EdgeId e : sys.edges) {
    const VertexId via = boost::target(e, t.graph());
    CHECK((via == sys.dst || t.device(via).kind != DeviceKind::Gpu));
  }
}

TEST_CASE("routing: GPU to host memory and host to host", "[routing]") {
  const Topology t = build("NC24rs_v3", 2);
  const Router router(t);
  const Route to_remote_socket_memory = router.route(t.gpu(0, 3), t.host_memory(0, 0));
  CHECK(to_remote_socket_memory.kind == ConnectionKind::Sys);
  CHECK(path_names(t, to_remote_socket_memory) == std::vector<std::string>{"n0.gpu3", "n0.cpu1", "n0.cpu0", "n0.mem0"});
  CHECK(to_remote_socket_memory.bottleneck_bandwidth == Approx(15.75e9));
  const Route host_to_host = router.route(t.host_memory(0, 0), t.host_memory(1, 0));
  CHECK(host_to_host.kind == ConnectionKind::Net);
  CHECK(path_names(t, host_to_host).size() == 7);  // mem0 cpu0 ib0 switch0 ib0 cpu0 mem0
}

TEST_CASE("routing: two-level fat tree with D-mod-k spine choice and oversubscription", "[routing]") {
  const Topology t = build("NC24rs_v3", 40, FabricKind::InfiniBand, FabricTopology::FatTree, 18, 2);
  CHECK(t.leaves() == 3);
  CHECK(t.spines() == 9);
  const Router router(t);
  const Route same_leaf = router.route(t.gpu(0, 0), t.gpu(17, 0));
  CHECK(path_names(t, same_leaf) ==
        std::vector<std::string>{"n0.gpu0", "n0.cpu0", "n0.ib0", "leaf0", "n17.ib0", "n17.cpu0", "n17.gpu0"});
  const Route cross = router.route(t.gpu(0, 0), t.gpu(20, 0));  // node 20 on leaf1, spine 20 mod 9 = 2
  const auto names = path_names(t, cross);
  CHECK(names == std::vector<std::string>{"n0.gpu0", "n0.cpu0", "n0.ib0", "leaf0", "spine2", "leaf1", "n20.ib0",
                                          "n20.cpu0", "n20.gpu0"});
  // 18 nodes x FDR down, 9 uplinks carrying half of it: each uplink = 18 * B / 2 / 9 = B.
  const double fdr = test::catalog().link("ib_fdr").bandwidth;
  for (EdgeId e : cross.edges)
    if (t.link(e).link_class == "fabric:ib_fdr") CHECK(t.link(e).bandwidth == Approx(fdr));
  const Topology t4 = build("NC24rs_v3", 40, FabricKind::InfiniBand, FabricTopology::FatTree, 18, 4);
  CHECK(t4.spines() == 5);  // ceil(18 / 4)
}

TEST_CASE("routing: a rail-optimised fat tree puts NIC i of every node of a group on leaf i", "[routing]") {
  // 5 x ND96isr_H100_v5 (8 NDR NICs each), 2 nodes a group: 3 groups of 8 leaves, 2 spines.
  const Topology t = build("ND96isr_H100_v5", 5, FabricKind::InfiniBand, FabricTopology::RailOptimized, 2, 1);
  CHECK(t.leaves() == 24);
  CHECK(t.spines() == 2);
  const Router router(t);
  auto hops = [&](int node_a, int nic_a, int node_b, int nic_b) {
    const Route r = router.route(t.fabric_nics(node_a)[nic_a], t.fabric_nics(node_b)[nic_b]);
    return path_names(t, r);
  };
  const auto rail = hops(0, 3, 1, 3);  // one rail, one group: its leaf alone
  REQUIRE(rail.size() == 3);
  CHECK(rail[1] == "leaf3");
  const auto across = hops(0, 3, 1, 4);  // another rail: up to spine 1 mod 2 and down to leaf 4
  REQUIRE(across.size() == 5);
  CHECK(across[1] == "leaf3");
  CHECK(across[2] == "spine1");
  CHECK(across[3] == "leaf4");
  const auto group = hops(0, 3, 4, 3);  // the same rail in group 2: leaf 2 x 8 + 3
  REQUIRE(group.size() == 5);
  CHECK(group[3] == "leaf19");
  // A leaf's uplinks carry its downlinks: 2 nodes x NDR over 2 spines, an NDR link each.
  const double ndr = test::catalog().link(*test::catalog().sku("ND96isr_H100_v5").infiniband_link).bandwidth;
  const Route r = router.route(t.fabric_nics(0)[3], t.fabric_nics(1)[4]);
  for (EdgeId e : r.edges) CHECK(t.link(e).bandwidth == Approx(ndr));
}

TEST_CASE("routing: every link is two directed edges with one physical id", "[routing]") {
  const Topology t = build("ND40rs_v2", 3);
  const auto& g = t.graph();
  std::map<int, int> count;
  for (auto e : boost::make_iterator_range(boost::edges(g))) {
    ++count[g[e].physical_id];
    auto [back, found] = boost::edge(boost::target(e, g), boost::source(e, g), g);
    REQUIRE(found);
    CHECK(g[back].physical_id == g[e].physical_id);
    CHECK(g[back].bandwidth == g[e].bandwidth);
  }
  for (const auto& [id, n] : count) CHECK(n == 2);
  CHECK(t.gpus().size() == 24);
}

TEST_CASE("routing: today's NVSwitch sizes, NV18 and NV12 through the switch, one NIC per GPU", "[routing]") {
  const Catalog& c = test::catalog();
  for (const auto& [sku, bricks, port] : {std::tuple{"ND96isr_H100_v5", 18, 450e9},
                                          {"ND96isr_H200_v5", 18, 450e9},
                                          {"ND96asr_v4", 12, 300e9},
                                          {"ND96amsr_A100_v4", 12, 300e9}}) {
    INFO(sku);
    const Topology t = build(sku, 2);
    const Router router(t);
    for (int a = 0; a < 8; ++a)
      for (int b = 0; b < 8; ++b) {
        if (a == b) continue;
        const Route r = router.route(t.gpu(0, a), t.gpu(0, b));
        CHECK(r.label() == "NV" + std::to_string(bricks));
        CHECK(path_names(t, r) ==
              std::vector<std::string>{t.device(t.gpu(0, a)).name, "n0.nvswitch", t.device(t.gpu(0, b)).name});
        CHECK(r.bottleneck_bandwidth == Approx(port));
      }
    // NCCL's rails: GPU i leaves by NIC i, the one on its PCIe switch (two per switch on ND A100 v4).
    CHECK(c.layout(c.sku(sku).layout).gpu_rail == std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7});
    const Route out = router.route(t.gpu(0, 5), t.fabric_nics(0)[5]);
    CHECK(out.kind == ConnectionKind::Pix);
    CHECK(t.fabric_nics(0).size() == 8);
  }
  // The MI300X's Infinity Fabric mesh: one direct link per pair, no switch.
  const Topology mi = build("ND96isr_MI300X_v5", 1);
  const Route x = Router(mi).route(mi.gpu(0, 2), mi.gpu(0, 7));
  CHECK(x.edges.size() == 1);
  CHECK(x.bottleneck_bandwidth == Approx(64e9));
  // NC A100 v4: four PCIe GPUs, no NVLink, no InfiniBand; NC H100 v5: two NVL cards on a 12-link bridge.
  const Topology nc = build("NC96ads_A100_v4", 1, FabricKind::Ethernet);
  CHECK(Router(nc).route(nc.gpu(0, 0), nc.gpu(0, 2)).kind == ConnectionKind::Sys);
  CHECK_THROWS_AS(build("NC96ads_A100_v4", 2), InputError);
  const Topology nvl = build("NC80adis_H100_v5", 1, FabricKind::Ethernet);
  CHECK(Router(nvl).route(nvl.gpu(0, 0), nvl.gpu(0, 1)).label() == "NV12");
}

TEST_CASE("routing: a GB200 NVL72 rack of 18 VMs is one NVLink domain, InfiniBand between racks", "[routing]") {
  // 20 x ND128isr_NDR_GB200_v6: VMs 0-17 share rack 0's switch, 18-19 rack 1's.
  const Topology t = build("ND128isr_NDR_GB200_v6", 20);
  CHECK(t.nvlink_domain_nodes() == 18);
  CHECK(t.device(t.nvswitch(17)).name == "nvl0.nvswitch");
  CHECK(t.device(t.nvswitch(18)).name == "nvl1.nvswitch");
  const Router router(t);
  const Route in_vm = router.route(t.gpu(19, 0), t.gpu(19, 3));
  CHECK(path_names(t, in_vm) == std::vector<std::string>{"n19.gpu0", "nvl1.nvswitch", "n19.gpu3"});
  const Route in_rack = router.route(t.gpu(0, 1), t.gpu(17, 2));
  CHECK(path_names(t, in_rack) == std::vector<std::string>{"n0.gpu1", "nvl0.nvswitch", "n17.gpu2"});
  CHECK(in_rack.label() == "NV18");
  CHECK(in_rack.bottleneck_bandwidth == Approx(900e9));  // 18 NVLink 5 at 50 GB/s each way
  CHECK(router.route(t.gpu(17, 0), t.gpu(18, 0)).kind == ConnectionKind::Net);
  CHECK(t.fabric_nics(0).size() == 4);
  // Sizes whose switch serves one node keep it in the node.
  const Topology h = build("ND96isr_H100_v5", 2);
  CHECK(t.same_nvlink_domain(0, 17));
  CHECK_FALSE(t.same_nvlink_domain(17, 18));
  CHECK_FALSE(h.same_nvlink_domain(0, 1));
  CHECK(h.device(h.nvswitch(1)).name == "n1.nvswitch");
}

TEST_CASE("routing: shared routes are the paths first found, with each graph's own costs", "[routing]") {
  const Catalog& c = test::catalog();
  Catalog slow = c;  // Ethernet at another speed: the same shape, other figures
  for (const auto& p : c.uncertain())
    if (p.figure == "skus.N*.ethernet_bandwidth") slow.apply(uncertain_overlay(c, p, 0.1));
  REQUIRE(slow.sku("NC24s_v3").ethernet_bandwidth != c.sku("NC24s_v3").ethernet_bandwidth);
  const ClusterShape shape{"NC24s_v3", 4, FabricKind::Ethernet, FabricTopology::FatTree, 2, 1};
  const Topology own = Topology::build(c, shape), other = Topology::build(slow, shape);
  auto same = [](const Route& a, const Route& b) {
    return a.edges == b.edges && a.latency == b.latency && a.bottleneck_bandwidth == b.bottleneck_bandwidth &&
           a.kind == b.kind && a.nvlinks == b.nvlinks && a.src == b.src && a.dst == b.dst;
  };
  const Router alone(own), alone_other(other);
  const SharedRoutes shared;
  const Router first(own), second(own), sample(other);
  for (VertexId a : own.gpus())
    for (VertexId b : own.gpus()) {
      const Route r = alone.route(a, b);
      CHECK(same(first.route(a, b), r));
      CHECK(same(second.route(a, b), r));  // from the store
      const Route s = sample.route(a, b), s_alone = alone_other.route(a, b);
      CHECK(path_names(other, s) == path_names(own, r));
      CHECK(same(s, s_alone));  // its own graph's edges and costs
    }
  // A topology of another shape routes on its own.
  const Topology bigger =
      Topology::build(c, ClusterShape{"NC24s_v3", 6, FabricKind::Ethernet, FabricTopology::FatTree, 2, 1});
  const Route far = Router(bigger).route(bigger.gpu(0, 0), bigger.gpu(5, 0));
  CHECK(path_names(bigger, far).back() == "n5.gpu0");
}
