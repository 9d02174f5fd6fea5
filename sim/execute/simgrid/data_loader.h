// The input pipeline as SimGrid activities (issue 8), beside the simulated training iterations. Every
// node's loader reads its share of each batch from the storage hosts and decodes it, ahead of the GPUs by
// at most the prefetch depth; a GPU that finds its node's queue empty waits.
//
// The platform it adds to the training platform:
//   - one host and one link per scaling unit of each storage source (a node's disk, the shared service,
//     each storage server): the host's speed is the unit's IOPS (one flop per request), the link's
//     bandwidth the unit's throughput; reads flow from the host over that link, then, for network storage,
//     over the node's Ethernet NIC, the same SimGrid link its gradients cross where the fabric is Ethernet;
//   - one decode host per node whose speed is the node's vCPUs (one flop per CPU-second).
// One batch of a node: R x request_latency / reader_threads of synchronous request latency, then the
// requests on the storage hosts and the bytes over the links (one flow per storage unit: one connection,
// as an NFS or SMB mount has), while the decode runs from the start (images stream from reading to
// decoding, so the two overlap).
#pragma once

#include <cstdint>
#include <simgrid/s4u.hpp>
#include <vector>

#include "execute/simgrid/data_pipeline.h"

namespace ringsim {

// One node the loader feeds.
struct LoaderNode {
  simgrid::s4u::Host* host = nullptr;          // where batches arrive: the node's host memory
  std::vector<simgrid::s4u::LinkInRoute> nic;  // the links network storage crosses into the node
  int consumers = 1;                           // rank actors that take each batch
};

class DataLoaderSim {
 public:
  // `sources`: what each phase reads (epoch 1, then the cache). `share`: the part of the cluster the
  // simulated nodes stand for: 1 when every node is simulated; 1/nodes when node 0 stands for all of them
  // (step fidelity), which divides the shared and per-server limits among the nodes.
  DataLoaderSim(const DataPipeline& demand, std::vector<StorageSource> sources, int prefetch_depth,
                double decode_cpu_s_per_batch, double vcpus, double share);

  // The storage and decode hosts, their links and the routes into each node, in `zone` before it is
  // sealed. With `gradient_source`, also a host from which gradient traffic into each node can be replayed
  // over the node's NIC links (gradient_traffic()).
  void build(simgrid::s4u::NetZone* zone, std::vector<LoaderNode> nodes, bool gradient_source);
  // One loader actor per node (before the engine runs). A loader keeps loading until its phase ends, so
  // that it runs beside every iteration of the phase.
  void start();
  // Ends the current phase: returns once every loader has finished the batch it was loading.
  void end_phase();
  // After the last phase: waits for the loads in flight (nothing may be left running when the engine
  // stops).
  void finish();
  // Phase p (0: epoch 1; 1: epochs served by the cache) starts now, with empty queues.
  void begin_phase(int phase);
  // A rank of `node` takes batch `batch` of the current phase, waiting until it is loaded; the wait.
  double take(int node, int batch);
  // `bytes` of gradients into `node` over its NIC, paced to take `seconds` when nothing else uses the NIC
  // (longer where storage reads hold part of it); the caller waits for the comm. Null when there is
  // nothing to send or no gradient source.
  simgrid::s4u::CommPtr gradient_traffic(int node, double bytes, double seconds);

  std::int64_t activities() const { return activities_; }

 private:
  struct Unit {
    simgrid::s4u::Host* host = nullptr;
    int node = -1;  // per-node units: the node it serves; -1: every node
  };
  struct NodeState {
    int ready = 0, consumed = 0, requested = 0;
    std::vector<int> takers;
  };
  void load(int phase, int node);
  void loader(int node);

  DataPipeline demand_;
  std::vector<StorageSource> sources_;
  int depth_;
  double decode_s_cpu_, vcpus_, share_;
  std::vector<LoaderNode> nodes_;
  std::vector<std::vector<Unit>> units_;  // per phase
  std::vector<simgrid::s4u::Host*> decode_hosts_;
  simgrid::s4u::Host* gradient_host_ = nullptr;
  std::vector<NodeState> state_;
  int phase_ = -1;
  bool stopping_ = false;
  int idle_ = 0;  // loaders that stopped in this phase
  simgrid::s4u::MutexPtr mutex_;
  simgrid::s4u::ConditionVariablePtr changed_;
  std::int64_t activities_ = 0;
};

}  // namespace ringsim
