#include "calibrate/calibration_run.h"

#include <sched.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "collective/collective.h"
#include "collective/transport.h"
#include "placement/core_to_core.h"
#include "report/output_file.h"
#include "report/stats.h"
#include "transport/mpi_host_transport.h"
#include "transport/transport_base.h"

namespace ringsim::real {

namespace {

// Socket of the CPU this rank runs on (Linux sysfs); -1 when unknown.
int current_socket() {
  const int cpu = sched_getcpu();
  if (cpu < 0) return -1;
  std::ifstream in("/sys/devices/system/cpu/cpu" + std::to_string(cpu) + "/topology/physical_package_id");
  int socket = -1;
  in >> socket;
  return in ? socket : -1;
}

// A barrier that yields the core while it waits: on a shared core, MPI_Barrier's busy polling keeps the
// core from the other process for a whole scheduler time slice (real/HISTORY.md).
void yielding_barrier(MPI_Comm comm) {
  MPI_Request arrived;
  MPI_Ibarrier(comm, &arrived);
  for (int done = 0; MPI_Test(&arrived, &done, MPI_STATUS_IGNORE), !done;) sched_yield();
}

// Per size, its samples: a point of the JSON, the median time and, where the placement was probed, every
// sample with its probes.
struct SizeSamples {
  std::uint64_t bytes = 0;
  std::vector<ProbedSample> samples;
  nlohmann::ordered_json point() const {
    std::vector<double> seconds;
    for (const auto& s : samples) seconds.push_back(s.seconds);
    nlohmann::ordered_json p = {{"bytes", bytes}, {"seconds", upper_median(seconds)}};
    if (!samples.empty() && samples.front().before_ns >= 0) {
      nlohmann::ordered_json all = nlohmann::ordered_json::array();
      for (const auto& s : samples) {
        all.push_back({{"seconds", s.seconds}});
        put_probes(all.back(), s);
      }
      p["samples"] = all;
    }
    return p;
  }
};

nlohmann::ordered_json points_of(const std::vector<SizeSamples>& sizes) {
  nlohmann::ordered_json points = nlohmann::ordered_json::array();
  for (const auto& s : sizes) points.push_back(s.point());
  return points;
}

// A thread pinned to `cpu` that yields while active and sleeps while quiet: it stands for another process
// sharing the core, which yields while it waits (the shared-cores exchange).
class YieldingNeighbour {
 public:
  explicit YieldingNeighbour(int cpu)
      : thread_([this, cpu] {
          pin_to(cpu);
          while (!stop_.load(std::memory_order_relaxed)) {
            const bool active = !quiet_.load(std::memory_order_relaxed);
            yielding_.store(active, std::memory_order_relaxed);
            if (active) {
              sched_yield();
              continue;
            }
            const timespec pause{0, 200'000};
            nanosleep(&pause, nullptr);
          }
        }) {}
  ~YieldingNeighbour() {
    stop_ = true;
    thread_.join();
  }
  void activate() {
    quiet_ = false;
    while (!yielding_) sched_yield();
  }
  void quiet() { quiet_ = true; }

 private:
  std::atomic<bool> stop_{false}, quiet_{true}, yielding_{false};
  std::thread thread_;
};

// The exchange a collective step makes between rank 0 and `peer`: both post a receive and a send to each
// other and wait for both, through the host transport the collectives run on. Each exchange sends what the
// one before received, as a ring step sends what it has just received or reduced (real/HISTORY.md).
class PairExchange {
 public:
  PairExchange(MPI_Comm comm, int rank, int peer, std::vector<char>& buf)
      : comm_(comm), rank_(rank), peer_(peer), half_(buf.size() / 2), transport_(comm, DataType::Float32, 300) {
    transport_.bind({buf.data(), buf.data(), buf.size()});
  }
  // Seconds per exchange of `b` bytes, back to back after a barrier (up to 16, 8 MiB in all), so that the
  // ranks' skew in leaving the barrier is spread over several exchanges.
  double operator()(std::uint64_t b) {
    for (int k = 0; k < 2; ++k) {
      collective::RankStep& step = steps_[k];
      step.clear();
      if (rank_ != 0 && rank_ != peer_) continue;
      const int me = rank_, other = rank_ == 0 ? peer_ : 0;
      const std::uint64_t from = k == 0 ? 0 : half_, into = k == 0 ? half_ : 0;
      step.sends.push_back({me, other, collective::Space::Device, collective::Space::Device, from, b, false});
      step.recvs.push_back({other, me, collective::Space::Device, collective::Space::Device, into, b, false});
    }
    yielding_barrier(comm_);
    const int count = static_cast<int>(std::clamp<std::uint64_t>((8ull << 20) / std::max<std::uint64_t>(b, 1), 1, 16));
    const double t0 = MPI_Wtime();
    for (int i = 0; i < count && !steps_[0].sends.empty(); ++i) {
      transport_.post(i, steps_[i % 2]);
      transport_.wait(i, steps_[i % 2]);
    }
    return (MPI_Wtime() - t0) / count;
  }

