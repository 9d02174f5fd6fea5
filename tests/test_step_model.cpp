// The step model's shortcuts: flows sharing no edge solved apart, equal groups and nodes of a class evaluated
// once, with the result every member would give.
#include <algorithm>

#include "collective/collective.h"
#include "execute/analytic/step_model.h"
#include "execute/buffer_collective.h"
#include "execute/comm_model.h"
#include "graph/topology_graph.h"
#include "load/scenario.h"
#include "test_support.h"

using namespace ringsim;

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
