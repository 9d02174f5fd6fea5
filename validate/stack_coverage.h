// Validation cases by software stack: which stack each case ran, and each stack's error and band coverage
// (`validate --published`'s per-stack lines and `by_stack` in its JSON).
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "validate/validation.h"

namespace ringsim {

// A scenario's stack as a case names it: its strategy (the parameter servers' transport where they use RPC),
// its framework where not Horovod's, and its library.
std::string stack_of(const Scenario& s);
// The cases of each stack, in the stacks' order (cases without one left out).
std::map<std::string, std::vector<ValidationCase>> cases_by_stack(const std::vector<ValidationCase>& cases);
// A line per stack: its cases, MAPE and, where banded, how many measurements their bands hold and how wide;
// empty where no case has a stack.
std::string stack_table(const std::vector<ValidationCase>& cases);
// The same as a JSON array, an object per stack; empty where no case has a stack.
nlohmann::ordered_json stack_json(const std::vector<ValidationCase>& cases);

}  // namespace ringsim
