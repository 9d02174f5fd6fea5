// `ringsim sweep`: the scenario predicted over a grid of key values. Axes come from the scenario's
// `sweep:` section (key -> list, or {from, to, step|factor}) and from --sweep key=v1,v2 on the command
// line; points are their Cartesian product (first axis slowest) or, with zip, taken side by side.
// Points run as `ringsim predict` child processes, several at a time; output order is the point order.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "load/input_error.h"

namespace ringsim {

struct SweepAxis {
  std::string key;                  // a scenario key, e.g. "cluster.nodes"
  std::vector<std::string> values;  // as --set values
  SourceLocation where;
  std::vector<SourceLocation> value_where;  // each value's place (list items), else empty
};

struct SweepPoint {
  int index = 0;
  std::vector<std::string> values;  // one per axis
};

// Reads the scenario's `sweep:` section and the --sweep arguments (command-line axes come after the
// file's; an axis given twice is an error). Throws InputError with file:line:col or the argument.
std::vector<SweepAxis> read_sweep_axes(const std::string& scenario_file, const std::vector<std::string>& cli_axes);
// Refuses (before expanding) more than kMaxSweepPoints points.
std::vector<SweepPoint> expand_sweep(const std::vector<SweepAxis>& axes, bool zip);

// Points one sweep or plan runs at most (each is a `ringsim predict`): 100,000 at 0.1-1 s per point is
// hours to days of CPU time.
constexpr int kMaxSweepPoints = 100000;

struct SweepOptions {
  std::string catalog_dir;
  std::string scenario;
  std::vector<std::string> sets;
  std::vector<std::string> axes;  // --sweep key=v1,v2,...
  bool zip = false;
  int jobs = 1;
  std::optional<std::string> fidelity;
  std::optional<std::string> csv_file, json_file, plot_file;
  bool resume = false;
  std::string self;  // path of the ringsim executable that runs the points
};

int run_sweep(const SweepOptions& o);

}  // namespace ringsim
