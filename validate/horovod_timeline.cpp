#include "validate/horovod_timeline.h"

#include <algorithm>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "load/input_error.h"
#include "validate/json_file.h"

namespace ringsim {

double TimelineSummary::mean_buffer_s() const {
  if (buffers.empty()) return 0;
  double s = 0;
  for (const auto& b : buffers) s += b.end_s - b.start_s;
  return s / buffers.size();
}

TimelineSummary read_horovod_timeline(const std::string& file) {
  // Horovod writes the array incrementally; a timeline cut off mid-run lacks the closing bracket.
  nlohmann::json j = read_json_file(file, "not a complete JSON trace");
  if (j.is_object() && j.contains("traceEvents")) j = j["traceEvents"];
  if (!j.is_array()) throw InputError({file, 0, 0, ""}, "expected a Chrome trace: a JSON array of events");

  // Per tensor row (pid): the ALLREDUCE spans, matched B/E in order (nested phases are skipped).
  struct Open {
    std::string name;
    double ts;
  };
  std::map<long long, std::vector<Open>> stack;
  std::map<long long, std::vector<std::pair<double, double>>> allreduce;  // pid -> spans
  // Fields of the wrong type make an event unusable; they are skipped like unknown events.
  auto text = [](const nlohmann::json& e, const char* key) {
    auto it = e.find(key);
    return it != e.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  auto number = [](const nlohmann::json& e, const char* key) {
    auto it = e.find(key);
    return it != e.end() && it->is_number() ? it->get<double>() : 0.0;
  };
  for (const auto& e : j) {
    if (!e.is_object() || !e.contains("pid") || !e["pid"].is_number_integer()) continue;
    const std::string ph = text(e, "ph");
    const long long pid = e["pid"].get<long long>();
    const double ts = number(e, "ts") * 1e-6;
    if (ph == "B") {
      stack[pid].push_back({text(e, "name"), ts});
    } else if (ph == "E") {
      auto& st = stack[pid];
      if (st.empty()) continue;
      const Open o = st.back();
      st.pop_back();
      if (o.name == "ALLREDUCE") allreduce[pid].push_back({o.ts, ts});
    } else if (ph == "X" && text(e, "name") == "ALLREDUCE") {
      allreduce[pid].push_back({ts, ts + number(e, "dur") * 1e-6});
    }
  }
  if (allreduce.empty()) throw InputError({file, 0, 0, ""}, "no ALLREDUCE spans: not a Horovod timeline?");

  TimelineSummary s;
  s.tensors = static_cast<int>(allreduce.size());
  // Fused tensors share one ALLREDUCE span: group spans by (start, end).
  std::map<std::pair<double, double>, int> buffers;
  std::vector<double> periods;
  for (const auto& [pid, spans] : allreduce) {
    for (const auto& sp : spans) ++buffers[sp];
    s.iterations = std::max(s.iterations, static_cast<int>(spans.size()));
    for (std::size_t i = 1; i < spans.size(); ++i) periods.push_back(spans[i].first - spans[i - 1].first);
  }
  for (const auto& [span, n] : buffers) s.buffers.push_back({span.first, span.second, n});
  if (!periods.empty()) {
    std::sort(periods.begin(), periods.end());
    s.iteration_s = periods[periods.size() / 2];
  }
  return s;
}

}  // namespace ringsim
