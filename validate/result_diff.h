// Where two results of the same scenario differ, part by part: predict, emulate and ringsim-real train
// all write the result schema (ringsim.result/1), so any two can be compared. The report splits one
// iteration into compute and exposed communication, sums what the collectives spent (waiting for the
// previous one, fusion copies and call overhead, the collective itself), fits every side's collective
// durations to a fixed cost per collective (latency, per-message protocol) plus a cost per byte
// (bandwidth and reduction), compares the fusion buffers one by one, and names the part that explains
// most of the difference.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace ringsim {

struct ResultSide {
  std::string label;  // "predicted", "emulated", "measured"
  double iteration_s = 0, compute_s = 0, exposed_s = 0;
  double bucket_copy_s = 0;  // PyTorch DDP's copies into its buckets and out (0 where a file has none)
  double waiting_s = 0;      // summed: from negotiation to start (negotiation cost, the previous one runs)
  double overhead_s = 0;     // summed: fusion copies in and out, per-call overhead
  double collective_s = 0;   // summed: the collectives themselves
  double bytes = 0;          // summed buffer bytes
  std::vector<std::pair<double, int>> buffers;  // bytes, tensors, in order
  bool fitted = false;                          // needs two buffers of different sizes
  double fixed_s = 0;                           // per collective
  double bytes_per_s = 0;                       // 1 / cost per byte (algorithm bandwidth)
};

struct ResultDiff {
  ResultSide a, b;
  int first_fusion_difference = -1;  // the first buffer whose bytes or tensors differ; -1: the same buffers
  std::string main_part;             // what explains most of the iteration difference
  double main_part_s = 0;            // its size, b - a
  bool agree = false;                // iterations within 1 %
};

// `a` and `b` are result-schema objects; `where_b` names b's file in errors (a malformed field is an
// InputError there).
ResultDiff compare_results(const nlohmann::json& a, const std::string& a_label, const nlohmann::json& b,
                           const std::string& b_label, const std::string& where_b);

std::string diff_table(const ResultDiff& d);
nlohmann::ordered_json diff_json(const ResultDiff& d);

}  // namespace ringsim
