#include "train/framework.h"

#include "load/scenario.h"

namespace ringsim {

std::unique_ptr<TrainingFramework> make_framework(const Scenario& s, const ModelSpec& model) {
  switch (s.communication.framework) {
    case Framework::PytorchDdp:
      return make_pytorch_ddp(s);
    case Framework::Fsdp:
      return make_fsdp(s, model);
    case Framework::Deepspeed:
      return make_deepspeed(s);
    case Framework::Horovod:
      break;
  }
  return make_horovod(s);
}

}  // namespace ringsim
