// Child processes. A function run in a forked child, returning the text it produced: SimGrid allows one
// engine per process, so every caller that runs more than one simulation (validate, tests, benchmarks)
// runs each in a child. And programs started from an argument vector, with no shell between (plan and
// sweep's points, validate --local's mpirun launches).
#pragma once

#include <sys/types.h>

#include <functional>
#include <string>
#include <vector>

namespace ringsim {

// Throws std::runtime_error with the child's message when it throws or dies.
std::string run_in_child(const std::function<std::string()>& f);

// Each task in a child of its own, up to child_jobs() at once; their texts in the tasks' order. Throws as
// run_in_child does, for the first task (in order) that failed, once all have ended.
std::vector<std::string> run_in_children(const std::vector<std::function<std::string()>>& tasks);

// How many children run_in_children runs at once: RINGSIM_JOBS where set (a whole number from 1), else the
// machine's hardware threads. Throws std::runtime_error on a malformed RINGSIM_JOBS.
int child_jobs();

// A program and its arguments (argv[0] looked up in PATH), its standard output and error sent to files
// or left with this process's, and variables set in its environment beyond this process's own.
struct Launch {
  std::vector<std::string> argv;
  std::string stdout_file;             // empty: this process's
  std::string stderr_file;             // empty: with the standard output
  std::vector<std::string> extra_env;  // "NAME=value", ahead of this process's environment
};

// Starts the program; throws std::runtime_error when it cannot be started.
pid_t start_program(const Launch& l);
// Starts the program and waits for it: its exit status, or 128 + the signal that ended it.
int run_program(const Launch& l);
// The argument vector as a shell would read it back, for messages: each word quoted where it needs to be.
std::string shell_words(const std::vector<std::string>& argv);

}  // namespace ringsim