 private:
  MPI_Comm comm_;
  int rank_, peer_;
  std::uint64_t half_;
  MpiHostTransport transport_;
  std::vector<collective::RankStep> steps_ = std::vector<collective::RankStep>(2);
};

// One launch of `ringsim-real calibrate`: where the ranks run, the sizes, the buffers and the placement
// probe; each member below measures one effect and returns rank 0's points as JSON.
class CalibrationRun {
 public:
  CalibrationRun(const CalibrateOptions& o, MPI_Comm comm) : o_(o), comm_(comm) {
    MPI_Comm_rank(comm, &rank_);
    MPI_Comm_size(comm, &size_);
    if (size_ < 2) throw std::invalid_argument("calibrate needs at least 2 ranks");
    locate_ranks();
    // Ping-pong uses the first half; an exchange sends from the first half and receives into the second.
    buf_.resize(2 * std::max<std::uint64_t>(o.max_bytes, 1));
    // Every power of two, so that size regimes (caches, protocol switches) are located to a factor of 2.
    for (std::uint64_t b = o.min_bytes; b <= o.max_bytes; b = b ? b * 2 : 8) {
      sizes_.push_back(b);
      if (b == 0) break;
    }
    // Every sample between two core-to-core probes, and again when they show the CPUs farther apart than
    // they have been or moving (placement/core_to_core.h).
    if (o.probe_cores) probe_.emplace(comm, o.core_to_core_nearest_ns);
  }

  int run() {
    nlohmann::ordered_json pairs = nlohmann::ordered_json::array(), exchanges = nlohmann::ordered_json::array();
    nlohmann::ordered_json one_core = nlohmann::ordered_json::object();      // the first class within one host
    nlohmann::ordered_json shared_cores = nlohmann::ordered_json::object();  // the same pair
    for (const auto& [cls, peer] : partner_) {
      pairs.push_back(pingpong(cls, peer));
      PairExchange exchange(comm_, rank_, peer, buf_);
      exchanges.push_back({{"class", cls}, {"ranks", {0, peer}}, {"points", sweep(sizes_.size(), exchange)}});
      if (cls == "network" || !one_core.empty()) continue;
      const int cpu = rank_cpu(0);
      one_core = exchange_on_one_core(cls, peer, cpu, exchange);
      shared_cores = exchange_on_shared_cores(cls, peer, cpu, exchange);
    }
    const nlohmann::ordered_json calls = collective_calls();
    // Reductions and copies are timed on both processes of a same-host pair at once, as every rank of a
    // collective step reduces, and every rank copies its fusion buffer, at once (real/HISTORY.md).
    const int sender = partner_.count("same_socket") ? partner_.at("same_socket") : partner_.begin()->second;
    const nlohmann::ordered_json reduction = reductions(sender), copies = memory_copies(sender);
    MPI_Barrier(comm_);
    if (rank_ != 0) return 0;
    nlohmann::ordered_json j = {{"schema", "ringsim.calibration-data/1"},
                                {"transport", "host"},
                                {"ranks", size_},
                                {"pingpong", pairs},
                                {"sendrecv", exchanges},
                                {"sendrecv_one_core", one_core},
                                {"sendrecv_shared_cores", shared_cores},
                                {"allreduce_small", calls},
                                {"reduction_of_data_received_from", sender},
                                {"reduction", reduction},
                                {"copy", copies},
                                {"compute_stand_in", compute_stand_in()}};
    if (probe_) j["core_to_core"] = probe_->to_json();
    write_file_atomically(o_.json_file, j.dump(2) + "\n");
    std::printf(
        "ringsim-real calibrate: %zu pair classes (ping-pong, sendrecv), %zu reduction and %zu copy points -> %s\n",
        pairs.size(), reduction.size(), copies.size(), o_.json_file.c_str());
    return 0;
  }

