#include "execute/simgrid/data_pipeline.h"

#include <algorithm>
#include <stdexcept>

namespace ringsim {

namespace {

// One node's share of a source's limits, and the whole cluster's bandwidth.
struct NodeShare {
  double bandwidth = 0, iops = 0, aggregate_bandwidth = 0;
};

NodeShare node_share(const StorageSource& src, int nodes) {
  switch (src.scaling) {
    case StorageScaling::PerNode:
      return {src.bandwidth, src.iops, src.bandwidth * nodes};
    case StorageScaling::Shared:
      return {src.bandwidth / nodes, src.iops / nodes, src.bandwidth};
    case StorageScaling::PerServer:
      break;
  }
  return {src.bandwidth * src.servers / nodes, src.iops * src.servers / nodes, src.bandwidth * src.servers};
}

PipelineEpoch epoch_demand(const DataPipeline& p, const StorageSource& src, int reader_threads, int nodes,
                           double decode_s) {
  const NodeShare l = node_share(src, nodes);
  PipelineEpoch e;
  e.source = src.name;
  const double D = p.batch_bytes_per_node, R = p.requests_per_batch_node;
  e.bandwidth_s = D / l.bandwidth;
  e.iops_s = R / l.iops;
  e.nic_s = src.network ? (D + (p.nic.shared ? p.nic.gradient_bytes : 0)) / p.nic.bandwidth : 0;
  e.latency_s = R * src.request_latency / reader_threads;
  e.io_s = std::max({e.bandwidth_s, e.iops_s, e.nic_s}) + e.latency_s;
  e.decode_s = decode_s;
  e.load_s = std::max(e.io_s, e.decode_s);
  e.storage_throughput_limit = l.aggregate_bandwidth;
  return e;
}

}  // namespace

int loaded_iterations_per_epoch(const Scenario& s) {
  return s.storage ? 1 + std::min(s.storage->prefetch_depth, 8) + kSteadyIterations : 0;
}

int simulated_iterations(const Catalog& catalog, const Scenario& s) {
  if (!s.storage) return 1;
  return 1 + static_cast<int>(storage_sources(catalog, s).size()) * loaded_iterations_per_epoch(s);
}

std::vector<StorageSource> storage_sources(const Catalog& catalog, const Scenario& s) {
  if (!s.storage) throw std::logic_error("storage_sources: the scenario has no storage section");
  const StorageConfig& c = *s.storage;
  const StorageBackendSpec* backend = catalog.find_storage_backend(c.backend);
  if (!backend) throw std::logic_error("unknown storage backend " + c.backend);
  // Scenario overrides apply to the backend the scenario names, not to its cache.
  auto source = [&](const StorageBackendSpec& b, bool overridden) {
    StorageSource src;
    src.name = b.name;
    src.network = b.kind == StorageKind::Network;
    src.scaling = b.scaling;
    src.bandwidth = overridden ? c.bandwidth : b.bandwidth;
    src.iops = overridden ? c.iops : b.iops;
    src.request_latency = overridden ? c.request_latency : b.request_latency;
    src.servers = b.scaling == StorageScaling::PerServer ? (overridden ? c.servers : b.default_servers) : 1;
    return src;
  };
  std::vector<StorageSource> out{source(*backend, true)};
  if (c.cache) out.push_back(source(*catalog.find_storage_backend(backend->cache), false));
  return out;
}

DataPipeline data_pipeline_demand(const Catalog& catalog, const Scenario& s, const NicShare& nic) {
  const std::vector<StorageSource> sources = storage_sources(catalog, s);
  const StorageConfig& c = *s.storage;
  const SkuSpec& sku = catalog.sku(s.cluster.sku);
  const int nodes = s.cluster.nodes;

  DataPipeline p;
  p.active = true;
  p.backend = c.backend;
  p.format = std::string(to_string(c.format));
  p.cache = c.cache;
  p.prefetch_depth = c.prefetch_depth;
  p.reader_threads = c.reader_threads;
  p.nic = nic;
  const double images = s.cluster.gpus_per_node * s.samples_per_gpu_step();
  p.image_bytes = c.dataset_bytes / static_cast<double>(s.training.dataset_images);
  p.batch_bytes_per_node = images * p.image_bytes;
  p.requests_per_batch_node = c.format == DataFormat::Files ? images : p.batch_bytes_per_node / c.record_size;
  const double decode_s = images * c.decode_cpu_per_image_s / sku.vcpus;
  p.first = epoch_demand(p, sources.front(), c.reader_threads, nodes, decode_s);
  p.steady = epoch_demand(p, sources.back(), c.reader_threads, nodes, decode_s);
  return p;
}

void finish_epoch(PipelineEpoch& e, const DataPipeline& p, int nodes, const SimulatedEpoch& sim,
                  std::int64_t iterations_per_epoch) {
  e.first_iteration_s = sim.first_iteration_s;
  e.iteration_s = sim.iteration_s;
  e.data_wait_s = sim.data_wait_s;
  e.storage_throughput = nodes * p.batch_bytes_per_node / e.iteration_s;
  e.epoch_time_s = e.first_iteration_s + static_cast<double>(iterations_per_epoch - 1) * e.iteration_s;
  if (e.data_wait_s <= 0) {
    const bool slowed = p.nic.shared && e.iteration_s > 1.005 * p.synthetic_iteration_s;
    e.limited_by = slowed ? "nic" : "compute";
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
}

bool storage_is_bottleneck(const PipelineEpoch& e) { return e.limited_by != "compute" && e.limited_by != "decode_cpu"; }

}  // namespace ringsim
