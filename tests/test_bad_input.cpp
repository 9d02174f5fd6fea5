// The bad-input table: each case is a scenario (and --set arguments) that must be refused with this
// location and this message. Locations are 1-based line:column of the offending key or value.
#include <filesystem>
#include <fstream>

#include "load/scenario.h"
#include "test_support.h"

using namespace ringsim;

namespace {

const char* const kValid =
    "cluster:\n"             // 1
    "  sku: NC24rs_v3\n"     // 2
    "  nodes: 2\n"           // 3
    "model:\n"               // 4
    "  name: resnet50\n"     // 5
    "  batch_per_gpu: 64\n"  // 6
    "training:\n"            // 7
    "  epochs: 1\n";         // 8

// Replaces the first occurrence of `from` in the valid scenario.
std::string with(const std::string& from, const std::string& to) {
  std::string s = kValid;
  const auto pos = s.find(from);
  REQUIRE(pos != std::string::npos);
  return s.replace(pos, from.size(), to);
}

struct BadCase {
  std::string name;
  std::string yaml;
  std::vector<std::string> sets;
  std::string location;  // expected prefix: "bad.yaml:L:C" or "--set ..."
  std::string message;   // expected substring of the message
};

std::vector<BadCase> cases() {
  return {
      {"unknown SKU",
       with("NC24rs_v3", "NC24rs_v4"),
       {},
       "bad.yaml:2:8",
       "cluster.sku: unknown SKU 'NC24rs_v4'; did you mean NC24rs_v3"},
      {"SKU in wrong case", with("NC24rs_v3", "nc24rs_v3"), {}, "bad.yaml:2:8", "did you mean NC24rs_v3"},
      {"unknown top-level key",
       with("cluster:", "clustr:"),
       {},
       "bad.yaml:1:1",
       "unknown key 'clustr'; did you mean cluster?"},
      {"unknown cluster key",
       with("  nodes: 2", "  node: 2"),
       {},
       "bad.yaml:3:3",
       "cluster.node: unknown key 'node'; did you mean nodes?"},
      {"zero nodes",
       with("nodes: 2", "nodes: 0"),
       {},
       "bad.yaml:3:10",
       "cluster.nodes: must be between 1 and 65536, got 0"},
      {"negative nodes", with("nodes: 2", "nodes: -3"), {}, "bad.yaml:3:10", "must be between 1 and 65536, got -3"},
      {"nodes not a number",
       with("nodes: 2", "nodes: two"),
       {},
       "bad.yaml:3:10",
       "cluster.nodes: expected a whole number, got 'two'"},
      {"fractional nodes", with("nodes: 2", "nodes: 2.5"), {}, "bad.yaml:3:10", "expected a whole number, got '2.5'"},
      {"ten million GPUs", with("nodes: 2", "nodes: 2500000"), {}, "bad.yaml:3:10", "must be between 1 and 65536"},
      {"more processes than GPUs",
       with("nodes: 2", "nodes: 2\n  gpus_per_node: 8"),
       {},
       "bad.yaml:4:18",
       "places 8 processes per node but NC24rs_v3 has only 4 GPUs"},
      {"zero processes per node",
       with("nodes: 2", "nodes: 2\n  gpus_per_node: 0"),
       {},
       "bad.yaml:4:18",
       "must be between 1"},
      {"batch 0",
       with("batch_per_gpu: 64", "batch_per_gpu: 0"),
       {},
       "bad.yaml:6:18",
       "model.batch_per_gpu: must be between 1"},
      {"model with a dash",
       with("resnet50", "resnet-50"),
       {},
       "bad.yaml:5:9",
       "unknown model 'resnet-50'; did you mean resnet50"},
      {"unknown model lists the zoo",
       with("resnet50", "xyzzy"),
       {},
       "bad.yaml:5:9",
       "unknown model 'xyzzy'; expected one of: alexnet"},
      {"misspelt fabric",
       with("nodes: 2", "nodes: 2\n  fabric: infinband"),
       {},
       "bad.yaml:4:11",
       "did you mean infiniband?"},
      {"InfiniBand on a size without RDMA",
       with("NC24rs_v3", "NC24s_v3") + "",
       {"cluster.fabric=infiniband"},
       "--set cluster.fabric=infiniband",
       "NC24s_v3 has no InfiniBand (RDMA) NIC; use fabric: ethernet or an RDMA size of its series: NC24rs_v3"},
      {"misspelt fabric topology",
       with("nodes: 2", "nodes: 2\n  fabric_topology: fat-tree"),
       {},
       "bad.yaml:4:20",
       "did you mean fat_tree?"},
      {"leaf size on a star",
       with("nodes: 2", "nodes: 2\n  nodes_per_leaf: 8"),
       {},
       "bad.yaml:4:19",
       "nodes_per_leaf applies only to fabric_topology: fat_tree or rail_optimized"},
      {"oversubscription below 1",
       with("nodes: 2", "nodes: 2\n  fabric_topology: fat_tree\n  oversubscription: 0.5"),
       {},
       "bad.yaml:5:21",
       "cluster.oversubscription: must be between 1 and 64, got 0.5"},
      {"unknown strategy",
       std::string(kValid) + "communication:\n  strategy: allreduce\n",
       {},
       "bad.yaml:10:13",
       "unknown value 'allreduce'; expected one of: ring, tree, auto, hierarchical, halving_doubling, "
       "parameter_server, nvls"},
      {"strategy in wrong case",
       std::string(kValid) + "communication:\n  strategy: Ring\n",
       {},
       "bad.yaml:10:13",
       "did you mean ring?"},
      {"fusion threshold without unit",
       std::string(kValid) + "communication:\n  fusion_threshold: 64\n",
       {},
       "bad.yaml:10:21",
       "communication.fusion_threshold: expected a size with a unit, such as '64 MiB'; got '64' (the unit is missing)"},
      {"fusion threshold as a bandwidth",
       std::string(kValid) + "communication:\n  fusion_threshold: 64 MB/s\n",
       {},
       "bad.yaml:10:21",
       "'MB/s' is not a unit of a size"},
      {"negative fusion threshold",
       std::string(kValid) + "communication:\n  fusion_threshold: -1 MiB\n",
       {},
       "bad.yaml:10:21",
       "must be between 0 B and 1024 GiB"},
      {"cycle time unit typo",
       std::string(kValid) + "communication:\n  cycle_time: 5 msec\n",
       {},
       "bad.yaml:10:15",
       "'msec' is not a unit of a time"},
      {"concurrent collectives as a word other than unlimited",
       std::string(kValid) + "communication:\n  concurrent_collectives: many\n",
       {},
       "bad.yaml:10:27",
       "communication.concurrent_collectives: expected a whole number of collectives in flight at once (1: one at a "
       "time, as Horovod) or 'unlimited', got 'many'"},
      {"no collectives at once",
       std::string(kValid) + "communication:\n  concurrent_collectives: 0\n",
       {},
       "bad.yaml:10:27",
       "must be between 1 and 1048576, got 0"},
      {"unknown library",
       std::string(kValid) + "communication:\n  library: intel\n",
       {},
       "bad.yaml:10:12",
       "unknown value 'intel'; expected one of: nccl, nccl1, mpi"},
      {"parameter servers with ring",
       std::string(kValid) + "communication:\n  parameter_servers: 2\n",
       {},
       "bad.yaml:10:22",
       "communication.parameter_servers: applies only to strategy: parameter_server"},
      {"more colocated servers than nodes",
       std::string(kValid) + "communication:\n  strategy: parameter_server\n  parameter_servers: 4\n",
       {},
       "bad.yaml:11:22",
       "colocated parameter servers run one per node at most: 4 servers on 2 node(s)"},
      {"a server count with servers on the GPUs",
       std::string(kValid) +
           "communication:\n  strategy: parameter_server\n  parameter_servers: 3\n  parameter_server_placement: gpus\n",
       {},
       "bad.yaml:11:22",
       "with parameter_server_placement: gpus every GPU is a server: 8 on this cluster (leave parameter_servers out)"},
      {"node aggregation with servers on the GPUs",
       std::string(kValid) + "communication:\n  strategy: parameter_server\n  parameter_server_placement: gpus\n"
                             "  parameter_server_aggregation: node\n",
       {},
       "bad.yaml:12:33",
       "it does not apply to parameter_server_placement: gpus"},
      {"rpc transport with servers on the GPUs",
       std::string(kValid) + "communication:\n  strategy: parameter_server\n  parameter_server_placement: gpus\n"
                             "  parameter_server_transport: rpc\n",
       {},
       "bad.yaml:12:31",
       "rpc is between server processes in host memory; it does not apply to parameter_server_placement: gpus"},
      {"unknown server transport",
       std::string(kValid) + "communication:\n  strategy: parameter_server\n  parameter_server_transport: grpc\n",
       {},
       "bad.yaml:11:31",
       "unknown value 'grpc'; did you mean rpc?"},
      {"unknown server assignment",
       std::string(kValid) + "communication:\n  strategy: parameter_server\n  parameter_server_assignment: size\n",
       {},
       "bad.yaml:11:32",
       "expected one of: greedy, round_robin"},
      {"misspelt communication key",
       std::string(kValid) + "communication:\n  fusion_treshold: 1 MiB\n",
       {},
       "bad.yaml:10:3",
       "did you mean fusion_threshold?"},
      {"missing SKU", with("  sku: NC24rs_v3\n", ""), {}, "bad.yaml:2:3", "cluster: missing required key 'sku'"},
      {"missing model section",
       "cluster:\n  sku: NC24rs_v3\n  nodes: 2\ntraining:\n  epochs: 1\n",
       {},
       "bad.yaml:1:1",
       "missing required key 'model'"},
      {"duplicate key", with("nodes: 2", "nodes: 2\n  nodes: 4"), {}, "bad.yaml:4:3", "cluster.nodes: duplicate key"},
      {"YAML syntax error", with("sku: NC24rs_v3", "sku: [NC24rs_v3"), {}, "bad.yaml:", "YAML syntax"},
      {"empty file", "", {}, "bad.yaml", "the scenario is empty"},
      {"cluster is a list",
       "cluster:\n  - NC24rs_v3\nmodel: {name: resnet50, batch_per_gpu: 1}\ntraining: {epochs: 1}\n",
       {},
       "bad.yaml:2:3",
       "cluster: expected a mapping (key: value lines), got a list"},
      {"SKU is a list",
       with("sku: NC24rs_v3", "sku: [a, b]"),
       {},
       "bad.yaml:2:8",
       "cluster.sku: expected a text value, got a list"},
      {"zero epochs", with("epochs: 1", "epochs: 0"), {}, "bad.yaml:8:11", "training.epochs: must be between 1"},
      {"zero dataset images",
       with("epochs: 1", "epochs: 1\n  dataset_images: 0"),
       {},
       "bad.yaml:9:19",
       "must be between 1"},
      {"negative single-GPU rate",
       with("batch_per_gpu: 64", "batch_per_gpu: 64\n  images_per_sec_single_gpu: -5"),
       {},
       "bad.yaml:7:30",
       "model.images_per_sec_single_gpu: must be between 0.001 and 1e+09, got -5"},
      {"single-GPU rate for an unknown GPU type",
       with("batch_per_gpu: 64", "batch_per_gpu: 64\n  samples_per_sec_single_gpu: {V100-SXM2-16G: 300}"),
       {},
       "bad.yaml:7:47",
       "unknown GPU type 'V100-SXM2-16G'; did you mean V100-SXM2-16GB?"},
      {"document is a scalar", "hello\n", {}, "bad.yaml:1:1", "expected a mapping (key: value lines), got 'hello'"},
      {"--set unknown key",
       kValid,
       {"cluster.nodez=4"},
       "--set cluster.nodez=4",
       "unknown key 'cluster.nodez'; did you mean cluster.nodes?"},
      {"--set zero nodes",
       kValid,
       {"cluster.nodes=0"},
       "--set cluster.nodes=0",
       "cluster.nodes: must be between 1 and 65536, got 0"},
      {"--set without value", kValid, {"cluster.nodes"}, "--set cluster.nodes", "expected KEY=VALUE"},
      {"--set empty value", kValid, {"cluster.nodes="}, "--set cluster.nodes=", "the value after '=' is empty"},
      {"--set unknown model", kValid, {"model.name=resnet5O"}, "--set model.name=resnet5O", "did you mean resnet50"},
      // storage: (issue 8); the section starts on line 9.
      {"misspelt storage backend",
       std::string(kValid) + "storage:\n  backend: azure_file\n",
       {},
       "bad.yaml:10:12",
       "storage.backend: unknown storage backend 'azure_file'; did you mean azure_files"},
      {"storage backend in wrong case",
       std::string(kValid) + "storage:\n  backend: BlobFuse\n",
       {},
       "bad.yaml:10:12",
       "did you mean blobfuse"},
      {"storage without a backend",
       std::string(kValid) + "storage:\n  format: files\n",
       {},
       "bad.yaml:10:3",
       "storage: missing required key 'backend'"},
      {"misspelt storage key",
       std::string(kValid) + "storage:\n  backend: nfs\n  prefetch: 4\n",
       {},
       "bad.yaml:11:3",
       "unknown key 'prefetch'; did you mean prefetch_depth?"},
      {"servers on a share",
       std::string(kValid) + "storage:\n  backend: azure_files\n  servers: 4\n",
       {},
       "bad.yaml:11:12",
       "storage.servers: applies only to backends with storage servers"},
      {"zero storage servers",
       std::string(kValid) + "storage:\n  backend: parallel_fs\n  servers: 0\n",
       {},
       "bad.yaml:11:12",
       "storage.servers: must be between 1 and 65536, got 0"},
      {"cache on NFS",
       std::string(kValid) + "storage:\n  backend: nfs\n  cache: true\n",
       {},
       "bad.yaml:11:10",
       "storage.cache: applies only to a backend with a local cache (blobfuse), not 'nfs'"},
      {"misspelt data format",
       std::string(kValid) + "storage:\n  backend: nfs\n  format: tfrecord\n",
       {},
       "bad.yaml:11:11",
       "expected one of: files, records"},
      {"records without a record size",
       std::string(kValid) + "storage:\n  backend: nfs\n  format: records\n",
       {},
       "bad.yaml:10:3",
       "storage: missing required key 'record_size'"},
      {"record size with files",
       std::string(kValid) + "storage:\n  backend: nfs\n  record_size: 128 MiB\n",
       {},
       "bad.yaml:11:16",
       "storage.record_size: applies only to format: records"},
      {"record smaller than an image",
       std::string(kValid) + "storage:\n  backend: nfs\n  format: records\n  record_size: 1 kB\n",
       {},
       "bad.yaml:12:16",
       "a record file holds at least one image"},
      {"file size and data set size both",
       std::string(kValid) + "storage:\n  backend: nfs\n  dataset_size: 100 GB\n  file_size: 100 kB\n",
       {},
       "bad.yaml:12:14",
       "give file_size or dataset_size, not both"},
      {"decode cost without unit",
       std::string(kValid) + "storage:\n  backend: nfs\n  decode_cpu_per_image: 5\n",
       {},
       "bad.yaml:11:25",
       "expected a time with a unit"},
      {"storage bandwidth as a size",
       std::string(kValid) + "storage:\n  backend: nfs\n  bandwidth: 1 GB\n",
       {},
       "bad.yaml:11:14",
       "did you mean GB/s"},
      {"data set larger than the local SSDs",
       std::string(kValid) + "storage:\n  backend: local_ssd\n  dataset_size: 100 TiB\n",
       {},
       "bad.yaml:10:12",
       "each node's shard of the data set (50 TiB) does not fit NC24rs_v3's local SSD (2948 GiB)"},
      {"blobfuse cache larger than the local SSDs",
       std::string(kValid) + "storage:\n  backend: blobfuse\n  cache: true\n  dataset_size: 100 TiB\n",
       {},
       "bad.yaml:11:10",
       "does not fit NC24rs_v3's local SSD"},
      {"--set misspelt storage backend",
       kValid,
       {"storage.backend=beegfs"},
       "--set storage.backend=beegfs",
       "unknown storage backend 'beegfs'; expected one of: local_ssd, azure_files"},
      {"--set unknown storage key",
       kValid,
       {"storage.servrs=4"},
       "--set storage.servrs=4",
       "unknown key 'storage.servrs'; did you mean storage.servers?"},
  };
}

}  // namespace

