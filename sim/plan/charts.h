// The sweep's scaling chart and the plan's cost-time chart, as gnuplot plots (report/plot.h).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "plan/capacity_plan.h"
#include "report/plot.h"

namespace ringsim {

// One predicted point of a sweep. `x` is the GPU count where the sweep varies it, else the first axis's
// value (`x_text` as written; x its position when it is not a number).
struct SweepChartPoint {
  std::string series;  // the values of the axes not on x, "predicted" when there are none
  double x = 0;
  std::string x_text;
  double images_per_sec = 0, scaling_efficiency = 0, single_gpu_images_per_sec = 0;
};

// Throughput and scaling efficiency against x. With GPUs on x: a log2 axis, and linear scaling from the
// single-GPU rate drawn as the curve it is there. `noun`: what the rates count ("images", "sequences").
Plot sweep_plot(const std::string& title, const std::string& x_label, bool gpus_on_x,
                const std::vector<SweepChartPoint>& points, const std::string& noun);

// Cost against time to train for every priced configuration, one colour per SKU; the deadline and budget
// as lines; the configurations no other beats in both time and cost joined and named.
Plot plan_plot(const std::string& title, const std::vector<PlanEvaluation>& evaluations,
               std::optional<double> deadline_s, std::optional<double> budget_usd);

}  // namespace ringsim
