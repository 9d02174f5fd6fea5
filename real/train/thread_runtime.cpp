// TrainRuntime on a real machine: steady_clock, MPI_Test polling with a deadline, a std::thread.
#include <sched.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "train/train_runtime.h"
#include "transport/transport_base.h"

namespace ringsim::real {

namespace {

class ThreadRuntime final : public TrainRuntime {
 public:
  ~ThreadRuntime() override { stop_compute(); }
  double now() const override { return std::chrono::duration<double>(Clock::now() - origin_).count(); }
  void sleep_until(double t) override {
    while (now() < t) sched_yield();
  }
  void barrier(MPI_Comm comm, double timeout_s, int rank, const std::string& what) override {
    MPI_Request req;
    MPI_Ibarrier(comm, &req);
    wait(req, timeout_s, rank, what);
  }
  void allreduce_min(std::uint8_t* flags, int count, MPI_Comm comm, double timeout_s, int rank,
                     const std::string& what) override {
    MPI_Request req;
    MPI_Iallreduce(MPI_IN_PLACE, flags, count, MPI_UINT8_T, MPI_MIN, comm, &req);
    wait(req, timeout_s, rank, what);
  }

 private:
  void wait(MPI_Request& req, double timeout_s, int rank, const std::string& what) {
    Deadline d(timeout_s);
    int done = 0;
    for (;;) {
      MPI_Test(&req, &done, MPI_STATUS_IGNORE);
      if (done) return;
      if (d.passed())
        throw TimeoutError("rank " + std::to_string(rank) + ": " + what + " did not complete within " +
                           std::to_string(static_cast<int>(timeout_s)) + " s");
      sched_yield();
    }
  }
  void signal() override {
    {
      std::lock_guard<std::mutex> lock(signal_m_);
      ++signals_;
    }
    signal_cv_.notify_all();
  }
  long signals() override {
    std::lock_guard<std::mutex> lock(signal_m_);
    return signals_;
  }
  void wait_signal(long seen, double timeout_s, int rank, const std::string& what) override {
    std::unique_lock<std::mutex> lock(signal_m_);
    if (!signal_cv_.wait_for(lock, std::chrono::duration<double>(timeout_s), [&] { return signals_ > seen; }))
      throw TimeoutError("rank " + std::to_string(rank) + ": " + what + " did not come within " +
                         std::to_string(static_cast<int>(timeout_s)) + " s");
  }

  void start_compute(std::function<void(int)> body) override {
    thread_ = std::thread([this, body = std::move(body)] {
      for (int it = 0;; ++it) {
        {
          std::unique_lock<std::mutex> lock(m_);
          cv_.wait(lock, [&] { return go_ >= it || stop_; });
          if (stop_) return;
        }
        body(it);
      }
    });
  }
  void open(int iteration) override {
    {
      std::lock_guard<std::mutex> lock(m_);
      go_ = iteration;
    }
    cv_.notify_all();
  }
  void stop_compute() override {
    {
      std::lock_guard<std::mutex> lock(m_);
      stop_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
  }

  using Clock = std::chrono::steady_clock;
  Clock::time_point origin_ = Clock::now();
  std::thread thread_;
  std::mutex m_;
  std::condition_variable cv_;
  int go_ = -1;
  bool stop_ = false;
  std::mutex signal_m_;
  std::condition_variable signal_cv_;
  long signals_ = 0;
};

}  // namespace

std::unique_ptr<TrainRuntime> make_train_runtime() { return std::make_unique<ThreadRuntime>(); }

}  // namespace ringsim::real
