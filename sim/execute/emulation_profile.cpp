#include "execute/emulation_profile.h"

#include <algorithm>
#include <limits>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "execute/comm_model.h"

namespace ringsim {

namespace {
constexpr std::uint64_t kProbe = 1ull << 30;  // CommModel's costs are linear in bytes: rate = probe / time
double rate(double seconds) { return seconds > 0 ? static_cast<double>(kProbe) / seconds : 0; }
}  // namespace

EmulationProfile EmulationProfile::from(CommModel& cm, int members) {
  EmulationProfile p;
  p.library = cm.library().name;
  p.space = cm.data_space();
  p.collective_overhead_s = cm.library().collective_overhead;
  p.fusion_copy_bytes_per_s = rate(cm.fusion_copy_time(kProbe));
  for (int m = 0; m < members; ++m) {
    Member x;
    x.reduce_device_bytes_per_s = rate(cm.reduce_time(m, collective::Space::Device, kProbe));
    x.reduce_host_bytes_per_s = rate(cm.reduce_time(m, collective::Space::Host, kProbe));
    x.update_bytes_per_s = rate(cm.update_time(m, kProbe));
    const Path& staging = cm.path(cm.endpoint(m, collective::Space::Device), cm.endpoint(m, collective::Space::Host));
    double bw = std::numeric_limits<double>::infinity();
    for (int e : staging.edges) bw = std::min(bw, cm.edge_bandwidth(e));
    x.staging_latency_s = staging.latency;
    x.staging_bytes_per_s = staging.edges.empty() ? 0 : bw;  // 0: the two spaces are the same memory
    x.node = cm.node_of(m);
    x.receive_copy_bytes_per_s = cm.receive_copy_rate(m);
    if (const auto after = cm.reduced_after_receive(m, collective::Space::Device, kProbe); after < kProbe)
      x.reduce_device_slice_bytes = after;
    p.members.push_back(x);
  }
  for (int a = 0; a < members; ++a)
    for (int b = 0; b < members; ++b) {
      const Path& path = cm.path(cm.endpoint(a, p.space), cm.endpoint(b, p.space));
      double bw = std::numeric_limits<double>::infinity();
      for (int e : path.edges) bw = std::min(bw, cm.edge_bandwidth(e));
      p.pairs.push_back({path.latency, path.edges.empty() ? 0 : bw});
    }
  return p;
}

std::string EmulationProfile::to_json() const {
  nlohmann::ordered_json j = {{"schema", "ringsim.emulation-profile/4"},
                              {"library", library},
                              {"space", std::string(collective::to_string(space))},
                              {"collective_overhead_s", collective_overhead_s},
                              {"fusion_copy_bytes_per_s", fusion_copy_bytes_per_s}};
  auto& ms = j["members"] = nlohmann::ordered_json::array();
  for (const auto& m : members)
    ms.push_back({{"reduce_device_bytes_per_s", m.reduce_device_bytes_per_s},
                  {"reduce_host_bytes_per_s", m.reduce_host_bytes_per_s},
                  {"update_bytes_per_s", m.update_bytes_per_s},
                  {"staging_latency_s", m.staging_latency_s},
                  {"staging_bytes_per_s", m.staging_bytes_per_s},
                  {"node", m.node},
                  {"receive_copy_bytes_per_s", m.receive_copy_bytes_per_s},
                  {"reduce_device_slice_bytes", m.reduce_device_slice_bytes}});
  auto& ps = j["pairs"] = nlohmann::ordered_json::array();
  for (const auto& x : pairs) ps.push_back({x.latency_s, x.bytes_per_s});
  return j.dump(1) + "\n";
}

EmulationProfile EmulationProfile::parse(const std::string& text, const std::string& file) {
  try {
    const auto j = nlohmann::json::parse(text);
    if (j.at("schema") != "ringsim.emulation-profile/4") throw std::runtime_error("unknown schema");
    EmulationProfile p;
    p.library = j.at("library").get<std::string>();
    p.space = j.at("space") == "host" ? collective::Space::Host : collective::Space::Device;
    p.collective_overhead_s = j.at("collective_overhead_s").get<double>();
    p.fusion_copy_bytes_per_s = j.at("fusion_copy_bytes_per_s").get<double>();
    for (const auto& m : j.at("members"))
      p.members.push_back({m.at("reduce_device_bytes_per_s").get<double>(),
                           m.at("reduce_host_bytes_per_s").get<double>(), m.at("update_bytes_per_s").get<double>(),
                           m.at("staging_latency_s").get<double>(), m.at("staging_bytes_per_s").get<double>(),
                           m.at("node").get<int>(), m.at("receive_copy_bytes_per_s").get<double>(),
                           m.at("reduce_device_slice_bytes").get<std::uint64_t>()});
    for (const auto& x : j.at("pairs")) p.pairs.push_back({x.at(0).get<double>(), x.at(1).get<double>()});
    if (p.pairs.size() != p.members.size() * p.members.size())
      throw std::runtime_error("pairs: expected members x members entries");
    return p;
  } catch (const std::exception& e) {
    throw std::runtime_error(file + ": not an emulation profile written by `ringsim emulate`: " + e.what());
  }
}

double EmulationProfile::protocol_s(const collective::Protocol& p, const collective::Transfer& t) const {
  if (p.name.empty() || t.src == t.dst) return 0;
  const Pair& x = pairs.at(static_cast<std::size_t>(t.src) * members.size() + t.dst);
  const double bytes = x.bytes_per_s > 0 ? static_cast<double>(t.bytes) * (1 / p.bandwidth - 1) / x.bytes_per_s : 0;
  return std::max(0.0, p.step_floor_s - x.latency_s) + bytes;
}

double EmulationProfile::Member::reduce_device_s(std::uint64_t bytes) const {
  const std::uint64_t after = reduce_device_slice_bytes > 0 ? std::min(bytes, reduce_device_slice_bytes) : bytes;
  return reduce_device_bytes_per_s > 0 ? static_cast<double>(after) / reduce_device_bytes_per_s : 0;
}

double EmulationProfile::receive_copy_s(const collective::Transfer& t) const {
  const Member &from = members.at(t.src), &to = members.at(t.dst);
  return shared_memory_copy_s(t, from.node, to.node, from.receive_copy_bytes_per_s, to.receive_copy_bytes_per_s);
}

}  // namespace ringsim
