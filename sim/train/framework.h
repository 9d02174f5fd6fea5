// A data-parallel framework as a plug-in: the rules of its training iteration that differ from one
// framework to the next, asked by the one iteration that the simulation, ringsim-real and the emulation
// run (sim/train/iteration.h). Adding a framework is one file here and one line in make_framework.
#pragma once

#include <memory>
#include <string_view>
#include <vector>

#include "collective/collective.h"
#include "collective/fusion.h"
#include "train/sharding.h"

namespace ringsim {

struct Scenario;

class TrainingFramework {
 public:
  virtual ~TrainingFramework() = default;
  virtual std::string_view name() const = 0;
  // How the gradients become buffers: the planner that says which tensors a buffer holds and when it is
  // ready (`ranks`: how many ranks announce each tensor).
  virtual collective::FusionPlanner planner(std::vector<collective::FusionTensor> tensors, int ranks) const = 0;
  // Whether the ranks agree on what is ready before each negotiation (Horovod's coordinator, an allreduce
  // of flags in a real run); without it a rank launches a buffer when its own gradients are in it.
  virtual bool agrees_readiness() const = 0;
  // Whether a buffer is copied into a fusion buffer before its collective and out after it.
  virtual bool fusion_copies(const collective::FusionBuffer& b) const = 0;
  // Whether each gradient is copied into its bucket on the compute stream after its layer's backward
  // pass, and out of it once backward is over (collective::bucket_copies_end).
  virtual bool bucket_copies() const = 0;
  // Whether every worker steps its optimizer after the collectives (not where servers apply the update).
  virtual bool optimizer_step() const = 0;
  // The collective each gradient buffer runs: an allreduce, or a reduce-scatter where the gradients are
  // sharded (each rank keeps its shard).
  virtual collective::BusOp gradient_op() const { return collective::BusOp::AllReduce; }
  // Sharded parameters: the all-gathers each unit waits for before it computes (sharding.h); empty where
  // every rank holds all parameters.
  virtual GatherPlan gathers(const ModelSpec&, const std::vector<Layer>&) const { return {}; }
};

// The sharded frameworks' common rules (FSDP, DeepSpeed): a collective starts when its rank's gradients are
// in, with no negotiation and no copies, and every rank steps its optimizer on its shard.
class ShardedFramework : public TrainingFramework {
 public:
  bool agrees_readiness() const override { return false; }
  bool fusion_copies(const collective::FusionBuffer&) const override { return false; }
  bool bucket_copies() const override { return false; }
  bool optimizer_step() const override { return true; }
};

// The scenario's framework (communication.framework, with its strategy and settings) for its model.
std::unique_ptr<TrainingFramework> make_framework(const Scenario& s, const ModelSpec& model);

// The frameworks, one file each.
std::unique_ptr<TrainingFramework> make_horovod(const Scenario& s);
std::unique_ptr<TrainingFramework> make_pytorch_ddp(const Scenario& s);
std::unique_ptr<TrainingFramework> make_fsdp(const Scenario& s, const ModelSpec& model);
std::unique_ptr<TrainingFramework> make_deepspeed(const Scenario& s);

}  // namespace ringsim
