#include "plan/capacity_plan.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "load/prices.h"
#include "load/scenario.h"
#include "load/units.h"
#include "load/yaml_reader.h"
#include "plan/charts.h"
#include "plan/point_runner.h"
#include "plan/sweep.h"
#include "report/output_file.h"
#include "report/plot.h"

namespace ringsim {

namespace {

const std::vector<std::string> kPlanKeys = {
    "deadline",     "budget",  "region",         "skus", "nodes",  "strategies", "fusion_thresholds",
    "low_priority", "rank_by", "quota_headroom", "top",  "prices", "confidence"};
const std::vector<std::string> kStrategies = {
    "ring", "tree", "auto", "hierarchical", "halving_doubling", "parameter_server"};
constexpr int kMaxPlanNodes = 65536;

SourceLocation option(const std::string& name, const std::string& value) { return {"", 0, 0, name + " " + value}; }

std::string canonical_sku(const Catalog& catalog, const std::string& name, const SourceLocation& where) {
  const SkuSpec* sku = catalog.find_sku(name);
  if (!sku) throw InputError(where, "unknown SKU '" + name + "'" + suggestion_suffix(name, catalog.sku_names()));
  return sku->name;
}

// The whole text as a finite number (no trailing characters), or nullopt.
std::optional<double> whole_number(const std::string& text) {
  std::size_t used = 0;
  double v = 0;
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  if (text.empty() || used != text.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

double parse_budget(const std::string& text, const SourceLocation& where) {
  const auto v = whole_number(text);
  if (!v || !(*v > 0)) throw InputError(where, "expected a budget in US dollars, a number > 0 (e.g. 5000)");
  return *v;
}

double parse_fraction(const std::string& text, const SourceLocation& where) {
  const bool percent = !text.empty() && text.back() == '%';
  auto v = whole_number(percent ? text.substr(0, text.size() - 1) : text);
  if (v && percent) *v /= 100;
  if (!v || *v < 0 || *v > 10)
    throw InputError(where, "expected a headroom fraction 0-10 or a percentage (e.g. 0.1 or 10%)");
  return *v;
}

int parse_node_count(const std::string& text, const SourceLocation& where) {
  const auto v = whole_number(text);
  if (!v || *v != std::floor(*v) || *v < 1 || *v > kMaxPlanNodes)
    throw InputError(where, "expected a whole number of nodes, 1-" + std::to_string(kMaxPlanNodes));
  return static_cast<int>(*v);
}

std::string fmt_usd(double v) {
  char b[64];
  std::snprintf(b, sizeof b, "%.2f", v);
  std::string s = b;
  const auto dot = s.find('.');
  for (int i = static_cast<int>(dot) - 3; i > (s[0] == '-' ? 1 : 0); i -= 3) s.insert(static_cast<std::size_t>(i), ",");
  return "$" + s;
}

std::string fmt_pct(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.1f %%", v * 100);
  return b;
}

std::string pad(const std::string& s, std::size_t w) {
  return s.size() >= w ? s + " " : s + std::string(w - s.size(), ' ');
}

// "1 epoch", "90 epochs".
std::string count_of(std::int64_t n, const std::string& noun) {
  return std::to_string(n) + " " + noun + (n == 1 ? "" : "s");
}

// A column's times in one unit, its largest value's (s below an hour, else h), 4 digits for that value and
// as many decimals for the others, right-aligned: the column compares by eye.
std::vector<std::string> time_column(const std::vector<double>& seconds) {
  double top = 0;
  for (double t : seconds)
    if (std::isfinite(t)) top = std::max(top, t);
  const double scale = top >= 3600 ? 3600 : 1;
  const int decimals = std::clamp(3 - static_cast<int>(std::floor(std::log10(std::max(top / scale, 1e-6)))), 1, 6);
  std::vector<std::string> out;
  std::size_t width = 0;
  for (double t : seconds) {
    char b[64];
    std::snprintf(b, sizeof b, "%.*f %s", decimals, t / scale, scale == 1 ? "s" : "h");
    out.push_back(b);
    width = std::max(width, out.back().size());
  }
  for (auto& t : out) t.insert(0, width - t.size(), ' ');
  return out;
}

// A configuration to predict: everything but the capacity kind (dedicated or low-priority).
struct Candidate {
  int index = 0;
  std::string sku, strategy, fusion;
  int nodes = 0;
  std::vector<std::string> sets;
};

}  // namespace

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

QuotaRequest quota_request(const SkuSpec& sku, const std::string& region, int vms, bool low_priority, double headroom) {
  QuotaRequest q;
  q.family = sku.quota_family;
  q.region = region;
  q.nodes = vms;
  // Headroom in whole VMs: a quota that cannot start one more VM is no headroom.
  q.requested_nodes = static_cast<int>(std::ceil(static_cast<double>(vms) * (1 + headroom) - 1e-9));
  q.vcpus_per_node = sku.vcpus;
  const int vcpus = q.requested_nodes * sku.vcpus;
  (low_priority ? q.low_priority_vcpus : q.dedicated_vcpus) = vcpus;
  return q;
}

namespace {

// The scenario's `plan:` section into the goal.
void read_plan_section(const YamlField& p, const std::filesystem::path& base, const Catalog& catalog, PlanGoal& g) {
  if (auto f = p.find("deadline")) g.deadline_s = f->positive_quantity(Quantity::Time);
  if (auto f = p.find("budget")) g.budget_usd = f->number(1e-9, 1e12);
  if (auto f = p.find("region")) g.region = f->str();
  if (auto f = p.find("skus")) {
    if (!f->is_sequence()) f->fail("expected a list of SKU names, e.g. [NC24rs_v3, ND40rs_v2]");
    for (auto& item : f->items()) {
      const SkuSpec* sku = catalog.find_sku(item.str());
      if (!sku) item.fail("unknown SKU '" + item.str() + "'" + suggestion_suffix(item.str(), catalog.sku_names()));
      g.skus.push_back(sku->name);
    }
    if (g.skus.empty()) f->fail("the list of SKUs is empty");
  }
  if (auto f = p.find("nodes")) {
    if (!f->is_sequence()) f->fail("expected a list of node counts, e.g. [1, 2, 4, 8]");
    g.nodes.clear();
    for (auto& item : f->items()) g.nodes.push_back(static_cast<int>(item.integer(1, kMaxPlanNodes)));
    if (g.nodes.empty()) f->fail("the list of node counts is empty");
  }
  if (auto f = p.find("strategies")) {
    if (!f->is_sequence()) f->fail("expected a list of strategies, e.g. [ring, parameter_server]");
    for (auto& item : f->items()) g.strategies.push_back(item.choice(kStrategies));
    if (g.strategies.empty()) f->fail("the list of strategies is empty");
  }
  if (auto f = p.find("fusion_thresholds")) {
    if (!f->is_sequence()) f->fail("expected a list of sizes, e.g. [0, 64 MiB]");
    for (auto& item : f->items()) {
      item.nonnegative_quantity(Quantity::Bytes);
      g.fusion_thresholds.push_back(item.str());
    }
    if (g.fusion_thresholds.empty()) f->fail("the list of fusion thresholds is empty");
  }
  if (auto f = p.find("low_priority")) g.low_priority = f->boolean();
  if (auto f = p.find("rank_by")) g.rank_by = f->choice({"cost", "time"}) == "cost" ? RankBy::Cost : RankBy::Time;
  if (auto f = p.find("quota_headroom")) g.quota_headroom = f->number(0, 10);
  if (auto f = p.find("confidence")) g.pessimistic = f->choice({"typical", "high"}) == "high";
  if (auto f = p.find("top")) g.top = static_cast<int>(f->integer(1, 100000));
  if (auto f = p.find("prices")) {
    const std::filesystem::path file = f->str();
    g.price_files.push_back((file.is_absolute() ? file : base / file).string());
  }
}

// The command line replaces the file's keys.
void apply_plan_options(const PlanOptions& cli, const Catalog& catalog, PlanGoal& g) {
  if (cli.deadline) {
    const SourceLocation w = option("--deadline", *cli.deadline);
    try {
      g.deadline_s = parse_quantity(*cli.deadline, Quantity::Time);
    } catch (const UnitError& e) {
      throw InputError(w, e.what());
    }
    if (!(*g.deadline_s > 0)) throw InputError(w, "expected a time > 0, e.g. 24 h or 3 d");
  }
  if (cli.budget) g.budget_usd = parse_budget(*cli.budget, option("--budget", *cli.budget));
  if (cli.region) g.region = *cli.region;
  if (!cli.skus.empty()) {
    g.skus.clear();
    for (const auto& s : cli.skus) g.skus.push_back(canonical_sku(catalog, s, option("--skus", s)));
  }
  if (!cli.nodes.empty()) {
    g.nodes.clear();
    for (const auto& s : cli.nodes) g.nodes.push_back(parse_node_count(s, option("--nodes", s)));
  }
  if (!cli.strategies.empty()) {
    g.strategies.clear();
    for (const auto& s : cli.strategies) {
      if (std::find(kStrategies.begin(), kStrategies.end(), s) == kStrategies.end())
        throw InputError(option("--strategies", s), "unknown strategy '" + s + "'" + suggestion_suffix(s, kStrategies));
      g.strategies.push_back(s);
    }
  }
  if (!cli.fusion_thresholds.empty()) {
    g.fusion_thresholds.clear();
    for (const auto& s : cli.fusion_thresholds) {
      try {
        if (parse_quantity(s, Quantity::Bytes) < 0) throw UnitError("expected a size >= 0");
      } catch (const UnitError& e) {
        throw InputError(option("--fusion-thresholds", s), e.what());
      }
      g.fusion_thresholds.push_back(s);
    }
  }
  if (cli.low_priority) g.low_priority = *cli.low_priority;
  if (cli.rank_by) g.rank_by = *cli.rank_by == "time" ? RankBy::Time : RankBy::Cost;
  if (cli.headroom) g.quota_headroom = parse_fraction(*cli.headroom, option("--headroom", *cli.headroom));
  if (cli.confidence) g.pessimistic = *cli.confidence == "high";
  if (cli.top) g.top = *cli.top;
  for (const auto& f : cli.price_files) g.price_files.push_back(f);
}

}  // namespace

PlanGoal read_plan_goal(const std::string& scenario_file, const PlanOptions& cli, const Catalog& catalog) {
  PlanGoal g;
  g.where = {scenario_file, 0, 0, ""};
  auto doc = std::make_shared<YamlDocument>(YamlDocument::load_file(scenario_file, "scenario"));
  YamlField root = YamlField::root(doc);
  if (root.is_map()) {
    if (auto p = root.find("plan")) {
      g.where = p->location();
      if (!p->is_map()) p->fail("expected a mapping with deadline and/or budget, e.g. {deadline: 24 h, budget: 5000}");
      p->require_map(kPlanKeys);
      read_plan_section(*p, std::filesystem::path(scenario_file).parent_path(), catalog, g);
    }
  }
  apply_plan_options(cli, catalog, g);
  if (!g.deadline_s && !g.budget_usd)
    throw InputError(g.where,
                     "plan: give a deadline and/or a budget (plan: {deadline: 24 h, budget: 5000}, or "
                     "--deadline / --budget)");
  std::sort(g.nodes.begin(), g.nodes.end());
  g.nodes.erase(std::unique(g.nodes.begin(), g.nodes.end()), g.nodes.end());
  return g;
}

namespace {

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
  std::vector<PlanEvaluation> evals;
  std::vector<int> order;  // of evals, the best first
  std::vector<PlanFlag> flags;
  const PlanEvaluation& best() const { return evals[static_cast<std::size_t>(order.front())]; }
  bool met() const { return best().feasible(); }
};

std::string describe(const Candidate& c) {
  return std::to_string(c.nodes) + " x " + c.sku + ", " + c.strategy + (c.fusion.empty() ? "" : ", fusion " + c.fusion);
}

// Prices: the catalog's file, then the overlays in order.
void load_prices(PlanRun& r) {
  const std::string catalog_prices = (std::filesystem::path(r.catalog.dir()) / "prices.yaml").string();
  std::error_code ec;
  if (std::filesystem::exists(catalog_prices, ec)) {
    r.prices = PriceTable::load(catalog_prices, r.catalog);
    r.price_sources.push_back(catalog_prices);
  }
  for (const auto& f : r.goal.price_files) {
    r.prices.overlay(PriceTable::load(f, r.catalog));
    r.price_sources.push_back(f);
  }
  r.region = r.prices.region(r.goal.region);
  if (!r.region) {
    const auto names = r.prices.region_names();
    throw InputError(r.goal.where, "plan: no prices for region '" + r.goal.region + "'" +
                                       (names.empty() ? std::string("; no prices file has any region (--prices FILE)")
                                                      : suggestion_suffix(r.goal.region, names)));
  }
}

// Candidate SKUs: the plan's list (each must be priced) or every priced SKU of the catalog.
void choose_skus(PlanRun& r) {
  if (!r.goal.skus.empty()) {
    for (const auto& s : r.goal.skus) {
      if (!r.prices.price(r.goal.region, s, false))
        throw InputError(r.goal.where, "plan: no price for " + s + " in " + r.goal.region + " (" + r.region->file +
                                           "); add it with --prices FILE");
      if (std::find(r.skus.begin(), r.skus.end(), s) == r.skus.end()) r.skus.push_back(s);
    }
  } else {
    for (const auto& s : r.catalog.sku_names())
      (r.prices.price(r.goal.region, s, false) ? r.skus : r.unpriced).push_back(s);
  }
  if (r.skus.empty()) throw InputError(r.goal.where, "plan: no SKU has a price in " + r.goal.region);
  std::set<std::string> gpu_types;
  for (const auto& s : r.skus) gpu_types.insert(r.catalog.sku(s).gpu);
  if (r.base.model.images_per_sec_single_gpu && gpu_types.size() > 1)
    throw InputError({r.o.scenario, 0, 0, ""},
                     "plan: model.samples_per_sec_single_gpu fixes one GPU's speed, but the plan compares " +
                         std::to_string(gpu_types.size()) +
                         " GPU types; remove it (the catalog's rates apply) or restrict plan.skus to one GPU type");
}

// The search space. Each SKU runs whole VMs (every GPU), on InfiniBand where it has it; a configuration
// that is no valid scenario is skipped, with why.
void make_candidates(PlanRun& r) {
  r.strategies = r.goal.strategies.empty()
                     ? std::vector<std::string>{std::string(to_string(r.base.communication.strategy))}
                     : r.goal.strategies;
  r.fusions = r.goal.fusion_thresholds.empty() ? std::vector<std::string>{""} : r.goal.fusion_thresholds;
  const double space = static_cast<double>(r.skus.size()) * static_cast<double>(r.goal.nodes.size()) *
                       static_cast<double>(r.strategies.size()) * static_cast<double>(r.fusions.size());
  if (space > kMaxSweepPoints)
    throw InputError(r.goal.where, "plan: " + std::to_string(r.skus.size()) + " SKUs x " +
                                       std::to_string(r.goal.nodes.size()) + " node counts x " +
                                       std::to_string(r.strategies.size()) + " strategies x " +
                                       std::to_string(r.fusions.size()) + " fusion settings is more than the " +
                                       std::to_string(kMaxSweepPoints) + " configurations a plan predicts; narrow it");
  for (const auto& sku_name : r.skus) {
    const SkuSpec& sku = r.catalog.sku(sku_name);
    for (int nodes : r.goal.nodes)
      for (const auto& strategy : r.strategies)
        for (const auto& fusion : r.fusions) {
          Candidate c;
          c.sku = sku_name;
          c.nodes = nodes;
          c.strategy = strategy;
          c.fusion = fusion;
          c.sets = r.o.sets;
          c.sets.push_back("cluster.sku=" + sku_name);
          c.sets.push_back("cluster.gpus_per_node=" + std::to_string(sku.gpus));
          c.sets.push_back(std::string("cluster.fabric=") + (sku.infiniband_link ? "infiniband" : "ethernet"));
          c.sets.push_back("cluster.nodes=" + std::to_string(nodes));
          if (!r.goal.strategies.empty()) c.sets.push_back("communication.strategy=" + strategy);
          // Parameter servers: one per worker node (TensorFlow's usual layout) unless the scenario says.
          if (strategy == "parameter_server" && (r.base.communication.strategy != Strategy::ParameterServer ||
                                                 (r.base.communication.ps_placement == PsPlacement::Colocated &&
                                                  r.base.communication.parameter_servers > nodes)))
            c.sets.push_back("communication.parameter_servers=" + std::to_string(nodes));
          if (!fusion.empty()) c.sets.push_back("communication.fusion_threshold=" + fusion);
          std::vector<Override> ov;
          for (const auto& s : c.sets) ov.push_back(parse_override(s));
          try {
            load_scenario(r.o.scenario, r.catalog, ov);
          } catch (const InputError& e) {
            r.skipped.emplace_back(describe(c), e.what());
            continue;
          }
          c.index = static_cast<int>(r.candidates.size());
          r.candidates.push_back(std::move(c));
        }
  }
  if (r.candidates.empty())
    throw InputError(r.goal.where, "plan: no configuration of the search space is a valid scenario; the first: " +
                                       r.skipped.front().first + ": " + r.skipped.front().second);
}

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
        r.skipped.emplace_back(describe(c) + ", low-priority", "no low-priority price or discount in " + r.goal.region);
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
      e.low_priority = lp;
      e.predicted_time_to_train_s = j["time_to_train_s"];
      e.banded = banded.count(c.index) > 0;
      e.time_to_train_s_low = j.value("time_to_train_s_low", e.predicted_time_to_train_s);
      e.time_to_train_s_high = j.value("time_to_train_s_high", e.predicted_time_to_train_s);
      e.time_to_train_s = r.goal.pessimistic ? e.time_to_train_s_high : e.predicted_time_to_train_s;
      e.iteration_time_s = j["iteration_time_s"];
      e.predicted_images_per_sec = j["images_per_sec"];
      e.images_per_sec =
          r.goal.pessimistic ? j.value("images_per_sec_low", e.predicted_images_per_sec) : e.predicted_images_per_sec;
      e.scaling_efficiency = j["scaling_efficiency"];
      e.compute_time_s = j["compute_time_s"];
      e.exposed_communication_s = j["exposed_communication_s"];
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

// Every candidate predicted, then the bands (16 more predictions each) of those that meet the goal at their
// prediction: a band's pessimistic end never meets what the prediction misses. Without a deadline or a
// budget every candidate meets it. Planned at the prediction, only the rows shown need their band (the
// winner's flag, the table); at the pessimistic end every band decides the ranking.
std::set<int> to_band(const PlanRun& r) {
  std::set<int> meeting;
  for (int i : r.order) {
    const PlanEvaluation& e = r.evals[static_cast<std::size_t>(i)];
    if (!e.feasible() || (!r.goal.pessimistic && static_cast<int>(meeting.size()) >= r.goal.top)) continue;
    meeting.insert(e.candidate);
  }
  return meeting;
}

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

// A winning plan that meets the deadline only at the optimistic end of its band.
void band_flag(PlanRun& r) {
  if (!r.met() || !r.goal.deadline_s) return;
  const PlanEvaluation& best = r.best();
  if (best.time_to_train_s_high <= *r.goal.deadline_s) return;
  r.flags.push_back({"deadline_at_optimistic_end", best.sku,
                     "The winning plan meets the deadline at its predicted " + format_time(best.time_to_train_s) +
                         " but not at the pessimistic end of its band, " + format_time(best.time_to_train_s_high) +
                         ": rerun with --confidence high to plan for that end, or narrow the band: a measured "
                         "single-GPU rate (model.samples_per_sec_single_gpu) where it is the roofline's, "
                         "calibration from a few runs (ringsim calibrate --runs)"});
}

// Scaling up against scaling out: the best plan of every other GPU type.
void scale_up_flag(PlanRun& r) {
  const PlanEvaluation& best = r.best();
  std::map<std::string, const PlanEvaluation*> best_of_type;
  std::map<std::string, int> most_gpus_tried;
  for (int i : r.order) {
    const auto& e = r.evals[static_cast<std::size_t>(i)];
    most_gpus_tried[e.gpu] = std::max(most_gpus_tried[e.gpu], e.gpus);
    if (e.feasible() && !best_of_type.count(e.gpu)) best_of_type[e.gpu] = &e;
  }
  std::vector<std::string> outscaled;
  for (const auto& [gpu, most] : most_gpus_tried) {
    if (gpu == best.gpu) continue;
    auto it = best_of_type.find(gpu);
    if (it == best_of_type.end()) {
      if (most > best.gpus)
        outscaled.push_back(gpu + ": nothing up to " + std::to_string(most) + " GPUs meets the goal");
    } else if (it->second->gpus > best.gpus) {
      const auto& e = *it->second;
      outscaled.push_back(gpu + ": needs " + std::to_string(e.gpus) + " GPUs (" + std::to_string(e.vms) + " x " +
                          e.sku + "), " + fmt_usd(e.cost_usd) + " in " + format_time(e.time_to_train_s));
    }
  }
  if (!outscaled.empty()) {
    std::string text = "Scaling up beats scaling out: " + std::to_string(best.gpus) + " x " + best.gpu + " (" +
                       std::to_string(best.vms) + " x " + best.sku + ") meet the goal for " + fmt_usd(best.cost_usd) +
                       "; the other GPU types need more of them:";
    for (const auto& s : outscaled) text += "\n    " + s;
    r.flags.push_back({"scale_up", "", text});
  }
}

void network_bound_flag(PlanRun& r) {
  const PlanEvaluation& best = r.best();
  // Network-bound: a fifth or more of each iteration waits on a network link.
  const double exposed_share = best.exposed_communication_s / best.iteration_time_s;
  if (exposed_share >= 0.2 && (best.bottleneck_kind == "ethernet" || best.bottleneck_kind == "infiniband")) {
    const SkuSpec& sku = r.catalog.sku(best.sku);
    std::string advice;
    if (best.bottleneck_kind == "ethernet") {
      for (const auto& n : r.catalog.sku_names()) {
        const SkuSpec& rdma = r.catalog.sku(n);
        if (rdma.infiniband_link && rdma.gpu == sku.gpu && rdma.gpus == sku.gpus && rdma.series == sku.series) {
          advice = "the RDMA size " + n + " has InfiniBand (" + *rdma.infiniband_link + ")" +
                   (std::find(r.skus.begin(), r.skus.end(), n) == r.skus.end() ? "; add it to plan.skus" : "");
          break;
        }
      }
    }
    if (advice.empty())
      advice = best.strategy == "hierarchical" ? "fewer, larger nodes (more GPUs per VM) cut the traffic between nodes"
                                               : "try strategy hierarchical, or fewer, larger nodes";
    const std::string text = "Network-bound: " + fmt_pct(exposed_share) + " of each iteration waits on " +
                             best.bottleneck_link + " (" + best.bottleneck_kind + ", " +
                             fmt_pct(best.bottleneck_utilisation) + " busy); " + advice;
    r.flags.push_back({"network_bound", "", text});
  }
}

// Parameter servers: one server's NIC cannot move a worker's gradients within its compute time, so
// even a server per worker would not keep up.
void server_flags(PlanRun& r) {
  {
    const LibraryProfile& lib = r.catalog.library(std::string(to_string(r.base.communication.library)));
    const double grad =
        static_cast<double>(r.catalog.model(r.base.model.name).total_params) * r.base.model.gradient_bytes;
    std::set<std::string> flagged;
    for (int i : r.order) {
      const auto& e = r.evals[static_cast<std::size_t>(i)];
      if (e.strategy != "parameter_server" || flagged.count(e.sku)) continue;
      const SkuSpec& sku = r.catalog.sku(e.sku);
      const double nic = sku.infiniband_link
                             ? r.catalog.link(*sku.infiniband_link).bandwidth * lib.infiniband.bandwidth_fraction
                             : sku.ethernet_bandwidth * lib.ethernet.bandwidth_fraction;
      const double per_worker = grad / (nic * e.compute_time_s);  // servers per worker needed
      const int needed = static_cast<int>(std::ceil(per_worker * e.gpus - 1e-9));
      if (needed <= e.gpus) continue;
      flagged.insert(e.sku);
      const std::string text = "Parameter servers on " + e.sku + ": each worker pushes and pulls " +
                               format_bytes(grad) + " per iteration, but one server's NIC (" + format_bandwidth(nic) +
                               ") moves only " + format_bytes(nic * e.compute_time_s) + " in the " +
                               format_time(e.compute_time_s) + " of compute; " + std::to_string(e.gpus) +
                               " workers would need " + std::to_string(needed) +
                               " servers, more servers than workers. Use ring or hierarchical allreduce.";
      r.flags.push_back({"parameter_servers_outnumber_workers", e.sku, text});
    }
  }
}

std::string report_header(const PlanRun& r) {
  std::ostringstream out;
  const ModelSpec& model = r.catalog.model(r.base.model.name);
  int feasible = 0;
  for (const auto& e : r.evals) feasible += e.feasible() ? 1 : 0;
  out << "ringsim plan: " << model.display_name << ", batch " << r.base.model.batch_per_gpu << " per GPU, "
      << r.base.model.precision << ", " << count_of(r.base.training.epochs, "epoch") << " of "
      << r.base.training.dataset_images << " " << model.sample_noun() << "\n";
  out << "  goal           ";
  if (r.goal.deadline_s) out << "deadline " << format_time(*r.goal.deadline_s);
  if (r.goal.deadline_s && r.goal.budget_usd) out << ", ";
  if (r.goal.budget_usd) out << "budget " << fmt_usd(*r.goal.budget_usd);
  out << "; ranked by " << (r.goal.rank_by == RankBy::Cost ? "cost" : "time")
      << (r.goal.pessimistic ? ", timed at the pessimistic end of each band (--confidence high)" : "") << "\n";
  out << "  prices         " << r.goal.region << " (" << r.region->display_name << "), USD per VM-hour, "
      << r.region->date << "; source " << r.region->source;
  for (const auto& f : r.price_sources) out << "; " << f;
  out << "\n";
  out << "  searched       " << r.skus.size() << " SKU" << (r.skus.size() == 1 ? "" : "s") << " x "
      << r.goal.nodes.size() << " node count" << (r.goal.nodes.size() == 1 ? "" : "s") << " x " << r.strategies.size()
      << " strateg" << (r.strategies.size() == 1 ? "y" : "ies") << " x " << r.fusions.size() << " fusion setting"
      << (r.fusions.size() == 1 ? "" : "s") << (r.goal.low_priority ? " x {dedicated, low-priority}" : "") << ": "
      << r.evals.size() << " priced configurations, " << feasible << " meet the goal\n";
  const auto banded = std::count_if(r.evals.begin(), r.evals.end(), [](const auto& e) { return e.banded; });
  if (banded < static_cast<std::ptrdiff_t>(r.evals.size()))
    out << "  bands          predicted for the " << banded
        << (r.goal.pessimistic ? " that meet the goal at their prediction (no band's pessimistic end meets what its "
                                 "prediction misses)\n"
                               : " shown that meet the goal at their prediction (--top; --confidence high bands "
                                 "every one)\n");
  if (!r.unpriced.empty()) {
    out << "  not priced     ";
    for (std::size_t i = 0; i < r.unpriced.size(); ++i) out << (i ? ", " : "") << r.unpriced[i];
    out << " (no price in " << r.goal.region << ")\n";
  }
  if (!r.skipped.empty()) out << "  skipped        " << r.skipped.size() << " configurations (see --json for why)\n";
  return out.str();
}

// The table's rows: the ranking's first --top, only those that meet the goal when any does.
std::vector<const PlanEvaluation*> shown_rows(const PlanRun& r) {
  std::vector<const PlanEvaluation*> rows;
  for (int i : r.order) {
    const auto& e = r.evals[static_cast<std::size_t>(i)];
    if (static_cast<int>(rows.size()) >= r.goal.top || (r.met() && !e.feasible())) break;
    rows.push_back(&e);
  }
  return rows;
}

// One row's cells; `rank` counts from 1, `time` is the time column's text for it.
std::vector<std::string> table_cells(const PlanEvaluation& e, std::size_t rank, const std::string& time) {
  std::string bottleneck =
      e.bottleneck_kind.empty() ? "none" : e.bottleneck_kind + " " + fmt_pct(e.bottleneck_utilisation);
  if (!e.meets_deadline) bottleneck += " over deadline";
  if (!e.meets_budget) bottleneck += " over budget";
  char ips[32];
  std::snprintf(ips, sizeof ips, "%.1f", e.images_per_sec);
  return {std::to_string(rank),
          e.sku,
          std::to_string(e.vms),
          std::to_string(e.gpus),
          e.strategy,
          e.fusion,
          e.low_priority ? (e.price_estimated ? "low-prio*" : "low-prio") : "dedicated",
          time,
          fmt_usd(e.cost_usd),
          ips,
          fmt_pct(e.scaling_efficiency),
          bottleneck};
}

std::string report_table(const PlanRun& r) {
  std::ostringstream out;
  out << "\n"
      << (r.met() ? "Configurations that meet the goal" : "No configuration meets the goal; the closest") << ":\n";
  std::size_t sku_width = 11;  // the longest SKU shown, and a space
  for (int i : r.order) sku_width = std::max(sku_width, r.evals[static_cast<std::size_t>(i)].sku.size() + 1);
  const std::vector<std::size_t> w = {4, sku_width, 5, 6, 17, 8, 14, 14, 12, 10, 8, 30};
  const std::string rate = r.base.model.text ? "seq/s" : "images/s";
  const std::vector<std::string> head = {"#",        "SKU",  "VMs",  "GPUs", "strategy", "fusion",
                                         "capacity", "time", "cost", rate,   "scaling",  "bottleneck"};
  auto row = [&](const std::vector<std::string>& cells) {
    std::string line;
    for (std::size_t k = 0; k < cells.size(); ++k) line += pad(cells[k], w[k]);
    out << line.substr(0, line.find_last_not_of(' ') + 1) << "\n";
  };
  row(head);
  const auto rows = shown_rows(r);
  std::vector<double> seconds;
  for (const auto* e : rows) seconds.push_back(e->time_to_train_s);
  const std::vector<std::string> times = time_column(seconds);
  for (std::size_t k = 0; k < rows.size(); ++k) row(table_cells(*rows[k], k + 1, times[k]));
  const bool any_estimated = std::any_of(rows.begin(), rows.end(), [](auto* e) { return e->price_estimated; });
  if (any_estimated && r.region->low_priority_discount)
    out << "  * low-priority price estimated as " << fmt_pct(*r.region->low_priority_discount) << " off dedicated ("
        << r.region->file << "): a lower bound on the cost. Low-priority VMs can be preempted; "
        << "the time assumes they are not.\n";
  return out.str();
}

std::string report_flags(const PlanRun& r) {
  std::ostringstream out;
  if (!r.flags.empty()) {
    out << "\nFlags:\n";
    for (const auto& f : r.flags) out << "  - " << f.text << "\n";
  }
  return out.str();
}

std::string report_quota(const PlanRun& r, const QuotaRequest& q) {
  const PlanEvaluation& best = r.best();
  std::ostringstream out;
  {
    out << "\nQuota request for the winning plan (" << best.vms << " x " << best.sku << ", " << best.strategy << ", "
        << (best.low_priority ? "low-priority" : "dedicated") << ", " << format_time(best.time_to_train_s) << ", "
        << fmt_usd(best.cost_usd) << "; "
        << (r.goal.pessimistic ? "the pessimistic end of the prediction's band" : "the prediction itself, not its band")
        << "):\n";
    out << "  " << pad("VM family", 30) << pad("region", 10) << pad("dedicated vCPUs", 17)
        << pad("low-priority vCPUs", 20) << "VMs\n";
    out << "  " << pad(q.family.empty() ? "(none: not an Azure size)" : q.family, 30) << pad(q.region, 10)
        << pad(std::to_string(q.dedicated_vcpus), 17) << pad(std::to_string(q.low_priority_vcpus), 20)
        << q.requested_nodes << "\n";
    out << "  (" << count_of(q.requested_nodes, "VM") << " x " << q.vcpus_per_node << " vCPUs; "
        << count_of(q.nodes, "VM") << " needed"
        << (r.goal.quota_headroom > 0 ? ", headroom " + fmt_pct(r.goal.quota_headroom) : std::string()) << ")\n";
  }
  return out.str();
}

nlohmann::ordered_json quota_json(const QuotaRequest& q, double headroom) {
  return {{"vm_family", q.family},
          {"region", q.region},
          {"dedicated_vcpus", q.dedicated_vcpus},
          {"low_priority_vcpus", q.low_priority_vcpus},
          {"vms", q.requested_nodes},
          {"vms_needed", q.nodes},
          {"vcpus_per_vm", q.vcpus_per_node},
          {"headroom", headroom}};
}

std::string plan_csv(const PlanRun& r) {
  {
    std::ostringstream c;
    c << "rank,sku,gpu,vms,gpus,strategy,fusion,capacity,usd_per_vm_hour,price_estimated,time_to_train_s,cost_usd,"
         "images_per_sec,scaling_efficiency,iteration_time_s,exposed_communication_s,bottleneck_link,bottleneck_kind,"
         "bottleneck_utilisation,meets_deadline,meets_budget\n";
    int rank = 0;
    for (int i : r.order) {
      const auto& e = r.evals[static_cast<std::size_t>(i)];
      const std::vector<std::string> f = {std::to_string(++rank),
                                          e.sku,
                                          e.gpu,
                                          std::to_string(e.vms),
                                          std::to_string(e.gpus),
                                          e.strategy,
                                          e.fusion,
                                          e.low_priority ? "low_priority" : "dedicated",
                                          csv_number(e.usd_per_vm_hour),
                                          e.price_estimated ? "true" : "false",
                                          csv_number(e.time_to_train_s),
                                          csv_number(e.cost_usd),
                                          csv_number(e.images_per_sec),
                                          csv_number(e.scaling_efficiency),
                                          csv_number(e.iteration_time_s),
                                          csv_number(e.exposed_communication_s),
                                          e.bottleneck_link,
                                          e.bottleneck_kind,
                                          csv_number(e.bottleneck_utilisation),
                                          e.meets_deadline ? "true" : "false",
                                          e.meets_budget ? "true" : "false"};
      for (std::size_t k = 0; k < f.size(); ++k) c << (k ? "," : "") << csv_field(f[k]);
      c << "\n";
    }
    return c.str();
  }
}

std::string plan_json(const PlanRun& r, const std::optional<QuotaRequest>& quota) {
  const bool met = r.met();
  {
    nlohmann::ordered_json j = {{"schema", "ringsim.plan/1"}, {"scenario", r.o.scenario}};
    nlohmann::ordered_json g = {
        {"deadline_s", r.goal.deadline_s ? nlohmann::ordered_json(*r.goal.deadline_s) : nullptr},
        {"budget_usd", r.goal.budget_usd ? nlohmann::ordered_json(*r.goal.budget_usd) : nullptr},
        {"region", r.goal.region},
        {"rank_by", r.goal.rank_by == RankBy::Cost ? "cost" : "time"},
        {"confidence", r.goal.pessimistic ? "high" : "typical"},
        {"low_priority", r.goal.low_priority},
        {"nodes", r.goal.nodes},
        {"strategies", r.strategies},
        {"skus", r.skus}};
    j["goal"] = g;
    j["prices"] = {
        {"region", r.goal.region}, {"date", r.region->date}, {"source", r.region->source}, {"files", r.price_sources}};
    j["met"] = met;
    nlohmann::ordered_json ranked = nlohmann::ordered_json::array();
    for (int i : r.order) {
      const auto& e = r.evals[static_cast<std::size_t>(i)];
      ranked.push_back(
          {{"sku", e.sku},
           {"gpu", e.gpu},
           {"vms", e.vms},
           {"gpus", e.gpus},
           {"strategy", e.strategy},
           {"fusion", e.fusion},
           {"capacity", e.low_priority ? "low_priority" : "dedicated"},
           {"usd_per_vm_hour", e.usd_per_vm_hour},
           {"price_estimated", e.price_estimated},
           {"time_to_train_s", e.time_to_train_s},
           {"predicted_time_to_train_s", e.predicted_time_to_train_s},
           {"time_to_train_s_low", e.banded ? nlohmann::ordered_json(e.time_to_train_s_low) : nullptr},
           {"time_to_train_s_high", e.banded ? nlohmann::ordered_json(e.time_to_train_s_high) : nullptr},
           {"cost_usd", e.cost_usd},
           {"images_per_sec", e.images_per_sec},
           {"predicted_images_per_sec", e.predicted_images_per_sec},
           {"scaling_efficiency", e.scaling_efficiency},
           {"bottleneck",
            {{"link", e.bottleneck_link}, {"kind", e.bottleneck_kind}, {"utilisation", e.bottleneck_utilisation}}},
           {"meets_deadline", e.meets_deadline},
           {"meets_budget", e.meets_budget}});
    }
    j["configurations"] = ranked;
    nlohmann::ordered_json sk = nlohmann::ordered_json::array();
    for (const auto& [what, why] : r.skipped) sk.push_back({{"configuration", what}, {"why", why}});
    j["skipped"] = sk;
    j["not_priced"] = r.unpriced;
    nlohmann::ordered_json flags_json = nlohmann::ordered_json::array();
    for (const auto& f : r.flags) {
      nlohmann::ordered_json one = {{"flag", f.kind}};
      if (!f.sku.empty()) one["sku"] = f.sku;
      one["text"] = f.text;
      flags_json.push_back(one);
    }
    j["flags"] = flags_json;
    j["quota_request"] = quota ? quota_json(*quota, r.goal.quota_headroom) : nlohmann::ordered_json(nullptr);
    return j.dump(2) + "\n";
  }
}

}  // namespace

int run_plan(const PlanOptions& o) {
  const Catalog catalog = Catalog::load(o.catalog_dir);
  std::vector<Override> base_overrides;
  for (const auto& s : o.sets) base_overrides.push_back(parse_override(s));
  PlanRun r{o, catalog, read_plan_goal(o.scenario, o, catalog), load_scenario(o.scenario, catalog, base_overrides)};
  std::vector<NamedFile> in = run_inputs(o.catalog_dir, o.scenario, r.base.calibration), out;
  for (const auto& f : o.price_files) add_file(in, "--prices", f);
  add_file(out, "--csv", o.csv_file);
  add_file(out, "--json", o.json_file);
  add_plot_files(out, o.plot_file);
  check_outputs(in, out);
  if (o.plot_file) check_plot_file(*o.plot_file);
  load_prices(r);
  choose_skus(r);
  make_candidates(r);
  predict_and_price(r);
  if (r.met()) {
    scale_up_flag(r);
    network_bound_flag(r);
  }
  server_flags(r);
  band_flag(r);
  const std::optional<QuotaRequest> quota =
      r.met() ? std::optional(quota_request(catalog.sku(r.best().sku), r.goal.region, r.best().vms,
                                            r.best().low_priority, r.goal.quota_headroom))
              : std::nullopt;
  // Rendered whole before any file is written.
  const std::string report =
      report_header(r) + report_table(r) + report_flags(r) + (quota ? report_quota(r, *quota) : std::string());
  const std::string csv = o.csv_file ? plan_csv(r) : "", json = o.json_file ? plan_json(r, quota) : "";
  std::cout << report;
  if (o.csv_file) write_file_atomically(*o.csv_file, csv);
  if (o.json_file) write_file_atomically(*o.json_file, json);
  if (o.plot_file)
    write_plot(*o.plot_file, plan_plot("ringsim plan: " + catalog.model(r.base.model.name).display_name + ", " +
                                           count_of(r.base.training.epochs, "epoch"),
                                       r.evals, r.goal.deadline_s, r.goal.budget_usd));
  return r.met() ? 0 : 1;
}

}  // namespace ringsim
