#include "placement/core_to_core.h"

#include <sched.h>
#include <time.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace ringsim::real {

namespace {

constexpr int kGroups = 9, kRoundTrips = 64;

// One-way ns between the calling thread, pinned to `a`, and a thread pinned to `b`; -1 where either pin is
// refused. The calling thread's affinity is restored.
double time_handoff(int a, int b) {
  cpu_set_t own;
  if (sched_getaffinity(0, sizeof own, &own) != 0) return -1;
  // The line handed over, alone in its 128 bytes (a line and its prefetch pair), away from both threads'
  // stacks and from the flags the spinning thread also reads: beside them, the probe reads slower than the
  // handoff it stands for (real/HISTORY.md).
  struct alignas(128) Line {
    std::atomic<int> value{0};
    alignas(128) std::atomic<bool> pinned{false};  // read by the spinning thread, apart from the line
    std::atomic<bool> refused{false};
  };
  const auto line = std::make_unique<Line>();
  constexpr int total = (kGroups + 1) * kRoundTrips;  // the first group warms up
  std::thread other([l = line.get(), b] {
    if (!pin_to(b)) {
      l->refused = true;
      return;
    }
    l->pinned = true;
    for (int i = 0; i < total; ++i) {
      while (l->value.load(std::memory_order_acquire) != 2 * i + 1) {
        if (l->refused.load(std::memory_order_relaxed)) return;
      }
      l->value.store(2 * i + 2, std::memory_order_release);
    }
  });
  std::array<double, kGroups> group{};
  bool ok = pin_to(a);
  while (ok && !line->pinned && !line->refused) std::this_thread::yield();
  ok = ok && !line->refused;
  for (int g = -1; ok && g < kGroups; ++g) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int k = 0; k < kRoundTrips; ++k) {
      const int i = (g + 1) * kRoundTrips + k;
      line->value.store(2 * i + 1, std::memory_order_release);
      while (line->value.load(std::memory_order_acquire) != 2 * i + 2) {
      }
    }
    const std::chrono::duration<double, std::nano> d = std::chrono::steady_clock::now() - t0;
    if (g >= 0) group[g] = d.count() / (2 * kRoundTrips);
  }
  if (!ok) line->refused = true;  // releases the other thread if it waits
  other.join();
  sched_setaffinity(0, sizeof own, &own);
  if (!ok) return -1;
  std::sort(group.begin(), group.end());
  return group[kGroups / 2];
}

}  // namespace

bool pin_to(int cpu) {
  if (cpu < 0 || cpu >= CPU_SETSIZE) return false;
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(cpu, &one);
  return sched_setaffinity(0, sizeof one, &one) == 0;
}

void wait_yielding(MPI_Request& request) {
  for (int done = 0; MPI_Test(&request, &done, MPI_STATUS_IGNORE), !done;) sched_yield();
}

CoreToCoreProbe::CoreToCoreProbe(MPI_Comm comm, double nearest_ns) : comm_(comm) {
  if (nearest_ns > 0) nearest_ = nearest_ns;
  MPI_Comm_rank(comm, &rank_);
  int size = 1;
  MPI_Comm_size(comm, &size);
  // Every rank's host and CPU; rank 0 picks the second CPU among its host's.
  char name[MPI_MAX_PROCESSOR_NAME] = {};
  int len = 0;
  MPI_Get_processor_name(name, &len);
  std::vector<char> names(static_cast<std::size_t>(size) * MPI_MAX_PROCESSOR_NAME);
  MPI_Gather(name, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, names.data(), MPI_MAX_PROCESSOR_NAME, MPI_CHAR, 0, comm);
  int cpu = sched_getcpu();
  std::vector<int> cpus(size);
  MPI_Gather(&cpu, 1, MPI_INT, cpus.data(), 1, MPI_INT, 0, comm);
  if (rank_ == 0 && cpu >= 0) {
    int other = -1;
    for (int r = 1; r < size && other < 0; ++r)
      if (std::string(&names[static_cast<std::size_t>(r) * MPI_MAX_PROCESSOR_NAME]) == name && cpus[r] >= 0 &&
          cpus[r] != cpu)
        other = cpus[r];
    const int online = static_cast<int>(std::thread::hardware_concurrency());
    for (int c = 0; other < 0 && c < std::min(online, CPU_SETSIZE); ++c)
      if (c != cpu) other = c;
    // A first probe tells whether both threads may be pinned.
    if (other >= 0 && time_handoff(cpu, other) > 0) {
      cpus_[0] = cpu;
      cpus_[1] = other;
    }
  }
  // The others wait yielding: MPI_Bcast would poll the CPUs that rank 0's first probe runs on.
  MPI_Request request;
  MPI_Ibcast(cpus_, 2, MPI_INT, 0, comm, &request);
  wait_yielding(request);
}

double CoreToCoreProbe::measure() {
  MPI_Request request;
  MPI_Ibarrier(comm_, &request);
  wait_yielding(request);
  double ns = -1;
  if (rank_ == 0 && enabled()) ns = time_handoff(cpus_[0], cpus_[1]);
  MPI_Ibcast(&ns, 1, MPI_DOUBLE, 0, comm_, &request);
  wait_yielding(request);
  if (ns > 0) nearest_ = std::min(nearest_, ns);
  return ns;
}

double CoreToCoreProbe::measure_when_near() {
  double ns = measure();
  while (!near(ns) && waited_s_ < wait_budget_s) {
    const timespec pause{0, 20'000'000};
    nanosleep(&pause, nullptr);
    waited_s_ += 0.02;
    ns = measure();
  }
  return ns;
}

nlohmann::ordered_json CoreToCoreProbe::to_json() const {
  return {{"cpus", {cpus_[0], cpus_[1]}},
          {"nearest_ns", enabled() ? nlohmann::ordered_json(nearest_) : nullptr},
          {"retake_above_nearest", kFartherThanNearest},
          {"waited_s", waited_s_}};
}

void put_probes(nlohmann::ordered_json& into, const ProbedSample& sample) {
  into["core_to_core_ns"] = {sample.before_ns, sample.after_ns};
  into["retakes"] = sample.retakes;
}

ProbedSample probed(CoreToCoreProbe* probe, const std::function<double()>& measure, int max_retakes) {
  ProbedSample s;
  if (probe == nullptr || !probe->enabled()) {
    s.seconds = measure();
    return s;
  }
  for (;; ++s.retakes) {
    s.before_ns = probe->measure_when_near();
    s.seconds = measure();
    s.after_ns = probe->measure();
    if ((probe->near(s.before_ns) && probe->near(s.after_ns)) || s.retakes == max_retakes) return s;
  }
}

}  // namespace ringsim::real
