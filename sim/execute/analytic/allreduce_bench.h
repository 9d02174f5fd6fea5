// `ringsim bench`: the nccl-tests all_reduce_perf table predicted for a scenario's cluster. Each size is
// the allreduce the scenario runs for a fusion buffer of that size (its strategy, library, rings and
// channels), evaluated by the step fidelity's model alone on the cluster, plus the library's per-call cost.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "load/catalog.h"
#include "load/scenario.h"

namespace ringsim {

struct BenchSizes {
  std::uint64_t min_bytes = 8;
  std::uint64_t max_bytes = 128ull << 20;
  double factor = 2;
};

struct BenchRow {
  std::uint64_t bytes = 0;
  std::uint64_t count = 0;  // float elements
  double time_s = 0;
  std::string algorithm;  // the allreduce run: "ring_allreduce", "tree_allreduce", ...
  std::string protocol;   // the protocol the library's tuning picked ("ll", "ll128", "simple"); empty: none
  double algbw() const { return time_s > 0 ? static_cast<double>(bytes) / time_s : 0; }  // bytes/s
};

struct BenchPrediction {
  int ranks = 0;
  double bus_factor = 1;  // busbw = algbw x 2 (n - 1) / n, as nccl-tests reports it
  std::string algorithm;  // the scenario's strategy
  std::vector<BenchRow> rows;
};

// Throws InputError for a parameter-server scenario (no allreduce), more sizes than kMaxBenchRows, or sizes x
// GPUs above kMaxBenchRankSizes (about two minutes).
constexpr int kMaxBenchRows = 4096;
constexpr long kMaxBenchRankSizes = 8'000'000;
BenchPrediction predict_allreduce_bench(const Catalog& catalog, const Scenario& scenario, const BenchSizes& sizes);

}  // namespace ringsim
