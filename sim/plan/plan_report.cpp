// `ringsim plan`: the report (header, table, flags, quota request), the CSV and the JSON.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <sstream>

#include "load/units.h"
#include "plan/plan_run.h"
#include "report/output_file.h"

namespace ringsim {

QuotaRequest quota_request(const SkuSpec& sku, const std::string& region, int vms, bool low_priority, double headroom) {
  QuotaRequest q;
  q.family = sku.quota_family;
  q.region = region;
  q.nodes = vms;
  // Headroom in whole VMs: a quota that cannot start one more VM is no headroom.
  q.requested_nodes = static_cast<int>(std::ceil(static_cast<double>(vms) * (1 + headroom) - 1e-9));
  q.vcpus_per_node = sku.vcpus;
  const int vcpus = q.requested_nodes * sku.vcpus;
  (low_priority ? q.low_priority_vcpus : q.dedicated_vcpus) = vcpus;
  return q;
}

namespace plan_detail {

namespace {

std::string pad(const std::string& s, std::size_t w) {
  return s.size() >= w ? s + " " : s + std::string(w - s.size(), ' ');
}

// A column's times in one unit, its largest value's (s below an hour, else h), 4 digits for that value and
// as many decimals for the others, right-aligned: the column compares by eye.
std::vector<std::string> time_column(const std::vector<double>& seconds) {
  double top = 0;
  for (double t : seconds)
    if (std::isfinite(t)) top = std::max(top, t);
  const double scale = top >= 3600 ? 3600 : 1;
  const int decimals = std::clamp(3 - static_cast<int>(std::floor(std::log10(std::max(top / scale, 1e-6)))), 1, 6);
  std::vector<std::string> out;
  std::size_t width = 0;
  for (double t : seconds) {
    char b[64];
    std::snprintf(b, sizeof b, "%.*f %s", decimals, t / scale, scale == 1 ? "s" : "h");
    out.push_back(b);
    width = std::max(width, out.back().size());
  }
  for (auto& t : out) t.insert(0, width - t.size(), ' ');
  return out;
}

}  // namespace

std::string training_amount(const Scenario& s) {
  if (s.training.tokens <= 0) return count_of(s.training.epochs, "epoch");
  for (const auto& [scale, suffix] : {std::pair{1e12, "T"}, {1e9, "B"}, {1e6, "M"}, {1e3, "K"}})
    if (s.training.tokens >= scale) return format_number(s.training.tokens / scale) + suffix + " tokens";
  return format_number(s.training.tokens) + " tokens";
}

std::string report_header(const PlanRun& r) {
  std::ostringstream out;
  const ModelSpec& model = r.catalog.model(r.base.model.name);
  int feasible = 0;
  for (const auto& e : r.evals) feasible += e.feasible() ? 1 : 0;
  const bool batches = std::any_of(r.goal.choices.begin(), r.goal.choices.end(),
                                   [](const PlanChoice& c) { return c.key == "batch_per_gpu"; });
  out << "ringsim plan: " << model.display_name << ", batch "
      << (batches ? std::string("per GPU as each row's") : std::to_string(r.base.model.batch_per_gpu) + " per GPU")
      << ", " << r.base.model.precision << ", ";
  out << training_amount(r.base);
  if (r.base.training.tokens > 0)
    out << " (" << r.base.training.dataset_images << " " << model.sample_noun() << " of " << r.base.model.tokens
        << ")\n";
  else
    out << " of " << r.base.training.dataset_images << " " << model.sample_noun() << "\n";
  out << "  goal           ";
  if (r.goal.deadline_s) out << "deadline " << format_time(*r.goal.deadline_s);
  if (r.goal.deadline_s && r.goal.budget_usd) out << ", ";
  if (r.goal.budget_usd) out << "budget " << fmt_usd(*r.goal.budget_usd);
  out << "; ranked by " << (r.goal.rank_by == RankBy::Cost ? "cost" : "time")
      << (r.goal.pessimistic ? ", timed at the pessimistic end of each band (--confidence high)" : "") << "\n";
  out << "  prices         " << r.goal.region << " (" << r.region->display_name << "), USD per VM-hour, "
      << r.region->date << "; source " << r.region->source;
  for (const auto& f : r.price_sources) out << "; " << f;
  out << "\n";
  out << "  searched       " << search_space(r) << (r.goal.low_priority ? " x {dedicated, low-priority}" : "") << ": "
      << r.evals.size() << " priced configurations, " << feasible << (feasible == 1 ? " meets" : " meet")
      << " the goal\n";
  for (const auto& m : r.merged) out << "  left out       " << m << "\n";
  if (!r.evals.empty() && r.evals.front().failure_free_time_to_train_s > 0) {
    auto [lo, hi] = std::minmax_element(r.evals.begin(), r.evals.end(),
                                        [](const auto& a, const auto& b) { return a.ettr < b.ettr; });
    out << "  goodput        times are wall times: failures, restarts and checkpoints (topologies/reliability.yaml, "
           "the scenario's reliability section), ETTR "
        << format_number(std::round(lo->ettr * 1000) / 1000) << " to "
        << format_number(std::round(hi->ettr * 1000) / 1000) << "; costs include spare nodes\n";
  }
  const auto banded = std::count_if(r.evals.begin(), r.evals.end(), [](const auto& e) { return e.banded; });
  if (banded < static_cast<std::ptrdiff_t>(r.evals.size()))
    out << "  bands          predicted for the " << banded
        << " shown that meet the goal at their prediction (--top; --confidence high bands every one)\n";
  if (!r.unpriced.empty()) {
    out << "  not priced     ";
    for (std::size_t i = 0; i < r.unpriced.size(); ++i) out << (i ? ", " : "") << r.unpriced[i];
    out << " (no price in " << r.goal.region << ")\n";
  }
  if (!r.skipped.empty()) {
    const auto memory = std::count_if(r.skipped.begin(), r.skipped.end(),
                                      [](const auto& s) { return s.second.find("does not fit") != std::string::npos; });
    out << "  skipped        " << r.skipped.size() << " configurations";
    if (memory > 0) out << " (" << memory << " do not fit in memory)";
    out << ": see --json for why\n";
  }
  return out.str();
}

namespace {

// The table's rows: the ranking's first --top, only those that meet the goal when any does.
std::vector<const PlanEvaluation*> shown_rows(const PlanRun& r) {
  std::vector<const PlanEvaluation*> rows;
  for (int i : r.order) {
    const auto& e = r.evals[static_cast<std::size_t>(i)];
    if (static_cast<int>(rows.size()) >= r.goal.top || (r.met() && !e.feasible())) break;
    rows.push_back(&e);
  }
  return rows;
}

// "3.61 h to 15.6 h, $1,234 to $5,345": a row's band of time (`low`, `high`: the time column's texts) and cost.
std::string band_cell(const PlanEvaluation& e, const std::string& low, const std::string& high) {
  if (!e.banded) return "not banded";
  const auto trim = [](const std::string& t) { return t.substr(t.find_first_not_of(' ')); };
  return trim(low) + " to " + trim(high) + ", " +
         fmt_usd(training_cost_usd(e.vms, e.usd_per_vm_hour, e.time_to_train_s_low)) + " to " +
         fmt_usd(training_cost_usd(e.vms, e.usd_per_vm_hour, e.time_to_train_s_high));
}

// The memory column where memory decides what fits: a sharded framework, or a plan trying choices.
bool memory_column(const PlanRun& r) { return sharded_framework(r.base) || !r.goal.choices.empty(); }

bool tight(const PlanEvaluation& e) { return e.memory_per_gpu_bytes_high > e.memory_capacity_bytes; }

// "61.2/75 GiB": a GPU's bytes of its memory; "!" where its band's high end does not fit.
std::string memory_cell(const PlanEvaluation& e) {
  char b[64];
  std::snprintf(b, sizeof b, "%.1f/%.0f GiB%s", e.memory_per_gpu_bytes / (1 << 30), e.memory_capacity_bytes / (1 << 30),
                tight(e) ? "!" : "");
  return b;
}

// One row's cells; `rank` counts from 1, `time` is the time column's text for it, `band` its band's.
std::vector<std::string> table_cells(const PlanRun& r, const PlanEvaluation& e, std::size_t rank,
                                     const std::string& time, const std::string& band) {
  std::string bottleneck =
      e.bottleneck_kind.empty() ? "none" : e.bottleneck_kind + " " + fmt_pct(e.bottleneck_utilisation);
  if (!e.meets_deadline) bottleneck += " over deadline";
  if (!e.meets_budget) bottleneck += " over budget";
  char rate[32];
  if (r.base.training.tokens > 0)
    std::snprintf(rate, sizeof rate, "%.0f", e.tokens_per_sec);
  else
    std::snprintf(rate, sizeof rate, "%.1f", e.images_per_sec);
  std::vector<std::string> cells = {std::to_string(rank),   e.sku,      std::to_string(e.vms),
                                    std::to_string(e.gpus), e.strategy, e.fusion};
  cells.insert(cells.end(), e.choices.begin(), e.choices.end());
  if (memory_column(r)) cells.push_back(memory_cell(e));
  const std::string capacity = e.low_priority ? (e.price_estimated ? "low-prio*" : "low-prio") : "dedicated";
  for (const std::string& c :
       {capacity, time, fmt_usd(e.cost_usd), band, std::string(rate), fmt_pct(e.scaling_efficiency), bottleneck})
    cells.push_back(c);
  return cells;
}

// The table's headers and column widths.
std::pair<std::vector<std::string>, std::vector<std::size_t>> table_head(const PlanRun& r) {
  std::size_t sku_width = 11;  // the longest SKU shown, and a space
  for (int i : r.order) sku_width = std::max(sku_width, r.evals[static_cast<std::size_t>(i)].sku.size() + 1);
  std::vector<std::string> head = {"#", "SKU", "VMs", "GPUs", "strategy", "fusion"};
  std::vector<std::size_t> w = {4, sku_width, 5, 6, 17, 8};
  for (const auto& c : r.goal.choices) {
    head.push_back(c.column);
    std::size_t width = c.column.size() + 2;
    for (const auto& v : c.values) width = std::max(width, v.size() + 2);
    w.push_back(width);
  }
  if (memory_column(r)) {
    head.push_back("memory/GPU");
    w.push_back(14);
  }
  const std::string rate = r.base.training.tokens > 0 ? "tokens/s" : r.base.model.text ? "seq/s" : "images/s";
  for (const auto& h : {std::string("capacity"), std::string("time"), std::string("cost"),
                        std::string("band (time, cost)"), rate, std::string("scaling"), std::string("bottleneck")})
    head.push_back(h);
  const std::size_t rate_width = r.base.training.tokens > 0 ? 11 : 10;  // tokens/s run to 7 digits
  w.insert(w.end(), {14, 14, 12, 42, rate_width, 8, 30});
  return {head, w};
}

}  // namespace

std::string report_table(const PlanRun& r) {
  std::ostringstream out;
  out << "\n"
      << (r.met() ? "Configurations that meet the goal" : "No configuration meets the goal; the closest") << ":\n";
  const auto columns = table_head(r);
  const std::vector<std::string>& head = columns.first;
  const std::vector<std::size_t>& w = columns.second;  // a lambda cannot capture a structured binding in clang 14
  auto row = [&](const std::vector<std::string>& cells) {
    std::string line;
    for (std::size_t k = 0; k < cells.size(); ++k) line += pad(cells[k], w[k]);
    out << line.substr(0, line.find_last_not_of(' ') + 1) << "\n";
  };
  row(head);
  const auto rows = shown_rows(r);
  // The times in one unit; their bands' ends in another, of their own.
  std::vector<double> seconds, ends;
  for (const auto* e : rows) seconds.push_back(e->time_to_train_s);
  for (const auto* e : rows) ends.push_back(e->time_to_train_s_low);
  for (const auto* e : rows) ends.push_back(e->time_to_train_s_high);
  const std::vector<std::string> times = time_column(seconds), band = time_column(ends);
  const std::size_t n = rows.size();
  for (std::size_t k = 0; k < n; ++k)
    row(table_cells(r, *rows[k], k + 1, times[k], band_cell(*rows[k], band[k], band[n + k])));
  if (memory_column(r) && std::any_of(rows.begin(), rows.end(), [](auto* e) { return tight(*e); }))
    out << "  ! fits at its estimate but not at the high end of its memory band (the reserve's and allocator's "
           "ranges: check's breakdown); --confidence high leaves such configurations out\n";
  const bool any_estimated = std::any_of(rows.begin(), rows.end(), [](auto* e) { return e->price_estimated; });
  if (any_estimated && r.region->low_priority_discount)
    out << "  * low-priority price estimated as " << fmt_pct(*r.region->low_priority_discount) << " off dedicated ("
        << r.region->file << "): a lower bound on the cost. Low-priority VMs can be preempted; "
        << "the time assumes they are not.\n";
  return out.str();
}

std::string report_flags(const PlanRun& r) {
  std::ostringstream out;
  if (!r.flags.empty()) {
    out << "\nFlags:\n";
    for (const auto& f : r.flags) out << "  - " << f.text << "\n";
  }
  return out.str();
}

std::string report_quota(const PlanRun& r, const QuotaRequest& q) {
  const PlanEvaluation& best = r.best();
  std::ostringstream out;
  {
    out << "\nQuota request for the winning plan (" << best.vms << " x " << best.sku << ", " << best.strategy << ", ";
    for (std::size_t k = 0; k < best.choices.size(); ++k)
      out << r.goal.choices[k].column << " " << best.choices[k] << ", ";
    out << (best.low_priority ? "low-priority" : "dedicated") << ", " << format_time(best.time_to_train_s) << ", "
        << fmt_usd(best.cost_usd) << "; "
        << (r.goal.pessimistic ? "the pessimistic end of the prediction's band" : "the prediction itself, not its band")
        << "):\n";
    out << "  " << pad("VM family", 30) << pad("region", 10) << pad("dedicated vCPUs", 17)
        << pad("low-priority vCPUs", 20) << "VMs\n";
    out << "  " << pad(q.family.empty() ? "(none: not an Azure size)" : q.family, 30) << pad(q.region, 10)
        << pad(std::to_string(q.dedicated_vcpus), 17) << pad(std::to_string(q.low_priority_vcpus), 20)
        << q.requested_nodes << "\n";
    out << "  (" << count_of(q.requested_nodes, "VM") << " x " << q.vcpus_per_node << " vCPUs; "
        << count_of(q.nodes, "VM") << " needed"
        << (r.goal.quota_headroom > 0 ? ", headroom " + fmt_pct(r.goal.quota_headroom) : std::string()) << ")\n";
  }
  return out.str();
}

namespace {

nlohmann::ordered_json quota_json(const QuotaRequest& q, double headroom) {
  return {{"vm_family", q.family},
          {"region", q.region},
          {"dedicated_vcpus", q.dedicated_vcpus},
          {"low_priority_vcpus", q.low_priority_vcpus},
          {"vms", q.requested_nodes},
          {"vms_needed", q.nodes},
          {"vcpus_per_vm", q.vcpus_per_node},
          {"headroom", headroom}};
}

}  // namespace

std::string plan_csv(const PlanRun& r) {
  {
    std::ostringstream c;
    c << "rank,sku,gpu,vms,gpus,strategy,fusion,capacity,usd_per_vm_hour,price_estimated,time_to_train_s,cost_usd,"
         "time_to_train_s_low,time_to_train_s_high,cost_usd_low,cost_usd_high,images_per_sec,scaling_efficiency,"
         "iteration_time_s,exposed_communication_s,bottleneck_link,bottleneck_kind,"
         "bottleneck_utilisation,meets_deadline,meets_budget,memory_per_gpu_bytes,tokens_per_sec";
    for (const auto& ch : r.goal.choices) c << "," << ch.setting;
    c << "\n";
    int rank = 0;
    for (int i : r.order) {
      const auto& e = r.evals[static_cast<std::size_t>(i)];
      const std::vector<std::string> f = {
          std::to_string(++rank),
          e.sku,
          e.gpu,
          std::to_string(e.vms),
          std::to_string(e.gpus),
          e.strategy,
          e.fusion,
          e.low_priority ? "low_priority" : "dedicated",
          csv_number(e.usd_per_vm_hour),
          e.price_estimated ? "true" : "false",
          csv_number(e.time_to_train_s),
          csv_number(e.cost_usd),
          e.banded ? csv_number(e.time_to_train_s_low) : "",
          e.banded ? csv_number(e.time_to_train_s_high) : "",
          e.banded ? csv_number(training_cost_usd(e.vms, e.usd_per_vm_hour, e.time_to_train_s_low)) : "",
          e.banded ? csv_number(training_cost_usd(e.vms, e.usd_per_vm_hour, e.time_to_train_s_high)) : "",
          csv_number(e.images_per_sec),
          csv_number(e.scaling_efficiency),
          csv_number(e.iteration_time_s),
          csv_number(e.exposed_communication_s),
          e.bottleneck_link,
          e.bottleneck_kind,
          csv_number(e.bottleneck_utilisation),
          e.meets_deadline ? "true" : "false",
          e.meets_budget ? "true" : "false",
          csv_number(e.memory_per_gpu_bytes),
          e.tokens_per_sec > 0 ? csv_number(e.tokens_per_sec) : ""};
      std::vector<std::string> fields = f;
      fields.insert(fields.end(), e.choices.begin(), e.choices.end());
      for (std::size_t k = 0; k < fields.size(); ++k) c << (k ? "," : "") << csv_field(fields[k]);
      c << "\n";
    }
    return c.str();
  }
}

std::string plan_json(const PlanRun& r, const std::optional<QuotaRequest>& quota) {
  const bool met = r.met();
  {
    nlohmann::ordered_json j = {{"schema", "ringsim.plan/1"}, {"scenario", r.o.scenario}};
    nlohmann::ordered_json g = {
        {"deadline_s", r.goal.deadline_s ? nlohmann::ordered_json(*r.goal.deadline_s) : nullptr},
        {"budget_usd", r.goal.budget_usd ? nlohmann::ordered_json(*r.goal.budget_usd) : nullptr},
        {"region", r.goal.region},
        {"rank_by", r.goal.rank_by == RankBy::Cost ? "cost" : "time"},
        {"confidence", r.goal.pessimistic ? "high" : "typical"},
        {"low_priority", r.goal.low_priority},
        {"nodes", r.goal.nodes},
        {"strategies", r.strategies},
        {"skus", r.skus}};
    for (const auto& c : r.goal.choices) g[c.key] = c.values;
    j["goal"] = g;
    j["prices"] = {
        {"region", r.goal.region}, {"date", r.region->date}, {"source", r.region->source}, {"files", r.price_sources}};
    j["met"] = met;
    nlohmann::ordered_json ranked = nlohmann::ordered_json::array();
    for (int i : r.order) {
      const auto& e = r.evals[static_cast<std::size_t>(i)];
      ranked.push_back(
          {{"sku", e.sku},
           {"gpu", e.gpu},
           {"vms", e.vms},
           {"gpus", e.gpus},
           {"strategy", e.strategy},
           {"fusion", e.fusion},
           {"capacity", e.low_priority ? "low_priority" : "dedicated"},
           {"usd_per_vm_hour", e.usd_per_vm_hour},
           {"price_estimated", e.price_estimated},
           {"time_to_train_s", e.time_to_train_s},
           {"predicted_time_to_train_s", e.predicted_time_to_train_s},
           {"failure_free_time_to_train_s", e.failure_free_time_to_train_s},
           {"ettr", e.ettr},
           {"checkpoint_interval_s", e.checkpoint_interval_s},
           {"spare_nodes", e.spare_nodes},
           {"time_to_train_s_low", e.banded ? nlohmann::ordered_json(e.time_to_train_s_low) : nullptr},
           {"time_to_train_s_high", e.banded ? nlohmann::ordered_json(e.time_to_train_s_high) : nullptr},
           {"cost_usd", e.cost_usd},
           {"images_per_sec", e.images_per_sec},
           {"predicted_images_per_sec", e.predicted_images_per_sec},
           {"scaling_efficiency", e.scaling_efficiency},
           {"bottleneck",
            {{"link", e.bottleneck_link}, {"kind", e.bottleneck_kind}, {"utilisation", e.bottleneck_utilisation}}},
           {"meets_deadline", e.meets_deadline},
           {"meets_budget", e.meets_budget},
           {"memory",
            {{"per_gpu_bytes", e.memory_per_gpu_bytes},
             {"per_gpu_bytes_high", e.memory_per_gpu_bytes_high},
             {"capacity_bytes", e.memory_capacity_bytes}}}});
      if (e.tokens_per_sec > 0) ranked.back()["tokens_per_sec"] = e.tokens_per_sec;
      for (std::size_t k = 0; k < e.choices.size(); ++k)
        ranked.back()["settings"][r.goal.choices[k].setting] = e.choices[k];
    }
    j["configurations"] = ranked;
    nlohmann::ordered_json sk = nlohmann::ordered_json::array();
    for (const auto& [what, why] : r.skipped) sk.push_back({{"configuration", what}, {"why", why}});
    j["skipped"] = sk;
    j["not_priced"] = r.unpriced;
    j["merged_choices"] = r.merged;
    nlohmann::ordered_json flags_json = nlohmann::ordered_json::array();
    for (const auto& f : r.flags) {
      nlohmann::ordered_json one = {{"flag", f.kind}};
      if (!f.sku.empty()) one["sku"] = f.sku;
      one["text"] = f.text;
      flags_json.push_back(one);
    }
    j["flags"] = flags_json;
    j["quota_request"] = quota ? quota_json(*quota, r.goal.quota_headroom) : nlohmann::ordered_json(nullptr);
    return j.dump(2) + "\n";
  }
}

}  // namespace plan_detail

}  // namespace ringsim
