#include "validate/horovod_timeline.h"

#include <algorithm>
#include <fstream>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "load/input_error.h"
#include "load/json_file.h"
#include "report/stats.h"

namespace ringsim {

double TimelineSummary::mean_buffer_s() const {
  if (buffers.empty()) return 0;
  double s = 0;
  for (const auto& b : buffers) s += b.end_s - b.start_s;
  return s / buffers.size();
}

namespace {

// Where the last whole event of a trace array ends (just after its '}'), or npos: the array's elements
// are objects at depth 1; strings may hold any bracket.
std::size_t last_whole_event_end(const std::string& text) {
  std::size_t end = std::string::npos;
  int depth = 0;
  bool in_string = false, escaped = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (escaped)
        escaped = false;
      else if (c == '\\')
        escaped = true;
      else if (c == '"')
        in_string = false;
      continue;
    }
    if (c == '"') in_string = true;
    if (c == '[' || c == '{') ++depth;
    if (c == ']' || c == '}') --depth;
    if (c == '}' && depth == 1) end = i + 1;
  }
  return end;
}

// Horovod writes the array as the run goes: a run stopped (or a timeline copied) mid-way lacks the closing
// bracket and may end inside an event. Such a prefix is read up to its last whole event; `cut` says so.
nlohmann::json read_trace(const std::string& file, bool& cut) {
  cut = false;
  const std::string text = read_input_file(file, kMaxTimelineInputBytes, "Horovod timeline");
  try {
    return parse_json_text(text, file, "not a complete JSON trace");
  } catch (const InputError& whole) {
    const auto first = text.find_first_not_of(" \t\r\n");
    const std::size_t end = last_whole_event_end(text);
    if (first == std::string::npos || text[first] != '[' || end == std::string::npos) throw;
    try {
      nlohmann::json j = nlohmann::json::parse(text.substr(0, end) + "]");
      cut = true;
      return j;
    } catch (const nlohmann::json::exception&) {
      throw whole;  // the file's own error, not the shortened text's
    }
  }
}

}  // namespace

TimelineSummary read_horovod_timeline(const std::string& file) {
  bool cut = false;
  nlohmann::json j = read_trace(file, cut);
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
  if (allreduce.empty()) {
    std::set<std::string> names;
    for (const auto& e : j)
      if (e.is_object() && text(e, "ph") == "B" && names.size() < 4) names.insert(text(e, "name"));
    std::string seen;
    for (const auto& n : names) seen += (seen.empty() ? "" : ", ") + n;
    throw InputError({file, 0, 0, ""}, "no ALLREDUCE spans" + (seen.empty() ? ": not a Horovod timeline?"
                                                                            : " (it records " + seen +
                                                                                  "): a timeline of training "
                                                                                  "iterations has one per gradient"));
  }

  TimelineSummary s;
  s.truncated = cut;
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
  s.iteration_s = upper_median(periods);
  return s;
}

}  // namespace ringsim
