#include "execute/prediction.h"

namespace ringsim {

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
