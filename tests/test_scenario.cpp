#include <filesystem>

#include "execute/analytic/collective_bench.h"
#include "load/scenario.h"
#include "test_support.h"

using namespace ringsim;

TEST_CASE("scenario: every bundled scenario loads", "[scenario]") {
  int n = 0;
  for (const auto& e : std::filesystem::directory_iterator(RINGSIM_TEST_SCENARIOS)) {
    if (e.path().extension() != ".yaml") continue;
    INFO(e.path());
    const Scenario s = load_scenario(e.path().string(), test::catalog());
    CHECK(s.cluster.total_gpus() >= 1);
    ++n;
  }
  CHECK(n >= 4);
}

TEST_CASE("scenario: the seed set-ups are expressible", "[scenario]") {
  const std::string dir = RINGSIM_TEST_SCENARIOS;
  const Scenario lol = load_scenario(dir + "/landolakes_cifar10_2x_nc24rs_v3.yaml", test::catalog());
  CHECK(lol.cluster.total_gpus() == 8);
  CHECK(lol.cluster.fabric == FabricKind::InfiniBand);
  CHECK(lol.communication.library == CommLibrary::Mpi);  // Horovod + Intel MPI, host-staged
  CHECK(lol.model.batch_per_gpu == 64);
  CHECK(lol.training.epochs == 5);
  CHECK(lol.communication.fusion_threshold_bytes == 64.0 * 1048576);
  const Scenario tcp = load_scenario(dir + "/resnet50_imagenet_nccl_tcp_4x_nc24s_v3.yaml", test::catalog());
  CHECK(tcp.cluster.fabric == FabricKind::Ethernet);
  CHECK(tcp.communication.library == CommLibrary::Nccl);
  const Scenario monk = load_scenario(dir + "/sharcnet_alexnet_caffe_monk.yaml", test::catalog());
  CHECK(monk.cluster.total_gpus() == 1);
  CHECK(*monk.model.images_per_sec_single_gpu == Approx(193.2));
}

TEST_CASE("scenario: defaults are documented values, filled in visibly", "[scenario]") {
  const Scenario s = load_scenario_text(
      "cluster: {sku: Standard_ND40rs_v2, nodes: 2}\nmodel: {name: vgg16, batch_per_gpu: 32}\n"
      "training: {epochs: 3}\n",
      "min.yaml", test::catalog());
  CHECK(s.cluster.sku == "ND40rs_v2");  // the Azure name is accepted and canonicalised
  CHECK(s.cluster.gpus_per_node == 8);
  CHECK(s.cluster.fabric == FabricKind::InfiniBand);
  CHECK(s.cluster.fabric_topology == FabricTopology::Star);
  CHECK(s.training.dataset_images == 1281167);
  // NCCL's own default: its tuning model picks per message (auto), in the catalog's release.
  CHECK(s.communication.strategy == Strategy::Auto);
  CHECK(s.communication.library_version == "2.18.5");
  CHECK(s.communication.library == CommLibrary::Nccl);
  CHECK(s.communication.cycle_time_s == Approx(5e-3));
  CHECK(s.communication.fusion_threshold_bytes == 64.0 * 1048576);
  const Scenario eth = load_scenario_text(
      "cluster: {sku: NC24s_v3, nodes: 2}\nmodel: {name: vgg16, batch_per_gpu: 32}\n"
      "training: {epochs: 3}\n",
      "min.yaml", test::catalog());
  CHECK(eth.cluster.fabric == FabricKind::Ethernet);  // no RDMA NIC on this size
}

TEST_CASE(
    "scenario: channels: auto is one ring per InfiniBand NIC for NCCL across nodes, a mesh's rings on one node, else "
    "one",
    "[scenario]") {
  auto load = [](const std::string& cluster, const std::string& comm = "") {
    return load_scenario_text(
        "cluster: {" + cluster + "}\nmodel: {name: resnet50, batch_per_gpu: 64}\n" + "training: {epochs: 1}\n" + comm,
        "channels.yaml", test::catalog());
  };
  CHECK(load("sku: DGX-1-V100, nodes: 4").communication.channels == 4);  // four EDR NICs per node
  // GPUs 0 and 1 share plx0 and its NIC; GPUs 0-3 use ib0 and ib1.
  CHECK(load("sku: DGX-1-V100, nodes: 4, gpus_per_node: 2").communication.channels == 1);
  CHECK(load("sku: DGX-1-V100, nodes: 4, gpus_per_node: 4").communication.channels == 2);
  CHECK(test::catalog().layout("nvlink_hybrid_cube_mesh_dgx1v").gpu_rail == std::vector<int>{0, 0, 1, 1, 2, 2, 3, 3});
  CHECK(test::catalog().layout("nvlink_hybrid_cube_mesh_8gpu").gpu_rail == std::vector<int>(8, 0));
  // One node: no fabric to spread over, but NCCL's rings over the V100 cube-mesh (the layout's `rings`);
  // one where a node has no mesh.
  CHECK(load("sku: DGX-1-V100, nodes: 1").communication.channels == 6);
  CHECK(load("sku: NC24rs_v3, nodes: 1").communication.channels == 1);
  CHECK(load("sku: DGX-1-V100, nodes: 1", "communication: {library: nccl1}\n").communication.channels == 1);
  CHECK(load("sku: ND40rs_v2, nodes: 4").communication.channels == 1);  // one NIC
  CHECK(load("sku: DGX-1-V100, nodes: 4", "communication: {library: mpi}\n").communication.channels == 1);
  CHECK(load("sku: DGX-1-V100, nodes: 4, fabric: ethernet").communication.channels == 1);
  CHECK(load("sku: DGX-1-V100, nodes: 4", "communication: {strategy: hierarchical}\n").communication.channels == 1);
  CHECK(load("sku: NC24rs_v3, nodes: 1", "communication: {channels: 3}\n").communication.channels == 3);
  CHECK(load("sku: DGX-1-V100, nodes: 2", "communication: {channels: auto}\n").communication.channels == 4);
  const std::string other = test::input_error_of(
      [&] { load("sku: DGX-1-V100, nodes: 4", "communication: {strategy: hierarchical, channels: 2}\n"); });
  CHECK(other.find("channels.yaml:4:") != std::string::npos);
  CHECK(other.find("a number of channels applies only to strategy: ring, tree or auto") != std::string::npos);
  // A tree: the double binary tree's two per rail (a DGX-1's four), two where no rails spread it.
  CHECK(load("sku: DGX-1-V100, nodes: 4", "communication: {strategy: tree}\n").communication.channels == 8);
  CHECK(load("sku: ND40rs_v2, nodes: 4", "communication: {strategy: tree}\n").communication.channels == 2);
  CHECK(load("sku: DGX-1-V100, nodes: 4", "communication: {strategy: tree, channels: 3}\n").communication.channels ==
        3);
  CHECK(load("sku: DGX-1-V100, nodes: 4", "communication: {strategy: hierarchical, channels: auto}\n")
            .communication.channels == 1);
  const std::string word =
      test::input_error_of([&] { load("sku: NC24rs_v3, nodes: 1", "communication: {channels: many}\n"); });
  CHECK(word.find("expected 'auto' or a whole number") != std::string::npos);
  CHECK_THROWS_AS(load("sku: NC24rs_v3, nodes: 1", "communication: {channels: 65}\n"), InputError);
}

