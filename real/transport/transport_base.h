// What every real transport shares: element types and host reduction, a deadline for waits, and the
// buffers of the one collective member this process runs.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

#include "collective/collective.h"

namespace ringsim::real {

enum class DataType { Float32, Int32, Float64 };
std::size_t element_size(DataType t);
std::string_view to_string(DataType t);           // nccl-tests names: float, int32, double
DataType parse_data_type(std::string_view name);  // throws std::invalid_argument

// dst[i] += src[i] over `bytes` bytes of elements of type `t`, on the CPU (vectorised by the compiler).
void host_reduce_sum(void* dst, const void* src, std::size_t bytes, DataType t);

// Keeps the calling CPU core busy for `seconds` (the host compute stand-in).
void busy_for(double seconds);

// The host compute stand-in: `seconds` of a layer's work, as a busy loop (a CPU computing) or asleep (a
// GPU computing, which leaves the host's cores to the communication). Asleep, stand-ins that follow one
// another without a pause (a backward pass's layers) end on a chain of absolute deadlines, so that the
// wake-up latency of each sleep (tens of microseconds on a VM) does not add up over a pass.
class ComputeStandIn {
 public:
  enum class Mode { Spin, Sleep };
  explicit ComputeStandIn(Mode m = Mode::Spin) : mode_(m) {}
  void run(double seconds);

 private:
  using Clock = std::chrono::steady_clock;
  Mode mode_;
  Clock::time_point planned_end_{};
};

// A wait that did not complete in time: names the rank, the step and the peers it waited for.
struct TimeoutError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class Deadline {
 public:
  explicit Deadline(double seconds)
      : end_(std::chrono::steady_clock::now() +
             std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(seconds))) {}
  bool passed() const { return std::chrono::steady_clock::now() > end_; }

 private:
  std::chrono::steady_clock::time_point end_;
};

// The member's buffers: the collective's Space::Device buffer and its Space::Host staging buffer (for
// the host transport both live in host memory).
struct MemberBuffers {
  void* device = nullptr;
  void* host = nullptr;
  std::size_t bytes = 0;
  void* at(collective::Space s, std::uint64_t offset) const {
    return static_cast<char*>(s == collective::Space::Device ? device : host) + offset;
  }
};

}  // namespace ringsim::real
