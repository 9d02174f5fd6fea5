// The SimGrid platform of a scenario, built from the topology graph through CommModel: hosts for the
// collective members, one SimGrid link per graph edge a route uses (with the library's effective
// bandwidth and the edge's latency), and routes. Shared by `predict`'s flow fidelity (hosts = graph
// vertices, routes for the pairs a collective uses) and `ringsim emulate`'s SMPI platform plug-in (one
// host per MPI rank, routes between every pair of ranks).
#pragma once

#include <simgrid/s4u.hpp>
#include <string>
#include <vector>

#include "execute/comm_model.h"

namespace ringsim {

// The network model settings both executors use: CM02 without cross traffic, RTT weighting or TCP
// window bound (plain max-min sharing of each directed link, latencies as given). LV08's TCP factors made
// microsecond-scale GPU links several times too slow.
std::vector<std::string> network_model_config();

// Where the parameter servers of `s` live (host memory of socket 0 of their node): dedicated nodes follow
// the workers' nodes, colocated servers go round-robin over the workers' nodes.
// Servers on the GPUs (placement gpus) are the workers themselves: none here.
std::vector<MemberPlace> parameter_server_places(const Scenario& s, const Topology& topo);

class PlatformBuilder {
 public:
  PlatformBuilder(CommModel& cm, simgrid::s4u::NetZone* zone) : cm_(cm), zone_(zone), links_(cm.edge_count()) {}

  // A route's links, created on first use. With `overhead_as_latency`, the library's per-message
  // overhead of the path becomes one more (non-shared) link of that latency on the route: the emulated
  // MPI program has no other place to pay it (`predict` sleeps it before each step's sends instead).
  std::vector<simgrid::s4u::LinkInRoute> route_links(const Path& p, bool overhead_as_latency);
  void add_route(simgrid::s4u::Host* a, simgrid::s4u::Host* b, const Path& p, bool overhead_as_latency);

 private:
  CommModel& cm_;
  simgrid::s4u::NetZone* zone_;
  std::vector<simgrid::s4u::Link*> links_;
  std::vector<std::pair<double, simgrid::s4u::Link*>> overhead_links_;
};

// The SMPI platform for `ringsim emulate`: a full zone with one host per member ("rank0", "rank1", ...;
// workers then parameter servers), each standing at the member's endpoint in the library's data space,
// and a route between every ordered pair. Returns the hosts in rank order.
std::vector<simgrid::s4u::Host*> build_emulation_platform(CommModel& cm, int members, double host_speed);

}  // namespace ringsim
