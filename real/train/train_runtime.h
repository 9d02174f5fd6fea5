// What `train` needs from where it runs, besides MPI: a clock, a way to wait, and a compute thread that
// the communication loop releases once per iteration. On real machines (thread_runtime.cpp) that is
// steady_clock, polling with a deadline and a std::thread; under SimGrid's SMPI (emulate/) it is
// simulated time, blocking MPI waits and an S4U actor on the rank's host. train_run.cpp is the same
// source in both builds.
#pragma once

#include <mpi.h>

#include <functional>
#include <memory>
#include <string>

namespace ringsim::real {

class TrainRuntime {
 public:
  virtual ~TrainRuntime() = default;
  // Seconds since the runtime was made (wall clock, or simulated time).
  virtual double now() const = 0;
  virtual void sleep_until(double t) = 0;
  // Completes `req`; on a real machine gives up with TimeoutError after timeout_s naming `what`.
  virtual void wait(MPI_Request& req, double timeout_s, int rank, const std::string& what) = 0;

  // The compute thread: `body(iteration)` runs once per iteration released by open(iteration).
  virtual void start_compute(std::function<void(int)> body) = 0;
  virtual void open(int iteration) = 0;
  virtual void stop_compute() = 0;  // after the last iteration: ends and joins the compute thread
};

std::unique_ptr<TrainRuntime> make_train_runtime();

}  // namespace ringsim::real