 private:
  // Host name and socket of every rank, and one representative pair per class: rank 0 with the lowest
  // rank of each class (same socket, across sockets, across the network).
  void locate_ranks() {
    char name[MPI_MAX_PROCESSOR_NAME] = {};
    int len = 0;
    MPI_Get_processor_name(name, &len);
    names_.resize(static_cast<std::size_t>(size_) * MPI_MAX_PROCESSOR_NAME);
    MPI_Allgather(name, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, names_.data(), MPI_MAX_PROCESSOR_NAME, MPI_CHAR, comm_);
    int socket = current_socket();
    sockets_.resize(size_);
    MPI_Allgather(&socket, 1, MPI_INT, sockets_.data(), 1, MPI_INT, comm_);
    for (int r = 1; r < size_; ++r) {
      const std::string cls = host_of(r) != host_of(0)     ? "network"
                              : sockets_[r] != sockets_[0] ? "cross_socket"
                                                           : "same_socket";
      partner_.emplace(cls, r);
    }
  }
  std::string host_of(int r) const {
    return std::string(&names_[static_cast<std::size_t>(r) * MPI_MAX_PROCESSOR_NAME]);
  }
  // The CPU `root` runs on, told to every rank.
  int rank_cpu(int root) const {
    int cpu = rank_ == root ? sched_getcpu() : 0;
    MPI_Bcast(&cpu, 1, MPI_INT, root, comm_);
    return cpu;
  }

  // Samples `sample` for of_sizes[0, n): repetitions sweep all sizes in turn, so that a slow spell of a
  // shared machine lands on one repetition of many sizes, which the median drops. Rank 0's are kept.
  template <class Sample>
  nlohmann::ordered_json repeated(const std::vector<std::uint64_t>& of_sizes, std::size_t n, Sample&& sample) {
    std::vector<SizeSamples> t(n);
    for (std::size_t i = 0; i < n; ++i) t[i].bytes = of_sizes[i];
    CoreToCoreProbe* const prober = probe_ ? &*probe_ : nullptr;
    for (int rep = 0; rep < o_.repetitions; ++rep)
      for (std::size_t i = 0; i < n; ++i)
        t[i].samples.push_back(probed(prober, [&] { return static_cast<double>(sample(of_sizes[i])); }));
    return rank_ == 0 ? points_of(t) : nlohmann::ordered_json::array();
  }
  // Times `timed` for sizes_[0, n), each sample warmed up 3 times first: the buffer into the caches, as in
  // a loop of collectives on one buffer.
  template <class Timed>
  nlohmann::ordered_json sweep(std::size_t n, Timed&& timed) {
    return repeated(sizes_, n, [&](std::uint64_t b) {
      for (int w = 0; w < 3; ++w) timed(b);
      return timed(b);
    });
  }
  // The sizes up to 256 KiB, where the handoffs' latency shows.
  std::size_t small_sizes() const {
    std::size_t small = 0;
    while (small < sizes_.size() && sizes_[small] <= 256 * 1024) ++small;
    return small;
  }

  nlohmann::ordered_json pingpong(const std::string& cls, int peer) {
    auto round_trip = [&](std::uint64_t b) {
      MPI_Barrier(comm_);
      const double t0 = MPI_Wtime();
      if (rank_ == 0) {
        MPI_Send(buf_.data(), static_cast<int>(b), MPI_BYTE, peer, 7, comm_);
        MPI_Recv(buf_.data(), static_cast<int>(b), MPI_BYTE, peer, 7, comm_, MPI_STATUS_IGNORE);
      } else if (rank_ == peer) {
        MPI_Recv(buf_.data(), static_cast<int>(b), MPI_BYTE, 0, 7, comm_, MPI_STATUS_IGNORE);
        MPI_Send(buf_.data(), static_cast<int>(b), MPI_BYTE, 0, 7, comm_);
      }
      return MPI_Wtime() - t0;
    };
    const auto points = sweep(sizes_.size(), [&](std::uint64_t b) { return round_trip(b) / 2; });
    return {{"class", cls},
            {"ranks", {0, peer}},
            {"hosts", {host_of(0), host_of(peer)}},
            {"sockets", {sockets_[0], sockets_[peer]}},
            {"points", points}};
  }

  // The exchange with both processes on rank 0's core: each message waits for the scheduler to hand the
  // core to its receiver, what processes outnumbering the cores pay.
  nlohmann::ordered_json exchange_on_one_core(const std::string& cls, int peer, int cpu, PairExchange& exchange) {
    cpu_set_t own;
    const bool pin = (rank_ == 0 || rank_ == peer) && cpu >= 0 && sched_getaffinity(0, sizeof own, &own) == 0;
    if (pin) pin_to(cpu);
    const auto points = sweep(small_sizes(), exchange);
    if (pin) sched_setaffinity(0, sizeof own, &own);
    return {{"class", cls}, {"ranks", {0, peer}}, {"cpu", cpu}, {"points", points}};
  }

