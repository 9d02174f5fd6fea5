#include "graph/exporters.h"
#include "test_support.h"

using namespace ringsim;

TEST_CASE("exporters: Graphviz has one line per physical link and a box per node", "[exporters]") {
  const Topology t = Topology::build(test::catalog(), ClusterShape{"ND40rs_v2", 2, FabricKind::InfiniBand});
  const std::string dot = to_graphviz(t);
  CHECK_THAT(dot, Catch::StartsWith("graph ringsim {"));
  CHECK_THAT(dot, Catch::Contains("subgraph cluster_n1"));
  std::size_t lines = 0;
  for (std::size_t p = dot.find(" -- "); p != std::string::npos; p = dot.find(" -- ", p + 1)) ++lines;
  CHECK(lines == boost::num_edges(t.graph()) / 2);
  CHECK_THAT(dot, Catch::Contains("\"n0.gpu0\" -- \"n0.gpu3\""));  // an NVLink pair
}

TEST_CASE("exporters: the SimGrid platform is deterministic and declares every GPU", "[exporters]") {
  const ClusterShape shape{"NC24rs_v3", 3, FabricKind::InfiniBand, FabricTopology::FatTree, 2, 1};
  const Topology t = Topology::build(test::catalog(), shape);
  const std::string a = to_simgrid_platform_xml(t, test::catalog());
  const std::string b = to_simgrid_platform_xml(Topology::build(test::catalog(), shape), test::catalog());
  CHECK(a == b);
  for (int n = 0; n < 3; ++n)
    for (int g = 0; g < 4; ++g)
      CHECK_THAT(a, Catch::Contains("<host id=\"n" + std::to_string(n) + ".gpu" + std::to_string(g) +
                                    "\" speed=\"14000000000000f\"/>"));
  CHECK_THAT(a, Catch::Contains("<zoneRoute src=\"n0\" dst=\"n2\" gw_src=\"n0.ib0\" gw_dst=\"n2.ib0\""));
}
