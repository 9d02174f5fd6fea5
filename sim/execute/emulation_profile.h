// What the emulated `ringsim-real` (SMPI build) must charge in simulated time that the SimGrid network
// does not: the costs `predict` takes from CommModel for reductions, optimizer updates, host staging
// copies, fusion-buffer copies and the per-collective library overhead. `ringsim emulate` writes it from
// the scenario's CommModel; the emulated backend reads it (RINGSIM_EMULATION_PROFILE), so both sides
// charge the same figures.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "collective/collective.h"

namespace ringsim {

class CommModel;

struct EmulationProfile {
  struct Member {
    double reduce_device_bytes_per_s = 0;  // reductions into the member's Space::Device buffer
    double reduce_host_bytes_per_s = 0;    // ... into its Space::Host buffer
    double update_bytes_per_s = 0;         // optimizer update (parameter servers)
    double staging_latency_s = 0;          // a copy between the member's two spaces
    double staging_bytes_per_s = 0;
    int node = 0;                         // messages from a member of the same node are copied out
    double receive_copy_bytes_per_s = 0;  // of shared memory at this rate (0: none; CommModel::receive_copy_time)
    // A device reduction reduces the message as it arrives: only this much of it remains after the
    // receive (0: all of it; CommModel::received_reduce_time).
    std::uint64_t reduce_device_slice_bytes = 0;
    double reduce_device_s(std::uint64_t bytes) const;
  };
  // A message between two members in the data space: its path's latency (overhead included) and its
  // narrowest effective bandwidth, which a protocol's step floor and bandwidth share are charged against.
  struct Pair {
    double latency_s = 0;
    double bytes_per_s = 0;
  };
  std::string library;
  collective::Space space = collective::Space::Device;  // where the library keeps collective data
  double collective_overhead_s = 0;
  std::vector<Pair> pairs;             // members x members, row = sender
  double fusion_copy_bytes_per_s = 0;  // one fusion-buffer copy (in or out)
  std::vector<Member> members;

  static EmulationProfile from(CommModel& cm, int members);
  // What member `dst` spends copying the message `t` out of shared memory (CommModel::receive_copy_time).
  double receive_copy_s(const collective::Transfer& t) const;
  // What the collective's protocol adds to message `t` beyond the emulated network's time: the rest of its
  // step floor past the path's latency, and its bytes' time beyond the protocol's bandwidth share.
  double protocol_s(const collective::Protocol& p, const collective::Transfer& t) const;
  std::string to_json() const;
  // Throws std::runtime_error naming `file` on anything malformed.
  static EmulationProfile parse(const std::string& text, const std::string& file);
};

}  // namespace ringsim
