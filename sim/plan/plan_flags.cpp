// `ringsim plan`: the flags on its ranking (deadline met at the band's optimistic end only, scale-up against
// scale-out, network-bound, parameter servers that would outnumber their workers).
#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "load/units.h"
#include "plan/plan_run.h"

namespace ringsim::plan_detail {

// A winning plan that meets the deadline only at the optimistic end of its band.
void band_flag(PlanRun& r) {
  if (!r.met() || !r.goal.deadline_s) return;
  const PlanEvaluation& best = r.best();
  if (best.time_to_train_s_high <= *r.goal.deadline_s) return;
  r.flags.push_back({"deadline_at_optimistic_end", best.sku,
                     "The winning plan meets the deadline at its predicted " + format_time(best.time_to_train_s) +
                         " but not at the pessimistic end of its band, " + format_time(best.time_to_train_s_high) +
                         ": rerun with --confidence high to plan for that end, or narrow the band: a measured "
                         "single-GPU rate (model.samples_per_sec_single_gpu) where it is the roofline's, "
                         "calibration from a few runs (ringsim calibrate --runs)"});
}

// The winner fits at its memory estimate but not at its band's high end (the reserve's and allocator's ranges):
// it may run out of memory where the framework keeps more than the estimate.
void memory_flag(PlanRun& r) {
  if (!r.met()) return;
  const PlanEvaluation& best = r.best();
  if (best.memory_per_gpu_bytes_high <= best.memory_capacity_bytes) return;
  r.flags.push_back({"memory_at_estimate", best.sku,
                     "The winning plan needs " + format_bytes(best.memory_per_gpu_bytes) + " of a GPU's " +
                         format_bytes(best.memory_capacity_bytes) + ", up to " +
                         format_bytes(best.memory_per_gpu_bytes_high) +
                         " at its band's high end: it may run out of memory; --confidence high plans only what fits "
                         "there, or try more sharding, activation checkpointing or a smaller micro-batch"});
}

// Where each GPU type's per-GPU rate comes from, when the plan compares types whose rates are not all
// measured: a roofline or an extrapolated operator model is what the bands' width says, and their compute
// evidence where banded (schedule/compute_evidence.h).
void compute_source_flag(PlanRun& r) {
  std::map<std::string, const PlanEvaluation*> first_of_type;
  for (int i : r.order) {
    const auto& e = r.evals[static_cast<std::size_t>(i)];
    const auto [it, added] = first_of_type.emplace(e.gpu, &e);
    if (!added && !it->second->banded && e.banded) it->second = &e;  // one whose band says its evidence
  }
  bool all_measured = true;
  for (const auto& [gpu, e] : first_of_type)
    all_measured = all_measured && (e->compute_source == "measured" || e->compute_source == "scenario");
  if (first_of_type.size() < 2 || all_measured) return;
  std::string text = "Per-GPU rates differ in their evidence; compare the GPU types within their bands:";
  for (const auto& [gpu, e] : first_of_type)
    text += "\n    " + gpu + ": " + e->compute_source + ", " + e->compute_source_detail +
            (e->compute_evidence.empty() ? "" : "; band: " + e->compute_evidence);
  r.flags.push_back({"compute_evidence", "", text});
}

// Scaling up against scaling out: the best plan of every other GPU type.
void scale_up_flag(PlanRun& r) {
  const PlanEvaluation& best = r.best();
  std::map<std::string, const PlanEvaluation*> best_of_type;
  std::map<std::string, int> most_gpus_tried;
  for (int i : r.order) {
    const auto& e = r.evals[static_cast<std::size_t>(i)];
    most_gpus_tried[e.gpu] = std::max(most_gpus_tried[e.gpu], e.gpus);
    if (e.feasible() && !best_of_type.count(e.gpu)) best_of_type[e.gpu] = &e;
  }
  std::vector<std::string> outscaled;
  for (const auto& [gpu, most] : most_gpus_tried) {
    if (gpu == best.gpu) continue;
    auto it = best_of_type.find(gpu);
    if (it == best_of_type.end()) {
      if (most > best.gpus)
        outscaled.push_back(gpu + ": nothing up to " + std::to_string(most) + " GPUs meets the goal");
    } else if (it->second->gpus > best.gpus) {
      const auto& e = *it->second;
      outscaled.push_back(gpu + ": needs " + std::to_string(e.gpus) + " GPUs (" + std::to_string(e.vms) + " x " +
                          e.sku + "), " + fmt_usd(e.cost_usd) + " in " + format_time(e.time_to_train_s));
    }
  }
  if (!outscaled.empty()) {
    std::string text = "Scaling up beats scaling out: " + std::to_string(best.gpus) + " x " + best.gpu + " (" +
                       std::to_string(best.vms) + " x " + best.sku + ") meet the goal for " + fmt_usd(best.cost_usd) +
                       "; the other GPU types need more of them:";
    for (const auto& s : outscaled) text += "\n    " + s;
    r.flags.push_back({"scale_up", "", text});
  }
}

void network_bound_flag(PlanRun& r) {
  const PlanEvaluation& best = r.best();
  // Network-bound: a fifth or more of each iteration waits on a network link.
  const double exposed_share = best.exposed_communication_s / best.iteration_time_s;
  if (exposed_share >= 0.2 && (best.bottleneck_kind == "ethernet" || best.bottleneck_kind == "infiniband")) {
    const SkuSpec& sku = r.catalog.sku(best.sku);
    std::string advice;
    if (best.bottleneck_kind == "ethernet") {
      for (const auto& n : r.catalog.sku_names()) {
        const SkuSpec& rdma = r.catalog.sku(n);
        if (rdma.infiniband_link && rdma.gpu == sku.gpu && rdma.gpus == sku.gpus && rdma.series == sku.series) {
          advice = "the RDMA size " + n + " has InfiniBand (" + *rdma.infiniband_link + ")" +
                   (std::find(r.skus.begin(), r.skus.end(), n) == r.skus.end() ? "; add it to plan.skus" : "");
          break;
        }
      }
    }
    if (advice.empty())
      advice = best.strategy == "hierarchical" ? "fewer, larger nodes (more GPUs per VM) cut the traffic between nodes"
                                               : "try strategy hierarchical, or fewer, larger nodes";
    const std::string text = "Network-bound: " + fmt_pct(exposed_share) + " of each iteration waits on " +
                             best.bottleneck_link + " (" + best.bottleneck_kind + ", " +
                             fmt_pct(best.bottleneck_utilisation) + " busy); " + advice;
    r.flags.push_back({"network_bound", "", text});
  }
}

// Parameter servers: one server's NIC cannot move a worker's gradients within its compute time, so
// even a server per worker would not keep up.
void server_flags(PlanRun& r) {
  {
    const LibraryProfile& lib = r.catalog.library(std::string(to_string(r.base.communication.library)));
    const double grad =
        static_cast<double>(r.catalog.model(r.base.model.name).total_params) * r.base.model.gradient_bytes;
    std::set<std::string> flagged;
    for (int i : r.order) {
      const auto& e = r.evals[static_cast<std::size_t>(i)];
      if (e.strategy != "parameter_server" || flagged.count(e.sku)) continue;
      const SkuSpec& sku = r.catalog.sku(e.sku);
      const double nic = sku.infiniband_link
                             ? r.catalog.link(*sku.infiniband_link).bandwidth * lib.infiniband.bandwidth_fraction
                             : sku.ethernet_bandwidth * lib.ethernet.bandwidth_fraction;
      const double per_worker = grad / (nic * e.compute_time_s);  // servers per worker needed
      const int needed = static_cast<int>(std::ceil(per_worker * e.gpus - 1e-9));
      if (needed <= e.gpus) continue;
      flagged.insert(e.sku);
      const std::string text = "Parameter servers on " + e.sku + ": each worker pushes and pulls " +
                               format_bytes(grad) + " per iteration, but one server's NIC (" + format_bandwidth(nic) +
                               ") moves only " + format_bytes(nic * e.compute_time_s) + " in the " +
                               format_time(e.compute_time_s) + " of compute; " + std::to_string(e.gpus) +
                               " workers would need " + std::to_string(needed) +
                               " servers, more servers than workers. Use ring or hierarchical allreduce.";
      r.flags.push_back({"parameter_servers_outnumber_workers", e.sku, text});
    }
  }
}

}  // namespace ringsim::plan_detail
