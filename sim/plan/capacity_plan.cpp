// `ringsim plan`, its stages in order: the goal (plan_goal.cpp), the prices and the search space
// (plan_candidates.cpp), the predictions and priced evaluations (plan_evaluate.cpp), the flags (plan_flags.cpp),
// the report and quota request (plan_report.cpp); plan_run.h holds what they hand on.
#include "plan/capacity_plan.h"

#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "load/scenario.h"
#include "plan/charts.h"
#include "plan/plan_run.h"
#include "report/output_file.h"
#include "report/plot.h"

namespace ringsim {

using namespace plan_detail;

int run_plan(const PlanOptions& o) {
  const Catalog catalog = Catalog::load(o.catalog_dir);
  std::vector<Override> base_overrides;
  for (const auto& s : o.sets) base_overrides.push_back(parse_override(s));
  PlanRun r{o, catalog, read_plan_goal(o.scenario, o, catalog), load_scenario(o.scenario, catalog, base_overrides)};
  std::vector<NamedFile> in = run_inputs(o.catalog_dir, o.scenario, r.base.calibration), out;
  for (const auto& f : o.price_files) add_file(in, "--prices", f);
  add_file(out, "--csv", o.csv_file);
  add_file(out, "--json", o.json_file);
  add_plot_files(out, o.plot_file);
  check_outputs(in, out);
  if (o.plot_file) check_plot_file(*o.plot_file);
  load_prices(r);
  choose_skus(r);
  make_candidates(r);
  predict_and_price(r);
  if (r.met()) {
    scale_up_flag(r);
    network_bound_flag(r);
  }
  server_flags(r);
  compute_source_flag(r);
  band_flag(r);
  memory_flag(r);
  const std::optional<QuotaRequest> quota =
      r.met() ? std::optional(quota_request(catalog.sku(r.best().sku), r.goal.region, r.best().vms,
                                            r.best().low_priority, r.goal.quota_headroom))
              : std::nullopt;
  // Rendered whole before any file is written.
  const std::string report =
      report_header(r) + report_table(r) + report_flags(r) + (quota ? report_quota(r, *quota) : std::string());
  const std::string csv = o.csv_file ? plan_csv(r) : "", json = o.json_file ? plan_json(r, quota) : "";
  std::cout << report;
  if (o.csv_file) write_file_atomically(*o.csv_file, csv);
  if (o.json_file) write_file_atomically(*o.json_file, json);
  if (o.plot_file)
    write_plot(*o.plot_file, plan_plot("ringsim plan: " + catalog.model(r.base.model.name).display_name + ", " +
                                           training_amount(r.base),
                                       r.evals, r.goal.deadline_s, r.goal.budget_usd));
  return r.met() ? 0 : 1;
}

}  // namespace ringsim