  // The exchange with the processes on two cores, each shared with a thread that yields: processes
  // outnumbering cores wait for their turn at both ends of a message that crosses cores, a cost the
  // one-core exchange cannot show (real/HISTORY.md). No second core or no right to pin: no points.
  nlohmann::ordered_json exchange_on_shared_cores(const std::string& cls, int peer, int cpu, PairExchange& exchange) {
    int cpus[2] = {cpu, rank_ == peer ? sched_getcpu() : -1};
    MPI_Bcast(&cpus[1], 1, MPI_INT, peer, comm_);
    if (cpus[1] == cpus[0]) cpus[1] = -1;
    for (int c = 0; cpus[1] < 0 && c < std::min<int>(CPU_SETSIZE, std::thread::hardware_concurrency()); ++c)
      if (c != cpus[0]) cpus[1] = c;
    cpu_set_t own;
    const bool in_pair = rank_ == 0 || rank_ == peer;
    const bool pin = in_pair && cpu >= 0 && sched_getaffinity(0, sizeof own, &own) == 0;
    int ok = 1;
    std::optional<YieldingNeighbour> neighbour;
    if (in_pair) {
      const int mine = cpus[rank_ == 0 ? 0 : 1];
      ok = pin && pin_to(mine);
      if (ok) neighbour.emplace(mine);
    }
    MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, comm_);
    const auto points = ok ? repeated(sizes_, small_sizes(),
                                      [&](std::uint64_t b) {
                                        if (neighbour) neighbour->activate();
                                        for (int w = 0; w < 3; ++w) exchange(b);
                                        const double seconds = exchange(b);
                                        if (neighbour) neighbour->quiet();
                                        return seconds;
                                      })
                           : nlohmann::ordered_json::array();
    neighbour.reset();
    if (pin) sched_setaffinity(0, sizeof own, &own);
    return {{"class", cls}, {"ranks", {0, peer}}, {"cpus", {cpus[0], ok ? cpus[1] : -1}}, {"points", points}};
  }

  // A collective call's own cost, beyond its steps: ringsim's ring allreduce of 16 B to 1 KiB between rank
  // 0 and its first partner of one host (or of the network), back to back as a loop of collectives runs
  // them. `ringsim calibrate` takes its 2 exchanges and the reduction out.
  nlohmann::ordered_json collective_calls() {
    const std::string cls = partner_.count("same_socket")    ? "same_socket"
                            : partner_.count("cross_socket") ? "cross_socket"
                                                             : "network";
    const int peer = partner_.at(cls);
    MPI_Comm pair_comm;
    MPI_Comm_split(comm_, rank_ == 0 || rank_ == peer ? 0 : MPI_UNDEFINED, rank_, &pair_comm);
    std::vector<std::uint64_t> call_sizes;
    for (std::uint64_t b = 16; b <= 1024; b *= 2) call_sizes.push_back(b);
    std::vector<float> data(call_sizes.back() / sizeof(float), 1.0f);
    const auto points = repeated(call_sizes, call_sizes.size(), [&](std::uint64_t bytes) {
      double seconds = 0;
      if (pair_comm != MPI_COMM_NULL) seconds = ring_calls(pair_comm, bytes, data);
      double slowest = 0;
      MPI_Reduce(&seconds, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, comm_);
      return slowest;
    });
    if (pair_comm != MPI_COMM_NULL) MPI_Comm_free(&pair_comm);
    return {{"class", cls}, {"ranks", {0, peer}}, {"algorithm", "ring"}, {"points", points}};
  }
  // Seconds per ring allreduce of `bytes` on the pair, 16 calls after 3 warm-ups.
  double ring_calls(MPI_Comm pair_comm, std::uint64_t bytes, std::vector<float>& data) const {
    const int me = rank_ == 0 ? 0 : 1;
    auto ring = collective::make_ring_allreduce(2, bytes, sizeof(float), collective::Space::Device);
    MpiHostTransport transport(pair_comm, DataType::Float32, 300);
    transport.bind({data.data(), data.data(), bytes});
    for (int w = 0; w < 3; ++w) collective::run_member(*ring, me, transport);
    yielding_barrier(pair_comm);
    constexpr int kCalls = 16;
    const double t0 = MPI_Wtime();
    for (int k = 0; k < kCalls; ++k) collective::run_member(*ring, me, transport);
    const double seconds = (MPI_Wtime() - t0) / kCalls;
    std::fill(data.begin(), data.end(), 1.0f);  // the sums doubled them 19 times
    return seconds;
  }

