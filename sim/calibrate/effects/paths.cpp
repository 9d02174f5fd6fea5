// The library's path profiles: what a message costs between two ranks of one node and across the network,
// each class's base fit mapped onto the scenario's route between its pair of members.
#include <algorithm>

#include "calibrate/effect.h"
#include "load/units.h"

namespace ringsim {

namespace {

// The regimes of a path: bandwidth relative to the base fit's, overhead above `latency_in_route`.
// Copies between processes of one host are memory traffic, whose regimes are the caches' (footprint:
// what the host's processes hold, as they share its last-level cache); elsewhere they are the library's
// protocol switches (message). A measurement stands for the collectives that hold as much as it did:
// the 2 processes of an exchange each send one message and receive another (4 messages' bytes), of a
// ping-pong each hold one (2); a ring of p processes holds p x (buffer + buffer / p).
void add_regimes(const FitContext& c, const std::string& cls, double latency_in_route, bool by_footprint,
                 PathOverlay& p) {
  const auto& regs = c.fitted.regimes(cls);
  if (regs.size() < 2) return;
  const LinearFit* base = regs.back();
  const double buffer_per_message = by_footprint ? (c.measurements.exchange_classes.count(cls) ? 4 : 2) : 1;
  if (by_footprint) p.regimes_by = RegimeKey::Footprint;
  p.regimes.emplace();
  for (const LinearFit* g : regs) {
    const double scale = g->beta > 0 ? std::clamp(base->beta / g->beta, 0.01, 100.0) : 100.0;
    p.regimes->push_back({whole_bytes(g->from_bytes * buffer_per_message), significant(scale),
                          significant(std::max(0.0, g->alpha - latency_in_route))});
  }
  if (!by_footprint || c.fitted.protocol(cls).empty()) return;
  p.protocol_overheads.emplace();  // what a message pays by its own size, where regimes are keyed by footprint
  for (const auto& [from, overhead] : c.fitted.protocol(cls))
    p.protocol_overheads->emplace_back(std::trunc(from), significant(overhead));
}

// CPU processes: the fit is their copy link itself (each route crosses it twice, the sender's and the
// receiver's side), at the library's full rate. Its latency is the smallest messages' alpha; larger
// regimes add theirs above it as overhead.
void add_process_link(const FitContext& c, const std::string& key, const std::string& cls, const Path& route,
                      const LinearFit& f, CatalogOverlay& o) {
  const int hops = static_cast<int>(route.edges.size());
  const std::string link = c.routes.link(route.edges.front()).link_class;
  const double alpha0 = c.fitted.regimes(cls).front()->alpha;
  o.link_classes[link] = {significant(1 / f.beta), significant(alpha0 / std::max(hops, 1))};
  o.comments["link_classes." + link] = "from " + cls + ", " + std::to_string(hops) + " hops per message";
  PathOverlay& p = o.libraries[c.library].paths[key];
  p.bandwidth_fraction = 1;
  p.message_overhead = significant(std::max(0.0, f.alpha - alpha0));
  add_regimes(c, cls, alpha0, true, p);
  o.comments["libraries." + c.library + ".paths." + key] = "the " + link + " figures below carry the fit";
}

// Elsewhere the fit is a fraction of the route's nominal bandwidth (at most 1) and an overhead above its
// nominal latency.
void add_route_fraction(const FitContext& c, const std::string& key, const std::string& cls, const Path& route,
                        const LinearFit& f, CatalogOverlay& o, std::vector<std::string>& notes) {
  const auto [bw, lat] = c.routes.nominal(route);
  double fraction = f.beta > 0 ? (1 / f.beta) / bw : 1;
  if (fraction > 1) {
    notes.push_back(cls + ": measured " + format_bandwidth(1 / f.beta) + " is above the route's nominal " +
                    format_bandwidth(bw) + "; bandwidth fraction capped at 1");
    fraction = 1;
  }
  PathOverlay& p = o.libraries[c.library].paths[key];
  p.bandwidth_fraction = significant(std::max(fraction, 0.01));
  p.message_overhead = significant(std::max(0.0, f.alpha - lat));
  add_regimes(c, cls, lat, false, p);
  o.comments["libraries." + c.library + ".paths." + key] =
      "from " + cls + ": route nominal " + format_bandwidth(bw) + ", latency " + format_time(lat);
}

// The profile under `key` from class `cls`, where it was fitted; a note where the scenario lacks its pair.
void add_path(const FitContext& c, const std::string& key, const std::string& cls, CatalogOverlay& o,
              std::vector<std::string>& notes) {
  const LinearFit* f = c.fitted.base(cls);
  if (!f) return;
  const auto m = c.members.find(cls);
  if (m == c.members.end()) {
    notes.push_back(cls + ": the scenario has no such pair of ranks; not applied");
    return;
  }
  const Path& route = c.routes.route(m->second.first, m->second.second);
  if (c.cpu_processes && cls != "network" && f->beta > 0)
    add_process_link(c, key, cls, route, *f, o);
  else
    add_route_fraction(c, key, cls, route, *f, o, notes);
}

void apply_intra_node(const FitContext& c, CatalogOverlay& o, std::vector<std::string>& notes) {
  add_path(c, "intra_node", c.fitted.fit_of.count("same_socket") ? "same_socket" : "cross_socket", o, notes);
}

void apply_network(const FitContext& c, CatalogOverlay& o, std::vector<std::string>& notes) {
  add_path(c, c.scenario.cluster.fabric == FabricKind::InfiniBand ? "infiniband" : "ethernet", "network", o, notes);
}

}  // namespace

Effect intra_node_path_effect() {
  return {"intra_node_path",
          "same_socket (else cross_socket): exchanges or ping-pong of two ranks of one node by size (ringsim-real "
          "calibrate), or a one-node nccl-tests run",
          "alpha + beta x bytes per size regime; the measured curve as regimes; protocol switches as overheads",
          {"libraries.LIB.paths.intra_node", "link_classes.LINK (CPU processes: their copy link)"},
          "CommModel paths inside a node: effective bandwidth, per-message overhead, size regimes",
          apply_intra_node};
}

Effect network_path_effect() {
  return {"network_path",
          "network: exchanges of two ranks on two nodes (ringsim-real calibrate), or an nccl-tests run across "
          "nodes (its bus bandwidth shared by the rails it runs on)",
          "alpha + beta x bytes per size regime; bandwidth as a fraction of the route's nominal",
          {"libraries.LIB.paths.infiniband | ethernet"},
          "CommModel paths across the fabric: effective bandwidth, per-message overhead",
          apply_network};
}

}  // namespace ringsim
