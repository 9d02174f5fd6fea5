// The input pipeline (issue 8) against closed forms: the analytical model on its own (no SimGrid), and
// `predict` with a storage section in both fidelities (each SimGrid run in a forked child). Nothing here
// depends on how fast this machine is.
#include <nlohmann/json.hpp>
#include <sstream>

#include "execute/child_process.h"
#include "execute/data_pipeline.h"
#include "execute/training_sim.h"
#include "load/scenario.h"
#include "report/prediction_report.h"
#include "test_support.h"

using namespace ringsim;

namespace {

const char* const kCluster =
    "cluster: {sku: NC24rs_v3, nodes: 8, fabric: infiniband}\n"
    "model: {name: resnet50, batch_per_gpu: 64}\n"
    "training: {epochs: 3}\n";

Scenario scenario(const std::string& storage, const std::string& cluster = kCluster) {
  return load_scenario_text(cluster + storage, "test.yaml", test::catalog());
}

// Steady-state iteration of the pipeline beside a training iteration of `train_s`, no gradients on the NIC.
DataPipeline pipeline(const Scenario& s, double train_s, NicShare nic = {}) {
  if (nic.bandwidth == 0) nic.bandwidth = test::catalog().sku(s.cluster.sku).ethernet_bandwidth;
  return evaluate_data_pipeline(test::catalog(), s, train_s, nic, 100);
}

// predict() in a child: the result JSON.
nlohmann::json predicted(const Scenario& s, Fidelity f) {
  return nlohmann::json::parse(run_in_child([&] { return result_json(predict(test::catalog(), s, f), "simulated"); }));
}

// Storage so fast it can never be waited for.
const char* const kUnlimited =
    "storage: {backend: local_ssd, bandwidth: 1000 TB/s, iops: 1e15, request_latency: 0, decode_cpu_per_image: 0}\n";

}  // namespace

TEST_CASE("storage: the loader's terms follow the documented closed forms", "[storage]") {
  // 8 nodes x 4 GPUs x 64 images; 100 kB files on a share of 500 MB/s, 50000 IOPS, 2 ms per request.
  const Scenario s = scenario(
      "storage: {backend: azure_files, file_size: 100 kB, bandwidth: 500 MB/s, iops: 50000, request_latency: 2 ms,"
      " decode_cpu_per_image: 6 ms, reader_threads: 16}\n");
  const DataPipeline p = pipeline(s, 0.1);
  const double images = 4 * 64, D = images * 100e3;
  CHECK(p.batch_bytes_per_node == Approx(D));
  CHECK(p.requests_per_batch_node == Approx(images));
  CHECK(p.first.bandwidth_s == Approx(D / (500e6 / 8)));
  CHECK(p.first.iops_s == Approx(images / (50000.0 / 8)));
  CHECK(p.first.nic_s == Approx(D / 1.25e9));  // NC24rs_v3's 10 Gb/s Ethernet, no gradients on it
  CHECK(p.first.latency_s == Approx(images * 2e-3 / 16));
  CHECK(p.first.decode_s == Approx(images * 6e-3 / 24));  // 24 vCPUs
  CHECK(p.first.io_s == Approx(p.first.bandwidth_s + p.first.latency_s));
  CHECK(p.first.iteration_s == Approx(std::max(0.1, p.first.io_s)));
  CHECK(p.first.limited_by == "storage_bandwidth");
  CHECK(storage_is_bottleneck(p.first));
  // 100 iterations plus one load to fill the queue at the start of the epoch.
  CHECK(p.first.epoch_time_s == Approx(100 * p.first.iteration_s + p.first.load_s));
  // No prefetching: loading and compute take turns.
  const DataPipeline serial = pipeline(
      scenario("storage: {backend: azure_files, file_size: 100 kB, bandwidth: 500 MB/s, prefetch_depth: 0}\n"), 0.1);
  CHECK(serial.first.iteration_s == Approx(0.1 + serial.first.load_s));
}

