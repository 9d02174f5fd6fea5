// Each class's fits, and what the overlay is written from beside them: per-message classes' measured
// regimes (the measured curve itself) and protocol overheads, and per class its base regime.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "calibrate/fit.h"
#include "calibrate/measurements.h"

namespace ringsim {

using Steps = std::vector<std::pair<double, double>>;  // (from bytes, seconds)

struct Fitted {
  std::map<std::string, std::vector<LinearFit>> tables;
  std::map<std::string, Steps> protocol_of;
  // The largest messages' regime is the base (their bandwidth is what contention shares); the others are
  // regimes of the overlay, the first one from 1 byte.
  std::map<std::string, std::vector<const LinearFit*>> regimes_of;
  std::map<std::string, const LinearFit*> fit_of;

  const std::vector<const LinearFit*>& regimes(const std::string& cls) const {
    static const std::vector<const LinearFit*> kNone;
    const auto it = regimes_of.find(cls);
    return it == regimes_of.end() ? kNone : it->second;
  }
  const Steps& protocol(const std::string& cls) const {
    static const Steps kNone;
    const auto it = protocol_of.find(cls);
    return it == protocol_of.end() ? kNone : it->second;
  }
  const LinearFit* base(const std::string& cls) const {
    const auto it = fit_of.find(cls);
    return it == fit_of.end() ? nullptr : it->second;
  }
};

// Fits every class of two points or more (alpha, beta, R^2, worst residual per regime) into `fits`, then
// indexes each class's regimes and base into `fitted`: its measured regimes where it has them, else its
// fits. CPU processes' copies are memory traffic, whose regimes are the caches' (keyed by footprint).
// `fitted` points into `fits`, which must stay unchanged while it is used.
void fit_classes(Measurements& m, bool cpu_processes, Fitted& fitted, std::vector<LinearFit>& fits,
                 std::vector<std::string>& notes);
void index_regimes(const std::vector<LinearFit>& fits, Fitted& fitted);

}  // namespace ringsim
