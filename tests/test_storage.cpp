// The input pipeline (issue 8) against closed forms: the demand terms on their own (no SimGrid), and
// `predict` with a storage section, the loader running as SimGrid activities, in both fidelities (each
// SimGrid run in a forked child). Nothing here depends on how fast this machine is.
#include <nlohmann/json.hpp>
#include <sstream>

#include "execute/estimate/child_process.h"
#include "execute/simgrid/data_pipeline.h"
#include "execute/simgrid/training_sim.h"
#include "load/scenario.h"
#include "report/prediction_report.h"
#include "test_support.h"

using namespace ringsim;

namespace {

// Two nodes: enough for every shared limit, and cheap in the flow fidelity (also under the sanitizers).
const char* const kCluster =
    "cluster: {sku: NC24rs_v3, nodes: 2, fabric: infiniband}\n"
    "model: {name: resnet50, batch_per_gpu: 64}\n"
    "training: {epochs: 3}\n";

Scenario scenario(const std::string& storage, const std::string& cluster = kCluster) {
  return load_scenario_text(cluster + storage, "test.yaml", test::catalog());
}

// The demand terms of the pipeline, no gradients on the NIC.
DataPipeline demand(const Scenario& s, NicShare nic = {}) {
  if (nic.bandwidth == 0) nic.bandwidth = test::catalog().sku(s.cluster.sku).ethernet_bandwidth;
  return data_pipeline_demand(test::catalog(), s, nic);
}

// predict() in a child: the result JSON.
nlohmann::json predicted(const Scenario& s, Fidelity f) {
  return nlohmann::json::parse(run_in_child([&] { return result_json(predict(test::catalog(), s, f), "simulated"); }));
}

// Storage so fast it can never be waited for.
const char* const kUnlimited =
    "storage: {backend: local_ssd, bandwidth: 1000 TB/s, iops: 1e15, request_latency: 0, decode_cpu_per_image: 0}\n";

}  // namespace

// Single iterations differ by up to one Horovod cycle (5 ms) depending on where the data arrives in the
// cycle; the steady state is a mean of 3 iterations: iteration times are compared to within that.
constexpr double kCycleJitter = 5e-3;

TEST_CASE("storage: the loader's demand terms follow the documented closed forms", "[storage]") {
  // 2 nodes x 4 GPUs x 64 images; 100 kB files on a share of 500 MB/s, 50000 IOPS, 2 ms per request.
  const Scenario s = scenario(
      "storage: {backend: azure_files, file_size: 100 kB, bandwidth: 500 MB/s, iops: 50000, request_latency: 2 ms,"
      " decode_cpu_per_image: 6 ms, reader_threads: 16}\n");
  const DataPipeline p = demand(s);
  const double images = 4 * 64, D = images * 100e3;
  CHECK(p.batch_bytes_per_node == Approx(D));
  CHECK(p.requests_per_batch_node == Approx(images));
  CHECK(p.first.bandwidth_s == Approx(D / (500e6 / 2)));
  CHECK(p.first.iops_s == Approx(images / (50000.0 / 2)));
  CHECK(p.first.nic_s == Approx(D / 1.25e9));  // NC24rs_v3's 10 Gb/s Ethernet, no gradients on it
  CHECK(p.first.latency_s == Approx(images * 2e-3 / 16));
  CHECK(p.first.decode_s == Approx(images * 6e-3 / 24));  // 24 vCPUs
  CHECK(p.first.io_s == Approx(p.first.bandwidth_s + p.first.latency_s));
  CHECK(p.first.load_s == p.first.io_s);
  CHECK(p.first.storage_throughput_limit == 500e6);
}