TEST_CASE("storage: throughput-bound iteration is N x r x s / B", "[storage]") {
  // N = 8 nodes, r = 256 images per node per iteration, s = 120 kB, B = 200 MB/s shared: 1.2288 s.
  const std::string st =
      "storage: {backend: azure_files, file_size: 120 kB, bandwidth: 200 MB/s, iops: 1e9, request_latency: 0,"
      " decode_cpu_per_image: 0}\n";
  const double bound = 8 * 256 * 120e3 / 200e6;
  const DataPipeline p = pipeline(scenario(st), 0.2);
  CHECK(p.steady.iteration_s == Approx(bound).epsilon(1e-12));
  CHECK(p.steady.storage_throughput == Approx(200e6));
  CHECK(p.steady.storage_throughput_limit == Approx(200e6));
  CHECK(p.steady.data_wait_s == Approx(bound - 0.2));
  // The same through the simulator, in both fidelities: within 1 %.
  for (Fidelity f : {Fidelity::Flow, Fidelity::Step}) {
    INFO(to_string(f));
    const auto j = predicted(scenario(st), f);
    CHECK(j["iteration_time_s"].get<double>() == Approx(bound).epsilon(0.01));
    CHECK(j["data_pipeline"]["steady_state"]["limited_by"] == "storage_bandwidth");
    CHECK(j["data_pipeline"]["steady_state"]["storage_is_bottleneck"] == true);
    CHECK(j["data_pipeline"]["steady_state"]["storage_throughput_bytes_per_s"].get<double>() ==
          Approx(200e6).epsilon(0.01));
  }
  // Twice the servers of a per-server file system halve the bound.
  const auto per_server = [&](int servers) {
    return pipeline(scenario("storage: {backend: parallel_fs, servers: " + std::to_string(servers) +
                             ", file_size: 120 kB, bandwidth: 100 MB/s, iops: 1e9, request_latency: 0}\n"),
                    0.01)
        .steady.iteration_s;
  };
  CHECK(per_server(2) == Approx(2 * per_server(4)));
}

TEST_CASE("storage: unlimited storage gives the synthetic-data result", "[storage]") {
  for (Fidelity f : {Fidelity::Flow, Fidelity::Step}) {
    INFO(to_string(f));
    const auto synthetic = predicted(scenario(""), f);
    const auto unlimited = predicted(scenario(kUnlimited), f);
    CHECK(unlimited["iteration_time_s"].get<double>() == synthetic["iteration_time_s"].get<double>());
    CHECK(unlimited["images_per_sec"].get<double>() == synthetic["images_per_sec"].get<double>());
    CHECK(unlimited["epoch_time_s"].get<double>() == Approx(synthetic["epoch_time_s"].get<double>()).epsilon(1e-9));
    CHECK(unlimited["time_to_train_s"].get<double>() ==
          Approx(synthetic["time_to_train_s"].get<double>()).epsilon(1e-9));
    CHECK(unlimited["data_pipeline"]["steady_state"]["data_wait_s"].get<double>() == 0);
    CHECK(unlimited["data_pipeline"]["steady_state"]["limited_by"] == "compute");
    CHECK(synthetic["data_pipeline"]["backend"] == "synthetic");
    CHECK(synthetic["data_pipeline"]["steady_state"]["epoch_time_s"] == synthetic["epoch_time_s"]);
  }
}

TEST_CASE("storage: with the blobfuse cache, epochs >= 2 run at local-SSD speed", "[storage]") {
  // A slow blob account (epoch 1 storage-bound), then the local SSD.
  const std::string common = ", file_size: 110 kB, decode_cpu_per_image: 4 ms}\n";
  const DataPipeline cached =
      pipeline(scenario("storage: {backend: blobfuse, cache: true, bandwidth: 400 MB/s" + common), 0.15);
  const DataPipeline uncached =
      pipeline(scenario("storage: {backend: blobfuse, cache: false, bandwidth: 400 MB/s" + common), 0.15);
  const DataPipeline local = pipeline(scenario("storage: {backend: local_ssd" + common), 0.15);
  CHECK(cached.first.source == "blobfuse");
  CHECK(cached.steady.source == "local_ssd");
  CHECK(cached.first.iteration_s == uncached.first.iteration_s);
  CHECK(cached.first.limited_by == "storage_bandwidth");
  CHECK(cached.steady.iteration_s == local.steady.iteration_s);
  CHECK(cached.steady.epoch_time_s == local.steady.epoch_time_s);
  CHECK(cached.steady.iteration_s < cached.first.iteration_s);
  CHECK(uncached.steady.iteration_s == uncached.first.iteration_s);
  // Time to train (3 epochs) = epoch 1 + 2 steady epochs, through the simulator.
  const auto j = predicted(scenario("storage: {backend: blobfuse, bandwidth: 400 MB/s" + common), Fidelity::Step);
  const auto& d = j["data_pipeline"];
  CHECK(d["cache"] == true);  // blobfuse caches unless told otherwise (catalog cache_default)
  CHECK(j["time_to_train_s"].get<double>() ==
        Approx(d["first_epoch"]["epoch_time_s"].get<double>() + 2 * d["steady_state"]["epoch_time_s"].get<double>()));
  CHECK(j["epoch_time_s"] == d["steady_state"]["epoch_time_s"]);
}

