#include "bench/collective_bench.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <vector>

#include "collective/collective.h"
#include "collective/transport.h"
#include "placement/core_to_core.h"
#include "report/output_file.h"
#include "transport/backend.h"

namespace ringsim::real {

namespace {

// Rank r's input element i: small integers, so sums are exact in every type.
double input_value(int rank, std::uint64_t i) { return (rank + 1) * static_cast<double>(i % 7 + 1); }

void fill(std::vector<char>& host, DataType t, std::uint64_t count, int rank, std::uint64_t from, std::uint64_t to) {
  for (std::uint64_t i = from; i < to && i < count; ++i) {
    const double v = input_value(rank, i);
    switch (t) {
      case DataType::Float32:
        reinterpret_cast<float*>(host.data())[i] = static_cast<float>(v);
        break;
      case DataType::Int32:
        reinterpret_cast<std::int32_t*>(host.data())[i] = static_cast<std::int32_t>(v);
        break;
      case DataType::Float64:
        reinterpret_cast<double*>(host.data())[i] = v;
        break;
    }
  }
}

double value_at(const std::vector<char>& host, DataType t, std::uint64_t i) {
  switch (t) {
    case DataType::Float32:
      return reinterpret_cast<const float*>(host.data())[i];
    case DataType::Int32:
      return reinterpret_cast<const std::int32_t*>(host.data())[i];
    case DataType::Float64:
      return reinterpret_cast<const double*>(host.data())[i];
  }
  return 0;
}

bool same(double got, double want, DataType t) {
  if (t == DataType::Int32) return got == want;
  return std::fabs(got - want) <= 1e-5 * std::max(1.0, std::fabs(want));
}

std::unique_ptr<collective::Collective> make_op(const std::string& op, const std::string& algorithm, int p,
                                                std::uint64_t bytes, int elem) {
  if (op == "allreduce" && algorithm == "halving_doubling")
    return collective::make_halving_doubling_allreduce(p, bytes, elem, collective::Space::Device);
  if (op == "allreduce" && algorithm == "tree") {  // each rank a node of NCCL's double binary tree
    const int depth = static_cast<int>(std::floor(std::log2(std::max(1, p))));
    return collective::make_tree_allreduce(p, 1, bytes, elem, collective::Space::Device, {{0}, {0}},
                                           collective::tree_chunks(bytes, 2, depth));
  }
  if (op == "allreduce") return collective::make_ring_allreduce(p, bytes, elem, collective::Space::Device);
  if (op == "reduce_scatter") return collective::make_ring_reduce_scatter(p, bytes, elem);
  return collective::make_ring_allgather(p, bytes, elem);
}

double bus_factor(const std::string& op, int p) {
  return collective::bus_bandwidth_factor(collective::parse_op(op).value_or(collective::BusOp::AllGather), p);
}

}  // namespace

namespace {

// One bench launch: the backend, the probe, and a row per message size.
class Bench {
 public:
  Bench(const BenchOptions& o, MPI_Comm comm)
      : o(o), comm(comm), type(parse_data_type(o.type)), elem(element_size(type)) {
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &p);
    backend = make_backend(o.transport, comm, type, o.timeout_s);
    // The placement probe: each size is timed between two core-to-core probes, and again when they show
    // the CPUs farther apart than they have been (placement/core_to_core.h).
    if (o.probe_cores) {
      if (backend->emulated()) throw UsageError("--probe-cores: an emulated run has no CPUs to probe");
      probe.emplace(comm, o.core_to_core_nearest_ns);
    }
    baseline = backend->baseline_name(o.op);
  }
  std::vector<std::uint64_t> sizes() const;
  void print_header() const;
  nlohmann::ordered_json size_row(std::uint64_t bytes);  // times one size; prints its line on rank 0
  void finish(const nlohmann::ordered_json& rows) const;
  std::int64_t wrong_total() const { return wrong_total_; }

 private:
  // Elements of `out` other than the op leaves them, from inputs of (rank + 1) x (i % 7 + 1).
  std::int64_t count_wrong(const std::vector<char>& out, std::uint64_t count, const collective::Chunking& chunks,
                           int owned) const;

