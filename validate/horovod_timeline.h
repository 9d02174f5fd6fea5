// Reading a Horovod timeline (the Chrome trace HOROVOD_TIMELINE writes): the fused allreduces and the
// iteration cadence, to compare with a prediction for the same scenario.
#pragma once

#include <string>
#include <vector>

namespace ringsim {

struct TimelineBuffer {
  double start_s = 0, end_s = 0;  // the ALLREDUCE span shared by the buffer's tensors
  int tensors = 0;
};

struct TimelineSummary {
  std::vector<TimelineBuffer> buffers;  // in start order
  int tensors = 0;                      // distinct tensor rows
  int iterations = 0;                   // how often the most frequent tensor was all-reduced
  double iteration_s = 0;               // median time between successive allreduces of one tensor (0: one iteration)
  bool truncated = false;               // the file ended mid-array (a run stopped or cut): read to its last event
  double buffers_per_iteration() const { return iterations ? static_cast<double>(buffers.size()) / iterations : 0; }
  double mean_buffer_s() const;
};

// Throws InputError naming the file when it is not a Horovod/Chrome trace.
TimelineSummary read_horovod_timeline(const std::string& file);

}  // namespace ringsim
