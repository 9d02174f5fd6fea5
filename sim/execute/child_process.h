// Runs a function in a forked child process and returns the text it produced. SimGrid allows one engine
// per process, so every caller that runs more than one simulation (validate, tests, benchmarks) runs
// each in a child.
#pragma once

#include <functional>
#include <string>

namespace ringsim {

// Throws std::runtime_error with the child's message when it throws or dies.
std::string run_in_child(const std::function<std::string()>& f);

}  // namespace ringsim