  // The slower of the pair's two times; rank 0 gets it.
  double slower(double seconds) const {
    double worst = 0;
    MPI_Reduce(&seconds, &worst, 1, MPI_DOUBLE, MPI_MAX, 0, comm_);
    return worst;
  }

  // Host reduction throughput (float sum), timed as a ring step leaves its buffers: each process has just
  // sent the span it reduces into and received the span it adds, so the reduction first takes back the
  // cache lines its partner read (real/HISTORY.md). Only the reduction is timed.
  nlohmann::ordered_json reductions(int sender) {
    const bool in_pair = rank_ == 0 || rank_ == sender;
    std::vector<std::uint64_t> red_sizes;
    for (std::uint64_t b = 4 * 1024; b <= std::max<std::uint64_t>(o_.max_bytes, 256 * 1024); b *= 2)
      red_sizes.push_back(b);
    std::vector<float> dst(in_pair ? red_sizes.back() / 4 : 0, 1.0f);
    std::vector<char> src(in_pair ? red_sizes.back() : 0, 0);
    auto received_then_reduced = [&](std::uint64_t b) {
      const int n = static_cast<int>(b);
      double seconds = 0;
      if (in_pair) {
        const int other = rank_ == 0 ? sender : 0;
        MPI_Sendrecv(dst.data(), n, MPI_BYTE, other, 8, src.data(), n, MPI_BYTE, other, 8, comm_, MPI_STATUS_IGNORE);
        const double t0 = MPI_Wtime();
        host_reduce_sum(dst.data(), src.data(), b, DataType::Float32);
        seconds = MPI_Wtime() - t0;
      }
      return slower(seconds);
    };
    return repeated(red_sizes, red_sizes.size(), [&](std::uint64_t b) {
      for (int w = 0; w < 3; ++w) received_then_reduced(b);
      return received_then_reduced(b);
    });
  }

  // Memory copies as the fusion buffer's MEMCPY_IN/OUT make them, from tensors last touched an iteration
  // ago: each copy reads a part of one pool and writes a part of another, each twice the largest size,
  // not touched since the pools' last pass.
  nlohmann::ordered_json memory_copies(int sender) {
    const bool in_pair = rank_ == 0 || rank_ == sender;
    std::vector<std::uint64_t> copy_sizes;
    for (std::uint64_t b = 64 * 1024; b <= std::max<std::uint64_t>(o_.max_bytes, 256 * 1024); b *= 2)
      copy_sizes.push_back(b);
    const std::uint64_t pool_bytes = in_pair ? 2 * copy_sizes.back() : 0;
    std::vector<char> from(pool_bytes, 1), into(pool_bytes, 0);
    std::uint64_t next = 0;
    auto copy_once = [&](std::uint64_t b) {
      double seconds = 0;
      MPI_Barrier(comm_);
      if (in_pair) {
        if (next + b > pool_bytes) next = 0;
        const double t0 = MPI_Wtime();
        std::memcpy(into.data() + next, from.data() + next, b);
        seconds = MPI_Wtime() - t0;
        next += b;
      }
      return slower(seconds);
    };
    return repeated(copy_sizes, copy_sizes.size(), [&](std::uint64_t b) {
      copy_once(b);  // warm-up
      return copy_once(b);
    });
  }

  // How closely the compute stand-in lasts what it is asked (rank 0).
  static nlohmann::ordered_json compute_stand_in() {
    nlohmann::ordered_json compute = nlohmann::ordered_json::array();
    for (double want : {1e-4, 1e-3, 1e-2}) {
      const double t0 = MPI_Wtime();
      busy_for(want);
      compute.push_back({{"requested_s", want}, {"measured_s", MPI_Wtime() - t0}});
    }
    return compute;
  }

  const CalibrateOptions& o_;
  MPI_Comm comm_;
  int rank_ = 0, size_ = 1;
  std::vector<char> names_;
  std::vector<int> sockets_;
  std::map<std::string, int> partner_;
  std::vector<char> buf_;
  std::vector<std::uint64_t> sizes_;
  std::optional<CoreToCoreProbe> probe_;
};

}  // namespace

int run_calibrate(const CalibrateOptions& o, MPI_Comm comm) { return CalibrationRun(o, comm).run(); }

}  // namespace ringsim::real
