// Effects the model adds to the transfers: host copies on the data path, a collective's kernels beside the
// compute, stragglers, the reference GPU, co-running GPUs.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "collective/collective.h"
#include "execute/comm_model.h"
#include "execute/simgrid/training_sim.h"
#include "graph/topology_graph.h"
#include "load/overlay.h"
#include "load/scenario.h"
#include "load/uncertain.h"
#include "schedule/compute_model.h"
#include "sim_test_support.h"
#include "test_support.h"

using namespace ringsim;
using collective::Space;

namespace {

using ringsim::test::gpu_memory_bandwidth;
using ringsim::test::one_gpu_per_node;
using ringsim::test::predict_json;
using ringsim::test::scenario;
using ringsim::test::timed_with;

}  // namespace

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
