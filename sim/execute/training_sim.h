// One synchronous data-parallel training iteration on SimGrid: per-layer compute on every rank, gradients
// announced in backward order, a Horovod-style coordinator that negotiates every cycle and runs one
// collective per fusion buffer, and the optimizer step. `Fidelity::Flow` runs every transfer of every
// member as a SimGrid communication; `Fidelity::Step` evaluates each collective step analytically
// (step_model.h) and runs it as one SimGrid activity, with one representative rank's compute (all ranks
// are identical).
//
// SimGrid allows one engine per process: call predict() at most once per process.
#pragma once

#include "execute/prediction.h"
#include "load/catalog.h"
#include "load/scenario.h"

namespace ringsim {

// GPU count up to which `predict` defaults to Fidelity::Flow.
constexpr int kFlowFidelityMaxGpus = 256;
Fidelity default_fidelity(const Scenario& s);

Prediction predict(const Catalog& catalog, const Scenario& scenario, Fidelity fidelity);

}  // namespace ringsim
