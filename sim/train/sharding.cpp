#include "train/sharding.h"

#include <cctype>
#include <map>

namespace ringsim {

namespace {
// The module path up to its first numbered component ("model.layers.7.mlp.up_proj.weight" ->
// "model.layers.7"); empty where it has none.
std::string block_of(const std::string& tensor) {
  std::size_t start = 0;
  while (start < tensor.size()) {
    std::size_t end = tensor.find('.', start);
    if (end == std::string::npos) end = tensor.size();
    bool digits = end > start;
    for (std::size_t i = start; i < end; ++i) digits = digits && std::isdigit(static_cast<unsigned char>(tensor[i]));
    if (digits && end < tensor.size()) return tensor.substr(0, end);  // a block, not a trailing index
    start = end + 1;
  }
  return "";
}
}  // namespace

std::vector<ShardUnit> shard_units(const ModelSpec& m) {
  std::vector<ShardUnit> units(1);  // the root
  std::map<std::string, int> index;
  for (std::size_t t = 0; t < m.tensors.size(); ++t) {
    const std::string block = block_of(m.tensors[t].name);
    int u = 0;
    if (!block.empty()) {
      auto [it, added] = index.emplace(block, static_cast<int>(units.size()));
      if (added) units.push_back({block, {}, 0});
      u = it->second;
    }
    units[u].tensors.push_back(static_cast<int>(t));
    units[u].params += m.tensors[t].numel;
  }
  if (units.front().tensors.empty()) units.erase(units.begin());
  return units;
}

int GatherPlan::find(int unit, bool backward) const {
  for (std::size_t g = 0; g < gathers.size(); ++g)
    if (gathers[g].unit == unit && gathers[g].backward == backward) return static_cast<int>(g);
  return -1;
}

GatherPlan gather_plan(const ModelSpec& m, const std::vector<Layer>& layers, bool reshard, int param_bytes) {
  GatherPlan plan;
  plan.units = shard_units(m);
  std::vector<int> unit_of_tensor(m.tensors.size(), 0);
  for (std::size_t u = 0; u < plan.units.size(); ++u)
    for (int t : plan.units[u].tensors) unit_of_tensor[t] = static_cast<int>(u);
  for (const auto& l : layers) plan.unit_of_layer.push_back(l.tensors.empty() ? 0 : unit_of_tensor[l.tensors.front()]);
  const bool rooted = !plan.units.empty() && plan.units.front().name.empty();
  auto bytes = [&](int u) { return static_cast<std::uint64_t>(plan.units[u].params) * param_bytes; };
  std::vector<int> freed;  // the gathers of blocks, in issue order
  auto add = [&](int u, bool backward) {
    const bool root = rooted && u == 0;
    const int waits = root || !reshard || freed.size() < 2 ? -1 : freed[freed.size() - 2];
    plan.gathers.push_back({u, backward, bytes(u), waits});
    if (!root) freed.push_back(static_cast<int>(plan.gathers.size()) - 1);
  };
  const int n = static_cast<int>(plan.units.size());
  for (int u = 0; u < n; ++u) add(u, false);
  if (reshard)
    for (int u = n - 1; u >= (rooted ? 1 : 0); --u) add(u, true);
  return plan;
}

GatherPlan whole_model_gather(const ModelSpec& m, const std::vector<Layer>& layers, int param_bytes) {
  GatherPlan plan;
  ShardUnit all;  // the root (never freed) holding every tensor
  for (std::size_t t = 0; t < m.tensors.size(); ++t) {
    all.tensors.push_back(static_cast<int>(t));
    all.params += m.tensors[t].numel;
  }
  plan.units = {all};
  plan.unit_of_layer.assign(layers.size(), 0);
  plan.gathers.push_back({0, false, static_cast<std::uint64_t>(all.params) * param_bytes, -1});
  return plan;
}

}  // namespace ringsim
