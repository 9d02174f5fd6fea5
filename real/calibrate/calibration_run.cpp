#include "calibrate/calibration_run.h"

#include <sched.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "report/output_file.h"
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

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
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

  nlohmann::ordered_json pairs = nlohmann::ordered_json::array();
  std::vector<char> buf(o.max_bytes ? o.max_bytes : 1);
  // Every power of two, so that size regimes (caches, protocol switches) are located to a factor of 2.
  std::vector<std::uint64_t> sizes;
  for (std::uint64_t b = o.min_bytes; b <= o.max_bytes; b = b ? b * 2 : 8) {
    sizes.push_back(b);
    if (b == 0) break;
  }
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
    // Repetitions sweep all sizes in turn, so a slow spell of a shared machine (seconds long) lands on
    // one repetition of many sizes, which the median drops, rather than on every repetition of a few.
    std::vector<std::vector<double>> one_way(sizes.size());
    for (int rep = 0; rep < o.repetitions; ++rep)
      for (std::size_t i = 0; i < sizes.size(); ++i) {
        // Warm-up: the buffer into the caches, as in a loop of collectives on one buffer.
        for (int w = 0; w < 3; ++w) round_trip(sizes[i]);
        one_way[i].push_back(round_trip(sizes[i]) / 2);
      }
    nlohmann::ordered_json points = nlohmann::ordered_json::array();
    for (std::size_t i = 0; rank == 0 && i < sizes.size(); ++i)
      points.push_back({{"bytes", sizes[i]}, {"seconds", median(one_way[i])}});
    pairs.push_back({{"class", cls},
                     {"ranks", {0, peer}},
                     {"hosts", {host_of(0), host_of(peer)}},
                     {"sockets", {sockets[0], sockets[peer]}},
                     {"points", points}});
  }

  // Host reduction throughput (float sum, the host transport's reduce), timed as a ring step leaves its
  // buffers: rank 0 has just sent the span it reduces into (so its partner has read it) and received the
  // span it adds. Measured here inside a 2-process ring, a 512 KiB reduction took 60 us, the same
  // reduction repeated at once 13 us, and one after a receive alone as fast: the reduction first takes
  // back the cache lines the partner read. Only the reduction is timed, on rank 0.
  nlohmann::ordered_json reduction = nlohmann::ordered_json::array();
  nlohmann::ordered_json compute = nlohmann::ordered_json::array();
  const int sender = partner.count("same_socket") ? partner.at("same_socket") : partner.begin()->second;
  {
    std::vector<std::uint64_t> red_sizes;
    for (std::uint64_t b = 4 * 1024; b <= std::max<std::uint64_t>(o.max_bytes, 256 * 1024); b *= 2)
      red_sizes.push_back(b);
    std::vector<float> dst(rank == 0 ? red_sizes.back() / 4 : 0, 1.0f);
    std::vector<char> src(rank == 0 || rank == sender ? 2 * red_sizes.back() : 0, 0);
    std::vector<std::vector<double>> t(red_sizes.size());
    auto received_then_reduced = [&](std::uint64_t b) {
      const int n = static_cast<int>(b);
      double seconds = 0;
      if (rank == sender) {
        MPI_Sendrecv(src.data(), n, MPI_BYTE, 0, 8, src.data() + b, n, MPI_BYTE, 0, 8, comm, MPI_STATUS_IGNORE);
      } else if (rank == 0) {
        MPI_Sendrecv(dst.data(), n, MPI_BYTE, sender, 8, src.data(), n, MPI_BYTE, sender, 8, comm, MPI_STATUS_IGNORE);
        const double t0 = MPI_Wtime();
        host_reduce_sum(dst.data(), src.data(), b, DataType::Float32);
        seconds = MPI_Wtime() - t0;
      }
      MPI_Barrier(comm);
      return seconds;
    };
    for (int rep = 0; rep < o.repetitions; ++rep)  // interleaved, as the ping-pong
      for (std::size_t i = 0; i < red_sizes.size(); ++i) {
        for (int w = 0; w < 3; ++w) received_then_reduced(red_sizes[i]);
        t[i].push_back(received_then_reduced(red_sizes[i]));
      }
    for (std::size_t i = 0; rank == 0 && i < red_sizes.size(); ++i)
      reduction.push_back({{"bytes", red_sizes[i]}, {"seconds", median(t[i])}});
  }
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
                                {"reduction_of_data_received_from", sender},
                                {"reduction", reduction},
                                {"compute_stand_in", compute}};
    write_file_atomically(o.json_file, j.dump(2) + "\n");
    std::printf("ringsim-real calibrate: %zu pair classes, %zu reduction points -> %s\n", pairs.size(),
                reduction.size(), o.json_file.c_str());
  }
  return 0;
}

}  // namespace ringsim::real
