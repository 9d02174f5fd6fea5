#include "calibrate/placement.h"

#include <algorithm>
#include <cstdio>
#include <vector>

#include "report/stats.h"

namespace ringsim {

void PlacementFilter::add_file(const nlohmann::json& file) {
  if (!file.is_object() || !file.contains("core_to_core")) return;
  const auto& c = file.at("core_to_core");
  const double factor = c.at("retake_above_nearest").get<double>();
  factor_ = factor_ > 0 ? std::min(factor_, factor) : factor;  // the strictest, should they differ
  if (!c.at("nearest_ns").is_null()) add_nearest(c.at("nearest_ns").get<double>());
  if (cpus_.empty() && c.contains("cpus"))
    cpus_ = std::to_string(c.at("cpus").at(0).get<int>()) + " and " + std::to_string(c.at("cpus").at(1).get<int>());
}

void PlacementFilter::add_nearest(double ns) {
  if (ns > 0) nearest_ns_ = std::min(nearest_ns_, ns);
}

bool PlacementFilter::accept(const nlohmann::json& sample) {
  if (!active() || !sample.contains("core_to_core_ns")) return true;
  const auto& probes = sample.at("core_to_core_ns");
  const bool ok = std::all_of(probes.begin(), probes.end(),
                              [&](const nlohmann::json& ns) { return ns.get<double>() <= limit_ns(); });
  ++(ok ? kept_ : excluded_);
  return ok;
}

double PlacementFilter::point_seconds(const nlohmann::json& point) {
  if (!point.contains("samples")) return point.at("seconds").get<double>();
  std::vector<double> t;
  for (const auto& s : point.at("samples"))
    if (accept(s)) t.push_back(s.at("seconds").get<double>());
  return t.empty() ? -1 : median(t);
}

std::string PlacementFilter::summary(const std::string& what) const {
  char line[320];
  std::snprintf(line, sizeof line,
                "%d of %d %s taken with CPUs %s more than %.0f ns apart (%g times the nearest probe, %.0f ns) left "
                "out",
                excluded_, kept_ + excluded_, what.c_str(), cpus_.empty() ? "?" : cpus_.c_str(), limit_ns(), factor_,
                nearest_ns_);
  return line;
}

}  // namespace ringsim
