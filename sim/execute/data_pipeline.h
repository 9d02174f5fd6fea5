// The input pipeline (issue 8): each node's data loader reads its share of every batch from the storage
// backend and decodes it on the node's vCPUs, feeding the GPUs through a bounded prefetch queue. Shared by
// both fidelities: the simulated training iteration (flow or step) gives the compute-and-gradient time and
// the gradient bytes on each node's NIC; this model puts the loader beside it.
//
// The model, per node and per batch (B images = GPUs per node x batch per GPU, D bytes, R requests):
//   bandwidth_s = D / (the node's share of the backend bandwidth)      shared: B_total / nodes,
//   iops_s      = R / (the node's share of the backend IOPS)           per_server: servers x B / nodes,
//                                                                      per_node: B
//   nic_s       = (D + G) / NIC, network backends only; G = gradient bytes into the node over the same
//                 (Ethernet) NIC in one iteration, 0 where gradients use InfiniBand (the graph's fabric NIC)
//   latency_s   = R x request_latency / reader_threads   (reader_threads synchronous readers in parallel:
//                 each waits request_latency per request, the bytes share the bandwidth: the terms add)
//   io_s        = max(bandwidth_s, iops_s, nic_s) + latency_s
//   decode_s    = B x decode_cpu_per_image / vCPUs
//   load_s      = max(io_s, decode_s)                  (reading and decoding overlap across readers)
//   iteration   = max(train_s, load_s) with a prefetch queue (depth >= 1), train_s + load_s without (0)
//   data wait   = iteration - train_s
// R is B for files (one request per image file) and B x image bytes / record_size for records (one request
// per record file). The queue is deterministic here: any depth >= 1 overlaps loading with compute
// completely; deeper queues absorb jitter this model does not represent. Each epoch starts with an empty
// queue, so the first batch of every epoch waits load_s once. With a cache (blobfuse), epoch 1 reads the
// backend and epochs >= 2 read the cache backend (the node's local SSD) with its limits.
#pragma once

#include <cstdint>
#include <string>

#include "load/catalog.h"
#include "load/scenario.h"

namespace ringsim {

// The node NIC that network storage reads cross.
struct NicShare {
  double bandwidth = 0;       // bytes/s into the node (the SKU's Ethernet)
  double gradient_bytes = 0;  // gradient bytes into the busiest node over that NIC in one iteration
  bool shared = false;        // the NIC also carries gradients (Ethernet fabric, more than one node)
};

struct PipelineEpoch {
  std::string source;  // the backend read in this epoch
  double bandwidth_s = 0, iops_s = 0, nic_s = 0, latency_s = 0, io_s = 0, decode_s = 0;
  double load_s = 0;                    // one node-batch
  double iteration_s = 0;               // with the training iteration
  double data_wait_s = 0;               // per iteration
  double storage_throughput = 0;        // bytes/s all nodes read
  double storage_throughput_limit = 0;  // bytes/s the backend allows all nodes together
  std::string limited_by;  // "compute", "storage_bandwidth", "storage_iops", "request_latency", "nic", "decode_cpu"
  double epoch_time_s = 0;
};

struct DataPipeline {
  bool active = false;  // false: synthetic data, no input pipeline
  std::string backend = "synthetic";
  std::string format;
  bool cache = false;
  int prefetch_depth = 0, reader_threads = 0;
  double image_bytes = 0;
  double batch_bytes_per_node = 0;     // D
  double requests_per_batch_node = 0;  // R
  double train_iteration_s = 0;        // the simulated iteration without data loading
  NicShare nic;
  PipelineEpoch first, steady;  // epoch 1; epochs >= 2 (the same as epoch 1 without a cache)
};

// Evaluates the pipeline for `s` (which must have a storage section) beside a training iteration of
// `train_iteration_s` seconds.
DataPipeline evaluate_data_pipeline(const Catalog& catalog, const Scenario& s, double train_iteration_s,
                                    const NicShare& nic, std::int64_t iterations_per_epoch);

// True when the limiting factor is the storage (not compute, not decoding).
bool storage_is_bottleneck(const PipelineEpoch& e);

}  // namespace ringsim
