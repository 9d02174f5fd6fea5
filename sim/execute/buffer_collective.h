// The one place that maps a scenario's communication strategy to the collective run for one fusion
// buffer: predict (both fidelities), the work estimate, and ringsim-real train (real and emulated) all
// call it, so they run the same algorithm on the same members.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "collective/collective.h"
#include "load/scenario.h"

namespace ringsim {

struct BufferCollectiveLayout {
  int workers = 0;                                      // GPU ranks, node-major
  collective::Space space = collective::Space::Device;  // the library's data path
  std::vector<int> ring_order;                          // ring: the ring through every worker (empty: index order)
  std::vector<int> local_order;                         // hierarchical: the ring inside each node (empty: index order)
};

// `shards` (parameter_server only): the buffer's bytes on each server.
std::unique_ptr<collective::Collective> make_buffer_collective(const Scenario& s, const BufferCollectiveLayout& layout,
                                                               std::uint64_t bytes, int element_bytes,
                                                               const std::vector<std::uint64_t>& shards = {});

}  // namespace ringsim
