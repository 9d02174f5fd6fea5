// `ringsim plan`: the prices, the candidate SKUs and the search space of configurations to predict.
#include <algorithm>
#include <filesystem>
#include <set>

#include "load/units.h"
#include "plan/plan_run.h"
#include "plan/sweep.h"
#include "schedule/memory.h"

namespace ringsim::plan_detail {

std::string describe(const PlanRun& r, const Candidate& c) {
  std::string text =
      std::to_string(c.nodes) + " x " + c.sku + ", " + c.strategy + (c.fusion.empty() ? "" : ", fusion " + c.fusion);
  for (std::size_t k = 0; k < c.choices.size(); ++k) text += ", " + r.goal.choices[k].column + " " + c.choices[k];
  return text;
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
  if (r.base.model.images_per_sec_single_gpu && r.base.model.single_gpu_rates.empty() && gpu_types.size() > 1)
    throw InputError({r.o.scenario, 0, 0, ""},
                     "plan: model.samples_per_sec_single_gpu fixes one GPU's speed, but the plan compares " +
                         std::to_string(gpu_types.size()) +
                         " GPU types; give it per GPU type (a map by GPU type, e.g. {H100-SXM5-80GB: 3000, "
                         "A100-SXM4-80GB: 1500}), remove it (the "
                         "catalog's rates apply) or restrict plan.skus to one GPU type");
}

namespace {

// Every combination of the goal's choices, a value of each (one empty combination where there are none).
std::vector<std::vector<std::string>> combinations(const std::vector<PlanChoice>& choices) {
  std::vector<std::vector<std::string>> out = {{}};
  for (const auto& c : choices) {
    std::vector<std::vector<std::string>> next;
    for (const auto& partial : out)
      for (const auto& v : c.values) {
        next.push_back(partial);
        next.back().push_back(v);
      }
    out = std::move(next);
  }
  return out;
}

// A choice the scenario's framework does not take is the plan's error, not every configuration's.
void check_choices(const PlanRun& r) {
  const Framework f = r.base.communication.framework;
  for (const auto& c : r.goal.choices) {
    const bool fsdp = c.key == "shardings", zero = c.key == "zero_stages";
    if ((fsdp && f != Framework::Fsdp) || (zero && f != Framework::Deepspeed))
      throw InputError(c.where, "plan: " + c.key + " applies to communication.framework " +
                                    (fsdp ? "fsdp" : "deepspeed") + "; the scenario's is " + std::string(to_string(f)) +
                                    " (--set communication.framework=" + (fsdp ? "fsdp" : "deepspeed") +
                                    " to plan it)");
  }
}

// Selective checkpointing recomputes the attention scores, which flash attention neither stores nor skips
// recomputing: on a stack with it, selective is the job none is (the same memory and time), so a plan that tries
// both tries none alone and says why, rather than ranking twin rows.
void merge_equal_choices(PlanRun& r) {
  const StackSpec& stack = r.catalog.compute().operators.stack_for(r.base.model.stack);
  if (!stack.flash_attention) return;
  for (auto& c : r.goal.choices) {
    auto& v = c.values;
    const auto selective = std::find(v.begin(), v.end(), "selective");
    if (c.key != "activation_checkpointing" || selective == v.end() || std::find(v.begin(), v.end(), "none") == v.end())
      continue;
    v.erase(selective);
    const std::string name =
        r.base.model.stack.empty() ? r.catalog.compute().operators.default_stack : r.base.model.stack;
    r.merged.push_back("checkpointing selective: the same as none under flash attention (model.stack " + name +
                       "): it stores no attention scores to recompute");
  }
}

// The candidate's scenario settings: the plan's --set, then the SKU's whole VMs (on InfiniBand where it has it),
// the node count, strategy, fusion and choices.
std::vector<std::string> candidate_sets(const PlanRun& r, const Candidate& c) {
  const SkuSpec& sku = r.catalog.sku(c.sku);
  std::vector<std::string> sets = r.o.sets;
  sets.push_back("cluster.sku=" + c.sku);
  sets.push_back("cluster.gpus_per_node=" + std::to_string(sku.gpus));
  sets.push_back(std::string("cluster.fabric=") + (sku.infiniband_link ? "infiniband" : "ethernet"));
  sets.push_back("cluster.nodes=" + std::to_string(c.nodes));
  if (!r.goal.strategies.empty()) sets.push_back("communication.strategy=" + c.strategy);
  // Parameter servers: one per worker node (TensorFlow's usual layout) unless the scenario says.
  if (c.strategy == "parameter_server" && (r.base.communication.strategy != Strategy::ParameterServer ||
                                           (r.base.communication.ps_placement == PsPlacement::Colocated &&
                                            r.base.communication.parameter_servers > c.nodes)))
    sets.push_back("communication.parameter_servers=" + std::to_string(c.nodes));
  if (!c.fusion.empty()) sets.push_back("communication.fusion_threshold=" + c.fusion);
  for (std::size_t k = 0; k < c.choices.size(); ++k) sets.push_back(r.goal.choices[k].setting + "=" + c.choices[k]);
  return sets;
}

// Adds the candidate unless it is no valid scenario or does not fit in memory (a plan never proposes a job that
// cannot run; at --confidence high, not at its memory band's high end); then it is skipped, with why.
void add_candidate(PlanRun& r, Candidate c) {
  c.sets = candidate_sets(r, c);
  std::vector<Override> ov;
  for (const auto& s : c.sets) ov.push_back(parse_override(s));
  try {
    const MemoryEstimate m = estimate_memory(r.catalog, load_scenario(r.o.scenario, r.catalog, ov));
    if (!m.fits()) {
      r.skipped.emplace_back(describe(r, c), memory_summary(m));
      return;
    }
    if (r.goal.pessimistic && m.per_gpu_bytes_high > m.capacity_bytes) {  // planned at the bands' ends
      r.skipped.emplace_back(
          describe(r, c), "does not fit at the high end of its memory band (--confidence high): " + memory_summary(m));
      return;
    }
  } catch (const InputError& e) {
    r.skipped.emplace_back(describe(r, c), e.what());
    return;
  }
  c.index = static_cast<int>(r.candidates.size());
  r.candidates.push_back(std::move(c));
}

}  // namespace

std::string search_space(const PlanRun& r) {
  const auto count = [](std::size_t n, const std::string& one, const std::string& many) {
    return std::to_string(n) + " " + (n == 1 ? one : many);
  };
  std::string text = count(r.skus.size(), "SKU", "SKUs") + " x " +
                     count(r.goal.nodes.size(), "node count", "node counts") + " x " +
                     count(r.strategies.size(), "strategy", "strategies") + " x " +
                     count(r.fusions.size(), "fusion setting", "fusion settings");
  for (const auto& c : r.goal.choices) text += " x " + std::to_string(c.values.size()) + " " + c.key;
  return text;
}

// The search space: SKUs x node counts x strategies x fusion settings x the choices.
void make_candidates(PlanRun& r) {
  check_choices(r);
  merge_equal_choices(r);
  r.strategies = r.goal.strategies.empty()
                     ? std::vector<std::string>{std::string(to_string(r.base.communication.strategy))}
                     : r.goal.strategies;
  r.fusions = r.goal.fusion_thresholds.empty() ? std::vector<std::string>{""} : r.goal.fusion_thresholds;
  const auto combos = combinations(r.goal.choices);
  const double space = static_cast<double>(r.skus.size()) * static_cast<double>(r.goal.nodes.size()) *
                       static_cast<double>(r.strategies.size()) * static_cast<double>(r.fusions.size()) *
                       static_cast<double>(combos.size());
  if (space > kMaxSweepPoints)
    throw InputError(r.goal.where, "plan: " + search_space(r) + " is more than the " + std::to_string(kMaxSweepPoints) +
                                       " configurations a plan predicts; narrow it");
  for (const auto& sku : r.skus)
    for (int nodes : r.goal.nodes)
      for (const auto& strategy : r.strategies)
        for (const auto& fusion : r.fusions)
          for (const auto& combo : combos)
            add_candidate(
                r,
                Candidate{
                    .sku = sku, .strategy = strategy, .fusion = fusion, .choices = combo, .nodes = nodes, .sets = {}});
  if (r.candidates.empty())
    throw InputError(r.goal.where, "plan: no configuration of the search space is a valid scenario; the first: " +
                                       r.skipped.front().first + ": " + r.skipped.front().second);
}

}  // namespace ringsim::plan_detail
