// The exported platform, loaded by SimGrid itself: every GPU pair's route in SimGrid has the latency and
// bottleneck bandwidth that ringsim's Router computes on the graph.
#include <filesystem>
#include <simgrid/s4u.hpp>

#include "graph/exporters.h"
#include "graph/routing.h"
#include "report/output_file.h"
#include "test_support.h"

using namespace ringsim;
namespace sg4 = simgrid::s4u;

TEST_CASE("platform XML loads in SimGrid with the graph's routes", "[exporters][simgrid]") {
  // A fat tree (2 leaves x 2 spines) of ND40rs_v2: NVLink, PCIe switches, UPI and EDR all appear.
  const ClusterShape shape{"ND40rs_v2", 3, FabricKind::InfiniBand, FabricTopology::FatTree, 2, 1};
  const Topology t = Topology::build(test::catalog(), shape);
  const auto file = std::filesystem::temp_directory_path() / "ringsim_test_platform.xml";
  write_file_atomically(file.string(), to_simgrid_platform_xml(t, test::catalog()));

  int argc = 2;
  char arg0[] = "ringsim_platform_tests", arg1[] = "--log=root.thres:critical";
  char* argv[] = {arg0, arg1, nullptr};
  sg4::Engine engine(&argc, argv);
  engine.load_platform(file.string());
  REQUIRE(engine.get_host_count() == 24);

  const Router router(t);
  int pairs = 0;
  for (VertexId a : t.gpus())
    for (VertexId b : t.gpus()) {
      if (a == b) continue;
      const Route r = router.route(a, b);
      std::vector<sg4::Link*> links;
      double latency = 0;
      engine.host_by_name(t.device(a).name)->route_to(engine.host_by_name(t.device(b).name), links, &latency);
      INFO(t.device(a).name << " -> " << t.device(b).name);
      REQUIRE(links.size() == r.edges.size());
      double bottleneck = links.front()->get_bandwidth();
      for (auto* l : links) bottleneck = std::min(bottleneck, l->get_bandwidth());
      CHECK(latency == Approx(r.latency));
      CHECK(bottleneck == Approx(r.bottleneck_bandwidth));
      ++pairs;
    }
  CHECK(pairs == 24 * 23);
  std::filesystem::remove(file);
}
