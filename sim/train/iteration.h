// The parts of one training iteration that every runtime runs alike, written once: the simulation
// (sim/execute/simgrid/training_sim.cpp: SimGrid actors in both fidelities), ringsim-real train on MPI, CUDA and NCCL,
// and its emulation under SMPI (real/train/train_run.cpp). The framework's rules come from its plug-in
// (framework.h); Horovod's cycle of negotiations from collective/horovod_cycle.h.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "collective/collective.h"
#include "execute/prediction.h"
#include "schedule/compute_model.h"
#include "train/framework.h"

namespace ringsim {

// The compute spans of DDP's copies into its buckets and out of them.
inline constexpr std::string_view kBucketCopyIn = "DDP_COPY_IN", kBucketCopyOut = "DDP_COPY_OUT";

// Where a rank's compute program runs: GPU work of `seconds` named `name` (a span in the trace), and
// gradients that are now computed.
struct ComputeHooks {
  std::function<void(const std::string& name, double seconds)> compute;
  std::function<void(const std::vector<int>& tensors)> ready;
  // Sharded parameters (a GatherPlan): wait until gather g's parameters have arrived; this rank is done with
  // gather g's parameters (they may be freed).
  std::function<void(int gather)> wait_gathered, release;
};

// One rank's compute in an iteration: the forward pass, then each layer's backward pass from the last
// layer, the framework's copy of that layer's gradients into their buckets (`bucket_copy_s` of the
// tensors), and the gradients announced ready. `scale` multiplies the passes (ringsim-real's
// --compute-scale), not the copies. With a gather plan (sharded parameters) each unit first waits for its
// gather and releases it once it has computed, the forward pass a unit at a time.
void run_compute_program(const ComputeModel& cm, const TrainingFramework& framework, double scale,
                         const std::function<double(const std::vector<int>&)>& bucket_copy_s, const ComputeHooks& rt,
                         const GatherPlan& plan = {});

// DDP's copies out of its buckets (Reducer::finalize_backward, on the compute stream): each bucket's
// allreduce end and copy time as its allreduce ends; once the backward pass is over, the copies that did
// not fit beside the allreduces run bucket by bucket in order (collective::bucket_copies_end).
class BucketCopyOut {
 public:
  void allreduce_done(double end, double copy_s) {
    done_.push_back(end);
    copy_s_.push_back(copy_s);
  }
  struct Tail {
    double end = 0;                      // when the last copy ends
    std::vector<double> starts, copy_s;  // each copy's start and length, in bucket order
  };
  // The copies, given when the backward pass ended; forgets this iteration's buckets.
  Tail finish(double backward_end);

 private:
  std::vector<double> done_, copy_s_;
};

// Where one buffer's collective runs (SimGrid flows, the step model, a real transport or its emulation):
// the steps that run_buffer takes in order, on the runtime's clock.
class BufferExecutor {
 public:
  virtual ~BufferExecutor() = default;
  virtual double now() = 0;
  // The gradients into the buffer before its collective and out after it; `fused`: the framework's
  // fusion copies (Horovod's MEMCPY_IN/OUT_FUSION_BUFFER), which take time.
  virtual void copy_in(const collective::FusionBuffer& b, bool fused) = 0;
  virtual void copy_out(const collective::FusionBuffer& b, bool fused) = 0;
  virtual std::unique_ptr<collective::Collective> collective(const collective::FusionBuffer& b) = 0;
  // The collective's launch and exchange; may add what it priced (phases, compute share) to `rec`.
  virtual void exchange(const collective::FusionBuffer& b, const collective::Collective& c, CollectiveRecord& rec) = 0;
};

// One buffer as every runtime runs it, and its record: copy in, the collective, copy out, each step's
// start and end on the executor's clock (`index`: the buffer's place in the iteration).
CollectiveRecord run_buffer(const collective::FusionBuffer& b, int index, const TrainingFramework& framework,
                            BufferExecutor& x);

// The result's compute fields from the compute model (its passes times `scale`; the optimizer step where
// the framework takes one) and where the rate comes from.
void set_compute_fields(Prediction& p, const ComputeModel& cm, const TrainingFramework& framework, double scale);

// What follows from the iteration as it ran (p.iteration_time_s, p.bucket_copy_s and the compute fields
// set): the exposed communication and the throughput and training times (derive_throughput).
void finish_result(Prediction& p, const Scenario& s);

}  // namespace ringsim
