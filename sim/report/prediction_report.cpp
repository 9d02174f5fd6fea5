#include "report/prediction_report.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "load/units.h"
#include "report/goodput_report.h"
#include "train/sharding.h"

namespace ringsim {

using nlohmann::ordered_json;

namespace {

ordered_json scenario_json(const Scenario& s) {
  ordered_json j;
  j["name"] = s.name;
  j["file"] = s.file;
  j["cluster"] = {{"sku", s.cluster.sku},
                  {"nodes", s.cluster.nodes},
                  {"gpus_per_node", s.cluster.gpus_per_node},
                  {"fabric", std::string(to_string(s.cluster.fabric))},
                  {"fabric_topology", std::string(to_string(s.cluster.fabric_topology))},
                  {"nodes_per_leaf", s.cluster.nodes_per_leaf},
                  {"oversubscription", s.cluster.oversubscription},
                  {"low_priority", s.cluster.low_priority}};
  j["model"] = {{"name", s.model.name},
                {"batch_per_gpu", s.model.batch_per_gpu},
                {"precision", s.model.precision},
                {"gradient_bytes", s.model.gradient_bytes},
                {"tokens_per_sample", s.model.tokens}};
  if (s.model.images_per_sec_single_gpu) {
    j["model"]["images_per_sec_single_gpu"] = *s.model.images_per_sec_single_gpu;
    j["model"]["samples_per_sec_single_gpu"] = *s.model.images_per_sec_single_gpu;
  }
  j["training"] = {{"epochs", s.training.epochs},
                   {"dataset_images", s.training.dataset_images},
                   {"gradient_accumulation", s.training.gradient_accumulation}};
  j["communication"] = {{"strategy", std::string(to_string(s.communication.strategy))},
                        {"parameter_servers", s.communication.parameter_servers},
                        {"parameter_server_placement", std::string(to_string(s.communication.ps_placement))},
                        {"parameter_server_assignment", std::string(to_string(s.communication.ps_assignment))},
                        {"parameter_server_aggregation", std::string(to_string(s.communication.ps_aggregation))},
                        {"parameter_server_transport", std::string(to_string(s.communication.ps_transport))},
                        {"protocol", s.communication.protocol.empty() ? "auto" : s.communication.protocol},
                        {"channels", s.communication.channels},
                        {"fusion_threshold_bytes", s.communication.fusion_threshold_bytes},
                        {"cycle_time_s", s.communication.cycle_time_s},
                        {"concurrent_collectives", s.communication.concurrent_collectives},  // 0: unlimited
                        {"framework", std::string(to_string(s.communication.framework))},
                        {"gradient_precision", s.communication.gradient_precision},
                        {"bucket_bytes", s.communication.bucket_bytes},
                        {"first_bucket_bytes", s.communication.first_bucket_bytes},
                        {"library", std::string(to_string(s.communication.library))}};
  if (s.storage) {
    const StorageConfig& st = *s.storage;
    j["storage"] = {{"backend", st.backend},
                    {"servers", st.servers},
                    {"cache", st.cache},
                    {"format", std::string(to_string(st.format))},
                    {"file_size_bytes", st.file_size},
                    {"record_size_bytes", st.record_size},
                    {"dataset_bytes", st.dataset_bytes},
                    {"decode_cpu_per_image_s", st.decode_cpu_per_image_s},
                    {"prefetch_depth", st.prefetch_depth},
                    {"reader_threads", st.reader_threads},
                    {"bandwidth_bytes_per_s", st.bandwidth},
                    {"iops", st.iops},
                    {"request_latency_s", st.request_latency}};
  }
  if (s.reliability.modelled) {
    const ReliabilityConfig& r = s.reliability;
    j["reliability"] = {
        {"failures_per_1000_node_days", r.failures_per_1000_node_days.value},
        {"evictions_per_node_day", r.evictions_per_node_day.value},
        {"restart_time_s", r.restart_s.value},
        {"node_replacement_time_s", r.replacement_s.value},
        {"checkpoint_interval_s",
         r.checkpoint_interval_s ? nlohmann::ordered_json(*r.checkpoint_interval_s) : nlohmann::ordered_json("auto")},
        {"checkpoint_storage", r.checkpoint_storage},
        {"checkpoint_async", r.checkpoint_async},
        {"spare_nodes", r.spare_nodes}};
  }
  return j;
}

// The input pipeline; with synthetic data (no storage section, and every real run) the same keys, with
// the values synthetic data has: no loader, no wait, both epochs the same.
ordered_json data_pipeline_json(const Prediction& p) {
  DataPipeline d = p.data_pipeline;
  if (!d.active) {
    d.format = "synthetic";
    d.train_iteration_s = p.iteration_time_s;
    d.simulated_iterations_per_epoch = 1;
    for (PipelineEpoch* e : {&d.first, &d.steady}) {
      e->source = "synthetic";
      e->first_iteration_s = p.iteration_time_s;
      e->iteration_s = p.iteration_time_s;
      e->limited_by = "compute";
      e->epoch_time_s = p.epoch_time_s;
    }
  }
  auto epoch = [](const PipelineEpoch& e) {
    return ordered_json{{"source", e.source},
                        {"first_iteration_time_s", e.first_iteration_s},
                        {"iteration_time_s", e.iteration_s},
                        {"data_wait_s", e.data_wait_s},
                        {"load_time_s", e.load_s},
                        {"load_terms_s",
                         {{"storage_bandwidth", e.bandwidth_s},
                          {"storage_iops", e.iops_s},
                          {"nic", e.nic_s},
                          {"request_latency", e.latency_s},
                          {"decode_cpu", e.decode_s}}},
                        {"storage_throughput_bytes_per_s", e.storage_throughput},
                        {"storage_throughput_limit_bytes_per_s", e.storage_throughput_limit},
                        {"limited_by", e.limited_by},
                        {"storage_is_bottleneck", storage_is_bottleneck(e)},
                        {"epoch_time_s", e.epoch_time_s}};
  };
  return {{"backend", d.backend},
          {"format", d.format},
          {"cache", d.cache},
          {"prefetch_depth", d.prefetch_depth},
          {"reader_threads", d.reader_threads},
          {"image_bytes", d.image_bytes},
          {"batch_bytes_per_node", d.batch_bytes_per_node},
          {"requests_per_batch_per_node", d.requests_per_batch_node},
          {"train_iteration_s", d.train_iteration_s},
          {"synthetic_iteration_s", d.active ? d.synthetic_iteration_s : p.iteration_time_s},
          {"simulated_iterations_per_epoch", d.simulated_iterations_per_epoch},
          {"nic_shared_with_gradients", d.nic.shared},
          {"nic_gradient_bytes_per_iteration", d.nic.gradient_bytes},
          {"first_epoch", epoch(d.first)},
          {"steady_state", epoch(d.steady)}};
}

// JSON memory: {per_gpu_bytes, capacity_bytes, fits, breakdown: {name: bytes}, advice}.
ordered_json memory_json(const MemoryEstimate& m) {
  ordered_json j;
  j["per_gpu_bytes"] = m.per_gpu_bytes;
  j["per_gpu_bytes_low"] = m.per_gpu_bytes_low;
  j["per_gpu_bytes_high"] = m.per_gpu_bytes_high;
  j["capacity_bytes"] = m.capacity_bytes;
  j["fits"] = m.fits();
  ordered_json b = ordered_json::object();
  for (const auto& i : m.breakdown) b[i.name] = i.bytes;
  j["breakdown"] = b;
  if (!m.advice.empty()) j["advice"] = m.advice;
  return j;
}

ordered_json link_json(const LinkLoad& l) {
  return {{"link", l.name},   {"class", l.link_class},       {"kind", l.kind}, {"bandwidth_bytes_per_s", l.bandwidth},
          {"bytes", l.bytes}, {"utilisation", l.utilisation}};
}

std::string collective_activity(const Prediction& p, const CollectiveRecord& r) {
  if (r.algorithm == "parameter_server") return "PS_PUSH_PULL";
  const std::string op = r.algorithm.ends_with("allgather")        ? "ALLGATHER"
                         : r.algorithm.ends_with("reduce_scatter") ? "REDUCESCATTER"
                                                                   : "ALLREDUCE";
  return (p.library.starts_with("nccl") ? "NCCL_" : "MPI_") + op;  // nccl, nccl1
}

}  // namespace

std::string result_json(const Prediction& p, const std::string& source) {
  ordered_json j;
  j["schema"] = kResultSchema;
  j["source"] = source;
  j["fidelity"] = std::string(to_string(p.fidelity));
  j["scenario"] = scenario_json(p.scenario);
  j["gpus"] = p.gpus;
  j["nodes"] = p.nodes;
  j["worker_nodes"] = p.worker_nodes;
  j["server_nodes"] = p.server_nodes;
  j["strategy"] = std::string(to_string(p.scenario.communication.strategy));
  j["library"] = p.library;
  j["iteration_time_s"] = p.iteration_time_s;
  j["images_per_sec"] = p.images_per_sec;
  j["samples_per_sec"] = p.images_per_sec;  // images or sequences: the general name
  if (p.band_samples > 0) {
    j["images_per_sec_low"] = p.images_per_sec_low;
    j["images_per_sec_high"] = p.images_per_sec_high;
    j["samples_per_sec_low"] = p.images_per_sec_low;
    j["samples_per_sec_high"] = p.images_per_sec_high;
  }
  j["images_per_sec_per_gpu"] = p.images_per_sec_per_gpu;
  if (p.tokens_per_sec > 0) {
    j["tokens_per_sec"] = p.tokens_per_sec;
    j["tokens_per_sec_per_gpu"] = p.tokens_per_sec_per_gpu;
    j["mfu"] = p.mfu;
    if (p.band_samples > 0) {
      j["tokens_per_sec_low"] = p.images_per_sec_low * p.tokens_per_sec / p.images_per_sec;
      j["tokens_per_sec_high"] = p.images_per_sec_high * p.tokens_per_sec / p.images_per_sec;
    }
  }
  j["single_gpu_images_per_sec"] = p.single_gpu_images_per_sec;
  j["scaling_efficiency"] = p.scaling_efficiency;
  j["compute_time_s"] = p.compute_time_s;
  j["forward_time_s"] = p.forward_s;
  j["backward_time_s"] = p.backward_s;
  j["update_time_s"] = p.update_s;
  j["straggler_s"] = p.straggler_s;
  j["co_run_s"] = p.co_run_s;
  j["bucket_copy_s"] = p.bucket_copy_s;
  j["communication_time_s"] = p.communication_time_s;
  j["exposed_communication_s"] = p.exposed_communication_s;
  j["compute_interference_s"] = p.compute_interference_s;
  j["iterations_per_epoch"] = p.iterations_per_epoch;
  j["epoch_time_s"] = p.epoch_time_s;
  j["time_to_train_s"] = p.time_to_train_s;
  if (p.band_samples > 0) {
    j["time_to_train_s_low"] = p.time_to_train_s_low;
    j["time_to_train_s_high"] = p.time_to_train_s_high;
    j["band"] = {{"samples", p.band_samples}, {"parameters", p.band_parameters}};
    if (!p.band_compute_evidence.empty()) j["band"]["compute_evidence"] = p.band_compute_evidence;
  }
  j["compute_source"] = {{"kind", p.compute_source}, {"detail", p.compute_source_detail}};
  j["memory"] = memory_json(p.memory);
  j["bottleneck"] = link_json(p.bottleneck);
  j["data_pipeline"] = data_pipeline_json(p);
  if (p.goodput.modelled) j["goodput"] = goodput_json(p.goodput);
  j["fusion_buffers"] = p.collectives.size();
  ordered_json cols = ordered_json::array();
  for (const auto& r : p.collectives) {
    ordered_json c;
    c["index"] = r.index;
    c["algorithm"] = r.algorithm;
    if (!r.protocol.empty()) c["protocol"] = r.protocol;
    c["bytes"] = r.bytes;
    c["tensors"] = r.tensors.size();
    c["negotiated_at_s"] = r.negotiated_at;
    c["start_s"] = r.start;
    c["end_s"] = r.end;
    c["collective_start_s"] = r.comm_start;
    c["collective_end_s"] = r.comm_end;
    if (r.compute_share > 0) c["compute_share"] = r.compute_share;  // of its busiest GPU's compute, while it ran
    ordered_json ph = ordered_json::array();
    for (const auto& x : r.phases) {
      ordered_json one = {
          {"phase", x.phase}, {"steps", x.steps}, {"transfers_per_step", x.transfers}, {"step_estimate_s", x.step_s}};
      if (x.copy_s > 0) one["shared_memory_copy_s"] = x.copy_s;  // the host data path's copy out, per step
      ph.push_back(one);
    }
    c["phases"] = ph;
    cols.push_back(c);
  }
  j["collectives"] = cols;
  j["simulated_activities"] = p.simulated_activities;
  j["represented_transfers"] = p.represented_transfers;
  return j.dump(2) + "\n";
}

std::string timeline_json(const Prediction& p) {
  // Horovod timeline: a JSON array of trace events; one "process" row per rank and per tensor, B/E pairs,
  // timestamps in microseconds.
  ordered_json ev = ordered_json::array();
  auto us = [](double s) { return s * 1e6; };
  auto meta = [&](int pid, const std::string& name) {
    ev.push_back({{"name", "process_name"}, {"ph", "M"}, {"pid", pid}, {"args", {{"name", name}}}});
    ev.push_back({{"name", "process_sort_index"}, {"ph", "M"}, {"pid", pid}, {"args", {{"sort_index", pid}}}});
  };
  auto span = [&](int pid, const std::string& name, double b, double e, ordered_json args = nullptr) {
    ordered_json begin = {{"name", name}, {"ph", "B"}, {"ts", us(b)}, {"pid", pid}, {"tid", 0}};
    if (!args.is_null()) begin["args"] = args;
    ev.push_back(begin);
    ev.push_back({{"ph", "E"}, {"ts", us(e)}, {"pid", pid}, {"tid", 0}});
  };
  int ranks = 0;
  for (const auto& s : p.compute_spans) ranks = std::max(ranks, s.rank + 1);
  for (int r = 0; r < ranks; ++r) meta(r, "rank " + std::to_string(r) + " compute");
  for (const auto& s : p.compute_spans) {
    const bool named = s.name == "FORWARD" || s.name == "DATA_WAIT" || s.name.starts_with("DDP_COPY_");
    span(s.rank, named ? s.name : "BACKWARD " + s.name, s.start, s.end);
  }
  const int buffers_pid = ranks;
  meta(buffers_pid, std::string(gradient_buffers_noun(p.scenario)));
  const int tensor_pid0 = ranks + 1;
  std::vector<int> buffer_of(p.tensor_names.size(), -1);
  for (const auto& r : p.collectives)
    for (int t : r.tensors) buffer_of[t] = r.index;
  for (std::size_t t = 0; t < p.tensor_names.size(); ++t) meta(tensor_pid0 + static_cast<int>(t), p.tensor_names[t]);
  for (const auto& r : p.collectives) {
    const std::string activity = collective_activity(p, r);
    span(buffers_pid, "BUFFER " + std::to_string(r.index), r.start, r.end,
         {{"bytes", r.bytes}, {"tensors", r.tensors.size()}, {"algorithm", r.algorithm}});
    double estimate = 0;
    for (const auto& ph : r.phases) estimate += ph.steps * ph.step_s;
    const bool gather = r.algorithm.ends_with("allgather");  // sharded parameters, before they compute
    for (int t : r.tensors) {
      const int pid = tensor_pid0 + t;
      if (!gather) span(pid, "NEGOTIATE_ALLREDUCE", p.tensor_ready_s[t], r.negotiated_at);
      ev.push_back({{"name", gather ? "ALLGATHER" : "ALLREDUCE"},
                    {"ph", "B"},
                    {"ts", us(r.start)},
                    {"pid", pid},
                    {"tid", 0},
                    {"args", {{"bytes", p.tensor_bytes[t]}, {"buffer", r.index}}}});
      if (r.comm_start > r.start) span(pid, "MEMCPY_IN_FUSION_BUFFER", r.start, r.comm_start);
      ordered_json begin = {{"name", activity}, {"ph", "B"}, {"ts", us(r.comm_start)}, {"pid", pid}, {"tid", 0}};
      if (r.compute_share > 0) begin["args"] = {{"compute_share", r.compute_share}};  // its kernels' hold
      ev.push_back(begin);
      // Phases, scaled from the step estimates onto the simulated duration.
      double at = r.comm_start;
      const double scale = estimate > 0 ? (r.comm_end - r.comm_start) / estimate : 0;
      for (const auto& ph : r.phases) {
        const double d = ph.steps * ph.step_s * scale;
        ordered_json args = {{"steps", ph.steps}};
        if (ph.copy_s > 0) args["shared_memory_copy_us_per_step"] = ph.copy_s * 1e6;
        span(pid, ph.phase, at, at + d, args);
        at += d;
      }
      ev.push_back({{"ph", "E"}, {"ts", us(r.comm_end)}, {"pid", pid}, {"tid", 0}});
      if (r.end > r.comm_end) span(pid, "MEMCPY_OUT_FUSION_BUFFER", r.comm_end, r.end);
      ev.push_back({{"ph", "E"}, {"ts", us(r.end)}, {"pid", pid}, {"tid", 0}});
    }
  }
  return ev.dump() + "\n";
}

std::string links_csv(const Prediction& p) {
  std::ostringstream out;
  out << "link,class,kind,bandwidth_bytes_per_s,bytes,utilisation\n";
  char buf[128];
  for (const auto& l : p.links) {
    std::snprintf(buf, sizeof buf, "%.17g,%.17g,%.17g", l.bandwidth, l.bytes, l.utilisation);
    out << l.name << ',' << l.link_class << ',' << l.kind << ',' << buf << '\n';
  }
  return out.str();
}

namespace {
// Under auto, the library's release and what its tuning model picked for the reported iteration's buffers:
// " 2.18.5 (its tuning model picks per message: nvls_allreduce/simple x 27)".
std::string picked(const Scenario& s, const Prediction& p) {
  if (s.communication.strategy != Strategy::Auto) return "";
  std::map<std::string, int> count;
  for (const auto& r : p.collectives) ++count[r.algorithm + (r.protocol.empty() ? "" : "/" + r.protocol)];
  std::string out;
  for (const auto& [name, n] : count) out += (out.empty() ? "" : ", ") + name + " x " + std::to_string(n);
  const std::string release = s.communication.library_version.empty() ? "" : " " + s.communication.library_version;
  return release + " (its tuning model picks per message" + (out.empty() ? "" : ": " + out) + ")";
}

// The table's communication row: strategy, library, fusion, and how many collectives run at once.
std::string communication_row(const Scenario& s, const std::string& library, const std::string& picks) {
  const int at_once = s.communication.concurrent_collectives;
  const CommunicationConfig& c = s.communication;
  const std::string loop =
      c.framework == Framework::PytorchDdp
          ? ", PyTorch DDP buckets " + format_bytes(c.first_bucket_bytes) + " then " + format_bytes(c.bucket_bytes)
      : c.framework == Framework::Fsdp
          ? ", FSDP " + std::string(to_string(c.sharding)) + " (a unit a transformer block" +
                (state_shards(s) > 1 ? ": all-gathers and reduce-scatters on their own streams)" : ": allreduces)")
      : c.framework == Framework::Deepspeed
          ? ", DeepSpeed ZeRO-" + std::to_string(c.zero_stage) +
                (c.zero_stage == 3 ? " (reduce-scatters of " : " (allreduces of ") +
                format_number(kZeroReduceBucketElements / 1e6) + "M-element buckets, " +
                (c.zero_stage == 3 ? "a block's all-gathers before its forward and backward passes"
                                   : "an all-gather of the updated parameters before the forward pass") +
                ", on their own streams)"
          : ", fusion " + format_bytes(c.fusion_threshold_bytes) + " every " + format_time(c.cycle_time_s);
  return std::string(to_string(c.strategy)) + " over " + library + picks + loop +
         (at_once == 1   ? ""
          : at_once == 0 ? ", every collective at once"
                         : ", up to " + std::to_string(at_once) + " at once");
}
// What the band sampled; where the roofline's efficiency is among it (it usually dominates), how to
// take it out.
std::string band_sources(const Prediction& p) {
  std::string names;
  for (const auto& n : p.band_parameters) names += (names.empty() ? "" : ", ") + n;
  std::string text = std::to_string(p.band_samples) + " samples of " + names +
                     " (topologies/uncertain.yaml): meant to hold the measured value 9 times in 10";
  if (!p.band_compute_evidence.empty()) text += "; compute: " + p.band_compute_evidence;
  if (std::count(p.band_parameters.begin(), p.band_parameters.end(), "roofline_efficiency") > 0)
    text +=
        "; the single-GPU rate is the roofline's: a measured one (model.samples_per_sec_single_gpu, or a "
        "compute.yaml row) narrows it";
  return text;
}
// The model, its batch and precision, a text model's tokens, and the micro-batches a step.
std::string model_row(const Scenario& s) {
  const int k = s.training.gradient_accumulation;
  return s.model.name + ", batch " + std::to_string(s.model.batch_per_gpu) + " per GPU, " + s.model.precision +
         (s.model.text ? ", " + std::to_string(s.model.tokens) + " tokens a sequence" : "") +
         (k > 1 ? ", " + std::to_string(k) + " micro-batches a step" : "");
}
}  // namespace

// "61.2 GiB of 80 GiB (77 %): parameters 30 GiB, ..." (the breakdown where it has any bytes).
std::string memory_row(const MemoryEstimate& m) {
  std::string parts;
  for (const auto& i : m.breakdown)
    if (i.bytes > 0) parts += (parts.empty() ? "" : ", ") + i.name + " " + format_bytes(i.bytes);
  return memory_summary(m) + " [" + parts + "]";
}

// "795.2 ms (forward ..., backward ..., update ...; busy neighbours ...; the slowest of N ranks ...)".
std::string compute_row(const Prediction& p) {
  return format_time(p.compute_time_s) + " (forward " + format_time(p.forward_s) + ", backward " +
         format_time(p.backward_s) + ", update " + format_time(p.update_s) +
         (p.co_run_s > 0 ? "; busy neighbours in the node " + format_time(p.co_run_s) + " more" : "") +
         (p.straggler_s > 0
              ? "; the slowest of " + std::to_string(p.gpus) + " ranks " + format_time(p.straggler_s) + " more"
              : "") +
         ")";
}

namespace {
// A rate to one decimal; from a million up whole, not in exponent notation (16,384 GPUs' tokens/s).
std::string one_decimal(double v) {
  if (v >= 1e6) return std::to_string(static_cast<long long>(std::llround(v)));
  return format_number(std::round(v * 10) / 10);
}

// A text model's tokens a second: the samples' band in tokens, per GPU and the MFU.
std::string tokens_row(const Prediction& p) {
  const auto pct = [](double v) { return format_number(std::round(v * 1000) / 10) + " %"; };
  const double tokens = p.tokens_per_sec / p.images_per_sec;
  return one_decimal(p.tokens_per_sec) +
         (p.band_samples > 0 ? " (band " + one_decimal(p.images_per_sec_low * tokens) + " to " +
                                   one_decimal(p.images_per_sec_high * tokens) + "; "
                             : " (") +
         "per GPU " + one_decimal(p.tokens_per_sec_per_gpu) + ", MFU " + pct(p.mfu) + ")";
}
}  // namespace

std::string prediction_table(const Prediction& p) {
  std::ostringstream o;
  const Scenario& s = p.scenario;
  auto row = [&](const std::string& k, const std::string& v) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "  %-28s", k.c_str());
    o << buf << v << '\n';
  };
  auto pct = [](double v) { return format_number(std::round(v * 1000) / 10) + " %"; };
  o << "ringsim predict: " << s.name << " (" << to_string(p.fidelity) << " fidelity)\n";
  row("cluster", std::to_string(p.worker_nodes) + " x " + s.cluster.sku + ", " + std::to_string(p.gpus) + " GPUs" +
                     (p.server_nodes ? " + " + std::to_string(p.server_nodes) + " parameter-server nodes" : "") + ", " +
                     std::string(to_string(s.cluster.fabric)) + " " +
                     std::string(to_string(s.cluster.fabric_topology)));
  const std::string noun = s.model.text ? "sequences" : "images";
  row("model", model_row(s));
  row("communication", communication_row(s, p.library, picked(s, p)));
  row("single-GPU compute", p.compute_source + ": " + p.compute_source_detail);
  row("memory per GPU", memory_row(p.memory));
  if (!s.calibration_left_out.empty()) row("calibration", s.calibration_left_out);
  o << '\n';
  row("iteration time", format_time(p.iteration_time_s));
  row(noun + "/s (total)",
      one_decimal(p.images_per_sec) + (p.band_samples > 0 ? " (band " + one_decimal(p.images_per_sec_low) + " to " +
                                                                one_decimal(p.images_per_sec_high) + ")"
                                                          : ""));
  row(noun + "/s per GPU", format_number(std::round(p.images_per_sec_per_gpu * 10) / 10) + " (single GPU " +
                               format_number(std::round(p.single_gpu_images_per_sec * 10) / 10) + ")");
  if (p.tokens_per_sec > 0) row("tokens/s (total)", tokens_row(p));
  row("scaling efficiency", pct(p.scaling_efficiency));
  row("compute time", compute_row(p));
  if (p.bucket_copy_s > 0)
    row("DDP's bucket copies",
        format_time(p.bucket_copy_s) + " (gradients into their buckets in backward, out after the allreduces)");
  row("communication time", format_time(p.communication_time_s) + " in " + std::to_string(p.collectives.size()) + " " +
                                std::string(gradient_buffers_noun(p.scenario)));
  row("exposed communication",
      format_time(p.exposed_communication_s) +
          (p.compute_interference_s > 0
               ? " (of which " + format_time(p.compute_interference_s) + " compute slowed by collectives' kernels)"
               : ""));
  const DataPipeline& d = p.data_pipeline;
  if (!d.active) {
    row("epoch", format_time(p.epoch_time_s) + " (" + std::to_string(p.iterations_per_epoch) + " iterations)");
  } else {
    const StorageConfig& st = *s.storage;
    std::string what = d.backend;
    if (st.servers > 0) what += " (" + std::to_string(st.servers) + " server" + (st.servers == 1 ? "" : "s") + ")";
    if (d.cache) what += ", cached on " + d.steady.source;
    what += st.format == DataFormat::Files ? ", files of " + format_bytes(st.file_size)
                                           : ", records of " + format_bytes(st.record_size);
    row("data",
        what + ", " + std::to_string(d.reader_threads) + " readers/node, prefetch " + std::to_string(d.prefetch_depth));
    row("training", format_time(d.train_iteration_s) + " per iteration besides the data wait; " +
                        format_time(d.synthetic_iteration_s) + " with synthetic data");
    auto limit = [](const PipelineEpoch& e) {
      if (e.limited_by == "compute") return std::string("compute (loader keeps up)");
      std::string w = e.limited_by == "storage_bandwidth" ? "storage bandwidth"
                      : e.limited_by == "storage_iops"    ? "storage IOPS"
                      : e.limited_by == "request_latency" ? "storage request latency"
                      : e.limited_by == "nic"             ? "node NIC"
                                                          : "decode CPU";
      return (storage_is_bottleneck(e) ? "STORAGE: " + w + " of " + e.source : w);
    };
    auto epoch_rows = [&](const std::string& label, const PipelineEpoch& e) {
      row(label + " data wait",
          format_time(e.data_wait_s) + " per iteration (load " + format_time(e.load_s) + " per batch per node)");
      row(label + " storage", format_bandwidth(e.storage_throughput) + " of " +
                                  format_bandwidth(e.storage_throughput_limit) + " limit (" +
                                  pct(e.storage_throughput / e.storage_throughput_limit) + ")");
      row(label + " bottleneck", limit(e));
    };
    if (d.cache) {
      epoch_rows("epoch 1", d.first);
      epoch_rows("epoch 2+", d.steady);
    } else {
      epoch_rows("epoch", d.steady);
    }
    row("epoch 1", format_time(d.first.epoch_time_s) + " (" + std::to_string(p.iterations_per_epoch) + " iterations)");
    row("epoch (steady state)", format_time(d.steady.epoch_time_s));
  }
  row("time to train", format_time(p.time_to_train_s) + " (" + std::to_string(s.training.epochs) + " epochs" +
                           (p.band_samples > 0 ? "; band " + format_time(p.time_to_train_s_low) + " to " +
                                                     format_time(p.time_to_train_s_high)
                                               : "") +
                           ")");
  if (p.band_samples > 0) row("band from", band_sources(p));
  for (const auto& [k, v] : goodput_rows(p)) row(k, v);
  if (!p.links.empty())
    row("bottleneck link", p.bottleneck.name + " (" + p.bottleneck.link_class + ", " +
                               format_bandwidth(p.bottleneck.bandwidth) + "), utilisation " +
                               pct(p.bottleneck.utilisation));
  else
    row("bottleneck link", "none (no communication)");
  return o.str();
}

}  // namespace ringsim
