#include "execute/buffer_collective.h"

#include <stdexcept>

namespace ringsim {

std::unique_ptr<collective::Collective> make_buffer_collective(const Scenario& s, const BufferCollectiveLayout& layout,
                                                               std::uint64_t bytes, int element_bytes,
                                                               const std::vector<std::uint64_t>& shards) {
  const auto& c = s.communication;
  switch (c.strategy) {
    case Strategy::Ring:
      return collective::make_ring_allreduce(layout.workers, bytes, element_bytes, layout.space, layout.ring_order);
    case Strategy::Hierarchical:
      return collective::make_hierarchical_allreduce(s.cluster.nodes, s.cluster.gpus_per_node, bytes, element_bytes,
                                                     layout.space, layout.local_order, c.cross_node);
    case Strategy::HalvingDoubling:
      return collective::make_halving_doubling_allreduce(layout.workers, bytes, element_bytes, layout.space);
    case Strategy::ParameterServer:
      // Workers push from and pull into their GPU buffers; servers reduce in host memory.
      return collective::make_parameter_server_exchange(layout.workers, shards, collective::Space::Device);
  }
  throw std::logic_error("unknown strategy");
}

}  // namespace ringsim
