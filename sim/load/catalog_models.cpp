// The catalog's models: models/*.yaml, each a model's tensors (with their shapes and FLOPs) and tokens.
#include <filesystem>

#include "load/catalog.h"
#include "load/catalog_values.h"

namespace ringsim {

namespace fs = std::filesystem;
using catalog_detail::open_root;

namespace {

// A model file's `tokens`: a count (fixed: ViT's patches and class token) or {default, max} (model.seq_len).
void read_model_tokens(const YamlField& tk, ModelSpec& m) {
  if (tk.is_map()) {
    tk.require_map({"default", "max"});
    m.max_tokens = static_cast<int>(tk.get("max").integer(1, 1 << 20));
    m.default_tokens = static_cast<int>(tk.get("default").integer(1, m.max_tokens));
    m.seq_len_settable = true;
  } else {
    m.default_tokens = m.max_tokens = static_cast<int>(tk.integer(1, 1 << 20));
  }
}

// [name, [dims...]], a convolution's [name, [dims...], [out_h, out_w]], or a 2-D weight's
// [name, [dims...], per_token | lookup | per_sample | attention].
TensorSpec read_tensor(const YamlField& t) {
  auto parts = t.items();
  if (parts.size() != 2 && parts.size() != 3)
    t.fail("expected [name, [dims...]] or, for a convolution, [name, [dims...], [out_h, out_w]]");
  TensorSpec ts;
  ts.name = parts[0].str();
  ts.numel = 1;
  for (auto& d : parts[1].items()) {
    ts.shape.push_back(d.integer(1, std::int64_t(1) << 40));
    ts.numel *= ts.shape.back();
  }
  if (ts.shape.empty()) parts[1].fail("a tensor needs at least one dimension");
  if (parts.size() == 3 && parts[2].is_scalar()) {
    if (ts.shape.size() != 2)
      parts[2].fail("only a 2-D weight says how it computes; this one has " + std::to_string(ts.shape.size()) +
                    (ts.shape.size() == 1 ? " dimension" : " dimensions"));
    const std::string u = parts[2].choice({"per_token", "lookup", "per_sample", "attention"});
    ts.use = u == "lookup"       ? TensorUse::Lookup
             : u == "per_sample" ? TensorUse::PerSample
             : u == "attention"  ? TensorUse::Attention
                                 : TensorUse::PerToken;
    if (ts.use == TensorUse::Attention && ts.shape[0] != ts.shape[1])
      parts[2].fail("an attention layer's output projection is square [width, width]");
  } else if (parts.size() == 3) {
    if (ts.shape.size() != 4) parts[2].fail("only a 4-D convolution weight has an output size [out_h, out_w]");
    auto hw = parts[2].items();
    if (hw.size() != 2) parts[2].fail("expected the convolution output size [out_h, out_w]");
    ts.out_h = static_cast<int>(hw[0].integer(1, 1 << 16));
    ts.out_w = static_cast<int>(hw[1].integer(1, 1 << 16));
  } else if (ts.shape.size() == 4) {
    t.fail("a 4-D convolution weight needs its output size: [name, [dims...], [out_h, out_w]]");
  }
  return ts;
}

}  // namespace

// Models: one file per model under models/, named by its file name. A file is read when its model is first
// asked for (a model file holds up to a few hundred tensors; a scenario needs one model, `catalog` all).
void Catalog::load_models(const fs::path& base) {
  std::vector<fs::path> model_files;
  if (fs::is_directory(base / "models"))
    for (const auto& e : fs::directory_iterator(base / "models"))
      if (e.path().extension() == ".yaml") model_files.push_back(e.path());
  std::sort(model_files.begin(), model_files.end());
  for (const auto& file : model_files) {
    model_order_.push_back(file.stem().string());
    model_files_.emplace(file.stem().string(), file);
  }
}

ModelSpec Catalog::read_model(const fs::path& file) const {
  YamlField f = open_root(file, {"name", "display_name", "dataset", "input_shape", "dtype", "total_params", "tokens",
                                 "head_dim", "architecture", "tensors"});
  ModelSpec m;
  m.file = file.string();
  m.name = f.get("name").str();
  if (m.name != file.stem().string())
    f.get("name").fail("model name must match its file name '" + file.stem().string() + "'");
  m.display_name = f.get("display_name").str();
  m.dataset = f.get("dataset").str();
  if (!datasets_.count(m.dataset))
    f.get("dataset").fail("unknown dataset '" + m.dataset + "'" + suggestion_suffix(m.dataset, dataset_order_));
  if (auto tk = f.find("tokens")) read_model_tokens(*tk, m);
  if ((datasets_.at(m.dataset).training_tokens > 0) != m.seq_len_settable)
    f.get("dataset").fail("a text data set goes with a model whose tokens: {default, max} are set, and only with one");
  if (m.seq_len_settable) {
    if (auto in = f.find("input_shape")) in->fail("a text model's input is its tokens; give no input_shape");
  } else {
    for (auto& d : f.get("input_shape").items()) m.input_shape.push_back(static_cast<int>(d.integer(1, 1 << 16)));
    if (m.input_shape.size() != 3) f.get("input_shape").fail("expected [channels, height, width]");
  }
  if (auto h = f.find("head_dim")) m.head_dim = static_cast<int>(h->integer(1, 1024));
  if (auto a = f.find("architecture")) {
    a->require_map({"layers", "hidden", "heads", "kv_width", "ff", "mlp", "dropout"});
    auto dim = [&](const char* k) { return static_cast<int>(a->get(k).integer(1, 1 << 20)); };
    m.architecture = {dim("layers"),
                      dim("hidden"),
                      dim("heads"),
                      dim("kv_width"),
                      dim("ff"),
                      a->get("dropout").boolean(),
                      a->get("mlp").choice({"gelu", "gelu_tanh", "swiglu"})};
  }
  m.dtype = f.get("dtype").choice({"float32", "float16"});
  m.total_params = f.get("total_params").integer(1, std::int64_t(1) << 50);
  std::int64_t sum = 0;
  for (auto& t : f.get("tensors").items()) {
    m.tensors.push_back(read_tensor(t));
    sum += m.tensors.back().numel;
  }
  if (m.tensors.empty()) f.get("tensors").fail("a model needs at least one tensor");
  if (sum != m.total_params)
    f.get("total_params")
        .fail("the tensors sum to " + std::to_string(sum) + " parameters, not " + std::to_string(m.total_params));
  return m;
}

}  // namespace ringsim
