// `ringsim bench`'s output: the table in nccl-tests' columns (as ringsim-real bench prints them, without
// the baseline's) and the JSON of ringsim-real bench's schema, so that a prediction and a real run can be
// held next to each other line by line.
#pragma once

#include <string>

#include "execute/analytic/collective_bench.h"

namespace ringsim {

// `title`: what was predicted (the SKU, nodes, library), printed in the table's first line.
std::string bench_table(const BenchPrediction& b, const std::string& title);
std::string bench_json(const BenchPrediction& b, const std::string& title);

}  // namespace ringsim