TEST_CASE("bad input: every case is refused with location and message", "[bad_input]") {
  const auto all = cases();
  REQUIRE(all.size() >= 30);
  for (const auto& c : all) {
    INFO("case: " << c.name);
    const std::string msg = test::input_error_of([&] {
      std::vector<Override> overrides;
      for (const auto& s : c.sets) overrides.push_back(parse_override(s));
      load_scenario_text(c.yaml, "bad.yaml", test::catalog(), overrides);
    });
    INFO("message: " << msg);
    CHECK(msg.rfind(c.location, 0) == 0);
    CHECK_THAT(msg, Catch::Contains(c.message));
    CHECK_THAT(msg, Catch::Contains("error: "));
  }
}

TEST_CASE("bad input: a missing scenario file names the file", "[bad_input]") {
  const std::string msg = test::input_error_of([] { load_scenario("/nonexistent/scenario.yaml", test::catalog()); });
  CHECK(msg == "/nonexistent/scenario.yaml: error: cannot read the scenario: No such file or directory");
}

// Catalog data is input too: a broken catalog is reported against its own file and line.
TEST_CASE("bad input: broken catalog files", "[bad_input]") {
  namespace fs = std::filesystem;
  struct CatalogCase {
    std::string file, from, to, message;
  };
  const std::vector<CatalogCase> catalog_cases = {
      {"links.yaml", "bandwidth: 15.75 GB/s", "bandwidth: 0 GB/s",
       "link_classes.pcie3_x16.bandwidth: must be greater than 0"},
      {"links.yaml", "bandwidth: 25 GB/s", "bandwidth: 25 GB", "did you mean GB/s"},
      {"skus.yaml",
       "layout: pcie_4gpu_2socket\n    socket_link: qpi_2x9.6GTs\n    memory_link: ddr4_2400_4ch\n    ethernet: "
       "{bandwidth: 10 Gb/s, link: ethernet_azure}\n    infiniband: ib_fdr   # [ibgen] FDR, SR-IOV",
       "layout: pcie_4gpu_2socket\n    socket_link: qpi_2x9.6GTs\n    memory_link: ddr4_2400_4ch\n    ethernet: "
       "{bandwidth: 10 Gb/s, link: ethernet_azure}\n    infiniband: ib_fdx   # [ibgen] FDR, SR-IOV",
       "skus.NC24rs_v3.infiniband: unknown link class 'ib_fdx'; did you mean ib_fdr"},
      {"skus.yaml", "gpu: V100-SXM2-32GB", "gpu: V100-SXM3-32GB",
       "unknown GPU 'V100-SXM3-32GB'; did you mean V100-SXM2-32GB"},
      {"skus.yaml", "      - {gpus: [6, 7], links: 2}", "      - {gpus: [6, 9], links: 2}",
       "must be between 0 and 7, got 9"},
      {"gpus.yaml", "memory: 32 GiB", "memroy: 32 GiB", "unknown key 'memroy'; did you mean memory?"},
      {"models/resnet50.yaml", "total_params: 25557032", "total_params: 25557033",
       "the tensors sum to 25557032 parameters, not 25557033"},
      {"models/resnet50.yaml", "[conv1.weight, [64, 3, 7, 7], [112, 112]]", "[conv1.weight, [64, 3, 7, 7]]",
       "a 4-D convolution weight needs its output size"},
      {"models/resnet50.yaml", "[bn1.weight, [64]]", "[bn1.weight, [64], [112, 112]]",
       "only a 4-D convolution weight has an output size"},
      {"libraries.yaml", "bandwidth_fraction: 0.976", "bandwidth_fraction: 1.5", "must be between 0.01 and 1"},
      {"libraries.yaml", "data_path: device", "data_path: gpu", "expected one of"},
      {"compute.yaml", "{gpu: K80, model: resnet50, batch_per_gpu: 64", "{gpu: K80, model: resnet5, batch_per_gpu: 64",
       "unknown model 'resnet5'; did you mean resnet50"},
      {"storage.yaml", "cache: local_ssd ", "cache: local_sdd ",
       "storage_backends.blobfuse.cache: unknown storage backend 'local_sdd'; did you mean local_ssd"},
      {"storage.yaml", "cache: local_ssd ", "cache: nfs ", "a cache is a local backend"},
      {"storage.yaml", "scaling: per_server", "scaling: per_servr", "did you mean per_server"},
      {"datasets.yaml", "training_bytes: 138 GiB", "training_bytes: 138", "(the unit is missing)"},
      {"compute.yaml", "{gpu: P100-SXM2, model: resnet50, batch_per_gpu: 32",
       "{gpu: P100-SXM2, model: resnet50, batch_per_gpu: 64", "duplicate measured rate"},
      {"compute.yaml", "precision: amp, images_per_sec: 2470}",
       "precision: amp, images_per_sec: 2470, samples_per_sec: 1}", "give images_per_sec or samples_per_sec, not both"},
      {"compute.yaml", "precision: amp, images_per_sec: 2470}", "precision: amp}",
       "a measured rate needs samples_per_sec (or images_per_sec)"},
      {"compute.yaml", "precision: amp, images_per_sec: 2470}", "precision: amp, seq_len: 0, images_per_sec: 2470}",
       "seq_len"},
  };
  for (const auto& c : catalog_cases) {
    INFO(c.file << ": " << c.to);
    const fs::path dir = fs::temp_directory_path() / "ringsim_bad_catalog";
    fs::remove_all(dir);
    fs::copy(RINGSIM_TEST_CATALOG, dir, fs::copy_options::recursive);
    std::ifstream in(dir / c.file);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    in.close();
    const auto pos = text.find(c.from);
    REQUIRE(pos != std::string::npos);
    text.replace(pos, c.from.size(), c.to);
    std::ofstream(dir / c.file) << text;
    const std::string msg = test::input_error_of([&] {
      const Catalog catalog = Catalog::load(dir.string());
      for (const auto& m : catalog.model_names()) catalog.model(m);  // model files are read when first used
    });
    INFO(msg);
    CHECK_THAT(msg, Catch::StartsWith((dir / c.file).string() + ":"));
    CHECK_THAT(msg, Catch::Contains(c.message));
    fs::remove_all(dir);
  }
}

// Found by fuzz_set: a calibration path longer than the OS allows made std::filesystem throw.
TEST_CASE("bad input: a calibration path too long for the file system", "[bad_input]") {
  std::ifstream in(std::string(RINGSIM_TEST_DATA) + "/../bad_inputs/set_calibration_name_too_long.txt",
                   std::ios::binary);
  const std::string arg((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  REQUIRE(arg.size() > 255);
  const std::string msg = test::input_error_of([&] {
    load_scenario_text(
        "cluster: {sku: NC24rs_v3, nodes: 2}\nmodel: {name: resnet50, batch_per_gpu: 64}\n"
        "training: {epochs: 1}\n",
        "base.yaml", test::catalog(), {parse_override(arg)});
  });
  CHECK_THAT(msg, Catch::Contains("calibration: cannot access calibration file: File name too long"));
}
