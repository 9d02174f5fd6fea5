// `ringsim plan`: the goal and search space, from the scenario's `plan:` section and the command line.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <memory>

#include "load/units.h"
#include "load/yaml_reader.h"
#include "plan/capacity_plan.h"

namespace ringsim {

namespace {

const std::vector<std::string> kPlanKeys = {"deadline",
                                            "budget",
                                            "region",
                                            "skus",
                                            "nodes",
                                            "strategies",
                                            "fusion_thresholds",
                                            "low_priority",
                                            "rank_by",
                                            "quota_headroom",
                                            "top",
                                            "prices",
                                            "confidence",
                                            "shardings",
                                            "zero_stages",
                                            "activation_checkpointing",
                                            "batch_per_gpu"};
const std::vector<std::string> kStrategies = {
    "ring", "tree", "auto", "hierarchical", "halving_doubling", "parameter_server"};
constexpr int kMaxPlanNodes = 65536;
constexpr int kMaxPlanBatch = 65536;

// The choices a plan can try: its key, the scenario key it sets, the table's header, the valid values (none:
// a per-GPU batch, a whole number) and the command-line option.
struct ChoiceAxis {
  const char *key, *setting, *column;
  std::vector<std::string> valid;
  std::vector<std::string> PlanOptions::*option;
};
const std::vector<ChoiceAxis>& choice_axes() {
  static const std::vector<ChoiceAxis> axes = {
      {"shardings",
       "communication.sharding",
       "sharding",
       {"full_shard", "shard_grad_op", "hybrid_shard", "no_shard"},
       &PlanOptions::shardings},
      {"zero_stages", "communication.zero_stage", "ZeRO stage", {"1", "2", "3"}, &PlanOptions::zero_stages},
      {"activation_checkpointing",
       "model.activation_checkpointing",
       "checkpointing",
       {"none", "selective", "full"},
       &PlanOptions::checkpointing},
      {"batch_per_gpu", "model.batch_per_gpu", "batch", {}, &PlanOptions::batch_sizes}};
  return axes;
}

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

// One value of a choice, checked: one of its valid names, or a per-GPU batch.
std::string choice_value(const ChoiceAxis& a, const std::string& v, const SourceLocation& where) {
  if (a.valid.empty()) {
    const auto n = whole_number(v);
    if (!n || *n != std::floor(*n) || *n < 1 || *n > kMaxPlanBatch)
      throw InputError(where, "expected a whole number of samples per GPU, 1-" + std::to_string(kMaxPlanBatch) +
                                  ", got '" + v + "'");
    return std::to_string(static_cast<int>(*n));
  }
  if (std::find(a.valid.begin(), a.valid.end(), v) == a.valid.end())
    throw InputError(where, "unknown " + std::string(a.column) + " '" + v + "'" + suggestion_suffix(v, a.valid) +
                                " (valid: " + join_alternatives(a.valid, " or ") + ")");
  return v;
}

// The choice of `a`, from the plan's list or the option's (which replaces it), its values checked; the
// choices stay in the axes' order.
void set_choice(PlanGoal& g, const ChoiceAxis& a, const SourceLocation& where,
                const std::vector<std::pair<std::string, SourceLocation>>& values) {
  PlanChoice c{a.key, a.setting, a.column, {}, where};
  for (const auto& [v, at] : values) {
    const std::string value = choice_value(a, v, at);
    if (std::find(c.values.begin(), c.values.end(), value) == c.values.end()) c.values.push_back(value);
  }
  const auto axis = [](const PlanChoice& x) {
    const auto& axes = choice_axes();
    return std::find_if(axes.begin(), axes.end(), [&](const ChoiceAxis& y) { return x.key == y.key; }) - axes.begin();
  };
  auto at = std::find_if(g.choices.begin(), g.choices.end(), [&](const PlanChoice& x) { return axis(x) >= axis(c); });
  if (at != g.choices.end() && at->key == c.key)
    *at = std::move(c);
  else
    g.choices.insert(at, std::move(c));
}

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
  for (const auto& a : choice_axes())
    if (auto f = p.find(a.key)) {
      if (!f->is_sequence() || f->items().empty())
        f->fail("expected a list of " + std::string(a.column) + " choices, e.g. [" +
                (a.valid.empty() ? std::string("1, 2, 4") : a.valid[0] + ", " + a.valid[1]) + "]");
      std::vector<std::pair<std::string, SourceLocation>> values;
      for (auto& item : f->items()) values.emplace_back(item.str(), item.location());
      set_choice(g, a, f->location(), values);
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
  for (const auto& a : choice_axes()) {
    const std::vector<std::string>& given = cli.*a.option;
    if (given.empty()) continue;
    std::string name = std::string("--") + a.key;
    std::replace(name.begin(), name.end(), '_', '-');
    std::vector<std::pair<std::string, SourceLocation>> values;
    for (const auto& v : given) values.emplace_back(v, option(name, v));
    set_choice(g, a, option(name, given.front()), values);
  }
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

}  // namespace ringsim