TEST_CASE("storage: with a prefetch queue an iteration takes max(train, load), without one train + load", "[storage]") {
  // Storage-bound: 0.51 s of bandwidth and 0.032 s of latency per batch against ~0.23 s of training.
  const std::string st =
      "storage: {backend: azure_files, file_size: 100 kB, bandwidth: 100 MB/s, iops: 50000, request_latency: 2 ms,"
      " decode_cpu_per_image: 6 ms, reader_threads: 16";
  for (Fidelity f : {Fidelity::Step, Fidelity::Flow}) {
    INFO(to_string(f));
    const auto j = predicted(scenario(st + "}\n"), f);
    const auto& e = j["data_pipeline"]["steady_state"];
    const double load = e["load_time_s"].get<double>(), train = j["data_pipeline"]["train_iteration_s"].get<double>();
    CHECK(load == Approx(256 * 100e3 / (100e6 / 2) + 256 * 2e-3 / 16));
    CHECK(j["iteration_time_s"].get<double>() == Approx(load).margin(kCycleJitter / 3));
    CHECK(e["data_wait_s"].get<double>() == Approx(load - train).margin(kCycleJitter / 3));
    CHECK(e["limited_by"] == "storage_bandwidth");
    CHECK(e["storage_is_bottleneck"] == true);
    // The epoch starts with an empty queue: its first iteration waits for a whole load, then trains.
    CHECK(e["first_iteration_time_s"].get<double>() == Approx(load + train).margin(kCycleJitter));
    const double iterations = j["iterations_per_epoch"].get<double>();
    CHECK(e["epoch_time_s"].get<double>() ==
          Approx(e["first_iteration_time_s"].get<double>() + (iterations - 1) * e["iteration_time_s"].get<double>()));
    // No prefetching: loading and compute take turns; the GPUs wait for every load in full.
    const auto serial = predicted(scenario(st + ", prefetch_depth: 0}\n"), f);
    CHECK(serial["iteration_time_s"].get<double>() == Approx(train + load).margin(kCycleJitter));
    // (plus the NIC's latency, 72 us on NC24rs_v3's Ethernet)
    CHECK(serial["data_pipeline"]["steady_state"]["data_wait_s"].get<double>() == Approx(load).margin(1e-4));
  }
  // The timeline shows the wait at the start of the reported iteration, on every rank.
  const auto timeline = nlohmann::json::parse(
      run_in_child([&] { return timeline_json(predict(test::catalog(), scenario(st + "}\n"), Fidelity::Flow)); }));
  int waits = 0;
  for (const auto& e : timeline)
    if (e.value("name", "") == "DATA_WAIT") {
      ++waits;
      CHECK(e["ts"].get<double>() == 0);
    }
  CHECK(waits == 8);
  // Compute-bound: the loader keeps up and nobody waits.
  const auto fast = predicted(scenario("storage: {backend: local_ssd}\n"), Fidelity::Step);
  CHECK(fast["data_pipeline"]["steady_state"]["data_wait_s"].get<double>() == 0);
  CHECK(fast["data_pipeline"]["steady_state"]["limited_by"] == "compute");
}

TEST_CASE("storage: throughput-bound iteration is N x r x s / B", "[storage]") {
  // N = 2 nodes, r = 256 images per node per iteration, s = 120 kB, B = 100 MB/s shared: 0.6144 s.
  const std::string st =
      "storage: {backend: azure_files, file_size: 120 kB, bandwidth: 100 MB/s, iops: 1e9, request_latency: 0,"
      " decode_cpu_per_image: 0}\n";
  const double bound = 2 * 256 * 120e3 / 100e6;
  CHECK(demand(scenario(st)).steady.load_s == Approx(bound).epsilon(1e-12));
  // Through the simulator, where the nodes' reads share the service, in both fidelities: within 1 %.
  for (Fidelity f : {Fidelity::Flow, Fidelity::Step}) {
    INFO(to_string(f));
    const auto j = predicted(scenario(st), f);
    CHECK(j["iteration_time_s"].get<double>() == Approx(bound).epsilon(0.01));
    CHECK(j["data_pipeline"]["steady_state"]["limited_by"] == "storage_bandwidth");
    CHECK(j["data_pipeline"]["steady_state"]["storage_is_bottleneck"] == true);
    CHECK(j["data_pipeline"]["steady_state"]["storage_throughput_bytes_per_s"].get<double>() ==
          Approx(100e6).epsilon(0.01));
    CHECK(j["data_pipeline"]["steady_state"]["storage_throughput_limit_bytes_per_s"].get<double>() == 100e6);
  }
  // Twice the servers of a per-server file system halve the bound.
  const auto per_server = [&](int servers) {
    return demand(scenario("storage: {backend: parallel_fs, servers: " + std::to_string(servers) +
                           ", file_size: 120 kB, bandwidth: 100 MB/s, iops: 1e9, request_latency: 0}\n"))
        .steady.bandwidth_s;
  };
  CHECK(per_server(2) == Approx(2 * per_server(4)));
  // ... in the simulator too, where every node reads from every server.
  const auto simulated = [&](int servers) {
    return predicted(scenario("storage: {backend: parallel_fs, servers: " + std::to_string(servers) +
                              ", file_size: 120 kB, bandwidth: 25 MB/s, iops: 1e9, request_latency: 0,"
                              " decode_cpu_per_image: 0}\n"),
                     Fidelity::Flow)["iteration_time_s"]
        .get<double>();
  };
  CHECK(simulated(2) == Approx(2 * 256 * 120e3 / (2 * 25e6)).epsilon(0.01));
  CHECK(simulated(4) == Approx(2 * 256 * 120e3 / (4 * 25e6)).epsilon(0.01));
}

