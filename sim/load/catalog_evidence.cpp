// single_gpu_rates.yaml: public single-GPU training rates, the evidence the compute models are checked
// against (`ringsim validate --single-gpu`) and whose errors band their predictions (schedule/compute_evidence.h).
#include <filesystem>
#include <memory>

#include "load/catalog.h"
#include "load/yaml_reader.h"

namespace ringsim {

namespace fs = std::filesystem;

std::vector<SingleGpuRate> Catalog::read_single_gpu_rates(const std::string& file) const {
  auto doc = std::make_shared<YamlDocument>(YamlDocument::load_file(file, "single-GPU rates"));
  YamlField root = YamlField::root(doc);
  root.require_map({"rates"});
  std::vector<SingleGpuRate> out;
  for (auto& f : root.get("rates").items()) {
    f.require_map({"gpu", "model", "batch_per_gpu", "precision", "seq_len", "gradient_accumulation", "stack",
                   "samples_per_sec", "source"});
    SingleGpuRate r;
    r.gpu = f.get("gpu").choice(gpu_names());
    r.model = f.get("model").choice(model_names());
    r.batch_per_gpu = static_cast<int>(f.get("batch_per_gpu").integer(1, 1 << 20));
    r.precision = f.get("precision").choice(compute_.precision_order);
    r.stack = f.get("stack").choice(compute_.operators.stack_order);
    const ModelSpec& m = model(r.model);
    r.tokens = m.default_tokens;
    if (auto s = f.find("seq_len")) r.tokens = static_cast<int>(s->integer(1, m.max_tokens));
    if (auto a = f.find("gradient_accumulation")) r.gradient_accumulation = static_cast<int>(a->integer(1, 1 << 20));
    r.samples_per_sec = f.get("samples_per_sec").positive_number();
    r.source = f.get("source").str();
    r.line = f.location().line;
    out.push_back(r);
  }
  return out;
}

// Read after the GPUs, models and compute stacks it names; a catalog without the file bands compute by its
// uncertain.yaml ranges alone.
void Catalog::load_single_gpu_rates(const fs::path& base) {
  if (fs::exists(base / "single_gpu_rates.yaml"))
    single_gpu_rates_ = read_single_gpu_rates((base / "single_gpu_rates.yaml").string());
}

}  // namespace ringsim
