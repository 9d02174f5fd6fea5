// The result of one simulated (or, with real/, measured) training iteration, in the one schema that
// `predict`, the real runs and the emulator share (see report/result_json).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "execute/goodput/goodput.h"
#include "execute/simgrid/data_pipeline.h"
#include "load/catalog.h"
#include "load/scenario.h"
#include "schedule/memory.h"

namespace ringsim {

enum class Fidelity { Flow, Step, Measured, Emulated };  // Measured: a real run (real/); Emulated: under SMPI
std::string_view to_string(Fidelity f);

struct ComputeSpan {
  int rank = 0;
  // "FORWARD", "DATA_WAIT" (for the next batch), DDP's "DDP_COPY_IN" and "DDP_COPY_OUT", or the layer name
  // for its backward pass
  std::string name;
  double start = 0, end = 0;
};

struct CollectivePhase {
  std::string phase;  // "reduce_scatter", ...
  int steps = 0;
  double step_s = 0;  // step fidelity's estimate of one step
  int transfers = 0;  // messages per step
  double copy_s = 0;  // of step_s: copies out of shared memory (the host data path), 0 elsewhere
};

struct CollectiveRecord {
  int index = 0;
  std::string algorithm;  // "ring_allreduce", "hierarchical_allreduce", "parameter_server"
  std::string protocol;   // what the library's tuning picked for it ("ll", "ll128", "simple"); empty: none
  std::uint64_t bytes = 0;
  std::vector<int> tensors;
  double negotiated_at = 0;  // the coordinator cycle that formed the buffer
  double start = 0;          // memcpy into the fusion buffer starts
  double comm_start = 0;     // the collective itself
  double comm_end = 0;
  double end = 0;  // memcpy out of the fusion buffer done
  // Of its busiest member's GPU, the share of the compute it held from comm_start to comm_end
  // (CommModel::compute_interference).
  double compute_share = 0;
  std::vector<CollectivePhase> phases;
};

struct LinkLoad {
  std::string name;  // "n0.gpu0->n0.sw0"
  std::string link_class;
  std::string kind;
  double bandwidth = 0;    // nominal bytes/s
  double bytes = 0;        // carried per iteration
  double utilisation = 0;  // bytes / (bandwidth x iteration time)
};

struct Prediction {
  Scenario scenario;
  Fidelity fidelity = Fidelity::Flow;
  std::string library;
  int gpus = 0, nodes = 0, worker_nodes = 0, server_nodes = 0;
  double iteration_time_s = 0;
  double forward_s = 0, backward_s = 0, update_s = 0;
  double compute_time_s = 0;  // forward + backward + optimizer step of one rank
  double straggler_s = 0;     // of which the slowest rank's extra (ComputeModel::straggler_s)
  double co_run_s = 0;        // of which the node's busy neighbours' toll (ComputeModel::co_run_s)
  // What rank 0's forward and backward passes took longer than compute_time_s says, slowed by collectives'
  // kernels running beside them (part of exposed_communication_s).
  double compute_interference_s = 0;
  // PyTorch DDP's copies of the gradients into its buckets and back out, on the compute stream (not in
  // compute_time_s; the copies out wait for the allreduces).
  double bucket_copy_s = 0;
  double communication_time_s = 0;     // sum of collective durations (fusion copies included)
  double exposed_communication_s = 0;  // iteration time not covered by compute
  double images_per_sec = 0, images_per_sec_per_gpu = 0;
  double single_gpu_images_per_sec = 0, scaling_efficiency = 0;
  // A text model's tokens a second, and its model FLOPs utilisation (PaLM's MFU: the model's forward and
  // backward FLOPs per token, no recomputation, over the GPUs' dense peak at the precision); 0 for images.
  double tokens_per_sec = 0, tokens_per_sec_per_gpu = 0, mfu = 0;
  double model_flops_per_sample = 0, peak_flops = 0;  // what the MFU is computed from
  std::int64_t iterations_per_epoch = 0;
  double epoch_time_s = 0, time_to_train_s = 0;
  std::string compute_source, compute_source_detail;
  MemoryEstimate memory;  // per GPU, against its capacity
  std::vector<std::string> tensor_names;
  std::vector<std::uint64_t> tensor_bytes;
  std::vector<double> tensor_ready_s;
  std::vector<CollectiveRecord> collectives;
  std::vector<LinkLoad> links;  // links that carried bytes, highest utilisation first
  LinkLoad bottleneck;
  std::vector<ComputeSpan> compute_spans;
  std::int64_t simulated_activities = 0;   // SimGrid activities (execs, comms, sleeps) the run created
  std::int64_t represented_transfers = 0;  // chunk transfers the iteration's collectives consist of
  // The input pipeline (storage: section). With one, iteration_time_s, images/s and epoch_time_s are the
  // steady state (epochs >= 2) and time_to_train_s adds epoch 1; without, data is synthetic.
  DataPipeline data_pipeline;
  // How sure the prediction is (execute/estimate/prediction_band.h): ends meant to hold the measured value 9 times
  // in 10, from the catalog's uncertain figures. No band where band_samples is 0.
  int band_samples = 0;
  double images_per_sec_low = 0, images_per_sec_high = 0;
  double time_to_train_s_low = 0, time_to_train_s_high = 0;
  std::vector<std::string> band_parameters;  // the uncertain figures that moved the prediction
  std::string band_compute_evidence;         // the compute model's range: its nearest public rates, or why none
  // Time to train with failures, evictions and checkpoints (predict only; not modelled elsewhere).
  GoodputEstimate goodput;
};

// The figures every result derives the same way, from gpus, iteration_time_s and single_gpu_images_per_sec:
// images/s in all and per GPU, scaling efficiency, iterations per epoch, epoch time and time to train.
void derive_throughput(Prediction& p, const Scenario& s);

// What the framework calls a gradient buffer it all-reduces at once: "fusion buffers" (Horovod) or "buckets"
// (PyTorch DDP), plural, for the reports.
std::string_view gradient_buffers_noun(const Scenario& s);

// The model's tensors as the result lists them: name, bytes and when each gradient was ready.
void set_tensors(Prediction& p, const ModelSpec& model, const std::vector<std::uint64_t>& bytes,
                 const std::vector<double>& ready_s);

}  // namespace ringsim