TEST_CASE("storage: unlimited storage gives the synthetic-data result", "[storage]") {
  for (Fidelity f : {Fidelity::Flow, Fidelity::Step}) {
    INFO(to_string(f));
    const auto synthetic = predicted(scenario(""), f);
    const auto unlimited = predicted(scenario(kUnlimited), f);
    CHECK(unlimited["iteration_time_s"].get<double>() ==
          Approx(synthetic["iteration_time_s"].get<double>()).epsilon(1e-12));
    CHECK(unlimited["images_per_sec"].get<double>() ==
          Approx(synthetic["images_per_sec"].get<double>()).epsilon(1e-12));
    CHECK(unlimited["epoch_time_s"].get<double>() == Approx(synthetic["epoch_time_s"].get<double>()).epsilon(1e-9));
    CHECK(unlimited["time_to_train_s"].get<double>() ==
          Approx(synthetic["time_to_train_s"].get<double>()).epsilon(1e-9));
    CHECK(unlimited["exposed_communication_s"].get<double>() ==
          Approx(synthetic["exposed_communication_s"].get<double>()).epsilon(1e-9));
    CHECK(unlimited["collectives"].size() == synthetic["collectives"].size());
    CHECK(unlimited["data_pipeline"]["steady_state"]["data_wait_s"].get<double>() == 0);
    CHECK(unlimited["data_pipeline"]["steady_state"]["limited_by"] == "compute");
    CHECK(synthetic["data_pipeline"]["backend"] == "synthetic");
    CHECK(synthetic["data_pipeline"]["steady_state"]["epoch_time_s"] == synthetic["epoch_time_s"]);
  }
}

TEST_CASE("storage: with the blobfuse cache, epochs >= 2 run at local-SSD speed", "[storage]") {
  // A slow blob account (epoch 1 storage-bound), then the local SSD.
  const std::string common = ", file_size: 110 kB, decode_cpu_per_image: 4 ms}\n";
  const Scenario cached = scenario("storage: {backend: blobfuse, cache: true, bandwidth: 100 MB/s" + common);
  CHECK(demand(cached).first.source == "blobfuse");
  CHECK(demand(cached).steady.source == "local_ssd");
  for (Fidelity f : {Fidelity::Step, Fidelity::Flow}) {
    INFO(to_string(f));
    const auto c = predicted(cached, f)["data_pipeline"];
    const auto u = predicted(scenario("storage: {backend: blobfuse, cache: false, bandwidth: 100 MB/s" + common),
                             f)["data_pipeline"];
    const auto l = predicted(scenario("storage: {backend: local_ssd" + common), f)["data_pipeline"];
    CHECK(c["first_epoch"]["iteration_time_s"].get<double>() ==
          Approx(u["first_epoch"]["iteration_time_s"].get<double>()).epsilon(1e-9));
    CHECK(c["first_epoch"]["limited_by"] == "storage_bandwidth");
    CHECK(c["steady_state"]["source"] == "local_ssd");
    CHECK(c["steady_state"]["iteration_time_s"].get<double>() ==
          Approx(l["steady_state"]["iteration_time_s"].get<double>()).margin(1e-9));
    CHECK(c["steady_state"]["epoch_time_s"].get<double>() ==
          Approx(l["steady_state"]["epoch_time_s"].get<double>()).epsilon(1e-9));
    CHECK(c["steady_state"]["iteration_time_s"].get<double>() < c["first_epoch"]["iteration_time_s"].get<double>());
    CHECK(u["steady_state"]["iteration_time_s"] == u["first_epoch"]["iteration_time_s"]);
  }
  // Time to train (3 epochs) = epoch 1 + 2 steady epochs.
  const auto j = predicted(scenario("storage: {backend: blobfuse, bandwidth: 100 MB/s" + common), Fidelity::Step);
  const auto& d = j["data_pipeline"];
  CHECK(d["cache"] == true);  // blobfuse caches unless told otherwise (catalog cache_default)
  CHECK(j["time_to_train_s"].get<double>() ==
        Approx(d["first_epoch"]["epoch_time_s"].get<double>() + 2 * d["steady_state"]["epoch_time_s"].get<double>()));
  CHECK(j["epoch_time_s"] == d["steady_state"]["epoch_time_s"]);
}

