// What the sharded-framework tests (FSDP, DeepSpeed) read of a prediction and a memory estimate.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "execute/estimate/child_process.h"
#include "execute/simgrid/training_sim.h"
#include "report/prediction_report.h"
#include "schedule/memory.h"
#include "test_support.h"

namespace ringsim::test {

// The prediction's result JSON, simulated in a child process (one SimGrid engine a process).
inline nlohmann::json predicted(const Scenario& s, Fidelity f) {
  return nlohmann::json::parse(run_in_child([&] { return result_json(predict(catalog(), s, f), "predict"); }));
}

// The bytes of the memory breakdown's part `name`.
inline double part(const MemoryEstimate& m, const std::string& name) {
  for (const auto& i : m.breakdown)
    if (i.name == name) return i.bytes;
  FAIL("no part " << name);
  return 0;
}

}  // namespace ringsim::test
