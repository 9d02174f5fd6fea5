#include <fstream>
#include <map>
#include <sstream>

#include "test_support.h"

using namespace ringsim;

namespace {

// Minimal CSV reader for the Azure table copy (quoted fields may hold commas).
std::vector<std::vector<std::string>> read_csv(const std::string& path) {
  std::ifstream in(path);
  REQUIRE(in);
  std::vector<std::vector<std::string>> rows;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::vector<std::string> cells;
    std::string cell;
    bool quoted = false;
    for (char c : line) {
      if (c == '"')
        quoted = !quoted;
      else if (c == ',' && !quoted)
        cells.push_back(std::exchange(cell, ""));
      else
        cell += c;
    }
    cells.push_back(cell);
    rows.push_back(cells);
  }
  return rows;
}

}  // namespace

TEST_CASE("catalog: every SKU loads and matches the Azure size tables", "[catalog]") {
  const Catalog& c = test::catalog();
  auto rows = read_csv(std::string(RINGSIM_TEST_DATA) + "/azure_gpu_sku_tables.csv");
  REQUIRE(rows.size() > 1);
  const auto& header = rows[0];
  auto col = [&](const char* name) {
    for (std::size_t i = 0; i < header.size(); ++i)
      if (header[i] == name) return i;
    FAIL("no column " << name);
    return std::size_t{0};
  };
  int checked = 0;
  for (std::size_t r = 1; r < rows.size(); ++r) {
    const auto& row = rows[r];
    const std::string azure = row[col("size")];
    INFO(azure);
    const SkuSpec* s = c.find_sku(azure);
    REQUIRE(s != nullptr);
    CHECK(s->vcpus == std::stoi(row[col("vcpu")]));
    CHECK(s->gpus == std::stoi(row[col("gpus")]));
    CHECK(s->memory_bytes == std::stod(row[col("memory_gib")]) * 1073741824.0);
    CHECK(s->local_ssd_bytes == std::stod(row[col("temp_ssd_gib")]) * 1073741824.0);
    CHECK(s->infiniband_link.has_value() == (row[col("rdma_capable")] == "yes"));
    CHECK(static_cast<int>(c.layout(s->layout).gpus.size()) == s->gpus);
    ++checked;
  }
  CHECK(checked == 17);
  // the 17 Azure sizes + SHARCNET monk + DGX-1 (P100, V100) + Big Basin + GCE 8 x K80 + AWS p2.8xlarge +
  // local-host (validate --local); today's 11 Azure sizes + DGX A100 and DGX H100
  CHECK(c.sku_names().size() == 37);
}

TEST_CASE("catalog: GPUs named by the issue are present with plausible figures", "[catalog]") {
  const Catalog& c = test::catalog();
  for (const char* g : {"K40", "K80", "M60", "P40", "P100-PCIe", "P100-SXM2", "V100-PCIe-16GB", "V100-SXM2-32GB"}) {
    INFO(g);
    const GpuSpec& gpu = c.gpu(g);
    CHECK(gpu.fp32_peak_flops > 1e12);
    CHECK(gpu.fp32_peak_flops < 20e12);
    CHECK(gpu.memory_bandwidth > 100e9);
    CHECK(gpu.memory_bytes >= 8.0 * 1073741824.0);
  }
  CHECK(c.gpu("K80").gpus_per_board == 2);
  CHECK(c.gpu("V100-SXM2-32GB").memory_bytes == 32.0 * 1073741824.0);
}

TEST_CASE("catalog: link classes and fabrics", "[catalog]") {
  const Catalog& c = test::catalog();
  CHECK(c.link("pcie3_x16").bandwidth == Approx(15.75e9));
  CHECK(c.link("nvlink2").bandwidth == Approx(25e9));
  CHECK(c.link("ib_fdr").bandwidth == Approx(54.55e9 / 8));
  CHECK(c.link("ib_edr").bandwidth == Approx(12.5e9));
  CHECK(c.link("ib_edr").kind == LinkKind::InfiniBand);
  CHECK(c.link("qpi_2x9.6GTs").kind == LinkKind::SocketInterconnect);
  CHECK(c.fabric(FabricKind::InfiniBand).default_nodes_per_leaf > 0);
  CHECK(c.sku("ND40rs_v2").ethernet_bandwidth == Approx(3e9));  // 24000 Mbps
  CHECK(*c.sku("ND40rs_v2").infiniband_link == "ib_edr");
  CHECK(*c.sku("NC24rs_v3").infiniband_link == "ib_fdr");
}

