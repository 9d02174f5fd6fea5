// The interface every executor implements to run a collective's per-member program, and the one driver
// loop that runs it. SimGrid (sim/execute) implements it in virtual time; real/ with MPI, CUDA and NCCL.
#pragma once

#include "collective/collective.h"

namespace ringsim::collective {

class Transport {
 public:
  virtual ~Transport() = default;
  // Step `index` of the collective: post every receive, then every send of `step`.
  virtual void post(int index, const RankStep& step) = 0;
  // Block until all of step `index`'s sends and receives have completed.
  virtual void wait(int index, const RankStep& step) = 0;
  // Add a received span into the member's own buffer (Transfer::reduce).
  virtual void reduce(const Transfer& received) = 0;
  // Apply the optimizer to `bytes` of parameters (parameter servers).
  virtual void update(std::uint64_t bytes) = 0;
};

// Runs member `member` of `c` to completion over `t`.
inline void run_member(const Collective& c, int member, Transport& t) {
  RankStep step;
  for (int s = 0; s < c.steps(); ++s) {
    c.rank_step(member, s, step);
    if (step.sends.empty() && step.recvs.empty() && step.update_bytes == 0) continue;
    t.post(s, step);
    t.wait(s, step);
    for (const auto& r : step.recvs)
      if (r.reduce) t.reduce(r);
    if (step.update_bytes > 0) t.update(step.update_bytes);
  }
}

}  // namespace ringsim::collective
