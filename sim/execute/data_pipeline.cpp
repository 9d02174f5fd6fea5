#include "execute/data_pipeline.h"

#include <algorithm>
#include <stdexcept>

namespace ringsim {

namespace {

struct Limits {
  double bandwidth = 0, iops = 0, latency = 0;  // per node
  double aggregate_bandwidth = 0;               // all nodes together
  bool network = true;
};

Limits node_limits(const StorageBackendSpec& b, const StorageConfig& c, int nodes, bool overridden) {
  // Scenario overrides apply to the backend the scenario names, not to its cache.
  const double bw = overridden ? c.bandwidth : b.bandwidth;
  const double iops = overridden ? c.iops : b.iops;
  Limits l;
  l.latency = overridden ? c.request_latency : b.request_latency;
  l.network = b.kind == StorageKind::Network;
  switch (b.scaling) {
    case StorageScaling::PerNode:
      l.bandwidth = bw;
      l.iops = iops;
      l.aggregate_bandwidth = bw * nodes;
      break;
    case StorageScaling::Shared:
      l.bandwidth = bw / nodes;
      l.iops = iops / nodes;
      l.aggregate_bandwidth = bw;
      break;
    case StorageScaling::PerServer:
      l.bandwidth = bw * c.servers / nodes;
      l.iops = iops * c.servers / nodes;
      l.aggregate_bandwidth = bw * c.servers;
      break;
  }
  return l;
}

PipelineEpoch evaluate_epoch(const DataPipeline& p, const Limits& l, const StorageConfig& c, int nodes, double decode_s,
                             std::int64_t iterations) {
  PipelineEpoch e;
  const double D = p.batch_bytes_per_node, R = p.requests_per_batch_node;
  e.bandwidth_s = D / l.bandwidth;
  e.iops_s = R / l.iops;
  e.nic_s = l.network ? (D + (p.nic.shared ? p.nic.gradient_bytes : 0)) / p.nic.bandwidth : 0;
  e.latency_s = R * l.latency / c.reader_threads;
  e.io_s = std::max({e.bandwidth_s, e.iops_s, e.nic_s}) + e.latency_s;
  e.decode_s = decode_s;
  e.load_s = std::max(e.io_s, e.decode_s);
  e.iteration_s = c.prefetch_depth > 0 ? std::max(p.train_iteration_s, e.load_s) : p.train_iteration_s + e.load_s;
  e.data_wait_s = e.iteration_s - p.train_iteration_s;
  e.storage_throughput = nodes * D / e.iteration_s;
  e.storage_throughput_limit = l.aggregate_bandwidth;
  if (e.data_wait_s <= 0 || (c.prefetch_depth > 0 && e.load_s < p.train_iteration_s)) {
    e.limited_by = "compute";
  } else if (e.decode_s >= e.io_s) {
    e.limited_by = "decode_cpu";
  } else {
    const double transfer = std::max({e.bandwidth_s, e.iops_s, e.nic_s});
    if (e.latency_s > transfer)
      e.limited_by = "request_latency";
    else if (transfer == e.bandwidth_s)
      e.limited_by = "storage_bandwidth";
    else if (transfer == e.iops_s)
      e.limited_by = "storage_iops";
    else
      e.limited_by = "nic";
  }
  // The queue is empty at the start of every epoch: the first batch waits for one load.
  e.epoch_time_s = static_cast<double>(iterations) * e.iteration_s + e.load_s;
  return e;
}

}  // namespace

bool storage_is_bottleneck(const PipelineEpoch& e) { return e.limited_by != "compute" && e.limited_by != "decode_cpu"; }

DataPipeline evaluate_data_pipeline(const Catalog& catalog, const Scenario& s, double train_iteration_s,
                                    const NicShare& nic, std::int64_t iterations_per_epoch) {
  if (!s.storage) throw std::logic_error("evaluate_data_pipeline: the scenario has no storage section");
  const StorageConfig& c = *s.storage;
  const StorageBackendSpec* backend = catalog.find_storage_backend(c.backend);
  if (!backend) throw std::logic_error("unknown storage backend " + c.backend);
  const SkuSpec& sku = catalog.sku(s.cluster.sku);
  const int nodes = s.cluster.nodes;

  DataPipeline p;
  p.active = true;
  p.backend = c.backend;
  p.format = std::string(to_string(c.format));
  p.cache = c.cache;
  p.prefetch_depth = c.prefetch_depth;
  p.reader_threads = c.reader_threads;
  p.train_iteration_s = train_iteration_s;
  p.nic = nic;
  const double images = static_cast<double>(s.cluster.gpus_per_node) * s.model.batch_per_gpu;
  p.image_bytes = c.dataset_bytes / static_cast<double>(s.training.dataset_images);
  p.batch_bytes_per_node = images * p.image_bytes;
  p.requests_per_batch_node = c.format == DataFormat::Files ? images : p.batch_bytes_per_node / c.record_size;
  const double decode_s = images * c.decode_cpu_per_image_s / sku.vcpus;

  p.first = evaluate_epoch(p, node_limits(*backend, c, nodes, true), c, nodes, decode_s, iterations_per_epoch);
  p.first.source = c.backend;
  if (c.cache) {
    const StorageBackendSpec& cache = *catalog.find_storage_backend(backend->cache);
    p.steady = evaluate_epoch(p, node_limits(cache, c, nodes, false), c, nodes, decode_s, iterations_per_epoch);
    p.steady.source = cache.name;
  } else {
    p.steady = p.first;
  }
  return p;
}

}  // namespace ringsim
