// CPU processes sharing cores: what a message costs more when the scheduler must hand a core over.
#include <tuple>

#include "calibrate/effect.h"

namespace ringsim {

namespace {

// The latency of exchanges from 1 KiB to 256 KiB (a line fitted over them; none: -1), where the
// rendezvous protocol runs and bandwidth does not yet hide a few microseconds.
double exchange_latency(const Measurements& m, const std::string& cls) {
  const auto it = m.by_class.find(cls);
  if (it == m.by_class.end()) return -1;
  std::vector<FitPoint> small;
  for (const auto& p : it->second)
    if (p.x_alpha == 1 && p.x_beta >= 1024 && p.x_beta <= 256 * 1024) small.push_back(p);
  return small.size() < 3 ? -1 : fit_linear(small).alpha;
}

// What an exchange on one core, and one on two cores each shared with another thread, took more than on
// two cores of their own, at sizes where latency shows.
void apply(const FitContext& c, CatalogOverlay& o, std::vector<std::string>& notes) {
  const Measurements& m = c.measurements;
  const std::string pair_cls = c.members.count("same_socket") ? "same_socket" : "cross_socket";
  const double apart = exchange_latency(m, pair_cls);
  for (const auto& [cls, key, what] :
       {std::tuple{kOneCore, "core_handoff", "the one-core exchanges' latency above the exchanges' (1 KiB-256 KiB)"},
        {kSharedCores, "cross_core_handoff",
         "the same for exchanges on two cores, each shared with a yielding thread"}}) {
    if (!m.by_class.count(cls) && std::string(cls) == kSharedCores && m.by_class.count(kOneCore)) {
      notes.push_back(std::string(kSharedCores) +
                      ": none measured (one core only, pinning refused, or data from an older " +
                      "ringsim-real); the catalog's cross_core_handoff stays");
      continue;
    }
    if (!m.by_class.count(cls)) continue;
    if (!c.cpu_processes) {
      notes.push_back(std::string(cls) + ": " + c.gpu + " ranks do not share cores; not applied");
      continue;
    }
    const double shared = exchange_latency(m, cls);
    if (shared < 0 || apart < 0) {
      notes.push_back(std::string(cls) + ": too few exchanges from 1 KiB to 256 KiB to fit the " + key);
      continue;
    }
    GpuOverlay& g = o.gpus[c.gpu];
    (std::string(key) == "core_handoff" ? g.core_handoff : g.cross_core_handoff) =
        significant(std::max(0.0, shared - apart));
    o.comment("gpus." + c.gpu, std::string(key) + ": " + what);
  }
}

}  // namespace

Effect core_handoff_effect() {
  return {"core_handoff",
          "sendrecv_one_core, sendrecv_shared_cores: one pair's exchanges on one core, and on two cores each "
          "shared with a yielding thread (ringsim-real calibrate), CPU processes",
          "the exchanges' latency from 1 KiB to 256 KiB (a line) above the same pair's on two cores of their own",
          {"gpus.GPU.core_handoff", "gpus.GPU.cross_core_handoff"},
          "CommModel: per message where processes outnumber cores (the scheduler handing a core over)",
          apply};
}

}  // namespace ringsim
