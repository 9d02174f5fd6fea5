// What `train` needs from where it runs, besides MPI: a clock, a way to wait, and a compute thread that
// the communication loop releases once per iteration. On real machines (thread_runtime.cpp) that is
// steady_clock, polling with a deadline and a std::thread; under SimGrid's SMPI (emulate/) it is
// simulated time, blocking MPI waits and an S4U actor on the rank's host. train_run.cpp is the same
// source in both builds.
#pragma once

#include <mpi.h>

#include <cstdint>
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
  // Collectives of the training loop's own coordination: on a real machine non-blocking and polled,
  // giving up with TimeoutError after timeout_s naming `what`; under SMPI blocking (SMPI's non-blocking
  // collectives post a message per peer and cost the simulator O(ranks^2) per call).
  virtual void barrier(MPI_Comm comm, double timeout_s, int rank, const std::string& what) = 0;
  virtual void allreduce_min(std::uint8_t* flags, int count, MPI_Comm comm, double timeout_s, int rank,
                             const std::string& what) = 0;

  // The compute thread tells the communication loop that gradients are ready (signal); the loop waits for a
  // signal after the first `seen` (signals() counts them), giving up with TimeoutError after timeout_s.
  virtual void signal() = 0;
  virtual long signals() = 0;
  virtual void wait_signal(long seen, double timeout_s, int rank, const std::string& what) = 0;

  // The compute thread: `body(iteration)` runs once per iteration released by open(iteration).
  virtual void start_compute(std::function<void(int)> body) = 0;
  virtual void open(int iteration) = 0;
  virtual void stop_compute() = 0;  // after the last iteration: ends and joins the compute thread
};

std::unique_ptr<TrainRuntime> make_train_runtime();

}  // namespace ringsim::real
