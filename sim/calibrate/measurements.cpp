#include "calibrate/measurements.h"

#include "calibrate/nccl_tests.h"
#include "load/input_error.h"
#include "load/json_file.h"

namespace ringsim {

namespace {

// The calibration data files' JSON, all read before any is used: the placement filter takes the nearest
// probe of them all.
std::vector<nlohmann::json> read_data_files(const CalibrationInputs& in, PlacementFilter& placement) {
  std::vector<nlohmann::json> data;
  for (const auto& f : in.data_files) {
    data.push_back(read_json_file(f, "not JSON (calibration data comes from `ringsim-real calibrate --json`)",
                                  "calibration data"));
    try {
      placement.add_file(data.back());
    } catch (const nlohmann::json::exception& e) {
      throw InputError({f, 0, 0, ""}, std::string("malformed calibration data: ") + e.what());
    }
  }
  placement.add_nearest(in.nearest_core_to_core_ns);
  return data;
}

// Ping-pong and exchanges per pair class. Collectives move data as exchanges (every rank sends and
// receives at once), so where the file has them they are the class's figures; its ping-pong is then
// fitted and shown beside them only.
void add_pair_classes(const std::string& f, const nlohmann::json& j, Measurements& m) {
  const bool exchanges = j.contains("sendrecv") && !j.at("sendrecv").empty();
  auto add_pairs = [&](const char* key, const std::string& suffix) {
    for (const auto& pair : j.at(key)) {
      const std::string cls = pair.at("class").get<std::string>() + suffix;
      m.add_points(cls, pair.at("points"));
      m.add_source(cls, f);
    }
  };
  add_pairs("pingpong", exchanges ? kPingPongSuffix : "");
  if (exchanges) {
    add_pairs("sendrecv", "");
    for (const auto& pair : j.at("sendrecv")) m.exchange_classes.insert(pair.at("class").get<std::string>());
  }
}

// One pair's exchanges on one core, and on two cores each shared with a yielding thread (the core handoffs).
void add_core_exchanges(const std::string& f, const nlohmann::json& j, Measurements& m) {
  for (const auto& [key, cls] : {std::pair{"sendrecv_one_core", kOneCore}, {"sendrecv_shared_cores", kSharedCores}})
    if (j.contains(key) && j.at(key).contains("points")) {
      m.add_points(cls, j.at(key).at("points"));
      m.add_source(cls, f);
    }
}

// A 2-process ring allreduce of small buffers: what a collective call costs beyond its steps.
void add_small_calls(const nlohmann::json& j, Measurements& m) {
  if (!j.contains("allreduce_small") || !j.at("allreduce_small").contains("points")) return;
  const auto& calls = j.at("allreduce_small");
  m.call_class = calls.at("class").get<std::string>();
  const std::vector<FitPoint> pts = m.timed_points(calls.at("points"), 1, false);
  m.small_calls.insert(m.small_calls.end(), pts.begin(), pts.end());
}

// The host's reduction and copies: per byte until fitted, which gives them a start-up cost.
void add_host_operations(const std::string& f, const nlohmann::json& j, Measurements& m) {
  for (const char* kind : {"reduction", "copy"}) {
    if (!j.contains(kind) && std::string(kind) == "copy") continue;  // files written before copies were timed
    m.add_points(kind, j.at(kind), 0, true);
    m.add_source(kind, f);
  }
}

// One `ringsim-real calibrate --json` file's measurements, once its schema is the one read here.
void add_data_file(const std::string& f, const nlohmann::json& j, Measurements& m) {
  try {
    if (!j.is_object() || !j.contains("schema") || j["schema"] != "ringsim.calibration-data/1")
      throw InputError({f, 0, 0, ""},
                       "expected \"schema\": \"ringsim.calibration-data/1\" (ringsim-real calibrate --json)");
    add_pair_classes(f, j, m);
    add_core_exchanges(f, j, m);
    add_small_calls(j, m);
    add_host_operations(f, j, m);
  } catch (const nlohmann::json::exception& e) {
    throw InputError({f, 0, 0, ""}, std::string("malformed calibration data: ") + e.what());
  }
}

// The rails an nccl-tests allreduce across nodes shares its bus bandwidth among: NCCL runs its rings at
// once, each through its own NIC where the node has several (NodeLayout::gpu_rail, the scenario's SKU).
int rails_of(const Catalog& catalog, const Scenario& s, const NcclTestsData& d) {
  if (!d.spans_nodes || d.op != "all_reduce" || s.cluster.fabric != FabricKind::InfiniBand) return 1;
  return std::max(1, catalog.layout(catalog.sku(s.cluster.sku).layout).rails_of_first(d.ranks / std::max(d.hosts, 1)));
}

// One nccl-tests output file: across nodes its points are the network's (one rail's), else same_socket's.
void add_nccl_tests_file(const Catalog& catalog, const Scenario& s, const std::string& f, Measurements& m) {
  const std::string text = read_input_file(f, kMaxLogInputBytes, "nccl-tests log");
  NcclTestsData d = parse_nccl_tests(text, f, {s.cluster.total_gpus(), s.cluster.nodes});
  if (d.ranks_from_context)
    m.input_notes.push_back(f + ": no rank lines; " + std::to_string(d.ranks) + " ranks on " + std::to_string(d.hosts) +
                            " hosts, as the scenario has them (cluster.nodes x gpus_per_node: --set to change)");
  const std::string cls = d.spans_nodes ? "network" : "same_socket";
  const int rails = rails_of(catalog, s, d);
  for (auto& p : d.points) p.x_beta /= rails;
  std::vector<FitPoint>& pts = m.by_class[cls];
  pts.insert(pts.end(), d.points.begin(), d.points.end());
  m.sources[cls] += (m.sources[cls].empty() ? "" : ", ") + f + " (nccl-tests " + d.op + ", " + std::to_string(d.ranks) +
                    " ranks" + (rails > 1 ? ", its bus bandwidth shared by " + std::to_string(rails) + " rails" : "") +
                    ")";
}

}  // namespace

Measurements read_measurements(const Catalog& catalog, const Scenario& s, const CalibrationInputs& in) {
  Measurements m;
  const std::vector<nlohmann::json> data = read_data_files(in, m.placement);
  for (std::size_t file = 0; file < in.data_files.size(); ++file) add_data_file(in.data_files[file], data[file], m);
  for (const auto& f : in.nccl_tests_files) add_nccl_tests_file(catalog, s, f, m);
  for (auto& [cls, pts] : m.by_class) pts = median_per_size(std::move(pts));
  return m;
}

std::vector<std::string> reading_notes(const Measurements& m) {
  std::vector<std::string> notes = m.input_notes;
  if (m.placement.active()) {
    notes.push_back("placement: " + m.placement.summary("samples"));
    if (m.points_left_out > 0)
      notes.push_back("placement: " + std::to_string(m.points_left_out) +
                      " points had no sample that counts, and are left out");
  }
  return notes;
}

}  // namespace ringsim
