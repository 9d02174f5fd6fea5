// Where two results differ, part by part (validate/result_diff): synthetic results whose collectives cost
// a known fixed time plus a known time per byte, changed one part at a time.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "test_support.h"
#include "validate/result_diff.h"

using namespace ringsim;

namespace {

struct Shape {
  double fixed_s = 20e-6, bytes_per_s = 5e9, compute_s = 0.2, overhead_s = 10e-6;
  std::vector<std::pair<double, int>> buffers = {{1e6, 3}, {4e6, 6}, {16e6, 9}, {2e6, 4}, {8e6, 5}};
};

// One iteration: buffers negotiated every 5 ms from 0.1 s, each copied in, reduced, copied out, one after
// another; the iteration ends with the compute or with the last collective, whichever is later.
nlohmann::json result(const Shape& s) {
  nlohmann::json cols = nlohmann::json::array();
  double free_at = 0;
  for (std::size_t i = 0; i < s.buffers.size(); ++i) {
    const double negotiated = 0.1 + 0.005 * static_cast<double>(i), start = std::max(negotiated, free_at);
    const double cstart = start + s.overhead_s / 2, cend = cstart + s.fixed_s + s.buffers[i].first / s.bytes_per_s;
    free_at = cend + s.overhead_s / 2;
    cols.push_back({{"index", i},
                    {"bytes", s.buffers[i].first},
                    {"tensors", s.buffers[i].second},
                    {"negotiated_at_s", negotiated},
                    {"start_s", start},
                    {"collective_start_s", cstart},
                    {"collective_end_s", cend},
                    {"end_s", free_at}});
  }
  const double iteration = std::max(s.compute_s, free_at);
  return {{"iteration_time_s", iteration},
          {"compute_time_s", s.compute_s},
          {"exposed_communication_s", iteration - s.compute_s},
          {"collectives", cols}};
}

}  // namespace

TEST_CASE("result diff: identical results agree, and the fit recovers the collectives' costs", "[validate]") {
  const auto d = compare_results(result({}), "predicted", result({}), "emulated", "e.json");
  CHECK(d.agree);
  CHECK(d.first_fusion_difference == -1);
  REQUIRE(d.b.fitted);
  CHECK(d.b.fixed_s == Approx(20e-6));
  CHECK(d.b.bytes_per_s == Approx(5e9));
  CHECK(d.main_part_s == 0);
  const std::string table = diff_table(d);
  CHECK_THAT(table, Catch::Contains("The same tensors are fused into the same buffers."));
  CHECK_THAT(table, Catch::Contains("5.00 GB/s"));
}

TEST_CASE("result diff: each changed part is the one named", "[validate]") {
  const nlohmann::json a = result({});
  Shape latency;
  latency.fixed_s = 60e-6;
  auto d = compare_results(a, "predicted", result(latency), "emulated", "e.json");
  CHECK_THAT(d.main_part, Catch::StartsWith("the latency model"));
  CHECK(d.main_part_s == Approx(5 * 40e-6));  // 40 us more on each of the 5 collectives
  CHECK(d.b.fixed_s == Approx(60e-6));

  Shape bandwidth;
  bandwidth.bytes_per_s = 4e9;
  d = compare_results(a, "predicted", result(bandwidth), "measured", "m.json");
  CHECK_THAT(d.main_part, Catch::StartsWith("bandwidth and reduction cost"));
  CHECK(d.main_part_s == Approx(31e6 / 4e9 - 31e6 / 5e9));
  CHECK(d.b.bytes_per_s == Approx(4e9));

  Shape compute;
  compute.compute_s = 0.25;
  d = compare_results(a, "predicted", result(compute), "measured", "m.json");
  CHECK_FALSE(d.agree);
  CHECK_THAT(d.main_part, Catch::StartsWith("compute"));
  CHECK(d.main_part_s == Approx(0.05));

  Shape fusion;  // the third buffer split in two: fusion timing, from buffer 2 on
  fusion.buffers = {{1e6, 3}, {4e6, 6}, {8e6, 4}, {8e6, 5}, {2e6, 4}, {8e6, 5}};
  d = compare_results(a, "predicted", result(fusion), "emulated", "e.json");
  CHECK(d.first_fusion_difference == 2);
  CHECK_THAT(diff_table(d), Catch::Contains("The buffers differ from buffer 2: predicted 9 tensors, 16000000 bytes, "
                                            "emulated 4 tensors, 8000000 bytes."));
}

TEST_CASE("result diff: a malformed result names the file and the field", "[validate]") {
  nlohmann::json b = result({});
  b["collectives"][3]["bytes"] = "many";
  CHECK(test::input_error_of([&] { compare_results(result({}), "predicted", b, "measured", "m.json"); }) ==
        "m.json: error: collectives[3].\"bytes\" is missing or not a number");
  b.erase("collectives");
  CHECK_THAT(test::input_error_of([&] { compare_results(result({}), "predicted", b, "measured", "m.json"); }),
             Catch::Contains("\"collectives\" is missing or not a list"));
}
