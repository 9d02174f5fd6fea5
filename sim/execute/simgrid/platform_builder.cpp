#include "execute/simgrid/platform_builder.h"

#include <cmath>

namespace sg4 = simgrid::s4u;

namespace ringsim {

std::vector<std::string> network_model_config() {
  return {"network/model:CM02", "network/crosstraffic:0", "network/weight-S:0", "network/TCP-gamma:0"};
}

std::vector<MemberPlace> parameter_server_places(const Scenario& s, const Topology& topo) {
  std::vector<MemberPlace> servers;
  const auto& c = s.communication;
  for (int j = 0; j < c.server_members(); ++j) {
    const int node = c.ps_placement == PsPlacement::Dedicated ? s.cluster.nodes + j : j % s.cluster.nodes;
    const VertexId mem = topo.host_memory(node, 0);
    servers.push_back({mem, mem, false});
  }
  return servers;
}

std::vector<sg4::LinkInRoute> PlatformBuilder::route_links(const Path& p, bool overhead_as_latency) {
  std::vector<sg4::LinkInRoute> route;
  for (int e : p.edges) {
    if (!links_[e])
      links_[e] = zone_->create_link(cm_.edge_name(e), cm_.edge_bandwidth(e))->set_latency(cm_.edge_latency(e))->seal();
    route.emplace_back(links_[e]);
  }
  if (overhead_as_latency && p.overhead > 0) {
    sg4::Link* l = nullptr;
    for (const auto& [lat, link] : overhead_links_)
      if (lat == p.overhead) l = link;
    if (!l) {
      // A fat pipe: it adds the latency and shares nothing.
      l = zone_->create_link("message-overhead-" + std::to_string(overhead_links_.size()), 1e15)
              ->set_latency(p.overhead)
              ->set_sharing_policy(sg4::Link::SharingPolicy::FATPIPE)
              ->seal();
      overhead_links_.emplace_back(p.overhead, l);
    }
    route.emplace_back(l);
  }
  return route;
}

void PlatformBuilder::add_route(sg4::Host* a, sg4::Host* b, const Path& p, bool overhead_as_latency) {
  zone_->add_route(a->get_netpoint(), b->get_netpoint(), nullptr, nullptr, route_links(p, overhead_as_latency), false);
}

std::vector<sg4::Host*> build_emulation_platform(CommModel& cm, int members, double host_speed) {
  auto* zone = sg4::create_full_zone("cluster");
  std::vector<sg4::Host*> hosts;
  for (int m = 0; m < members; ++m) hosts.push_back(zone->create_host("rank" + std::to_string(m), host_speed));
  PlatformBuilder builder(cm, zone);
  const collective::Space space = cm.data_space();
  for (int a = 0; a < members; ++a)
    for (int b = 0; b < members; ++b) {
      // Parameter servers hold their shards in host memory whatever the library's data path.
      const auto sa = a < cm.workers() ? space : collective::Space::Host;
      const auto sb = b < cm.workers() ? space : collective::Space::Host;
      builder.add_route(hosts[a], hosts[b], cm.path(cm.endpoint(a, sa), cm.endpoint(b, sb)), true);
    }
  zone->seal();
  return hosts;
}

}  // namespace ringsim