  const BenchOptions& o;
  MPI_Comm comm;
  int rank = 0, p = 1;
  DataType type;
  std::size_t elem;
  std::unique_ptr<Backend> backend;
  std::optional<CoreToCoreProbe> probe;
  std::string baseline;
  std::int64_t wrong_total_ = 0;
};

std::vector<std::uint64_t> Bench::sizes() const {
  return collective::sweep_sizes(o.min_bytes, o.max_bytes, o.factor, elem);
}

void Bench::print_header() const {
  if (rank == 0) {
    std::printf("# ringsim-real bench: %s, %d ranks, transport %s, type %s, %d iterations after %d warm-up\n",
                o.op.c_str(), p, std::string(backend->name()).c_str(), o.type.c_str(), o.iters, o.warmup);
    std::printf("#%50s%s%*s\n", (o.algorithm + " (ringsim collective)").c_str(), "        ", 30, baseline.c_str());
    if (probe)
      std::printf("# core-to-core probe between CPUs %d and %d (c2c: ns before/after the timing; retakes)\n",
                  probe->cpu(0), probe->cpu(1));
    std::printf("# %12s %12s %6s %5s %10s %8s %8s %7s %10s %8s %8s%s\n", "size(B)", "count", "type", "redop",
                "time(us)", "algbw", "busbw", "#wrong", "time(us)", "algbw", "busbw", probe ? "  c2c(ns) retakes" : "");
  }
}

std::int64_t Bench::count_wrong(const std::vector<char>& out, std::uint64_t count, const collective::Chunking& chunks,
                                int owned) const {
  const double rank_sum = p * (p + 1) / 2.0;
  std::int64_t wrong = 0;
  int chunk = 0;
  for (std::uint64_t i = 0; i < count; ++i) {
    while (chunk + 1 < p && chunks.offset(chunk + 1) / elem <= i) ++chunk;
    double want;
    if (o.op == "allreduce") {
      want = rank_sum * (i % 7 + 1);
    } else if (o.op == "reduce_scatter") {
      if (chunk != owned) continue;  // only the owned chunk is defined
      want = rank_sum * (i % 7 + 1);
    } else {
      const int owner = (chunk - 1 + p) % p;  // the rank that owned this chunk
      want = input_value(owner, i);
    }
    if (!same(value_at(out, type, i), want, type)) ++wrong;
  }
  return wrong;
}

nlohmann::ordered_json Bench::size_row(std::uint64_t bytes) {
  const std::uint64_t count = bytes / elem;
  auto c = make_op(o.op, o.algorithm, p, bytes, static_cast<int>(elem));
  collective::Chunking chunks(bytes, p, static_cast<int>(elem));
  std::vector<int> counts(p);
  for (int r = 0; r < p; ++r) counts[r] = static_cast<int>(chunks.size(r) / elem);
  const int owned = collective::ring_chunk_owned(rank, p);

  // Inputs. The allgather starts from each rank's own chunk (the one the ring's reduce-scatter leaves
  // it), filled with the rank's values; the rest is zero. Results are checked element by element, but
  // not under emulation, where every rank's buffers are the same shared pages (and private copies of
  // inputs and outputs would cost 2 x bytes per rank).
  const bool check = !backend->emulated();
  const std::uint64_t host_bytes = check ? std::max<std::uint64_t>(bytes, 1) : 1;
  std::vector<char> input(host_bytes, 0);
  if (!check)
    ;
  else if (o.op == "allgather")
    fill(input, type, count, rank, chunks.offset(owned) / elem, (chunks.offset(owned) + chunks.size(owned)) / elem);
  else
    fill(input, type, count, rank, 0, count);
  MemberBuffers buf = backend->allocate(bytes);
  auto run_ours = [&] {
    FaultyTransport t(backend->transport(buf), o.fault, rank);
    collective::run_member(*c, rank, t);
    backend->synchronize();
  };
  auto run_baseline = [&] {
    std::vector<int> base_counts = counts;
    backend->baseline(o.op, buf, base_counts);
    backend->synchronize();
  };
  auto timed = [&](const std::function<void()>& f) {
    backend->upload(buf, input.data(), bytes);
    for (int i = 0; i < o.warmup; ++i) f();
    MPI_Barrier(comm);
    const double t0 = MPI_Wtime();
    for (int i = 0; i < o.iters; ++i) f();
    double t = (MPI_Wtime() - t0) / std::max(1, o.iters);
    MPI_Allreduce(MPI_IN_PLACE, &t, 1, MPI_DOUBLE, MPI_MAX, comm);
    return t;
  };

  // Correctness: one run of ours on fresh inputs.
  backend->upload(buf, input.data(), bytes);
  MPI_Barrier(comm);
  run_ours();
  std::vector<char> out(host_bytes, 0);
  backend->download(buf, out.data(), bytes);
  std::int64_t wrong = check ? count_wrong(out, count, chunks, owned) : 0;
  MPI_Allreduce(MPI_IN_PLACE, &wrong, 1, MPI_INT64_T, MPI_SUM, comm);
  wrong_total_ += wrong;

  const ProbedSample sample = probed(probe ? &*probe : nullptr, [&] { return timed(run_ours); });
  const double ours = sample.seconds;
  const double base = o.baseline ? timed(run_baseline) : 0;
  backend->release(buf);
  const double factor = bus_factor(o.op, p);
  auto gbps = [&](double t) { return t > 0 ? static_cast<double>(bytes) / t / 1e9 : 0.0; };
  // nccl-tests' count: the elements of the buffer, for an all-gather or reduce-scatter each rank's share.
  const auto shown = o.op == "allreduce" ? count : count / static_cast<std::uint64_t>(p);
  if (rank == 0) {
    std::printf("  %12llu %12llu %6s %5s %10.2f %8.3f %8.3f %7s %10.2f %8.3f %8.3f",
                static_cast<unsigned long long>(bytes), static_cast<unsigned long long>(shown), o.type.c_str(),
                o.op == "allgather" ? "none" : "sum", ours * 1e6, gbps(ours), gbps(ours) * factor,
                check ? std::to_string(wrong).c_str() : "N/A", base * 1e6, gbps(base), gbps(base) * factor);
    if (probe) std::printf("  %.0f/%.0f %d", sample.before_ns, sample.after_ns, sample.retakes);
    std::printf("\n");
    std::fflush(stdout);
  }
  nlohmann::ordered_json row = {{"bytes", bytes},
                                {"count", shown},
                                {"type", o.type},
                                {"op", o.op},
                                {"time_us", ours * 1e6},
                                {"algbw_gbps", gbps(ours)},
                                {"busbw_gbps", gbps(ours) * factor},
                                {"wrong", check ? nlohmann::ordered_json(wrong) : nlohmann::ordered_json(nullptr)},
                                {"baseline", baseline},
                                {"baseline_time_us", base * 1e6},
                                {"baseline_algbw_gbps", gbps(base)},
                                {"baseline_busbw_gbps", gbps(base) * factor}};
  if (probe) put_probes(row, sample);
  return row;
}

void Bench::finish(const nlohmann::ordered_json& rows) const {
  if (rank == 0) {
    if (backend->emulated())
      std::printf("# wrong elements: not checked (emulated: buffers are shared between ranks)\n");
    else
      std::printf("# wrong elements in total: %lld\n", static_cast<long long>(wrong_total_));
    if (o.json_file) {
      nlohmann::ordered_json j = {{"schema", "ringsim.bench/1"},
                                  {"ranks", p},
                                  {"transport", std::string(backend->name())},
                                  {"op", o.op},
                                  {"algorithm", o.algorithm},
                                  {"type", o.type},
                                  {"rows", rows}};
      if (probe) j["core_to_core"] = probe->to_json();
      write_file_atomically(*o.json_file, j.dump(2) + "\n");
    }
  }
}

}  // namespace

std::int64_t run_bench(const BenchOptions& o, MPI_Comm comm) {
  Bench bench(o, comm);
  bench.print_header();
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  for (std::uint64_t bytes : bench.sizes()) rows.push_back(bench.size_row(bytes));
  bench.finish(rows);
  return bench.wrong_total();
}

}  // namespace ringsim::real
