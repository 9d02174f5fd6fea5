#include "report/bench_report.h"

#include <cstdio>
#include <nlohmann/json.hpp>

namespace ringsim {

std::string bench_table(const BenchPrediction& b, const std::string& title) {
  std::string out = "# ringsim bench (predicted): allreduce, " + std::to_string(b.ranks) + " ranks, " + title +
                    ", algorithm " + b.algorithm + ", type float\n";
  char line[256];
  std::snprintf(line, sizeof line, "# %12s %12s %6s %5s %10s %8s %8s %7s\n", "size(B)", "count", "type", "redop",
                "time(us)", "algbw", "busbw", "#wrong");
  out += line;
  for (const BenchRow& r : b.rows) {
    const double algbw = r.algbw() / 1e9;
    std::snprintf(line, sizeof line, "  %12llu %12llu %6s %5s %10.2f %8.3f %8.3f %7s\n",
                  static_cast<unsigned long long>(r.bytes), static_cast<unsigned long long>(r.count), "float", "sum",
                  r.time_s * 1e6, algbw, algbw * b.bus_factor, "N/A");
    out += line;
  }
  return out;
}

std::string bench_json(const BenchPrediction& b, const std::string& title) {
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  for (const BenchRow& r : b.rows)
    rows.push_back({{"bytes", r.bytes},
                    {"count", r.count},
                    {"type", "float"},
                    {"op", "allreduce"},
                    {"time_us", r.time_s * 1e6},
                    {"algbw_gbps", r.algbw() / 1e9},
                    {"busbw_gbps", r.algbw() / 1e9 * b.bus_factor},
                    {"wrong", nullptr}});
  nlohmann::ordered_json j = {
      {"schema", "ringsim.bench/1"}, {"ranks", b.ranks},         {"transport", "predicted"}, {"cluster", title},
      {"op", "allreduce"},           {"algorithm", b.algorithm}, {"type", "float"},          {"rows", std::move(rows)}};
  return j.dump(2) + "\n";
}

}  // namespace ringsim
