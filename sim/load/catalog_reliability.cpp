// The catalog's reliability figures: reliability.yaml (issue 55), how often nodes fail and are evicted and
// what an interruption costs, each figure with a range and a source.
#include <fnmatch.h>

#include <filesystem>

#include "load/catalog.h"
#include "load/catalog_values.h"
#include "load/input_error.h"
#include "load/units.h"
#include "load/yaml_reader.h"

namespace ringsim {

namespace fs = std::filesystem;
using catalog_detail::open_root;

const RangedFigure* ReliabilitySpec::match(const std::vector<ByPattern>& list, const std::string& name) {
  for (const auto& e : list)
    for (const auto& p : e.patterns)
      if (fnmatch(p.c_str(), name.c_str(), 0) == 0) return &e.rate;
  return nullptr;
}

namespace {

// `{KEY: VALUE, range: [LOW, HIGH], source: TEXT}` (and `also`, which the caller reads), VALUE read by
// `read`; the range holds the value.
template <class Read>
RangedFigure ranged(const YamlField& f, const std::string& key, Read read, const std::string& also = "") {
  std::vector<std::string> keys = {key, "range", "source"};
  if (!also.empty()) keys.push_back(also);
  f.require_map(keys);
  RangedFigure r;
  r.value = read(f.get(key));
  const YamlField rf = f.get("range");
  const auto ends = rf.items();
  if (ends.size() != 2) rf.fail("expected [LOW, HIGH]");
  r.low = read(ends[0]);
  r.high = read(ends[1]);
  if (!(r.low <= r.value && r.value <= r.high)) rf.fail("the range must hold the value (LOW <= value <= HIGH)");
  r.source = "reliability.yaml:" + std::to_string(f.location().line) + " " + f.get("source").str();
  return r;
}

double rate(const YamlField& v) { return v.number(0, 1e6); }
double time(const YamlField& v) { return v.nonnegative_quantity(Quantity::Time); }
double fraction(const YamlField& v) { return v.number(0, 1); }

// Named entries {PATTERNS: [names], KEY: rate, range, source}, in file order.
std::vector<ReliabilitySpec::ByPattern> by_pattern(const YamlField& list, const std::string& patterns,
                                                   const std::string& key) {
  std::vector<ReliabilitySpec::ByPattern> out;
  for (const auto& [name, f] : list.entries()) {
    ReliabilitySpec::ByPattern e;
    e.rate = ranged(f, key, rate, patterns);
    for (const auto& p : f.get(patterns).items()) e.patterns.push_back(p.str());
    if (e.patterns.empty()) f.get(patterns).fail("expected at least one name or pattern");
    out.push_back(e);
  }
  return out;
}

}  // namespace

// reliability.yaml; a catalog without one predicts no goodput.
void Catalog::load_reliability(const fs::path& base) {
  if (!fs::exists(base / "reliability.yaml")) return;
  YamlField root = open_root(base / "reliability.yaml",
                             {"reference_gpus", "gpu_share", "node_failures", "evictions", "restart",
                              "node_replacement", "node_loss_fraction", "host_copy_fraction", "checkpoint_storage"});
  ReliabilitySpec& r = reliability_;
  r.reference_gpus = static_cast<int>(root.get("reference_gpus").integer(1, 1024));
  r.gpu_share = root.get("gpu_share").number(0, 1);
  r.failures = by_pattern(root.get("node_failures"), "gpus", "per_1000_node_days");
  r.evictions = by_pattern(root.get("evictions"), "skus", "per_node_day");
  r.restart_s = ranged(root.get("restart"), "time", time);
  r.replacement_s = ranged(root.get("node_replacement"), "time", time);
  r.node_loss_fraction = ranged(root.get("node_loss_fraction"), "value", fraction);
  r.host_copy_fraction = ranged(root.get("host_copy_fraction"), "value", fraction);
  if (r.host_copy_fraction.low <= 0) root.get("host_copy_fraction").get("range").fail("expected a fraction above 0");
  const YamlField cs = root.get("checkpoint_storage");
  r.checkpoint_storage = cs.str();
  const StorageBackendSpec* b = find_storage_backend(r.checkpoint_storage);
  if (!b)
    cs.fail("unknown storage backend '" + r.checkpoint_storage + "'" +
            suggestion_suffix(r.checkpoint_storage, storage_order_));
  if (b->write_bandwidth <= 0) cs.fail("storage.yaml gives '" + r.checkpoint_storage + "' no write_bandwidth");
}

}  // namespace ringsim
