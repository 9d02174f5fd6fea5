#include "validate/result_diff.h"

#include <cmath>
#include <cstdio>
#include <set>

#include "calibrate/fit.h"
#include "load/input_error.h"

namespace ringsim {

namespace {

double number(const nlohmann::json& j, const char* key, const std::string& where, const std::string& what) {
  if (!j.is_object() || !j.contains(key) || !j[key].is_number())
    throw InputError({where, 0, 0, ""}, what + "\"" + key + "\" is missing or not a number");
  return j[key].get<double>();
}

ResultSide read_side(const nlohmann::json& j, const std::string& label, const std::string& where) {
  ResultSide s;
  s.label = label;
  s.iteration_s = number(j, "iteration_time_s", where, "");
  s.compute_s = number(j, "compute_time_s", where, "");
  s.exposed_s = number(j, "exposed_communication_s", where, "");
  if (j.contains("bucket_copy_s")) s.bucket_copy_s = number(j, "bucket_copy_s", where, "");
  if (!j.contains("collectives") || !j["collectives"].is_array())
    throw InputError({where, 0, 0, ""}, "\"collectives\" is missing or not a list");
  std::vector<FitPoint> points;
  std::set<double> sizes;
  for (const auto& c : j["collectives"]) {
    const std::string in = "collectives[" + std::to_string(s.buffers.size()) + "].";
    const double negotiated = number(c, "negotiated_at_s", where, in), start = number(c, "start_s", where, in),
                 end = number(c, "end_s", where, in), cstart = number(c, "collective_start_s", where, in),
                 cend = number(c, "collective_end_s", where, in), bytes = number(c, "bytes", where, in),
                 tensors = number(c, "tensors", where, in);
    s.waiting_s += start - negotiated;
    s.overhead_s += (cstart - start) + (end - cend);
    s.collective_s += cend - cstart;
    s.bytes += bytes;
    s.buffers.emplace_back(bytes, static_cast<int>(tensors));
    if (cend - cstart > 0 && bytes > 0) {
      points.push_back({1, bytes, cend - cstart});
      sizes.insert(bytes);
    }
  }
  if (sizes.size() >= 2) {
    const LinearFit f = fit_linear(points);
    if (f.beta > 0) {
      s.fitted = true;
      s.fixed_s = f.alpha;
      s.bytes_per_s = 1 / f.beta;
    }
  }
  return s;
}

std::string ms(double s) {
  char b[32];
  std::snprintf(b, sizeof b, "%.3f ms", s * 1e3);
  return b;
}

std::string signed_ms(double s) {
  char b[32];
  std::snprintf(b, sizeof b, "%+.3f ms", s * 1e3);
  return b;
}

}  // namespace

ResultDiff compare_results(const nlohmann::json& a, const std::string& a_label, const nlohmann::json& b,
                           const std::string& b_label, const std::string& where_b) {
  ResultDiff d;
  d.a = read_side(a, a_label, "");
  d.b = read_side(b, b_label, where_b);
  const std::size_t n = std::min(d.a.buffers.size(), d.b.buffers.size());
  for (std::size_t i = 0; i < n && d.first_fusion_difference < 0; ++i)
    if (d.a.buffers[i] != d.b.buffers[i]) d.first_fusion_difference = static_cast<int>(i);
  if (d.first_fusion_difference < 0 && d.a.buffers.size() != d.b.buffers.size())
    d.first_fusion_difference = static_cast<int>(n);
  d.agree = std::fabs(d.b.iteration_s - d.a.iteration_s) <= 0.01 * std::fabs(d.a.iteration_s);

  // The part with the largest difference. Different buffers explain the exposed communication first;
  // with the same buffers, the collectives' fixed and per-byte costs are weighed over a's buffers.
  std::vector<std::pair<std::string, double>> parts = {
      {"compute (the per-layer compute model or stand-ins)", d.b.compute_s - d.a.compute_s},
      {"fusion copies and per-call overhead", d.b.overhead_s - d.a.overhead_s},
      {"DDP's bucket copies", d.b.bucket_copy_s - d.a.bucket_copy_s},
      {"negotiation and queueing (from a buffer's negotiation to its collective's start)",
       d.b.waiting_s - d.a.waiting_s}};
  if (d.first_fusion_difference >= 0) {
    parts.push_back(
        {"fusion timing (which tensors each buffer holds: the negotiation cycle and when gradients "
         "are ready)",
         d.b.exposed_s - d.a.exposed_s});
  } else if (d.a.fitted && d.b.fitted) {
    parts.push_back({"the latency model (fixed cost per collective: latency, per-message protocol)",
                     (d.b.fixed_s - d.a.fixed_s) * static_cast<double>(d.a.buffers.size())});
    parts.push_back(
        {"bandwidth and reduction cost (cost per byte)", (1 / d.b.bytes_per_s - 1 / d.a.bytes_per_s) * d.a.bytes});
  } else {
    parts.push_back({"the collectives (too few buffer sizes to split latency from bandwidth)",
                     d.b.collective_s - d.a.collective_s});
  }
  for (const auto& [name, delta] : parts)
    if (d.main_part.empty() || std::fabs(delta) > std::fabs(d.main_part_s)) {
      d.main_part = name;
      d.main_part_s = delta;
    }
  return d;
}

std::string diff_table(const ResultDiff& d) {
  std::string o;
  char line[320];
  auto row = [&](const std::string& part, const std::string& a, const std::string& b, const std::string& diff) {
    std::snprintf(line, sizeof line, "  %-46s %14s %14s %12s\n", part.c_str(), a.c_str(), b.c_str(), diff.c_str());
    o += line;
  };
  auto time_row = [&](const std::string& part, double a, double b) { row(part, ms(a), ms(b), signed_ms(b - a)); };
  o += "  Where " + d.b.label + " and " + d.a.label + " differ (one iteration):\n";
  row("part", d.a.label, d.b.label, "difference");
  time_row("iteration", d.a.iteration_s, d.b.iteration_s);
  time_row("compute (forward, backward, update)", d.a.compute_s, d.b.compute_s);
  time_row("communication not hidden by compute", d.a.exposed_s, d.b.exposed_s);
  time_row("collectives, summed", d.a.collective_s, d.b.collective_s);
  time_row("fusion copies and per-call overhead, summed", d.a.overhead_s, d.b.overhead_s);
  if (d.a.bucket_copy_s > 0 || d.b.bucket_copy_s > 0)
    time_row("DDP's bucket copies (compute stream)", d.a.bucket_copy_s, d.b.bucket_copy_s);
  time_row("negotiated to started (negotiation, queueing)", d.a.waiting_s, d.b.waiting_s);
  auto us = [](const ResultSide& s) {
    char b[32];
    std::snprintf(b, sizeof b, "%.1f us", s.fixed_s * 1e6);
    return s.fitted ? std::string(b) : std::string("-");
  };
  auto gbs = [](const ResultSide& s) {
    char b[32];
    std::snprintf(b, sizeof b, "%.2f GB/s", s.bytes_per_s / 1e9);
    return s.fitted ? std::string(b) : std::string("-");
  };
  row("collective fit: fixed cost per collective", us(d.a), us(d.b), "");
  row("collective fit: bytes per second", gbs(d.a), gbs(d.b), "");
  row("fusion buffers", std::to_string(d.a.buffers.size()), std::to_string(d.b.buffers.size()), "");
  if (d.first_fusion_difference < 0) {
    o += "  The same tensors are fused into the same buffers.\n";
  } else {
    const auto i = static_cast<std::size_t>(d.first_fusion_difference);
    auto buffer = [&](const ResultSide& s) {
      if (i >= s.buffers.size()) return std::string("none");
      char b[64];
      std::snprintf(b, sizeof b, "%d tensors, %.0f bytes", s.buffers[i].second, s.buffers[i].first);
      return std::string(b);
    };
    o += "  The buffers differ from buffer " + std::to_string(i) + ": " + d.a.label + " " + buffer(d.a) + ", " +
         d.b.label + " " + buffer(d.b) + ".\n";
  }
  o += std::string("  ") + (d.agree ? "The iterations agree within 1 %; the" : "The") + " largest difference is in " +
       d.main_part + ": " + signed_ms(d.main_part_s) + ".\n";
  return o;
}

nlohmann::ordered_json diff_json(const ResultDiff& d) {
  auto side = [](const ResultSide& s) {
    nlohmann::ordered_json j{{"label", s.label},
                             {"iteration_time_s", s.iteration_s},
                             {"compute_time_s", s.compute_s},
                             {"exposed_communication_s", s.exposed_s},
                             {"collectives_s", s.collective_s},
                             {"overhead_s", s.overhead_s},
                             {"bucket_copy_s", s.bucket_copy_s},
                             {"waiting_s", s.waiting_s},
                             {"fusion_buffers", s.buffers.size()}};
    if (s.fitted) {
      j["fixed_cost_per_collective_s"] = s.fixed_s;
      j["bytes_per_s"] = s.bytes_per_s;
    }
    return j;
  };
  return {{"a", side(d.a)},
          {"b", side(d.b)},
          {"first_fusion_difference", d.first_fusion_difference},
          {"agree_within_1_pct", d.agree},
          {"largest_difference", d.main_part},
          {"largest_difference_s", d.main_part_s}};
}

}  // namespace ringsim
