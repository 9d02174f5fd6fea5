#include "cli/commands.h"

#include <unistd.h>

#include <filesystem>
#include <iostream>

#ifdef RINGSIM_HAVE_SMPI
#include "emulate/emulate_run.h"
#endif
#include "calibrate/calibrate.h"
#include "calibrate/nccl_tests.h"
#include "calibrate/runs.h"
#include "execute/analytic/collective_bench.h"
#include "execute/buffer_collective.h"
#include "execute/estimate/child_process.h"
#include "execute/estimate/prediction_band.h"
#include "execute/simgrid/training_sim.h"
#include "graph/exporters.h"
#include "graph/topology_graph.h"
#include "load/catalog.h"
#include "load/input_error.h"
#include "load/overlay.h"
#include "load/scenario.h"
#include "load/units.h"
#include "report/bench_report.h"
#include "report/catalog_listing.h"
#include "report/goodput_report.h"
#include "report/job_script.h"
#include "report/output_file.h"
#include "report/plot.h"
#include "report/prediction_report.h"
#include "report/topo_matrix.h"
#include "schedule/memory.h"
#include "validate/local_validation.h"
#include "validate/single_gpu.h"
#include "validate/validation.h"

namespace ringsim {

int run_catalog(const std::string& catalog_dir, const std::string& section) {
  const Catalog catalog = Catalog::load(catalog_dir);
  std::cout << catalog_listing(catalog, section);
  return 0;
}

int run_topo(const std::string& catalog_dir, const TopoOptions& o) {
  const Catalog catalog = Catalog::load(catalog_dir);
  const SourceLocation cmd{"", 0, 0, "ringsim topo"};
  const SkuSpec* sku = catalog.find_sku(o.sku);
  if (!sku) throw InputError(cmd, "unknown SKU '" + o.sku + "'" + suggestion_suffix(o.sku, catalog.sku_names()));
  ClusterShape shape;
  shape.sku = sku->name;
  shape.nodes = o.nodes;
  shape.fabric = sku->infiniband_link ? FabricKind::InfiniBand : FabricKind::Ethernet;
  if (o.fabric) {
    shape.fabric = *o.fabric == "infiniband" ? FabricKind::InfiniBand : FabricKind::Ethernet;
    if (shape.fabric == FabricKind::InfiniBand && !sku->infiniband_link)
      throw InputError(cmd,
                       "--fabric infiniband: " + sku->name + " has no InfiniBand (RDMA) NIC; use --fabric ethernet");
  }
  shape.fabric_topology = fabric_topology_named(o.fabric_topology);
  if (shape.fabric_topology == FabricTopology::Star && (o.nodes_per_leaf || o.oversubscription))
    throw InputError(cmd,
                     "--nodes-per-leaf and --oversubscription apply only to --fabric-topology fat_tree or "
                     "rail_optimized");
  shape.nodes_per_leaf = o.nodes_per_leaf.value_or(0);
  shape.oversubscription = o.oversubscription.value_or(1.0);
  std::vector<NamedFile> in, out;
  add_folder(in, "the catalog's file", catalog_dir);
  add_file(out, "--dot", o.dot_file);
  add_file(out, "--platform-xml", o.platform_xml_file);
  check_outputs(in, out);
  const Topology topology = Topology::build(catalog, shape);
  // Render everything before writing anything, so an error leaves no partial output.
  std::string dot, xml;
  if (o.dot_file) dot = to_graphviz(topology);
  if (o.platform_xml_file) xml = to_simgrid_platform_xml(topology, catalog);
  std::cout << topo_matrix_report(topology, catalog);
  if (o.dot_file) {
    write_file_atomically(*o.dot_file, dot);
    std::cout << "\nWrote Graphviz: " << *o.dot_file << "\n";
  }
  if (o.platform_xml_file) {
    write_file_atomically(*o.platform_xml_file, xml);
    std::cout << "Wrote SimGrid platform: " << *o.platform_xml_file << "\n";
  }
  return 0;
}

int run_check(const std::string& catalog_dir, const std::string& scenario_file, const std::vector<std::string>& sets) {
  const Catalog catalog = Catalog::load(catalog_dir);
  std::vector<Override> overrides;
  for (const auto& s : sets) overrides.push_back(parse_override(s));
  const Scenario s = load_scenario(scenario_file, catalog, overrides);
  const Topology topology = Topology::build(catalog, cluster_shape(s.cluster));
  const SkuSpec& sku = catalog.sku(s.cluster.sku);
  const ModelSpec& model = catalog.model(s.model.name);
  std::cout << "# " << scenario_file << ": valid. Resolved scenario (defaults filled in):\n" << to_yaml(s);
  std::cout << "# " << s.cluster.total_gpus() << " GPUs (" << s.cluster.nodes << " x " << sku.name << ", "
            << s.cluster.gpus_per_node << " of " << sku.gpus << " GPUs per node), "
            << boost::num_vertices(topology.graph()) << " devices in the topology graph; " << model.display_name << ": "
            << model.tensors.size() << " tensors, " << format_bytes(model.gradient_bytes())
            << " of gradients per iteration\n";
  // What running it would cost, before anything runs (predict and emulate refuse the largest).
  std::string estimates;
  for (Fidelity f : {Fidelity::Flow, Fidelity::Step, Fidelity::Emulated})
    estimates += "#   " + describe(estimate_work(catalog, s, f), f) +
                 (f == default_fidelity(s) ? " (predict's default for this size)" : "") + "\n";
  std::cout << "# Work estimates (predict and emulate refuse the largest before they start):\n" << estimates;
  const MemoryEstimate m = estimate_memory(catalog, s);
  std::cout << "# Memory per GPU: " << memory_summary(m) << "\n";
  for (const auto& i : m.breakdown)
    std::cout << "#   " << i.name << " " << format_bytes(i.bytes) << " (" << i.detail << ")\n";
  return 0;
}

// The scenario with its --set overrides and calibration (--calibration or its own key), applied to the catalog.
static Scenario load_calibrated(Catalog& catalog, const std::string& file, const std::vector<std::string>& sets,
                                const std::optional<std::string>& calibration) {
  std::vector<Override> overrides;
  for (const auto& s : sets) overrides.push_back(parse_override(s));
  if (calibration) overrides.push_back(parse_override("calibration=" + *calibration));
  Scenario s = load_scenario(file, catalog, overrides);
  apply_calibration(catalog, s);
  return s;
}

int run_predict(const std::string& catalog_dir, const PredictOptions& o) {
  Catalog catalog = Catalog::load(catalog_dir);
  const Scenario s = load_calibrated(catalog, o.scenario, o.sets, o.calibration);
  std::vector<NamedFile> out;
  add_file(out, "--json", o.json_file);
  add_file(out, "--trace", o.trace_file);
  add_file(out, "--links", o.links_file);
  add_plot_files(out, o.plot_file);
  check_outputs(run_inputs(catalog_dir, o.scenario, s.calibration), out);
  if (o.plot_file) {
    check_plot_file(*o.plot_file);
    if (!s.reliability.modelled) throw InputError({}, "predict --plot: the catalog has no reliability.yaml to draw");
  }
  const Fidelity fidelity =
      o.fidelity ? (*o.fidelity == "flow" ? Fidelity::Flow : Fidelity::Step) : default_fidelity(s);
  WorkEstimate work = estimate_work(catalog, s, fidelity);
  if (!o.no_band && !catalog.uncertain().empty()) {  // the band's runs (band_ratios)
    Scenario one = s;
    if (band_samples_step(s, fidelity)) one.communication.concurrent_collectives = 1;
    const Fidelity band = band_samples_step(s, fidelity) ? Fidelity::Step : fidelity;
    // Side by side in children, child_jobs() at once.
    work.band_runs = kBandSamples + (band_runs_as_point(s, fidelity) ? 0 : 1);  // the point may be its own
    const int rounds = (work.band_runs + child_jobs() - 1) / child_jobs();
    work.band_seconds = rounds * estimate_work(catalog, one, band).seconds;
    work.seconds += work.band_seconds;
  }
  check_work_limits(work, fidelity, o.limits, "predict");
  const CatalogOverlay calibration = s.calibration.empty() ? CatalogOverlay{} : catalog.read_overlay(s.calibration);
  // The band's runs go in children, before this process's engine starts; they and this process's own run
  // share one layout of the collectives (SharedLayouts).
  const SharedLayouts shared;
  // Where the band runs as the point does, the point is its run at the catalog's own figures.
  PreparedPrediction point(catalog, s, fidelity);
  const bool own = band_runs_as_point(s, fidelity);
  const BandRatios band =
      o.no_band ? BandRatios{} : band_ratios(catalog, s, calibration, fidelity, own ? &point : nullptr);
  Prediction p = point.run();
  apply_band(band, p);
  const bool banded = p.band_samples > 0;
  p.goodput = estimate_goodput(catalog, s, p.time_to_train_s, banded ? p.time_to_train_s_low : p.time_to_train_s,
                               banded ? p.time_to_train_s_high : p.time_to_train_s, p.iteration_time_s);
  // Render everything first, then write: a failure leaves no output file behind.
  const std::string json = o.json_file ? result_json(p, "predict") : "";
  const std::string trace = o.trace_file ? timeline_json(p) : "";
  const std::string links = o.links_file ? links_csv(p) : "";
  if (o.json_file) write_file_atomically(*o.json_file, json);
  if (o.trace_file) write_file_atomically(*o.trace_file, trace);
  if (o.links_file) write_file_atomically(*o.links_file, links);
  if (o.plot_file) write_plot(*o.plot_file, goodput_plot(catalog, p));
  std::cout << prediction_table(p);
  return 0;
}

int run_bench(const std::string& catalog_dir, const BenchCommandOptions& o) {
  Catalog catalog = Catalog::load(catalog_dir);
  const Scenario s = load_calibrated(catalog, o.scenario, o.sets, o.calibration);
  BenchSizes sizes;
  try {
    sizes = {parse_message_size(o.min_bytes), parse_message_size(o.max_bytes), o.factor};
  } catch (const UnitError& e) {
    throw InputError({}, std::string("bench: ") + e.what());
  }
  if (sizes.min_bytes > sizes.max_bytes) throw InputError({}, "bench: -b must not exceed -e");
  std::vector<NamedFile> out;
  add_file(out, "--json", o.json_file);
  check_outputs(run_inputs(catalog_dir, o.scenario, s.calibration), out);
  const collective::BusOp op = *collective::parse_op(o.op);
  if (!o.no_band) check_bench_work(bench_size_count(sizes, s, op), s.cluster.total_gpus(), 1 + kBandSamples);
  BenchPrediction b = predict_bench(catalog, s, sizes, op);
  if (!o.no_band) {
    const CatalogOverlay calibration = s.calibration.empty() ? CatalogOverlay{} : catalog.read_overlay(s.calibration);
    apply_bench_band(catalog, s, calibration, sizes, op, b);
  }
  const std::string title = std::to_string(s.cluster.nodes) + " x " + s.cluster.sku + " (" +
                            std::to_string(s.cluster.gpus_per_node) + " GPUs each), " +
                            std::string(to_string(s.communication.library));
  if (o.json_file) write_file_atomically(*o.json_file, bench_json(b, title));
  std::cout << bench_table(b, title);
  return 0;
}

int run_job(const std::string& catalog_dir, const JobCommandOptions& o) {
  const Catalog catalog = Catalog::load(catalog_dir);
  std::vector<Override> overrides;
  for (const auto& s : o.sets) overrides.push_back(parse_override(s));
  const Scenario s = load_scenario(o.scenario, catalog, overrides);
  if (const std::string why = real_run_refusal(s); !why.empty()) throw InputError({}, "job: " + why);
  std::vector<NamedFile> out;
  add_file(out, "-o", o.out_file);
  check_outputs(run_inputs(catalog_dir, o.scenario, s.calibration), out);
  const std::string script = job_script(s, {o.launcher, o.transport, o.scenario, o.sets});
  if (o.out_file)
    write_file_atomically(*o.out_file, script);
  else
    std::cout << script;
  return 0;
}

int run_validate(const std::string& catalog_dir, const ValidateOptions& o) {
  const Catalog catalog = Catalog::load(catalog_dir);
  ValidationReport report;
  std::vector<NamedFile> in = run_inputs(catalog_dir, o.scenario.value_or("")), out;
  for (const auto& m : o.measured) add_file(in, "--measured", m);
  add_file(in, "--horovod-timeline", o.horovod_timeline);
  add_file(in, "--published", o.published);
  add_file(in, "--single-gpu", o.single_gpu);
  add_file(in, "--baseline", o.baseline);
  add_file(out, "--json", o.json_file);
  add_plot_files(out, o.plot_file);
  check_outputs(in, out);
  if (o.plot_file) check_plot_file(*o.plot_file);
  if (o.local) {
    if (o.published || o.scenario || !o.measured.empty() || o.horovod_timeline)
      throw InputError({},
                       "validate --local measures this machine itself: give no scenario, --measured or --published");
    LocalValidationOptions lo;
    lo.ranks = o.local_ranks;
    lo.max_bytes = o.local_max_bytes;
    lo.repeats = o.local_repeats;
    lo.real_binary = o.real_binary;
    lo.scenario_file =
        (std::filesystem::path(catalog_dir).parent_path() / "validate" / "scenarios" / "local_host_resnet50.yaml")
            .string();
    if (o.work_dir) {
      lo.work_dir = *o.work_dir;
    } else {
      char tmpl[] = "/tmp/ringsim-local-XXXXXX";
      if (!mkdtemp(tmpl)) throw std::runtime_error("validate --local: cannot create a folder under /tmp");
      lo.work_dir = tmpl;
    }
    report = validate_local(catalog, lo, std::cout);
  } else if (o.published) {
    if (o.single_gpu) throw InputError({}, "validate: give --published or --single-gpu, not both");
    report = validate_published(catalog, *o.published, !o.no_band);
  } else if (o.single_gpu) {
    report = validate_single_gpu(catalog, *o.single_gpu);
  } else if (o.no_band) {
    throw InputError({}, "validate --no-band: applies to --published only (measured results are not banded)");
  } else {
    if (!o.scenario) throw InputError({}, "validate: give a SCENARIO with --measured FILE..., or --published");
    if (o.measured.empty() && !o.horovod_timeline)
      throw InputError({}, "validate: give --measured FILE or --horovod-timeline FILE with a scenario");
    std::vector<Override> overrides;
    for (const auto& s : o.sets) overrides.push_back(parse_override(s));
    Scenario s = load_scenario(*o.scenario, catalog, overrides);
    Catalog calibrated = catalog;
    apply_calibration(calibrated, s);
    if (o.horovod_timeline) {
      report = validate_timeline(calibrated, s, *o.horovod_timeline);
      if (!o.measured.empty()) {
        const ValidationReport m = validate_measured(calibrated, s, o.measured);
        report.cases.insert(report.cases.end(), m.cases.begin(), m.cases.end());
      }
    } else {
      report = validate_measured(calibrated, s, o.measured);
    }
  }
  if (o.json_file) write_file_atomically(*o.json_file, validation_json(report));
  if (o.plot_file) write_plot(*o.plot_file, validation_plot(report));
  std::cout << validation_table(report);
  int status = 0;
  if (o.max_mape && report.mape() > *o.max_mape) {
    std::cout << "ringsim validate: MAPE " << format_number(report.mape()) << " % exceeds --max-mape "
              << format_number(*o.max_mape) << " %\n";
    status = 1;
  }
  if (o.baseline) {
    const auto worse = regressions(report, *o.baseline, o.tolerance_pp);
    for (const auto& w : worse) std::cout << "ringsim validate: regression: " << w << "\n";
    if (!worse.empty()) status = 1;
  }
  return status;
}

#ifdef RINGSIM_HAVE_SMPI
int run_emulate_compare(const std::string& catalog_dir, EmulateOptions o) {
  if (o.bench) throw InputError({}, "emulate --compare: compares a training iteration with predict, not --bench");
  // Without --json the emulated result goes to a temporary folder, removed afterwards (errors included).
  struct TempDir {
    std::filesystem::path path;
    ~TempDir() {
      std::error_code ec;
      if (!path.empty()) std::filesystem::remove_all(path, ec);
    }
  } temp;
  if (!o.json_file) {
    temp.path = std::filesystem::temp_directory_path() / ("ringsim_emulate_compare_" + std::to_string(::getpid()));
    std::filesystem::create_directories(temp.path);
    o.json_file = (temp.path / "emulated.json").string();
  }
  int status = run_emulate(catalog_dir, o);
  if (status == 0) {
    ValidateOptions v;
    v.scenario = o.scenario;
    v.sets = o.sets;
    if (o.calibration) v.sets.push_back("calibration=" + *o.calibration);
    v.measured = {*o.json_file};
    std::cout << "\n";
    status = run_validate(catalog_dir, v);
  }
  return status;
}
#endif

namespace {

// --runs: the fitted figures with their ranges, each run's prediction before and after, the overlay.
int calibrate_from_runs(const Catalog& catalog, const CalibrateOptions& o, const std::vector<Override>& overrides) {
  const RunsFit fit = fit_runs(catalog, o.scenario, overrides, *o.runs_file);
  for (const auto& w : fit.warnings) std::cerr << "ringsim calibrate: warning: " << w << "\n";
  std::ostringstream out;
  for (const auto& x : fit.fitted)
    out << "  fitted " << x.name << (x.scale ? " (factor of the catalog's figure)" : "") << ": "
        << format_number(x.value) << ", " << format_number(x.fit_low) << " to " << format_number(x.fit_high)
        << " 9 times in 10 (range " << format_number(x.low) << " to " << format_number(x.high) << "; "
        << (x.prior_share < 0.5 ? "pinned by the runs" : "partly prior") << ", " << format_number(100 * x.prior_share)
        << " % of its prior spread left)\n";
  for (const auto& n : fit.not_fitted) out << "  not fitted: " << n << "\n";
  out << "  a run's noise taken as " << format_number(100 * fit.noise) << " %\n";
  if (!fit.next.target.empty()) {
    // 1.645 sd of the log rate, linearised: the band of `predict` samples the figures' ranges themselves.
    out << "  the scenario (" << fit.next.target << "): the figures it depends on, as the runs leave them, spread its "
        << "rate by +/-" << format_number(164.49 * fit.next.sd_now) << " % (linearised, 9 times in 10)";
    if (fit.next.run.empty())
      out << "; no one more run of 1 node or of 2-4 nodes would narrow that\n";
    else
      out << "\n  the next run to measure: " << fit.next.run << ", which would leave +/-"
          << format_number(164.49 * fit.next.sd_after) << " %\n";
  }
  out << "  run   measured   predicted before   after   residual\n";
  for (std::size_t i = 0; i < fit.measured.size(); ++i) {
    char line[160];
    std::snprintf(line, sizeof line, "  %3zu %10.6g %18.6g %8.6g %+9.1f%%\n", i + 1, fit.measured[i], fit.before[i],
                  fit.after[i], (fit.after[i] / fit.measured[i] - 1) * 100);
    out << line;
  }
  const std::string yaml = fit.overlay.to_yaml();
  std::cout << out.str();
  if (o.out_file)
    write_file_atomically(*o.out_file, yaml);
  else
    std::cout << yaml;
  return 0;
}

}  // namespace

int run_calibrate(const std::string& catalog_dir, const CalibrateOptions& o) {
  if (o.list_effects) {
    std::cout << effects_table();
    return 0;
  }
  const Catalog catalog = Catalog::load(catalog_dir);
  std::vector<Override> overrides;
  for (const auto& s : o.sets) overrides.push_back(parse_override(s));
  const Scenario s = load_scenario(o.scenario, catalog, overrides);
  std::vector<NamedFile> in = run_inputs(catalog_dir, o.scenario, s.calibration), out;
  for (const auto& f : o.data_files) add_file(in, "--data", f);
  for (const auto& f : o.nccl_tests_files) add_file(in, "--nccl-tests", f);
  add_file(in, "--runs", o.runs_file);
  add_file(out, "-o", o.out_file);
  add_plot_files(out, o.plot_file);
  check_outputs(in, out);
  if (o.runs_file) {
    if (!o.data_files.empty() || !o.nccl_tests_files.empty())
      throw InputError(
          {}, "calibrate: --runs fits training runs; give --data and --nccl-tests in a calibration of their own");
    return calibrate_from_runs(catalog, o, overrides);
  }
  if (o.data_files.empty() && o.nccl_tests_files.empty())
    throw InputError({},
                     "calibrate: give measurements with --data FILE (ringsim-real calibrate), --nccl-tests FILE "
                     "or --runs RUNS.csv");
  if (o.plot_file) check_plot_file(*o.plot_file);
  const CalibrationResult r = calibrate(catalog, s, {o.data_files, o.nccl_tests_files});
  for (const auto& f : r.fits) std::cout << "  " << fit_summary(f) << "\n";
  if (r.collective_overhead >= 0)
    std::cout << "  collective call: " << format_time(r.collective_overhead)
              << " beyond its steps (2-process ring allreduce of small buffers)\n";
  for (const auto& n : r.notes) std::cout << "  note: " << n << "\n";
  // Held against the logs it came from: a calibration that explains them worse than the catalog says so, on
  // the terminal and in its own header, and exits 1.
  CatalogOverlay overlay = r.overlay;
  bool worse = false;
  for (const auto& a : agreement_with_logs(catalog, r.overlay, s, o.nccl_tests_files)) {
    const std::string line = a.file + ": over its " + std::to_string(a.sizes) + " sizes the predicted times miss by " +
                             format_number(100 * a.uncalibrated) + " % (RMS, log) with the catalog's figures, " +
                             format_number(100 * a.calibrated) + " % with this calibration";
    std::cout << "  " << line << "\n";
    if (a.calibrated <= a.uncalibrated) continue;
    worse = true;
    overlay.header.push_back("WARNING: " + line + ": it explains the log worse than the catalog does");
    std::cerr << "ringsim calibrate: warning: the calibration explains " << a.file
              << " worse than the catalog's figures; it is written with that warning in its header (exit 1): "
                 "predict without it, or with it only where its log's sizes matter\n";
  }
  if (o.plot_file) write_plot(*o.plot_file, calibration_plot(r));
  const std::string yaml = worse ? overlay.to_yaml() : r.overlay_yaml;
  if (o.out_file)
    write_file_atomically(*o.out_file, yaml);
  else
    std::cout << yaml;
  return worse ? 1 : 0;
}

}  // namespace ringsim
