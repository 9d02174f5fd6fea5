#include "execute/prediction.h"

#include <cmath>

namespace ringsim {

void derive_throughput(Prediction& p, const Scenario& s) {
  const double images = p.gpus * s.samples_per_gpu_step();
  p.images_per_sec = images / p.iteration_time_s;
  p.images_per_sec_per_gpu = p.images_per_sec / p.gpus;
  p.scaling_efficiency = p.single_gpu_images_per_sec > 0 ? p.images_per_sec_per_gpu / p.single_gpu_images_per_sec : 0;
  if (s.model.tokens > 1) {
    p.tokens_per_sec = p.images_per_sec * s.model.tokens;
    p.tokens_per_sec_per_gpu = p.tokens_per_sec / p.gpus;
    p.mfu = p.peak_flops > 0 ? p.images_per_sec_per_gpu * p.model_flops_per_sample / p.peak_flops : 0;
  }
  p.iterations_per_epoch = static_cast<std::int64_t>(std::ceil(s.training.dataset_images / images));
  p.epoch_time_s = p.iterations_per_epoch * p.iteration_time_s;
  p.time_to_train_s = s.training.epochs * p.epoch_time_s;
}

void set_tensors(Prediction& p, const ModelSpec& model, const std::vector<std::uint64_t>& bytes,
                 const std::vector<double>& ready_s) {
  for (std::size_t t = 0; t < model.tensors.size(); ++t) {
    p.tensor_names.push_back(model.tensors[t].name);
    p.tensor_bytes.push_back(bytes[t]);
    p.tensor_ready_s.push_back(ready_s[t]);
  }
}

std::string_view gradient_buffers_noun(const Scenario& s) {
  const bool sharded = state_shards(s) > 1;
  if (s.communication.framework == Framework::Deepspeed && sharded && s.communication.zero_stage < 3)
    return "collectives (all-gathers, allreduces)";
  if (s.communication.framework == Framework::Fsdp || sharded)
    return sharded ? "collectives (all-gathers, reduce-scatters)" : "collectives (a unit's allreduce)";
  return s.communication.framework == Framework::Horovod ? "fusion buffers" : "buckets";
}

std::string_view to_string(Fidelity f) {
  switch (f) {
    case Fidelity::Flow:
      return "flow";
    case Fidelity::Step:
      return "step";
    case Fidelity::Measured:
      return "measured";
    case Fidelity::Emulated:
      return "emulated";
  }
  return "?";
}

}  // namespace ringsim
