// The input pipeline (issue 8): each node's data loader reads its share of every batch from the storage
// backend and decodes it on the node's vCPUs, feeding the GPUs through a bounded prefetch queue. The
// loader runs as SimGrid activities beside the simulated training iterations (data_loader.h); this file
// holds what both need: the storage each epoch reads (the backend, then its cache), the demand one batch
// puts on each resource, and the summary of a simulated epoch.
//
// Demand per node and per batch (B images = GPUs per node x batch per GPU, D bytes, R requests), each as
// the time it takes at the node's share of the resource with nothing else running:
//   bandwidth_s = D / (the node's share of the backend bandwidth)      shared: B_total / nodes,
//   iops_s      = R / (the node's share of the backend IOPS)           per_server: servers x B / nodes,
//                                                                      per_node: B
//   nic_s       = (D + G) / NIC, network backends only; G = gradient bytes into the node over the same
//                 (Ethernet) NIC in one iteration, 0 where gradients use InfiniBand (the graph's fabric NIC)
//   latency_s   = R x request_latency / reader_threads   (reader_threads synchronous readers in parallel)
//   io_s        = max(bandwidth_s, iops_s, nic_s) + latency_s
//   decode_s    = B x decode_cpu_per_image / vCPUs
//   load_s      = max(io_s, decode_s)       (reading and decoding stream image by image: they overlap)
// R is B for files (one request per image file) and B x image bytes / record_size for records (one request
// per record file). The simulation gives the rest: how long an iteration takes with the loader beside it,
// how long the GPUs wait for data, and the epoch times; with nothing shared, an iteration takes
// max(train, load_s) with a prefetch queue (depth >= 1) and train + load_s without (depth 0).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "load/catalog.h"
#include "load/scenario.h"

namespace ringsim {

// The node NIC that network storage reads cross.
struct NicShare {
  double bandwidth = 0;       // bytes/s into the node (the SKU's Ethernet)
  double gradient_bytes = 0;  // gradient bytes into the busiest node over that NIC in one iteration
  bool shared = false;        // the NIC also carries gradients (Ethernet fabric, more than one node)
};

// The storage one epoch reads, with the limits of one scaling unit (a node, the service, a server).
struct StorageSource {
  std::string name;
  bool network = true;  // read over the node's Ethernet NIC
  StorageScaling scaling = StorageScaling::Shared;
  double bandwidth = 0, iops = 0, request_latency = 0;
  int servers = 1;  // per_server: the storage servers every node reads from
};

struct PipelineEpoch {
  std::string source;  // the backend read in this epoch
  // Demand of one node-batch (see above).
  double bandwidth_s = 0, iops_s = 0, nic_s = 0, latency_s = 0, io_s = 0, decode_s = 0;
  double load_s = 0;
  // Simulated.
  double first_iteration_s = 0;         // the epoch's first iteration: the queue starts empty
  double iteration_s = 0;               // steady state, with the training iteration
  double data_wait_s = 0;               // per steady-state iteration
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
  double batch_bytes_per_node = 0;         // D
  double requests_per_batch_node = 0;      // R
  int simulated_iterations_per_epoch = 0;  // iterations the simulation ran per distinct epoch
  double train_iteration_s = 0;            // the simulated steady-state iteration less its data wait
  double synthetic_iteration_s = 0;        // the same training with synthetic data (no reads on any NIC)
  NicShare nic;
  PipelineEpoch first, steady;  // epoch 1; epochs >= 2 (the same as epoch 1 without a cache)
};

// What `predict` simulates with a storage section: one iteration with synthetic data (training alone),
// then, for each distinct epoch (the backend's, then the cache's), one iteration that waits for the first
// batch, up to 8 more while a deeper queue fills, and kSteadyIterations whose mean is the steady state.
// Without a storage section, one iteration.
constexpr int kSteadyIterations = 3;
int loaded_iterations_per_epoch(const Scenario& s);
int simulated_iterations(const Catalog& catalog, const Scenario& s);

// The storage of epoch 1 and, with a cache, of epochs >= 2 (`s` must have a storage section).
std::vector<StorageSource> storage_sources(const Catalog& catalog, const Scenario& s);

// Node-batch size and requests, decode time, and each epoch's demand terms for `s`.
DataPipeline data_pipeline_demand(const Catalog& catalog, const Scenario& s, const NicShare& nic);

// What the simulation measured in one epoch's phase.
struct SimulatedEpoch {
  double first_iteration_s = 0;  // from the start of the epoch (empty queue) to the end of its first iteration
  double iteration_s = 0;        // a steady-state iteration, data wait included
  double data_wait_s = 0;        // the GPUs' wait for data in that iteration
};

// Fills the simulated figures of `e`: iteration and epoch times, throughput reached, and what limits the
// epoch: when the GPUs did not wait, compute, or the NIC where reads sharing it with gradients made
// training more than 0.5 % slower than with synthetic data; otherwise the largest demand term.
void finish_epoch(PipelineEpoch& e, const DataPipeline& p, int nodes, const SimulatedEpoch& sim,
                  std::int64_t iterations_per_epoch);

// True when the limiting factor is the storage (not compute, not decoding).
bool storage_is_bottleneck(const PipelineEpoch& e);

}  // namespace ringsim
