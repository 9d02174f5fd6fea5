#include "load/scenario_reliability.h"

#include <cmath>

#include "load/input_error.h"
#include "load/units.h"

namespace ringsim::scenario_detail {

const std::vector<std::string>& reliability_keys() {
  static const std::vector<std::string> keys = {"failures_per_1000_node_days",
                                                "evictions_per_node_day",
                                                "restart_time",
                                                "node_replacement_time",
                                                "checkpoint_interval",
                                                "checkpoint_storage",
                                                "checkpoint_async",
                                                "checkpoint_write_bandwidth",
                                                "spare_nodes"};
  return keys;
}

namespace {

// A figure the scenario gives: that value, no range (it is the user's); else the catalog's.
RangedFigure given(double value, const YamlField& f) {
  const SourceLocation at = f.location();
  return {value, value, value, at.origin.empty() ? at.file + ":" + std::to_string(at.line) : at.origin};
}

// The catalog's failure rate of the scenario's nodes: its GPU type's, counted on reference nodes, scaled
// by the GPUs a node trains on for the share the GPUs cause (an idle GPU's fault stops no job).
RangedFigure node_failures(const Catalog& catalog, const Scenario& s) {
  const ReliabilitySpec& r = catalog.reliability();
  const SkuSpec& sku = catalog.sku(s.cluster.sku);
  const RangedFigure* f = ReliabilitySpec::match(r.failures, sku.gpu);
  if (!f) throw InputError({}, "reliability.yaml gives no node failure rate for GPU type '" + sku.gpu + "'");
  const double scale = (1 - r.gpu_share) + r.gpu_share * s.cluster.gpus_per_node / r.reference_gpus;
  RangedFigure out = *f;
  out.value *= scale;
  out.low *= scale;
  out.high *= scale;
  return out;
}

RangedFigure evictions(const Catalog& catalog, const Scenario& s) {
  if (!s.cluster.low_priority) return {};
  const RangedFigure* f = ReliabilitySpec::match(catalog.reliability().evictions, s.cluster.sku);
  if (!f) throw InputError({}, "reliability.yaml gives no eviction rate for low-priority " + s.cluster.sku);
  return *f;
}

void storage(const YamlField& f, const Catalog& catalog, ReliabilityConfig& c) {
  c.checkpoint_storage = f.str();
  const StorageBackendSpec* b = catalog.find_storage_backend(c.checkpoint_storage);
  if (!b)
    f.fail("unknown storage backend '" + c.checkpoint_storage + "'" +
           suggestion_suffix(c.checkpoint_storage, catalog.storage_backend_names()));
  if (b->write_bandwidth <= 0 && c.checkpoint_write_bandwidth <= 0) {
    std::vector<std::string> writable;
    for (const auto& n : catalog.storage_backend_names())
      if (catalog.find_storage_backend(n)->write_bandwidth > 0) writable.push_back(n);
    f.fail("storage.yaml gives '" + c.checkpoint_storage +
           "' no write bandwidth; give reliability.checkpoint_write_bandwidth or one of " +
           join_alternatives(writable, " or "));
  }
}

}  // namespace

ReliabilityConfig parse_reliability(const std::optional<YamlField>& section, const Scenario& s,
                                    const Catalog& catalog) {
  ReliabilityConfig c;
  const ReliabilitySpec& r = catalog.reliability();
  if (r.failures.empty()) {
    if (section) section->fail("the catalog has no reliability.yaml: goodput is not modelled");
    return c;
  }
  c.modelled = true;
  c.failures_per_1000_node_days = node_failures(catalog, s);
  c.evictions_per_node_day = evictions(catalog, s);
  c.restart_s = r.restart_s;
  c.replacement_s = r.replacement_s;
  c.node_loss_fraction = r.node_loss_fraction;
  c.host_copy_fraction = r.host_copy_fraction;
  c.checkpoint_storage = r.checkpoint_storage;
  if (!section) return c;
  const YamlField& re = *section;
  re.require_map(reliability_keys());
  if (auto f = re.find("failures_per_1000_node_days")) c.failures_per_1000_node_days = given(f->number(0, 1e6), *f);
  if (auto f = re.find("evictions_per_node_day")) {
    if (!s.cluster.low_priority) f->fail("applies only to low-priority VMs (cluster.low_priority: true)");
    c.evictions_per_node_day = given(f->number(0, 1e4), *f);
  }
  if (auto f = re.find("restart_time")) c.restart_s = given(f->quantity_between(Quantity::Time, 0, 30 * 86400.0), *f);
  if (auto f = re.find("node_replacement_time"))
    c.replacement_s = given(f->quantity_between(Quantity::Time, 0, 365 * 86400.0), *f);
  if (auto f = re.find("checkpoint_interval"); f && !(f->is_scalar() && f->str() == "auto")) {
    c.checkpoint_interval_s = f->quantity_between(Quantity::Time, 1, 365 * 86400.0);
    c.interval_at = f->location();
  }
  if (auto f = re.find("checkpoint_write_bandwidth"))
    c.checkpoint_write_bandwidth = f->quantity_between(Quantity::Bandwidth, 1, 1e18);
  if (auto f = re.find("checkpoint_storage")) storage(*f, catalog, c);
  if (auto f = re.find("checkpoint_async")) c.checkpoint_async = f->boolean();
  if (auto f = re.find("spare_nodes")) c.spare_nodes = static_cast<int>(f->integer(0, 65536));
  return c;
}

}  // namespace ringsim::scenario_detail