TEST_CASE("storage: many small files and record files differ by request latency x requests / readers", "[storage]") {
  // Bandwidth and IOPS out of the way; 5 ms per request, 8 readers per node; 128 MiB record files.
  const std::string common =
      "bandwidth: 1000 TB/s, iops: 1e15, request_latency: 5 ms, reader_threads: 8, dataset_size: 128 GiB}\n";
  // A training step too short to hide either: both storage-bound.
  const DataPipeline files = pipeline(scenario("storage: {backend: nfs, format: files, " + common), 1e-6);
  const DataPipeline records =
      pipeline(scenario("storage: {backend: nfs, format: records, record_size: 128 MiB, " + common), 1e-6);
  const double image_bytes = 128.0 * (1 << 30) / 1281167;
  const double r_files = 256, r_records = 256 * image_bytes / (128.0 * (1 << 20));
  CHECK(files.requests_per_batch_node == r_files);
  CHECK(records.requests_per_batch_node == Approx(r_records));
  CHECK(files.steady.limited_by == "request_latency");
  CHECK(files.steady.iteration_s - records.steady.iteration_s == Approx((r_files - r_records) * 5e-3 / 8));
}

TEST_CASE("storage: network storage shares an Ethernet NIC with gradients, not an InfiniBand one", "[storage]") {
  const std::string st =
      "storage: {backend: nfs, servers: 8, file_size: 110 kB, iops: 1e9, request_latency: 0, bandwidth: 100 GB/s}\n";
  const std::string eth =
      "cluster: {sku: NC24s_v3, nodes: 2, fabric: ethernet}\n"
      "model: {name: resnet50, batch_per_gpu: 64}\ntraining: {epochs: 1}\n";
  const std::string ib =
      "cluster: {sku: NC24rs_v3, nodes: 2, fabric: infiniband}\n"
      "model: {name: resnet50, batch_per_gpu: 64}\ntraining: {epochs: 1}\n";
  for (Fidelity f : {Fidelity::Flow, Fidelity::Step}) {
    INFO(to_string(f));
    const auto e = predicted(scenario(st, eth), f)["data_pipeline"];
    CHECK(e["nic_shared_with_gradients"] == true);
    // A ring all-reduce over 8 ranks brings 2 (8-1)/8 of ResNet-50's 102 MB of gradients into each node.
    const double grads = e["nic_gradient_bytes_per_iteration"].get<double>();
    CHECK(grads == Approx(2 * 7.0 / 8 * 25557032.0 * 4).epsilon(0.01));
    const double D = e["batch_bytes_per_node"].get<double>();
    CHECK(e["steady_state"]["load_terms_s"]["nic"].get<double>() == Approx((D + grads) / 1.25e9));
    const auto i = predicted(scenario(st, ib), f)["data_pipeline"];
    CHECK(i["nic_shared_with_gradients"] == false);
    CHECK(i["steady_state"]["load_terms_s"]["nic"].get<double>() == Approx(D / 1.25e9));
  }
}

TEST_CASE("storage: local backends do not touch the NIC, and check prints the resolved section", "[storage]") {
  const Scenario s = scenario("storage: {backend: local_ssd}\n");
  CHECK(pipeline(s, 0.1).steady.nic_s == 0);
  const std::string y = to_yaml(s);
  CHECK_THAT(y, Catch::Contains("backend: local_ssd"));
  CHECK_THAT(y, Catch::Contains("reader_threads: 24"));
  CHECK_THAT(y, Catch::Contains("prefetch_depth: 2"));
  CHECK_THAT(y, Catch::Contains("# data set 138 GiB"));
  // What check prints loads back to the same storage section (sizes as printed: 4 significant digits).
  const Scenario again = load_scenario_text(y, "again.yaml", test::catalog());
  CHECK(again.storage->backend == "local_ssd");
  CHECK(again.storage->reader_threads == 24);
  CHECK(again.storage->file_size == Approx(s.storage->file_size).epsilon(1e-3));
  // Sweeping the backend: every catalog backend loads with the section's other keys left at defaults.
  for (const auto& b : test::catalog().storage_backend_names()) {
    INFO(b);
    const Scenario sw = load_scenario_text(std::string(kCluster) + "storage: {backend: nfs}\n", "t.yaml",
                                           test::catalog(), {parse_override("storage.backend=" + b)});
    CHECK(sw.storage->backend == b);
  }
}
