// Internal to `ringsim plan`: what its stages (plan_candidates.cpp, plan_evaluate.cpp, plan_flags.cpp,
// plan_report.cpp) hand on to each other and to run_plan (capacity_plan.cpp), and the helpers more than one
// of them uses. Not part of the plan's interface (capacity_plan.h).
#pragma once

#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "load/catalog.h"
#include "load/prices.h"
#include "load/scenario.h"
#include "plan/capacity_plan.h"

namespace ringsim::plan_detail {

inline std::string fmt_usd(double v) {
  char b[64];
  std::snprintf(b, sizeof b, "%.2f", v);
  std::string s = b;
  const auto dot = s.find('.');
  for (int i = static_cast<int>(dot) - 3; i > (s[0] == '-' ? 1 : 0); i -= 3) s.insert(static_cast<std::size_t>(i), ",");
  return "$" + s;
}

inline std::string fmt_pct(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.1f %%", v * 100);
  return b;
}

// "1 epoch", "90 epochs".
inline std::string count_of(std::int64_t n, const std::string& noun) {
  return std::to_string(n) + " " + noun + (n == 1 ? "" : "s");
}

// "90 epochs", "2T tokens": how much the scenario trains.
std::string training_amount(const Scenario& s);

// A configuration to predict: everything but the capacity kind (dedicated or low-priority).
struct Candidate {
  int index = 0;
  std::string sku, strategy, fusion;
  std::vector<std::string> choices;  // a value of each of the goal's choices
  int nodes = 0;
  std::vector<std::string> sets;
};

struct PlanFlag {
  std::string kind, sku, text;  // sku: the SKU it is about, where it is about one
};

// What a plan's stages hand on, in order: the goal and its prices, the search space and its candidates, the
// priced evaluations in rank order, the flags.
struct PlanRun {
  PlanRun(const PlanOptions& options, const Catalog& c, PlanGoal g, Scenario s)
      : o(options), catalog(c), goal(std::move(g)), base(std::move(s)) {}
  const PlanOptions& o;
  const Catalog& catalog;
  PlanGoal goal;
  Scenario base;
  PriceTable prices;
  std::vector<std::string> price_sources;
  const RegionPrices* region = nullptr;
  std::vector<std::string> skus, unpriced, strategies, fusions;
  std::vector<Candidate> candidates;
  std::vector<std::pair<std::string, std::string>> skipped;  // configuration, why
  std::vector<std::string> merged;  // choice values left out as the same job as another value, with why
  std::vector<PlanEvaluation> evals;
  std::vector<int> order;  // of evals, the best first
  std::vector<PlanFlag> flags;
  const PlanEvaluation& best() const { return evals[static_cast<std::size_t>(order.front())]; }
  bool met() const { return best().feasible(); }
};

// Prices, SKUs and the search space (plan_candidates.cpp).
std::string describe(const PlanRun& r, const Candidate& c);
std::string search_space(const PlanRun& r);  // "3 SKUs x 4 node counts x ... x 2 shardings"
void load_prices(PlanRun& r);
void choose_skus(PlanRun& r);
void make_candidates(PlanRun& r);

// Every candidate predicted and priced, ranked in r.order (plan_evaluate.cpp).
void predict_and_price(PlanRun& r);

// The flags on the ranking (plan_flags.cpp).
void band_flag(PlanRun& r);
void memory_flag(PlanRun& r);
void compute_source_flag(PlanRun& r);
void scale_up_flag(PlanRun& r);
void network_bound_flag(PlanRun& r);
void server_flags(PlanRun& r);

// The report, the CSV and the JSON (plan_report.cpp).
std::string report_header(const PlanRun& r);
std::string report_table(const PlanRun& r);
std::string report_flags(const PlanRun& r);
std::string report_quota(const PlanRun& r, const QuotaRequest& q);
std::string plan_csv(const PlanRun& r);
std::string plan_json(const PlanRun& r, const std::optional<QuotaRequest>& quota);

}  // namespace ringsim::plan_detail
