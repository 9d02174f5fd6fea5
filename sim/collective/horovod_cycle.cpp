#include "collective/horovod_cycle.h"

namespace ringsim::collective {

void run_horovod_cycles(FusionPlanner& planner, CycleRuntime& runtime, BufferRunner& runner, double cycle_s) {
  while (!planner.all_planned()) {
    const double tick = runtime.now();
    runtime.agree_ready(planner, tick);
    const std::vector<FusionBuffer> buffers = planner.negotiate(tick);
    for (const auto& b : buffers) runner.start(b);
    if (planner.all_planned()) break;
    runtime.wait_next_cycle(planner, tick, cycle_s, buffers.empty());
  }
  runner.finish();
}

}  // namespace ringsim::collective
