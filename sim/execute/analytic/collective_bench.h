// `ringsim bench`: the nccl-tests all_reduce_perf, all_gather_perf or reduce_scatter_perf table predicted for
// a scenario's cluster. Each allreduce size is the one the scenario runs for a fusion buffer of that size (its
// strategy, library, rings and channels); an all-gather or reduce-scatter is the ring the library runs for it
// (make_gather_collective); each evaluated by the step fidelity's model alone on the cluster, plus the
// library's per-call cost.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "collective/collective.h"
#include "load/catalog.h"
#include "load/scenario.h"

namespace ringsim {

struct BenchSizes {
  std::uint64_t min_bytes = 8;
  std::uint64_t max_bytes = 128ull << 20;
  double factor = 2;
};

struct BenchRow {
  std::uint64_t bytes = 0;  // the whole buffer (an all-gather's output, a reduce-scatter's input)
  std::uint64_t count = 0;  // float elements (all-gather, reduce-scatter: each rank's, as nccl-tests prints)
  double time_s = 0;
  std::string algorithm;  // the collective run: "ring_allreduce", "tree_allreduce", "ring_allgather", ...
  std::string protocol;   // the protocol the library's tuning picked ("ll", "ll128", "simple"); empty: none
  double time_low_s = 0, time_high_s = 0;  // the band's ends (execute/estimate/prediction_band.h); 0: none
  double algbw() const { return time_s > 0 ? static_cast<double>(bytes) / time_s : 0; }  // bytes/s
};

struct BenchPrediction {
  collective::BusOp op = collective::BusOp::AllReduce;
  int ranks = 0;
  double bus_factor = 1;  // busbw = algbw x 2 (n - 1) / n (allreduce) or (n - 1) / n, as nccl-tests reports it
  std::string algorithm;  // the scenario's strategy; the ring for an all-gather or reduce-scatter
  std::vector<BenchRow> rows;
  int band_samples = 0;                      // 0: no band
  std::vector<std::string> band_parameters;  // the figures it sampled (uncertain.yaml names)
};

// Throws InputError for a parameter-server scenario (no allreduce), more sizes than kMaxBenchRows, or sizes x
// GPUs above kMaxBenchRankSizes (about two minutes).
constexpr int kMaxBenchRows = 4096;
constexpr long kMaxBenchRankSizes = 8'000'000;
// The estimate of a bench's work against that limit: sizes x GPUs, `tables` times (a band's samples too).
void check_bench_work(std::size_t sizes, int gpus, int tables = 1);
std::size_t bench_size_count(const BenchSizes& sizes, const Scenario& scenario, collective::BusOp op);
// An all-gather's or reduce-scatter's sizes are whole elements on every rank (nccl-tests rounds them so).
BenchPrediction predict_bench(const Catalog& catalog, const Scenario& scenario, const BenchSizes& sizes,
                              collective::BusOp op = collective::BusOp::AllReduce);

}  // namespace ringsim
