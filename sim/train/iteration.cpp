#include "train/iteration.h"

#include <algorithm>

namespace ringsim {

namespace {

// Sharded parameters: the forward pass a unit at a time, each after its gather and freed after it (the root
// stays), then the backward pass layer by layer, a resharded unit after its gather again.
void run_sharded_program(const ComputeModel& cm, double scale, const ComputeHooks& rt, const GatherPlan& plan) {
  const int n = static_cast<int>(cm.layers.size());
  auto freed = [&](int g) { return g >= 0 && !plan.units[plan.gathers[g].unit].name.empty(); };
  int unit = -1, open = -1;  // the unit computing, and the gather it computes with
  double run = 0;            // the forward seconds of its layers so far
  for (int i = 0; i < n; ++i) {
    if (plan.unit_of_layer[i] != unit) {
      if (run > 0) rt.compute("FORWARD", run);
      run = 0;
      if (freed(open)) rt.release(open);
      unit = plan.unit_of_layer[i];
      open = plan.find(unit, false);
      if (open >= 0) rt.wait_gathered(open);
    }
    run += cm.layers[i].forward_s * scale;
  }
  if (run > 0) rt.compute("FORWARD", run);
  if (freed(open)) rt.release(open);
  unit = -1, open = -1;
  for (int i = n - 1; i >= 0; --i) {
    const Layer& l = cm.layers[i];
    if (plan.unit_of_layer[i] != unit) {
      if (open >= 0) rt.release(open);
      unit = plan.unit_of_layer[i];
      open = plan.find(unit, true);
      if (open >= 0) rt.wait_gathered(open);
    }
    if (l.backward_s > 0) rt.compute(l.name, l.backward_s * scale);
    rt.ready(l.tensors);
  }
  if (open >= 0) rt.release(open);
}

}  // namespace

void run_compute_program(const ComputeModel& cm, const TrainingFramework& framework, double scale,
                         const std::function<double(const std::vector<int>&)>& bucket_copy_s, const ComputeHooks& rt,
                         const GatherPlan& plan) {
  if (!plan.empty()) return run_sharded_program(cm, scale, rt, plan);
  rt.compute("FORWARD", cm.forward_s * scale);
  for (auto l = cm.layers.rbegin(); l != cm.layers.rend(); ++l) {
    if (l->backward_s > 0) rt.compute(l->name, l->backward_s * scale);
    if (framework.bucket_copies()) rt.compute(std::string(kBucketCopyIn), bucket_copy_s(l->tensors));
    rt.ready(l->tensors);
  }
}

CollectiveRecord run_buffer(const collective::FusionBuffer& b, int index, const TrainingFramework& framework,
                            BufferExecutor& x) {
  CollectiveRecord rec;
  rec.index = index;
  rec.bytes = b.bytes;
  rec.tensors = b.tensors;
  rec.negotiated_at = b.negotiated_at;
  rec.start = x.now();
  const bool fused = framework.fusion_copies(b);
  x.copy_in(b, fused);
  rec.comm_start = x.now();
  const auto c = x.collective(b);
  rec.algorithm = std::string(c->algorithm());
  rec.protocol = std::string(c->protocol.name);
  x.exchange(b, *c, rec);
  rec.comm_end = x.now();
  x.copy_out(b, fused);
  rec.end = x.now();
  return rec;
}

BucketCopyOut::Tail BucketCopyOut::finish(double backward_end) {
  Tail t;
  t.end = collective::bucket_copies_end(backward_end, done_, copy_s_, &t.starts);
  t.copy_s = std::move(copy_s_);
  done_.clear();
  copy_s_.clear();
  return t;
}

void set_compute_fields(Prediction& p, const ComputeModel& cm, const TrainingFramework& framework, double scale) {
  p.forward_s = cm.forward_s * scale;
  p.backward_s = cm.backward_s * scale;
  p.update_s = framework.optimizer_step() ? cm.update_s * scale : 0;
  p.compute_time_s = p.forward_s + p.backward_s + p.update_s;
  p.compute_source = cm.source;
  p.model_flops_per_sample = cm.model_flops_per_sample;
  p.peak_flops = cm.peak_flops;
  p.memory = cm.memory;
  p.compute_source_detail = cm.source_detail + (scale != 1 ? " x compute scale " + std::to_string(scale) : "");
}

void finish_result(Prediction& p, const Scenario& s) {
  p.exposed_communication_s = std::max(0.0, p.iteration_time_s - p.compute_time_s - p.bucket_copy_s);
  derive_throughput(p, s);
}

}  // namespace ringsim
