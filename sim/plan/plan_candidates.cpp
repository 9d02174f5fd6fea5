// `ringsim plan`: the prices, the candidate SKUs and the search space of configurations to predict.
#include <algorithm>
#include <filesystem>
#include <set>

#include "load/units.h"
#include "plan/plan_run.h"
#include "plan/sweep.h"
#include "schedule/memory.h"

namespace ringsim::plan_detail {

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
  if (r.base.model.images_per_sec_single_gpu && r.base.model.single_gpu_rates.empty() && gpu_types.size() > 1)
    throw InputError({r.o.scenario, 0, 0, ""},
                     "plan: model.samples_per_sec_single_gpu fixes one GPU's speed, but the plan compares " +
                         std::to_string(gpu_types.size()) +
                         " GPU types; give it per GPU type (a map by GPU type, e.g. {H100-SXM5-80GB: 3000, "
                         "A100-SXM4-80GB: 1500}), remove it (the "
                         "catalog's rates apply) or restrict plan.skus to one GPU type");
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
            const MemoryEstimate m = estimate_memory(r.catalog, load_scenario(r.o.scenario, r.catalog, ov));
            if (!m.fits()) {  // a plan never proposes a job that cannot run
              r.skipped.emplace_back(describe(c), memory_summary(m));
              continue;
            }
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

}  // namespace ringsim::plan_detail
