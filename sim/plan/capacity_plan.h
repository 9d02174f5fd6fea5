// `ringsim plan`: the goal-driven search. For the scenario's model, data and epochs it predicts every
// configuration of candidate SKUs x node counts x strategies x fusion settings (one `ringsim predict`
// child per point, as `ringsim sweep` runs them), prices each from topologies/prices.yaml, ranks those
// that meet the deadline and/or budget by cost or time, flags scale-up against scale-out, network-bound
// plans and parameter servers that would outnumber their workers, and ends with the Azure quota request.
// Goal and search space come from the scenario's `plan:` section; command-line options replace its keys.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "load/catalog.h"
#include "load/input_error.h"

namespace ringsim {

enum class RankBy { Cost, Time };

// The command line: every goal option, when given, replaces the scenario's `plan:` key.
struct PlanOptions {
  std::string catalog_dir, scenario, self;
  std::vector<std::string> sets;
  int jobs = 1;
  std::optional<std::string> fidelity;
  std::optional<std::string> json_file, csv_file, plot_file;
  std::optional<std::string> deadline, budget, region, rank_by, headroom, confidence;
  std::vector<std::string> skus, nodes, strategies, fusion_thresholds, price_files;
  std::vector<std::string> shardings, zero_stages, checkpointing, batch_sizes;  // the plan's choices (PlanChoice)
  std::optional<bool> low_priority;
  std::optional<int> top;
};

// A scenario setting the plan tries each value of, beside SKUs, nodes, strategies and fusion: FSDP's
// sharding, DeepSpeed's ZeRO stage, activation checkpointing, the micro-batch a GPU runs.
struct PlanChoice {
  std::string key;      // the plan: key, e.g. shardings
  std::string setting;  // the scenario key its values set, e.g. communication.sharding
  std::string column;   // the table's header
  std::vector<std::string> values;
  SourceLocation where;
};

// The resolved goal and search space.
struct PlanGoal {
  std::optional<double> deadline_s;
  std::optional<double> budget_usd;
  std::string region = "eastus";
  std::vector<std::string> skus;  // canonical names; empty: every priced GPU SKU
  std::vector<int> nodes = {1, 2, 4, 8, 16, 32};
  std::vector<std::string> strategies;         // empty: the scenario's strategy
  std::vector<std::string> fusion_thresholds;  // as written; empty: the scenario's setting
  std::vector<PlanChoice> choices;             // only those given, in the order of plan_goal.cpp's table
  bool low_priority = false;                   // also consider low-priority capacity
  RankBy rank_by = RankBy::Cost;
  // `confidence: high`: plans are timed, priced, ranked and checked against the goal at the pessimistic end
  // of their band (time_to_train_s_high); `typical`: at the prediction itself.
  bool pessimistic = false;
  double quota_headroom = 0;             // extra fraction of nodes in the quota request
  int top = 10;                          // rows shown
  std::vector<std::string> price_files;  // overlays on the catalog's prices.yaml, in order
  SourceLocation where;                  // the plan: section (or the command line)
};

// Reads the scenario's `plan:` section and applies the command-line options. Throws InputError with
// file:line:col (or the option) for a bad key or value.
PlanGoal read_plan_goal(const std::string& scenario_file, const PlanOptions& cli, const Catalog& catalog);

// One predicted configuration with its price. Pure data: ranking and flags work on these alone.
struct PlanEvaluation {
  int index = 0;
  int candidate = 0;  // the configuration's point index, shared by its dedicated and low-priority pricings
  std::string sku, gpu;
  int vms = 0;  // billed VMs: worker nodes plus dedicated server nodes
  int worker_nodes = 0, gpus = 0;
  std::string strategy, fusion;
  std::vector<std::string> choices;  // its value of each of the goal's choices
  bool low_priority = false;
  double time_to_train_s = 0, iteration_time_s = 0, images_per_sec = 0, scaling_efficiency = 0;
  double tokens_per_sec = 0;                                   // text models: at the goal's end, as images_per_sec
  double memory_per_gpu_bytes = 0, memory_capacity_bytes = 0;  // predict's memory estimate
  double memory_per_gpu_bytes_high = 0;                        // its band's high end
  double predicted_time_to_train_s = 0;                        // the prediction itself
  double predicted_images_per_sec = 0;                         // the same (images_per_sec: at the goal's end)
  double time_to_train_s_low = 0, time_to_train_s_high = 0;    // its band (both the prediction where none)
  // Goodput (issue 55): the times above are wall times, failures, evictions and checkpoints included, over
  // the prediction's failure-free time; the VMs include the spare nodes.
  double failure_free_time_to_train_s = 0, ettr = 1, checkpoint_interval_s = 0;
  int spare_nodes = 0;
  bool banded = false;  // the band was predicted (only for configurations that can meet the goal)
  double compute_time_s = 0, exposed_communication_s = 0;
  std::string compute_source, compute_source_detail;  // where the per-GPU rate came from (predict's JSON)
  std::string compute_evidence;  // what its band's compute range came from (band.compute_evidence; banded only)
  std::string bottleneck_link, bottleneck_kind;
  double bottleneck_utilisation = 0;
  double usd_per_vm_hour = 0;
  bool price_estimated = false;
  double cost_usd = 0;
  bool meets_deadline = true, meets_budget = true;
  bool feasible() const { return meets_deadline && meets_budget; }
};

// Azure bills VMs per second: VMs x hourly price x hours.
double training_cost_usd(int vms, double usd_per_vm_hour, double seconds);

// Orders evaluations: meeting the goal first, then by cost (or time), then the other, then index.
std::vector<int> rank_evaluations(const std::vector<PlanEvaluation>& e, RankBy by);

struct QuotaRequest {
  std::string family, region;
  int nodes = 0;            // the plan's VMs
  int requested_nodes = 0;  // with headroom, rounded up to whole VMs
  int vcpus_per_node = 0;
  int dedicated_vcpus = 0, low_priority_vcpus = 0;
};
QuotaRequest quota_request(const SkuSpec& sku, const std::string& region, int vms, bool low_priority, double headroom);

int run_plan(const PlanOptions& o);

}  // namespace ringsim
