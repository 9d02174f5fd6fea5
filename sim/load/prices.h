// VM prices (topologies/prices.yaml and user overlays): per region, per catalog SKU, US dollars per VM
// per hour for dedicated and low-priority capacity, each region with its date and source.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "load/catalog.h"
#include "load/input_error.h"

namespace ringsim {

struct SkuPrice {
  double dedicated = 0;                // per VM-hour
  std::optional<double> low_priority;  // per VM-hour, when the file gives one
  SourceLocation where;                // where the dedicated price was read
};

struct RegionPrices {
  std::string name;  // "eastus"
  std::string display_name, date, source;
  std::optional<double> low_priority_discount;  // used for sizes without a low_priority price
  std::map<std::string, SkuPrice> skus;         // canonical SKU name -> price
  std::string file;                             // the file the region was (last) read from
};

// A VM-hour price with how it was obtained.
struct HourlyPrice {
  double usd = 0;
  bool estimated = false;  // low-priority from the region's discount, not a listed price
};

class PriceTable {
 public:
  // Reads a prices file; SKU names are checked against the catalog. Throws InputError (file:line:col).
  static PriceTable load(const std::string& file, const Catalog& catalog);
  // Regions and sizes in `other` replace or extend this table's.
  void overlay(const PriceTable& other);

  std::string currency = "USD";
  const RegionPrices* region(const std::string& name) const;
  std::vector<std::string> region_names() const;
  // nullopt when the region has no price for the SKU (or no low-priority price or discount).
  std::optional<HourlyPrice> price(const std::string& region, const std::string& sku, bool low_priority) const;

 private:
  std::map<std::string, RegionPrices> regions_;
};

}  // namespace ringsim
