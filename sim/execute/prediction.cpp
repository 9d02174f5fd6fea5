#include "execute/prediction.h"

namespace ringsim {

std::string_view to_string(Fidelity f) {
  return f == Fidelity::Flow ? "flow" : f == Fidelity::Step ? "step" : "measured";
}

}  // namespace ringsim
