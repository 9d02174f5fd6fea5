// The simulated run's input pipeline (a scenario's storage section): the loader beside the iterations, the
// NIC its reads share with the gradients on an Ethernet fabric, and the epochs it makes of the iterations.
#include <algorithm>
#include <functional>
#include <memory>
#include <simgrid/s4u.hpp>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "execute/simgrid/training_run.h"

namespace ringsim::training_detail {

void TrainingRun::plan_data_pipeline() {
  demand_ = data_pipeline_demand(catalog_, s_, nic_share());
  first_loaded_ = 1;
  per_phase_ = loaded_iterations_per_epoch(s_);
  sources_ = storage_sources(catalog_, s_);
  phases_ = static_cast<int>(sources_.size());
  if (nic_share().shared) {
    const TopologyGraph& g = topo_.graph();
    for (int n = 0; n < topo_.nodes(); ++n) {  // an Ethernet fabric: one NIC per node
      const VertexId nic = topo_.fabric_nics(n).front();
      int found = -1;
      for (auto [e, end] = boost::in_edges(nic, g); e != end; ++e)
        if (found < 0 && g[boost::source(*e, g)].kind == DeviceKind::FabricSwitch) found = cm_.edge_index(*e);
      nic_edges_.push_back(found);
    }
  }
  reported_ = iterations() - 1;
  if (iterations() != simulated_iterations(catalog_, s_)) throw std::logic_error("simulated iteration count");
}

NicShare TrainingRun::nic_share() const {
  NicShare nic;
  nic.bandwidth = catalog_.sku(s_.cluster.sku).ethernet_bandwidth;
  nic.shared = s_.cluster.fabric == FabricKind::Ethernet && topo_.nodes() > 1;
  return nic;
}

void TrainingRun::add_loader(sg4::NetZone* zone, PlatformBuilder& builder,
                             const std::function<sg4::Host*(VertexId)>& host) {
  const SkuSpec& sku = catalog_.sku(s_.cluster.sku);
  const bool flow = fidelity_ == Fidelity::Flow;
  const int nodes = flow ? s_.cluster.nodes : 1;  // the step fidelity's node 0 stands for every node
  std::vector<LoaderNode> feed;
  for (int n = 0; n < nodes; ++n) {
    LoaderNode ln;
    ln.host = host(topo_.host_memory(n, 0));
    ln.consumers = flow ? s_.cluster.gpus_per_node : 1;
    const int e = nic_edge(n);
    if (e >= 0) {
      Path p;
      p.edges = {e};
      ln.nic = builder.route_links(p, false);
    } else {
      // The node's Ethernet NIC carries no gradients: a link of its own.
      ln.nic = {sg4::LinkInRoute(zone->create_link("n" + std::to_string(n) + ".ethernet", sku.ethernet_bandwidth)
                                     ->set_latency(catalog_.link(sku.ethernet_link).latency)
                                     ->seal())};
    }
    feed.push_back(std::move(ln));
  }
  const double images = s_.cluster.gpus_per_node * s_.samples_per_gpu_step();
  loader_ = std::make_unique<DataLoaderSim>(demand_, sources_, s_.storage->prefetch_depth,
                                            images * s_.storage->decode_cpu_per_image_s, sku.vcpus,
                                            flow ? 1.0 : 1.0 / s_.cluster.nodes);
  loader_->build(zone, std::move(feed), !flow && nic_edge(0) >= 0);
}

void TrainingRun::apply_data_pipeline(Prediction& p, double images) {
  NicShare nic = nic_share();
  if (nic.shared) {
    for (int n = 0; n < (fidelity_ == Fidelity::Flow ? s_.cluster.nodes : 1); ++n)
      nic.gradient_bytes = std::max(nic.gradient_bytes, edge_bytes_[nic_edge(n)]);
  }
  DataPipeline d = data_pipeline_demand(catalog_, s_, nic);
  // The reported iteration's link loads include one batch of reads into each node over a NIC that is
  // a graph edge (an Ethernet fabric's).
  if (nic.shared && sources_.back().network)
    for (int n = 0; n < (fidelity_ == Fidelity::Flow ? s_.cluster.nodes : 1); ++n)
      edge_bytes_[nic_edge(n)] += d.batch_bytes_per_node;
  d.simulated_iterations_per_epoch = per_phase_;
  d.synthetic_iteration_s = iteration_end_[0];
  auto phase = [&](int ph) {
    SimulatedEpoch e;
    const int first = first_loaded_ + ph * per_phase_, last = first + per_phase_ - 1;
    e.first_iteration_s = iteration_end_[first] - phase_start_[ph];
    e.iteration_s = (iteration_end_[last] - iteration_end_[last - kSteadyIterations]) / kSteadyIterations;
    for (int k = last - kSteadyIterations + 1; k <= last; ++k) e.data_wait_s += data_wait_[k] / kSteadyIterations;
    return e;
  };
  finish_epoch(d.first, d, s_.cluster.nodes, phase(0), p.iterations_per_epoch);
  finish_epoch(d.steady, d, s_.cluster.nodes, phase(phases_ - 1), p.iterations_per_epoch);
  d.train_iteration_s = d.steady.iteration_s - d.steady.data_wait_s;
  p.data_pipeline = d;
  p.iteration_time_s = d.steady.iteration_s;
  p.exposed_communication_s = std::max(0.0, d.train_iteration_s - p.compute_time_s);
  p.images_per_sec = images / p.iteration_time_s;
  p.images_per_sec_per_gpu = p.images_per_sec / p.gpus;
  p.scaling_efficiency = p.images_per_sec_per_gpu / p.single_gpu_images_per_sec;
  p.epoch_time_s = d.steady.epoch_time_s;
  p.time_to_train_s = d.first.epoch_time_s + (s_.training.epochs - 1) * d.steady.epoch_time_s;
}

}  // namespace ringsim::training_detail