TEST_CASE("catalog: models sum to their reference parameter counts", "[catalog]") {
  const Catalog& c = test::catalog();
  const std::map<std::string, std::int64_t> expected = {
      {"resnet50", 25557032}, {"resnet101", 44549160},    {"resnet152", 60192808},        {"vgg16", 138357544},
      {"alexnet", 61100840},  {"inception_v3", 27161264}, {"cifar10_keras_cnn", 1250858}, {"googlenet", 13004888}};
  for (const auto& [name, params] : expected) {
    INFO(name);
    const ModelSpec& m = c.model(name);
    CHECK(m.total_params == params);
    std::int64_t sum = 0;
    for (const auto& t : m.tensors) sum += t.numel;
    CHECK(sum == params);
  }
  CHECK(c.model("resnet50").tensors.size() == 161);
  CHECK(c.model("resnet50").tensors.front().name == "conv1.weight");
  CHECK(c.model("cifar10_keras_cnn").dataset == "cifar10");
  CHECK(c.dataset("imagenet").training_images == 1281167);
}

TEST_CASE("catalog: tensors are listed in forward order, so backward makes them ready in reverse", "[catalog]") {
  // torchvision registers GoogLeNet's aux heads after inception5b; its forward runs aux1 after inception4a and
  // aux2 after inception4d, so their gradients become ready there in backward, not first.
  const ModelSpec& m = test::catalog().model("googlenet");
  auto first = [&](const std::string& prefix) {
    for (std::size_t i = 0; i < m.tensors.size(); ++i)
      if (m.tensors[i].name.rfind(prefix, 0) == 0) return static_cast<int>(i);
    return -1;
  };
  auto last = [&](const std::string& prefix) {
    int at = -1;
    for (std::size_t i = 0; i < m.tensors.size(); ++i)
      if (m.tensors[i].name.rfind(prefix, 0) == 0) at = static_cast<int>(i);
    return at;
  };
  CHECK(last("inception4a.") + 1 == first("aux1."));
  CHECK(last("aux1.") + 1 == first("inception4b."));
  CHECK(last("inception4d.") + 1 == first("aux2."));
  CHECK(last("aux2.") + 1 == first("inception4e."));
  CHECK(m.tensors.back().name == "fc.bias");
  // Inception v3's aux head is registered where its forward runs it: after Mixed_6e, before Mixed_7a.
  const ModelSpec& v3 = test::catalog().model("inception_v3");
  int aux = -1, mixed_6e = -1, mixed_7a = -1;
  for (std::size_t i = 0; i < v3.tensors.size(); ++i) {
    const std::string& n = v3.tensors[i].name;
    if (n.rfind("AuxLogits.", 0) == 0 && aux < 0) aux = static_cast<int>(i);
    if (n.rfind("Mixed_6e.", 0) == 0) mixed_6e = static_cast<int>(i);
    if (n.rfind("Mixed_7a.", 0) == 0 && mixed_7a < 0) mixed_7a = static_cast<int>(i);
  }
  CHECK(mixed_6e < aux);
  CHECK(aux < mixed_7a);
}

TEST_CASE("catalog: ND40rs_v2 NVLink wiring is the DGX-1V hybrid cube-mesh", "[catalog]") {
  const NodeLayout& l = test::catalog().layout("nvlink_hybrid_cube_mesh_8gpu");
  std::vector<int> bricks(8, 0);
  for (const auto& nv : l.nvlinks) {
    bricks[nv.gpu_a] += nv.links;
    bricks[nv.gpu_b] += nv.links;
  }
  for (int g = 0; g < 8; ++g) CHECK(bricks[g] == 6);  // six NVLink 2.0 bricks per V100
  CHECK(l.nvlinks.size() == 16);
}

TEST_CASE("catalog: a device's PCIe chain goes up through nested switches to its socket", "[catalog]") {
  NodeLayout l;
  l.sockets = 2;
  l.pcie_switches = {
      {"root1", {"cpu1", "pcie3_x16"}}, {"leaf1", {"root1", "pcie3_x16"}}, {"sw0", {"cpu0", "pcie3_x16"}}};
  CHECK(l.pcie_chain("leaf1") == std::vector<std::string>{"leaf1", "root1", "cpu1"});
  CHECK(l.pcie_chain("sw0") == std::vector<std::string>{"sw0", "cpu0"});
  CHECK(l.pcie_chain("cpu0") == std::vector<std::string>{"cpu0"});
  // The DGX-1's GPUs sit under one switch each, two switches per socket.
  const NodeLayout& dgx = test::catalog().layout("nvlink_hybrid_cube_mesh_dgx1v");
  CHECK(dgx.pcie_chain(dgx.gpus[0].parent).back() == "cpu0");
  CHECK(dgx.pcie_chain(dgx.gpus[7].parent).back() == "cpu1");
}
