// TrainRuntime under SMPI: simulated time, blocking MPI waits, the compute thread as an S4U actor on the
// rank's host synchronised with S4U's mutex and condition variable (a std::thread or std::mutex would
// block the whole simulation, which runs every rank in one OS thread).
#include <mpi.h>

#include <simgrid/s4u.hpp>

#include "train/train_runtime.h"

namespace sg4 = simgrid::s4u;

namespace ringsim::real {

namespace {

class ActorRuntime final : public TrainRuntime {
 public:
  double now() const override { return sg4::Engine::get_clock() - origin_; }
  void sleep_until(double t) override {
    if (t > now()) sg4::this_actor::sleep_until(origin_ + t);
  }
  void barrier(MPI_Comm comm, double, int, const std::string&) override { MPI_Barrier(comm); }
  void allreduce_min(std::uint8_t* flags, int count, MPI_Comm comm, double, int, const std::string&) override {
    MPI_Allreduce(MPI_IN_PLACE, flags, count, MPI_UINT8_T, MPI_MIN, comm);
  }
  void signal() override {
    std::unique_lock<sg4::Mutex> lock(*mutex_);
    ++signals_;
    signal_cv_->notify_all();
  }
  long signals() override {
    std::unique_lock<sg4::Mutex> lock(*mutex_);
    return signals_;
  }
  void wait_signal(long seen, double, int, const std::string&) override {
    std::unique_lock<sg4::Mutex> lock(*mutex_);
    while (signals_ <= seen) signal_cv_->wait(lock);
  }
  void start_compute(std::function<void(int)> body) override {
    actor_ = sg4::Actor::create("compute", sg4::this_actor::get_host(), [this, body = std::move(body)] {
      for (int it = 0;; ++it) {
        {
          std::unique_lock<sg4::Mutex> lock(*mutex_);
          while (go_ < it && !stop_) cv_->wait(lock);
          if (stop_) return;
        }
        body(it);
      }
    });
  }
  void open(int iteration) override {
    std::unique_lock<sg4::Mutex> lock(*mutex_);
    go_ = iteration;
    cv_->notify_all();
  }
  void stop_compute() override {
    if (!actor_) return;
    {
      std::unique_lock<sg4::Mutex> lock(*mutex_);
      stop_ = true;
      cv_->notify_all();
    }
    actor_->join();
    actor_ = nullptr;
  }

 private:
  double origin_ = sg4::Engine::get_clock();
  sg4::ActorPtr actor_;
  sg4::MutexPtr mutex_ = sg4::Mutex::create();
  sg4::ConditionVariablePtr cv_ = sg4::ConditionVariable::create();
  int go_ = -1;
  bool stop_ = false;
  sg4::ConditionVariablePtr signal_cv_ = sg4::ConditionVariable::create();
  long signals_ = 0;
};

}  // namespace

std::unique_ptr<TrainRuntime> make_train_runtime() { return std::make_unique<ActorRuntime>(); }

}  // namespace ringsim::real
