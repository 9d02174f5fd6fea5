#include "report/bench_report.h"

#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>

namespace ringsim {

namespace {
std::string size_label(std::uint64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (u < 4 && bytes >= 1024 && bytes % 1024 == 0) {
    bytes /= 1024;
    ++u;
  }
  return std::to_string(bytes) + " " + units[u];
}

// What each run of sizes ran, where the library's tuning picked: "ring_allreduce/ll 8 B-1 MiB, ...".
std::string picks_line(const BenchPrediction& b) {
  std::string out;
  for (std::size_t i = 0; i < b.rows.size();) {
    const BenchRow& r = b.rows[i];
    std::size_t j = i;
    while (j + 1 < b.rows.size() && b.rows[j + 1].algorithm == r.algorithm && b.rows[j + 1].protocol == r.protocol) ++j;
    if (!r.protocol.empty())
      out += std::string(out.empty() ? "" : ", ") + r.algorithm + "/" + r.protocol + " " + size_label(r.bytes) +
             (j > i ? "-" + size_label(b.rows[j].bytes) : "");
    i = j + 1;
  }
  return out.empty() ? "" : "# picked by the library's tuning model: " + out + "\n";
}

// The band's line: busbw's ends at the smallest and the largest size (every size's in the JSON).
std::string band_line(const BenchPrediction& b) {
  if (b.band_samples == 0 || b.rows.empty()) return "";
  std::string names;
  for (const auto& n : b.band_parameters) names += (names.empty() ? "" : ", ") + n;
  auto ends = [&b](const BenchRow& r) {
    char t[96];
    const double bus = static_cast<double>(r.bytes) * b.bus_factor / 1e9;
    std::snprintf(t, sizeof t, "%.3f to %.3f GB/s at %s", r.time_high_s > 0 ? bus / r.time_high_s : 0,
                  r.time_low_s > 0 ? bus / r.time_low_s : 0, size_label(r.bytes).c_str());
    return std::string(t);
  };
  const auto first = std::find_if(b.rows.begin(), b.rows.end(), [](const BenchRow& r) { return r.time_s > 0; });
  if (first == b.rows.end()) return "";
  const bool moved = std::any_of(b.rows.begin(), b.rows.end(),
                                 [](const BenchRow& r) { return r.time_high_s > r.time_low_s * (1 + 1e-9); });
  if (!moved)
    return "# band: none of the " + std::to_string(b.band_parameters.size()) +
           " uncertain figures these collectives could depend on moves them (" + names +
           ", topologies/uncertain.yaml): the catalog's figures for their paths are taken as measured\n";
  return "# band: busbw " + ends(*first) + ", " + ends(b.rows.back()) + " (" + std::to_string(b.band_samples) +
         " samples of " + names +
         ", topologies/uncertain.yaml: meant to hold the measured value 9 times in 10; every size's in --json)\n";
}

// nccl-tests' redop column: none for an all-gather.
const char* redop(const BenchPrediction& b) { return b.op == collective::BusOp::AllGather ? "none" : "sum"; }
}  // namespace

std::string bench_table(const BenchPrediction& b, const std::string& title) {
  std::string out = "# ringsim bench (predicted): " + std::string(collective::op_name(b.op)) + ", " +
                    std::to_string(b.ranks) + " ranks, " + title + ", algorithm " + b.algorithm + ", type float\n";
  char line[256];
  std::snprintf(line, sizeof line, "# %12s %12s %6s %5s %10s %8s %8s %7s\n", "size(B)", "count", "type", "redop",
                "time(us)", "algbw", "busbw", "#wrong");
  out += line;
  for (const BenchRow& r : b.rows) {
    const double algbw = r.algbw() / 1e9;
    std::snprintf(line, sizeof line, "  %12llu %12llu %6s %5s %10.2f %8.3f %8.3f %7s\n",
                  static_cast<unsigned long long>(r.bytes), static_cast<unsigned long long>(r.count), "float", redop(b),
                  r.time_s * 1e6, algbw, algbw * b.bus_factor, "N/A");
    out += line;
  }
  return out + picks_line(b) + band_line(b);
}

std::string bench_json(const BenchPrediction& b, const std::string& title) {
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  for (const BenchRow& r : b.rows)
    rows.push_back({{"bytes", r.bytes},
                    {"count", r.count},
                    {"type", "float"},
                    {"op", collective::op_name(b.op)},
                    {"time_us", r.time_s * 1e6},
                    {"algbw_gbps", r.algbw() / 1e9},
                    {"busbw_gbps", r.algbw() / 1e9 * b.bus_factor},
                    {"wrong", nullptr}});
  for (std::size_t i = 0; i < b.rows.size(); ++i)  // the band's ends, where there is one
    if (b.band_samples > 0 && b.rows[i].time_s > 0) {
      const BenchRow& r = b.rows[i];
      const double bus = r.algbw() / 1e9 * b.bus_factor;
      rows[i]["busbw_low_gbps"] = bus * (r.time_s / r.time_high_s);
      rows[i]["busbw_high_gbps"] = bus * (r.time_s / r.time_low_s);
    }
  for (std::size_t i = 0; i < b.rows.size(); ++i)  // what the library's tuning picked, where it did
    if (!b.rows[i].protocol.empty()) {
      rows[i]["algorithm"] = b.rows[i].algorithm;
      rows[i]["protocol"] = b.rows[i].protocol;
    }
  nlohmann::ordered_json j = {{"schema", "ringsim.bench/1"},
                              {"ranks", b.ranks},
                              {"transport", "predicted"},
                              {"cluster", title},
                              {"op", collective::op_name(b.op)},
                              {"algorithm", b.algorithm},
                              {"type", "float"},
                              {"rows", std::move(rows)}};
  return j.dump(2) + "\n";
}

}  // namespace ringsim