TEST_CASE("scenario: --set overrides any key", "[scenario]") {
  const std::string dir = RINGSIM_TEST_SCENARIOS;
  const Scenario s = load_scenario(
      dir + "/resnet50_imagenet_8x_nc24rs_v3.yaml", test::catalog(),
      {parse_override("cluster.nodes=16"), parse_override("model.name=vgg16"),
       parse_override("communication.fusion_threshold=0"), parse_override("communication.strategy=parameter_server"),
       parse_override("communication.parameter_servers=4"), parse_override("cluster.fabric_topology=fat_tree"),
       parse_override("cluster.oversubscription=2")});
  CHECK(s.cluster.nodes == 16);
  CHECK(s.model.name == "vgg16");
  CHECK(s.communication.fusion_threshold_bytes == 0);
  CHECK(s.communication.strategy == Strategy::ParameterServer);
  CHECK(s.communication.parameter_servers == 4);
  CHECK(s.cluster.nodes_per_leaf == 18);
  CHECK(s.cluster.oversubscription == 2);
}

TEST_CASE("scenario: the resolved YAML reloads to the same scenario, byte for byte", "[scenario]") {
  const std::string dir = RINGSIM_TEST_SCENARIOS;
  for (const char* f : {"/landolakes_cifar10_2x_nc24rs_v3.yaml", "/resnet50_imagenet_8x_nc24rs_v3.yaml",
                        "/sharcnet_alexnet_caffe_monk.yaml"}) {
    const Scenario a = load_scenario(dir + f, test::catalog());
    const std::string text = to_yaml(a);
    const Scenario b = load_scenario_text(text, "resolved.yaml", test::catalog());
    CHECK(to_yaml(b) == text);
  }
}

TEST_CASE("scenario: the library's release decides its algorithms and the default strategy", "[scenario]") {
  const std::string file = std::string(RINGSIM_TEST_SCENARIOS) + "/nccl_tests_nd96isr_h100_v5.yaml";
  const auto load = [&](std::vector<std::string> sets) {
    std::vector<Override> o;
    for (const auto& s : sets) o.push_back(parse_override(s));
    return load_scenario(file, test::catalog(), o);
  };
  // NCCL before 2.4 has rings only: the default is ring, and a tree or auto is refused at its key.
  CHECK(load({"communication.library_version=2.3"}).communication.strategy == Strategy::Ring);
  CHECK_THAT(test::input_error_of([&] {
               load({"communication.library_version=2.3", "communication.strategy=tree"});
             }),
             Catch::Contains("came with 2.4") && Catch::Contains("use ring"));
  // NVLS from 2.17: 2.16 refuses it, and its auto does not weigh it (ring on one H100 node at 1 GiB).
  CHECK_THAT(test::input_error_of([&] {
               load({"communication.library_version=2.16", "communication.strategy=nvls"});
             }),
             Catch::Contains("NVLS came with 2.17"));
  const Scenario old = load({"communication.library_version=2.16"});
  CHECK(old.communication.strategy == Strategy::Auto);
  const auto at_1g = [&](const Scenario& s) {
    return predict_bench(test::catalog(), s, {1ull << 30, 1ull << 30, 2}).rows.at(0).algorithm;
  };
  CHECK(at_1g(old) == "ring_allreduce");
  CHECK(at_1g(load({})) == "nvls_allreduce");
  // Other libraries: rings, and no releases to name.
  CHECK(load({"communication.library=nccl1"}).communication.strategy == Strategy::Ring);
  CHECK(load({"communication.library=mpi"}).communication.strategy == Strategy::Ring);
  CHECK_THAT(test::input_error_of([&] {
               load({"communication.library=mpi", "communication.library_version=2.3"});
             }),
             Catch::Contains("library_version applies to library nccl"));
  CHECK_THAT(test::input_error_of([&] { load({"communication.library_version=2.x"}); }),
             Catch::Contains("expected a release version"));
  CHECK_THAT(test::input_error_of([&] { load({"communication.library_version=2.99"}); }),
             Catch::Contains("models nccl up to 2.18.5"));
}
