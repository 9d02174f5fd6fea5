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

}  // namespace

int run_calibrate(const CalibrateOptions& o, MPI_Comm comm) {
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  if (size < 2) throw std::invalid_argument("calibrate needs at least 2 ranks");

  // Where every rank runs: host name and socket.
  char name[MPI_MAX_PROCESSOR_NAME] = {};
  int len = 0;
  MPI_Get_processor_name(name, &len);
  std::vector<char> names(static_cast<std::size_t>(size) * MPI_MAX_PROCESSOR_NAME);
  MPI_Allgather(name, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, names.data(), MPI_MAX_PROCESSOR_NAME, MPI_CHAR, comm);
  int socket = current_socket();
  std::vector<int> sockets(size);
  MPI_Allgather(&socket, 1, MPI_INT, sockets.data(), 1, MPI_INT, comm);
  auto host_of = [&](int r) { return std::string(&names[static_cast<std::size_t>(r) * MPI_MAX_PROCESSOR_NAME]); };

  // One representative pair per class: rank 0 with the lowest rank of each class.
  std::map<std::string, int> partner;
  for (int r = 1; r < size; ++r) {
    const std::string cls = host_of(r) != host_of(0)   ? "network"
                            : sockets[r] != sockets[0] ? "cross_socket"
                                                       : "same_socket";
    partner.emplace(cls, r);
  }

  nlohmann::ordered_json pairs = nlohmann::ordered_json::array(), exchanges = nlohmann::ordered_json::array();
  nlohmann::ordered_json one_core = nlohmann::ordered_json::object();      // the first class within one host
  nlohmann::ordered_json shared_cores = nlohmann::ordered_json::object();  // the same pair
  // Ping-pong uses the first half; an exchange sends from the first half and receives into the second, as a
  // ring step sends one chunk of its buffer and receives another.
  const std::uint64_t half = std::max<std::uint64_t>(o.max_bytes, 1);
  std::vector<char> buf(2 * half);
  // Every power of two, so that size regimes (caches, protocol switches) are located to a factor of 2.
  std::vector<std::uint64_t> sizes;
  for (std::uint64_t b = o.min_bytes; b <= o.max_bytes; b = b ? b * 2 : 8) {
    sizes.push_back(b);
    if (b == 0) break;
  }
  // The placement probe (--probe-cores): every sample is taken between two core-to-core probes, and again
  // when they show the CPUs farther apart than they have been or moving (placement/core_to_core.h).
  std::optional<CoreToCoreProbe> probe;
  if (o.probe_cores) probe.emplace(comm, o.core_to_core_nearest_ns);
  CoreToCoreProbe* const prober = probe ? &*probe : nullptr;
  // Samples `sample` for of_sizes[0, n): repetitions sweep all sizes in turn, so a slow spell of a shared
  // machine (seconds long) lands on one repetition of many sizes, which the median drops, rather than on
  // every repetition of a few. Rank 0's samples are the ones kept.
  auto repeated = [&](const std::vector<std::uint64_t>& of_sizes, std::size_t n, auto&& sample) {
    std::vector<SizeSamples> t(n);
    for (std::size_t i = 0; i < n; ++i) t[i].bytes = of_sizes[i];
    for (int rep = 0; rep < o.repetitions; ++rep)
      for (std::size_t i = 0; i < n; ++i)
        t[i].samples.push_back(probed(prober, [&] { return static_cast<double>(sample(of_sizes[i])); }));
    return rank == 0 ? points_of(t) : nlohmann::ordered_json::array();
  };
  // Times `timed` for sizes[0, n), each sample warmed up 3 times first: the buffer into the caches, as in a
  // loop of collectives on one buffer. Rank 0 gets the points (bytes, median seconds).
  auto sweep = [&](std::size_t n, auto&& timed) {
    return repeated(sizes, n, [&](std::uint64_t b) {
      for (int w = 0; w < 3; ++w) timed(b);
      return timed(b);
    });
  };
  for (const auto& [cls, peer] : partner) {
    auto round_trip = [&](std::uint64_t b) {
      MPI_Barrier(comm);
      const double t0 = MPI_Wtime();
      if (rank == 0) {
        MPI_Send(buf.data(), static_cast<int>(b), MPI_BYTE, peer, 7, comm);
        MPI_Recv(buf.data(), static_cast<int>(b), MPI_BYTE, peer, 7, comm, MPI_STATUS_IGNORE);
      } else if (rank == peer) {
        MPI_Recv(buf.data(), static_cast<int>(b), MPI_BYTE, 0, 7, comm, MPI_STATUS_IGNORE);
        MPI_Send(buf.data(), static_cast<int>(b), MPI_BYTE, 0, 7, comm);
      }
      return MPI_Wtime() - t0;
    };
    const auto points = sweep(sizes.size(), [&](std::uint64_t b) { return round_trip(b) / 2; });
    pairs.push_back({{"class", cls},
                     {"ranks", {0, peer}},
                     {"hosts", {host_of(0), host_of(peer)}},
                     {"sockets", {sockets[0], sockets[peer]}},
                     {"points", points}});

    // The exchange a collective step makes: both ranks post a receive and a send to each other and wait for
    // both, through the host transport the collectives run on (MPI_Irecv + MPI_Isend, completed by polling).
    // Collectives move their data this way, not one message at a time, and the two patterns' costs differ
    // (real/HISTORY.md).
    MpiHostTransport transport(comm, DataType::Float32, 300);
    transport.bind({buf.data(), buf.data(), buf.size()});
    // Each exchange sends what the one before received, as a ring step sends what it has just received
    // or reduced: the receiver's copy left those bytes in its own cache, where its partner's next copy
    // reads them, which can cost more than sending bytes written long before (real/HISTORY.md).
    std::vector<collective::RankStep> steps(2);
    auto exchange = [&](std::uint64_t b) {
      for (int k = 0; k < 2; ++k) {
        collective::RankStep& step = steps[k];
        step.clear();
        if (rank != 0 && rank != peer) continue;
        const int me = rank, other = rank == 0 ? peer : 0;
        const std::uint64_t from = k == 0 ? 0 : half, into = k == 0 ? half : 0;
        step.sends.push_back({me, other, collective::Space::Device, collective::Space::Device, from, b, false});
        step.recvs.push_back({other, me, collective::Space::Device, collective::Space::Device, into, b, false});
      }
      yielding_barrier(comm);
      // Back to back, as a collective's steps follow one another, so that the ranks' skew in leaving the
      // barrier (a few microseconds) is spread over several exchanges: up to 16, 8 MiB in all.
      const int count =
          static_cast<int>(std::clamp<std::uint64_t>((8ull << 20) / std::max<std::uint64_t>(b, 1), 1, 16));
      const double t0 = MPI_Wtime();
      for (int i = 0; i < count && !steps[0].sends.empty(); ++i) {
        transport.post(i, steps[i % 2]);
        transport.wait(i, steps[i % 2]);
      }
      return (MPI_Wtime() - t0) / count;
    };
    exchanges.push_back({{"class", cls}, {"ranks", {0, peer}}, {"points", sweep(sizes.size(), exchange)}});

    // The same exchange with both processes on rank 0's core, up to 256 KiB: each message waits for the
    // scheduler to hand the core to its receiver, what processes outnumbering the cores pay.
    if (cls == "network" || !one_core.empty()) continue;
    int cpu = rank == 0 ? sched_getcpu() : 0;
    MPI_Bcast(&cpu, 1, MPI_INT, 0, comm);
    cpu_set_t own;
    const bool pin = (rank == 0 || rank == peer) && cpu >= 0 && sched_getaffinity(0, sizeof own, &own) == 0;
    if (pin) pin_to(cpu);
    std::size_t small = 0;
    while (small < sizes.size() && sizes[small] <= 256 * 1024) ++small;
    const auto points_one_core = sweep(small, exchange);
    if (pin) sched_setaffinity(0, sizeof own, &own);
    one_core = {{"class", cls}, {"ranks", {0, peer}}, {"cpu", cpu}, {"points", points_one_core}};

    // The same exchange with the processes on two cores, each core shared with a thread that does nothing
    // but yield, up to 256 KiB. Processes outnumbering cores wait for their turn at both ends of a message
    // that crosses cores: the sender too shares its core, a cost the one-core exchange cannot show
    // (real/HISTORY.md). The yielding thread stands for the other process: it too yields while it waits.
    int cpus[2] = {cpu, rank == peer ? sched_getcpu() : -1};
    MPI_Bcast(&cpus[1], 1, MPI_INT, peer, comm);
    if (cpus[1] == cpus[0]) cpus[1] = -1;
    for (int c = 0; cpus[1] < 0 && c < std::min<int>(CPU_SETSIZE, std::thread::hardware_concurrency()); ++c)
      if (c != cpus[0]) cpus[1] = c;
    int ok = 1;
    // Between samples the thread sleeps (quiet), so that the placement probe has the CPUs.
    std::atomic<bool> stop{false}, quiet{true}, yielding{false};
    std::thread other;
    if (rank == 0 || rank == peer) {
      const int mine = cpus[rank == 0 ? 0 : 1];
      ok = pin && pin_to(mine);
      if (ok)
        other = std::thread([&stop, &quiet, &yielding, mine] {
          pin_to(mine);
          while (!stop.load(std::memory_order_relaxed)) {
            const bool active = !quiet.load(std::memory_order_relaxed);
            yielding.store(active, std::memory_order_relaxed);
            if (active) {
              sched_yield();
              continue;
            }
            const timespec pause{0, 200'000};
            nanosleep(&pause, nullptr);
          }
        });
    }
    MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, comm);
    const bool has_thread = other.joinable();
    const auto points_shared = ok ? repeated(sizes, small,
                                             [&](std::uint64_t b) {
                                               quiet = false;
                                               while (has_thread && !yielding) sched_yield();
                                               for (int w = 0; w < 3; ++w) exchange(b);
                                               const double seconds = exchange(b);
                                               quiet = true;
                                               return seconds;
                                             })
                                  : nlohmann::ordered_json::array();
    stop = true;
    if (other.joinable()) other.join();
    if (pin) sched_setaffinity(0, sizeof own, &own);
    // No second core (or no right to pin): no points, and `ringsim calibrate` says so.
    shared_cores = {
        {"class", cls}, {"ranks", {0, peer}}, {"cpus", {cpus[0], ok ? cpus[1] : -1}}, {"points", points_shared}};
  }

  // A collective call's own cost, beyond its steps: ringsim's ring allreduce (the collective code the
  // bench runs, on the host transport) of 16 B to 1 KiB between rank 0 and its first partner of one host
  // (or of the network where it has none), back to back as a loop of collectives runs them. Its 2 steps
  // are exchanges of half the buffer, measured above; `ringsim calibrate` takes them and the reduction out.
  nlohmann::ordered_json calls = nlohmann::ordered_json::object();
  {
    const std::string cls = partner.count("same_socket")    ? "same_socket"
                            : partner.count("cross_socket") ? "cross_socket"
                                                            : "network";
    const int peer = partner.at(cls);
    MPI_Comm pair_comm;
    MPI_Comm_split(comm, rank == 0 || rank == peer ? 0 : MPI_UNDEFINED, rank, &pair_comm);
    std::vector<std::uint64_t> call_sizes;
    for (std::uint64_t b = 16; b <= 1024; b *= 2) call_sizes.push_back(b);
    std::vector<float> data(call_sizes.back() / sizeof(float), 1.0f);
    const auto points = repeated(call_sizes, call_sizes.size(), [&](std::uint64_t bytes) {
      double seconds = 0;
      if (pair_comm != MPI_COMM_NULL) {
        const int me = rank == 0 ? 0 : 1;
        auto ring = collective::make_ring_allreduce(2, bytes, sizeof(float), collective::Space::Device);
        MpiHostTransport transport(pair_comm, DataType::Float32, 300);
        transport.bind({data.data(), data.data(), bytes});
        for (int w = 0; w < 3; ++w) collective::run_member(*ring, me, transport);
        yielding_barrier(pair_comm);
        constexpr int kCalls = 16;
        const double t0 = MPI_Wtime();
        for (int k = 0; k < kCalls; ++k) collective::run_member(*ring, me, transport);
        seconds = (MPI_Wtime() - t0) / kCalls;
        std::fill(data.begin(), data.end(), 1.0f);  // the sums doubled them 19 times
      }
      double slowest = 0;
      MPI_Reduce(&seconds, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, comm);
      return slowest;
    });
    if (pair_comm != MPI_COMM_NULL) MPI_Comm_free(&pair_comm);
    calls = {{"class", cls}, {"ranks", {0, peer}}, {"algorithm", "ring"}, {"points", points}};
  }

  // Reductions and memory copies are timed on both processes of a same-host pair at once, as every rank
  // of a collective step reduces, and every rank copies its fusion buffer, at once; the slower of the two
  // counts, as a step ends with its slowest rank. Two processes copying at once do not each copy as fast
  // as one alone (real/HISTORY.md).
  const int sender = partner.count("same_socket") ? partner.at("same_socket") : partner.begin()->second;
  const bool in_pair = rank == 0 || rank == sender;
  auto slower = [&](double seconds) {  // of the pair; rank 0 gets it
    double worst = 0;
    MPI_Reduce(&seconds, &worst, 1, MPI_DOUBLE, MPI_MAX, 0, comm);
    return worst;
  };

  // Host reduction throughput (float sum, the host transport's reduce), timed as a ring step leaves its
  // buffers: each process has just sent the span it reduces into (so its partner has read it) and received
  // the span it adds: the reduction first takes back the cache lines the partner read, which a reduction
  // timed on its own would miss (real/HISTORY.md). Only the reduction is timed.
  nlohmann::ordered_json reduction = nlohmann::ordered_json::array();
  nlohmann::ordered_json compute = nlohmann::ordered_json::array();
  {
    std::vector<std::uint64_t> red_sizes;
    for (std::uint64_t b = 4 * 1024; b <= std::max<std::uint64_t>(o.max_bytes, 256 * 1024); b *= 2)
      red_sizes.push_back(b);
    std::vector<float> dst(in_pair ? red_sizes.back() / 4 : 0, 1.0f);
    std::vector<char> src(in_pair ? red_sizes.back() : 0, 0);
    auto received_then_reduced = [&](std::uint64_t b) {
      const int n = static_cast<int>(b);
      double seconds = 0;
      if (in_pair) {
        const int other = rank == 0 ? sender : 0;
        MPI_Sendrecv(dst.data(), n, MPI_BYTE, other, 8, src.data(), n, MPI_BYTE, other, 8, comm, MPI_STATUS_IGNORE);
        const double t0 = MPI_Wtime();
        host_reduce_sum(dst.data(), src.data(), b, DataType::Float32);
        seconds = MPI_Wtime() - t0;
      }
      return slower(seconds);
    };
    // Interleaved over the sizes, as the ping-pong; each sample after 3 warm-ups.
    reduction = repeated(red_sizes, red_sizes.size(), [&](std::uint64_t b) {
      for (int w = 0; w < 3; ++w) received_then_reduced(b);
      return received_then_reduced(b);
    });
  }

  // Memory copies, as the fusion buffer's MEMCPY_IN/OUT make them: from tensors last touched an iteration
  // ago into a fusion buffer, or back. Here each copy reads a part of one pool and writes a part of
  // another, each twice the largest size, that were not touched since the pools' last pass.
  nlohmann::ordered_json copies = nlohmann::ordered_json::array();
  {
    std::vector<std::uint64_t> copy_sizes;
    for (std::uint64_t b = 64 * 1024; b <= std::max<std::uint64_t>(o.max_bytes, 256 * 1024); b *= 2)
      copy_sizes.push_back(b);
    const std::uint64_t pool_bytes = in_pair ? 2 * copy_sizes.back() : 0;
    std::vector<char> from(pool_bytes, 1), into(pool_bytes, 0);
    std::uint64_t next = 0;
    auto copy_once = [&](std::uint64_t b) {
      double seconds = 0;
      MPI_Barrier(comm);
      if (in_pair) {
        if (next + b > pool_bytes) next = 0;
        const double t0 = MPI_Wtime();
        std::memcpy(into.data() + next, from.data() + next, b);
        seconds = MPI_Wtime() - t0;
        next += b;
      }
      return slower(seconds);
    };
    copies = repeated(copy_sizes, copy_sizes.size(), [&](std::uint64_t b) {
      copy_once(b);  // warm-up
      return copy_once(b);
    });
  }
  MPI_Barrier(comm);
  if (rank == 0) {
    for (double want : {1e-4, 1e-3, 1e-2}) {
      const double t0 = MPI_Wtime();
      busy_for(want);
      compute.push_back({{"requested_s", want}, {"measured_s", MPI_Wtime() - t0}});
    }
  }
  if (rank == 0) {
    nlohmann::ordered_json j = {{"schema", "ringsim.calibration-data/1"},
                                {"transport", "host"},
                                {"ranks", size},
                                {"pingpong", pairs},
                                {"sendrecv", exchanges},
                                {"sendrecv_one_core", one_core},
                                {"sendrecv_shared_cores", shared_cores},
                                {"allreduce_small", calls},
                                {"reduction_of_data_received_from", sender},
                                {"reduction", reduction},
                                {"copy", copies},
                                {"compute_stand_in", compute}};
    if (probe) j["core_to_core"] = probe->to_json();
    write_file_atomically(o.json_file, j.dump(2) + "\n");
    std::printf(
        "ringsim-real calibrate: %zu pair classes (ping-pong, sendrecv), %zu reduction and %zu copy points -> %s\n",
        pairs.size(), reduction.size(), copies.size(), o.json_file.c_str());
  }
  return 0;
}

}  // namespace ringsim::real
