// `ringsim plan`: the candidates predicted (their bands where they can meet the goal), priced and ranked.
#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "execute/goodput/goodput.h"
#include "load/scenario.h"
#include "load/units.h"
#include "plan/plan_run.h"
#include "plan/point_runner.h"

namespace ringsim {

double training_cost_usd(int vms, double usd_per_vm_hour, double seconds) {
  return static_cast<double>(vms) * usd_per_vm_hour * seconds / 3600.0;
}

std::vector<int> rank_evaluations(const std::vector<PlanEvaluation>& e, RankBy by) {
  std::vector<int> order(e.size());
  for (std::size_t i = 0; i < e.size(); ++i) order[i] = static_cast<int>(i);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    const PlanEvaluation &x = e[static_cast<std::size_t>(a)], &y = e[static_cast<std::size_t>(b)];
    if (x.feasible() != y.feasible()) return x.feasible();
    const double x1 = by == RankBy::Cost ? x.cost_usd : x.time_to_train_s;
    const double y1 = by == RankBy::Cost ? y.cost_usd : y.time_to_train_s;
    if (x1 != y1) return x1 < y1;
    const double x2 = by == RankBy::Cost ? x.time_to_train_s : x.cost_usd;
    const double y2 = by == RankBy::Cost ? y.time_to_train_s : y.cost_usd;
    if (x2 != y2) return x2 < y2;
    return x.index < y.index;
  });
  return order;
}