TEST_CASE("storage: many small files and record files differ by request latency x requests / readers", "[storage]") {
  // Bandwidth and IOPS out of the way; 5 ms per request, 8 readers per node; 128 MiB record files.
  const std::string common =
      "bandwidth: 1000 TB/s, iops: 1e15, request_latency: 5 ms, reader_threads: 8, dataset_size: 128 GiB,"
      " decode_cpu_per_image: 0";
  const Scenario files_s = scenario("storage: {backend: nfs, format: files, " + common + "}\n");
  const Scenario records_s =
      scenario("storage: {backend: nfs, format: records, record_size: 128 MiB, " + common + "}\n");
  const DataPipeline files = demand(files_s), records = demand(records_s);
  const double image_bytes = 128.0 * (1 << 30) / 1281167;
  const double r_files = 256, r_records = 256 * image_bytes / (128.0 * (1 << 20));
  CHECK(files.requests_per_batch_node == r_files);
  CHECK(records.requests_per_batch_node == Approx(r_records));
  CHECK(files.steady.io_s - records.steady.io_s == Approx((r_files - r_records) * 5e-3 / 8));
  // Without prefetching the GPUs wait for every load: the simulated waits differ by the same amount.
  for (Fidelity f : {Fidelity::Step, Fidelity::Flow}) {
    INFO(to_string(f));
    const auto wait = [&](const std::string& format) {
      return predicted(scenario("storage: {backend: nfs, prefetch_depth: 0, " + format + common + "}\n"),
                       f)["data_pipeline"]["steady_state"]["data_wait_s"]
          .get<double>();
    };
    CHECK(wait("format: files, ") - wait("format: records, record_size: 128 MiB, ") ==
          Approx((r_files - r_records) * 5e-3 / 8).epsilon(1e-6));
  }
  // With prefetching, files at 0.16 s of latency per batch stay hidden behind ~0.23 s of training.
  CHECK(predicted(files_s, Fidelity::Step)["data_pipeline"]["steady_state"]["limited_by"] == "compute");
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

TEST_CASE("storage: reads that overlap the gradients' all-reduce slow it on a shared Ethernet NIC", "[storage]") {
  // 1 MB files: 256 MB per node-batch, 0.2 s on the 10 Gb/s NIC, long enough to meet the backward pass's
  // all-reduce. Storage and its servers are not the limit; the NIC is.
  const std::string st =
      "storage: {backend: nfs, servers: 8, file_size: 1 MB, iops: 1e9, request_latency: 0, bandwidth: 100 GB/s,"
      " decode_cpu_per_image: 0}\n";
  const auto cluster = [](const std::string& sku, const std::string& fabric) {
    return "cluster: {sku: " + sku + ", nodes: 2, fabric: " + fabric +
           "}\nmodel: {name: resnet50, batch_per_gpu: 64}\ntraining: {epochs: 1}\n";
  };
  for (Fidelity f : {Fidelity::Flow, Fidelity::Step}) {
    INFO(to_string(f));
    const auto synthetic = predicted(scenario("", cluster("NC24s_v3", "ethernet")), f);
    const auto loaded = predicted(scenario(st, cluster("NC24s_v3", "ethernet")), f);
    const auto& d = loaded["data_pipeline"];
    const double D = d["batch_bytes_per_node"].get<double>(), G = d["nic_gradient_bytes_per_iteration"].get<double>();
    // The NIC carries both every iteration: no iteration can be shorter than (D + G) / NIC.
    CHECK(loaded["iteration_time_s"].get<double>() >= (D + G) / 1.25e9 * (1 - 1e-9));
    // The training part itself got longer than with synthetic data: its gradients waited for the reads.
    CHECK(d["synthetic_iteration_s"].get<double>() == Approx(synthetic["iteration_time_s"].get<double>()));
    CHECK(d["train_iteration_s"].get<double>() > synthetic["iteration_time_s"].get<double>() * 1.01);
    CHECK(d["steady_state"]["data_wait_s"].get<double>() == 0);
    CHECK(d["steady_state"]["limited_by"] == "nic");
    // The NIC's link load counts both: gradients and one batch of reads per iteration.
    CHECK(loaded["bottleneck"]["link"] == "switch0->n0.eth0");
    CHECK(loaded["bottleneck"]["bytes"].get<double>() == Approx(D + G));
    // On InfiniBand the gradients take the other NIC: training is as fast as with synthetic data.
    const auto ib_synthetic = predicted(scenario("", cluster("NC24rs_v3", "infiniband")), f);
    const auto ib = predicted(scenario(st, cluster("NC24rs_v3", "infiniband")), f);
    CHECK(ib["data_pipeline"]["train_iteration_s"].get<double>() ==
          Approx(ib_synthetic["iteration_time_s"].get<double>()).epsilon(1e-9));
    CHECK(ib["data_pipeline"]["steady_state"]["limited_by"] == "compute");
  }
}

TEST_CASE("storage: local backends do not touch the NIC, and check prints the resolved section", "[storage]") {
  const Scenario s = scenario("storage: {backend: local_ssd}\n");
  CHECK(demand(s).steady.nic_s == 0);
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
