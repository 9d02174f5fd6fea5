// The SimGrid platform of `ringsim emulate`, as a plug-in smpirun loads (`smpirun -platform
// libringsim_platform.so`): it reads the emulation spec named by RINGSIM_EMULATION_SPEC and builds, from
// the same topology graph and CommModel as `predict`, one host per MPI rank and a route between every
// pair of ranks (execute/simgrid/platform_builder.h).
#include <cstdio>
#include <cstdlib>
#include <simgrid/s4u.hpp>

#include "emulate/emulation_spec.h"
#include "execute/comm_model.h"
#include "execute/simgrid/platform_builder.h"
#include "execute/simgrid/training_sim.h"
#include "graph/topology_graph.h"

extern "C" void load_platform(const simgrid::s4u::Engine&) {
  using namespace ringsim;
  try {
    const char* file = std::getenv("RINGSIM_EMULATION_SPEC");
    if (!file) throw std::runtime_error("RINGSIM_EMULATION_SPEC is not set (run through `ringsim emulate`)");
    const auto [catalog, s] = EmulationSpec::read(file).load();
    const Topology topo = Topology::build(catalog, simulated_shape(s));
    CommModel cm(catalog, s, topo);
    if (s.communication.strategy == Strategy::ParameterServer) cm.set_servers(parameter_server_places(s, topo));
    const double speed = catalog.gpu(catalog.sku(s.cluster.sku).gpu).fp32_peak_flops;
    build_emulation_platform(cm, emulated_ranks(s), speed);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ringsim emulate: cannot build the platform: %s\n", e.what());
    std::exit(2);
  }
}