namespace plan_detail {

namespace {

// A plan's fidelity, unless --fidelity: the step fidelity where collectives run one at a time (a search of
// many configurations; how near the flow fidelity it stays: bench/README.md), else predict's default by GPU
// count, as the flow fidelity alone runs collectives at once.
std::optional<std::string> plan_fidelity(const PlanRun& r) {
  if (r.o.fidelity) return r.o.fidelity;
  if (r.base.communication.concurrent_collectives == 1) return "step";
  return std::nullopt;
}

// Predicts the candidates `which` (indices into r.candidates), with or without their bands.
void predict_points(const PlanRun& r, const std::vector<std::size_t>& which, bool band,
                    std::map<int, nlohmann::json>& results) {
  std::vector<PredictPoint> points;
  for (std::size_t i : which) points.push_back({r.candidates[i].index, r.candidates[i].sets});
  const PointRunOptions run{.self = r.o.self,
                            .catalog_dir = r.o.catalog_dir,
                            .scenario = r.o.scenario,
                            .fidelity = plan_fidelity(r),
                            .jobs = r.o.jobs,
                            .label = band ? "plan (bands)" : "plan",
                            .band = band};
  run_predict_points(run, points, [&](int idx, const nlohmann::json& j) { results[idx] = j; });
}

namespace {

// The configuration's times as wall times with failures, evictions (low-priority) and checkpoints, and its
// spare nodes billed; the reason it cannot run where it rarely completes a checkpoint interval.
std::string apply_goodput(const PlanRun& r, const Candidate& c, PlanEvaluation& e) {
  std::vector<Override> ov;
  for (const auto& set : c.sets) ov.push_back(parse_override(set));
  // Loaded as low-priority (a scenario's own eviction rate needs it), dedicated capacity then without evictions.
  ov.push_back(parse_override("cluster.low_priority=true"));
  try {
    Scenario s = load_scenario(r.o.scenario, r.catalog, ov);
    if (!e.low_priority) {
      s.cluster.low_priority = false;
      s.reliability.evictions_per_node_day = {};
    }
    const GoodputEstimate g = estimate_goodput(r.catalog, s, e.predicted_time_to_train_s, e.time_to_train_s_low,
                                               e.time_to_train_s_high, e.iteration_time_s);
    if (!g.modelled) return "";
    if (!g.completes) return "never completes: " + g.advice;
    e.failure_free_time_to_train_s = e.predicted_time_to_train_s;
    e.predicted_time_to_train_s = g.wall_time_to_train_s;
    e.time_to_train_s_low = g.wall_time_to_train_s_low;
    e.time_to_train_s_high = g.wall_time_to_train_s_high;
    e.ettr = g.ettr;
    e.checkpoint_interval_s = g.checkpoint_interval_s;
    e.spare_nodes = s.reliability.spare_nodes;
    e.vms += e.spare_nodes;
  } catch (const InputError& err) {
    return err.what();
  }
  return "";
}

}  // namespace

// Price every configuration, dedicated and (when allowed) low-priority, and rank them.
// `banded`: the candidates whose results were predicted with their band.
void price_candidates(PlanRun& r, const std::map<int, nlohmann::json>& results, const std::set<int>& banded) {
  for (const auto& c : r.candidates) {
    const auto& j = results.at(c.index);
    const SkuSpec& sku = r.catalog.sku(c.sku);
    for (bool lp : {false, true}) {
      if (lp && !r.goal.low_priority) continue;
      const auto price = r.prices.price(r.goal.region, c.sku, lp);
      if (!price) {
        r.skipped.emplace_back(describe(r, c) + ", low-priority",
                               "no low-priority price or discount in " + r.goal.region);
        continue;
      }
      PlanEvaluation e;
      e.index = static_cast<int>(r.evals.size());
      e.candidate = c.index;
      e.sku = c.sku;
      e.gpu = sku.gpu;
      e.worker_nodes = j["worker_nodes"].get<int>();
      e.vms = e.worker_nodes + j["server_nodes"].get<int>();
      e.gpus = j["gpus"].get<int>();
      e.strategy = c.strategy;
      e.fusion = c.fusion.empty() ? format_bytes(r.base.communication.fusion_threshold_bytes) : c.fusion;
      e.choices = c.choices;
      e.low_priority = lp;
      e.predicted_time_to_train_s = j["time_to_train_s"];
      e.banded = banded.count(c.index) > 0;
      e.time_to_train_s_low = j.value("time_to_train_s_low", e.predicted_time_to_train_s);
      e.time_to_train_s_high = j.value("time_to_train_s_high", e.predicted_time_to_train_s);
      e.iteration_time_s = j["iteration_time_s"];
      if (const std::string why = apply_goodput(r, c, e); !why.empty()) {
        r.skipped.emplace_back(describe(r, c) + (lp ? ", low-priority" : ""), why);
        continue;
      }
      e.time_to_train_s = r.goal.pessimistic ? e.time_to_train_s_high : e.predicted_time_to_train_s;
      e.predicted_images_per_sec = j["images_per_sec"];
      e.images_per_sec =
          r.goal.pessimistic ? j.value("images_per_sec_low", e.predicted_images_per_sec) : e.predicted_images_per_sec;
      e.tokens_per_sec = j.value("tokens_per_sec", 0.0) * e.images_per_sec / e.predicted_images_per_sec;
      e.memory_per_gpu_bytes = j["memory"]["per_gpu_bytes"];
      e.memory_capacity_bytes = j["memory"]["capacity_bytes"];
      e.memory_per_gpu_bytes_high = j["memory"].value("per_gpu_bytes_high", e.memory_per_gpu_bytes);
      e.scaling_efficiency = j["scaling_efficiency"];
      e.compute_time_s = j["compute_time_s"];
      e.exposed_communication_s = j["exposed_communication_s"];
      e.compute_source = j["compute_source"]["kind"].get<std::string>();
      e.compute_source_detail = j["compute_source"]["detail"].get<std::string>();
      if (j.contains("band")) e.compute_evidence = j["band"].value("compute_evidence", std::string());
      e.bottleneck_link = j["bottleneck"]["link"].get<std::string>();
      e.bottleneck_kind = j["bottleneck"].value("kind", std::string());
      e.bottleneck_utilisation = j["bottleneck"]["utilisation"];
      e.usd_per_vm_hour = price->usd;
      e.price_estimated = price->estimated;
      e.cost_usd = training_cost_usd(e.vms, e.usd_per_vm_hour, e.time_to_train_s);
      if (r.goal.deadline_s) e.meets_deadline = e.time_to_train_s <= *r.goal.deadline_s;
      if (r.goal.budget_usd) e.meets_budget = e.cost_usd <= *r.goal.budget_usd;
      r.evals.push_back(e);
    }
  }
  if (r.evals.empty()) throw InputError(r.goal.where, "plan: no configuration could be priced");
  r.order = rank_evaluations(r.evals, r.goal.rank_by);
}

// Every candidate predicted, then the bands (16 more predictions each). Planned at the prediction, only the
// rows shown need their band: those that meet the goal at their prediction, up to --top (a band's
// pessimistic end never meets what the prediction misses; without a deadline or a budget every candidate
// meets it). At the pessimistic end (--confidence high) every configuration is ranked, shown and drawn at
// that end, so every one is banded.
std::set<int> to_band(const PlanRun& r) {
  std::set<int> meeting;
  for (int i : r.order) {
    const PlanEvaluation& e = r.evals[static_cast<std::size_t>(i)];
    if (!r.goal.pessimistic && (!e.feasible() || static_cast<int>(meeting.size()) >= r.goal.top)) continue;
    meeting.insert(e.candidate);
  }
  return meeting;
}

}  // namespace

void predict_and_price(PlanRun& r) {
  std::map<int, nlohmann::json> results;
  std::vector<std::size_t> all(r.candidates.size());
  for (std::size_t i = 0; i < all.size(); ++i) all[i] = i;
  predict_points(r, all, false, results);
  const std::size_t skipped = r.skipped.size();  // the search's own; pricing adds to them
  price_candidates(r, results, {});
  const std::set<int> meeting = to_band(r);
  std::vector<std::size_t> banded;
  for (std::size_t i = 0; i < r.candidates.size(); ++i)
    if (meeting.count(r.candidates[i].index)) banded.push_back(i);
  predict_points(r, banded, true, results);
  r.evals.clear();
  r.skipped.resize(skipped);
  price_candidates(r, results, meeting);
}

}  // namespace plan_detail

}  // namespace ringsim
