#include "load/prices.h"

#include <filesystem>
#include <memory>

#include "load/yaml_reader.h"

namespace ringsim {

PriceTable PriceTable::load(const std::string& file, const Catalog& catalog) {
  std::error_code ec;
  if (!std::filesystem::exists(file, ec)) throw InputError({file, 0, 0, ""}, "prices file is missing");
  auto doc = std::make_shared<YamlDocument>(YamlDocument::load_file(file, "prices"));
  YamlField root = YamlField::root(doc);
  if (!root.is_map()) root.fail("expected a mapping with currency and regions");
  root.require_map({"currency", "regions"});
  PriceTable t;
  t.currency = root.get("currency").choice({"USD"});
  YamlField regions = root.get("regions");
  if (!regions.is_map()) regions.fail("expected a mapping of region names (e.g. eastus) to their prices");
  regions.require_map();
  for (auto& [name, rf] : regions.entries()) {
    if (!rf.is_map()) rf.fail("expected a mapping with display_name, date, source and skus");
    rf.require_map({"display_name", "date", "source", "low_priority_discount", "skus"});
    RegionPrices r;
    r.name = name;
    r.file = file;
    r.display_name = rf.get("display_name").str();
    r.date = rf.get("date").str();
    r.source = rf.get("source").str();
    if (auto d = rf.find("low_priority_discount")) r.low_priority_discount = d->number(0, 0.99);
    YamlField skus = rf.get("skus");
    if (!skus.is_map()) skus.fail("expected a mapping of SKU names to {dedicated: USD per hour}");
    skus.require_map();
    for (auto& [sku_name, sf] : skus.entries()) {
      const SkuSpec* sku = catalog.find_sku(sku_name);
      if (!sku)
        throw InputError(sf.location(), sf.path() + ": unknown SKU '" + sku_name + "'" +
                                            suggestion_suffix(sku_name, catalog.sku_names()));
      if (!sf.is_map()) sf.fail("expected {dedicated: USD per VM-hour[, low_priority: USD per VM-hour]}");
      sf.require_map({"dedicated", "low_priority"});
      SkuPrice p;
      p.where = sf.get("dedicated").location();
      p.dedicated = sf.get("dedicated").number(1e-6, 1e6);
      if (auto lp = sf.find("low_priority")) {
        p.low_priority = lp->number(1e-6, 1e6);
        if (*p.low_priority > p.dedicated) lp->fail("a low-priority price above the dedicated price");
      }
      if (!r.skus.emplace(sku->name, p).second)
        sf.fail("'" + sku->name + "' is priced twice in this region (as " + sku_name + ")");
    }
    t.regions_[name] = std::move(r);
  }
  return t;
}

void PriceTable::overlay(const PriceTable& other) {
  for (const auto& [name, r] : other.regions_) {
    auto it = regions_.find(name);
    if (it == regions_.end()) {
      regions_[name] = r;
      continue;
    }
    RegionPrices& mine = it->second;
    mine.display_name = r.display_name;
    mine.date = r.date;
    mine.source = r.source;
    mine.file = r.file;
    if (r.low_priority_discount) mine.low_priority_discount = r.low_priority_discount;
    for (const auto& [sku, p] : r.skus) mine.skus[sku] = p;
  }
}

const RegionPrices* PriceTable::region(const std::string& name) const {
  auto it = regions_.find(name);
  return it == regions_.end() ? nullptr : &it->second;
}

std::vector<std::string> PriceTable::region_names() const {
  std::vector<std::string> v;
  for (const auto& [name, r] : regions_) v.push_back(name);
  return v;
}

std::optional<HourlyPrice> PriceTable::price(const std::string& region_name, const std::string& sku,
                                             bool low_priority) const {
  const RegionPrices* r = region(region_name);
  if (!r) return std::nullopt;
  auto it = r->skus.find(sku);
  if (it == r->skus.end()) return std::nullopt;
  if (!low_priority) return HourlyPrice{it->second.dedicated, false};
  if (it->second.low_priority) return HourlyPrice{*it->second.low_priority, false};
  if (r->low_priority_discount) return HourlyPrice{it->second.dedicated * (1 - *r->low_priority_discount), true};
  return std::nullopt;
}

}  // namespace ringsim
