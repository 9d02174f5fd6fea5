#include "report/catalog_listing.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <sstream>

#include "load/prices.h"
#include "load/units.h"

namespace ringsim {
namespace {

// A table printed with columns as wide as their widest cell.
class Table {
 public:
  explicit Table(std::vector<std::string> header) : rows_{std::move(header)} {}
  void add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  std::string str() const {
    std::vector<std::size_t> w(rows_[0].size(), 0);
    for (const auto& r : rows_)
      for (std::size_t i = 0; i < r.size(); ++i) w[i] = std::max(w[i], r[i].size());
    std::ostringstream out;
    for (std::size_t k = 0; k < rows_.size(); ++k) {
      std::string line;
      for (std::size_t i = 0; i < rows_[k].size(); ++i) {
        line += rows_[k][i];
        if (i + 1 < rows_[k].size()) line += std::string(w[i] - rows_[k][i].size() + 2, ' ');
      }
      out << "  " << line << "\n";
      if (k == 0) {
        std::size_t total = 0;
        for (auto x : w) total += x + 2;
        out << "  " << std::string(total - 2, '-') << "\n";
      }
    }
    return out.str();
  }

 private:
  std::vector<std::vector<std::string>> rows_;
};

std::string num(double v, int decimals) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

}  // namespace

std::string catalog_listing(const Catalog& c, const std::string& section) {
  std::ostringstream out;
  const bool all = section == "all";
  if (all || section == "skus") {
    Table t({"SKU", "series", "GPU", "GPUs", "vCPUs", "memory", "local SSD", "Ethernet", "InfiniBand", "quota family"});
    for (const auto& n : c.sku_names()) {
      const SkuSpec& s = c.sku(n);
      const auto rails = c.layout(s.layout).infiniband_nics.size();
      const std::string ib =
          !s.infiniband_link ? "-" : (rails > 1 ? std::to_string(rails) + " x " : std::string()) + *s.infiniband_link;
      t.add({s.name, s.series, s.gpu, std::to_string(s.gpus), std::to_string(s.vcpus), format_bytes(s.memory_bytes),
             format_bytes(s.local_ssd_bytes), num(s.ethernet_bandwidth * 8 / 1e9, 1) + " Gb/s", ib,
             s.quota_family.empty() ? "-" : s.quota_family});
    }
    out << "SKUs (" << c.sku_names().size() << ")\n" << t.str() << "\n";
  }
  if (all || section == "gpus") {
    Table t({"GPU", "FP32 peak", "memory bandwidth", "memory", "per board", "description"});
    for (const auto& n : c.gpu_names()) {
      const GpuSpec& g = c.gpu(n);
      t.add({g.name, format_flop_rate(g.fp32_peak_flops), format_bandwidth(g.memory_bandwidth),
             format_bytes(g.memory_bytes), std::to_string(g.gpus_per_board), g.description});
    }
    out << "GPUs (" << c.gpu_names().size() << ")\n" << t.str() << "\n";
  }
  if (all || section == "models") {
    Table t({"model", "name", "dataset", "input", "tensors", "parameters", "gradients"});
    for (const auto& n : c.model_names()) {
      const ModelSpec& m = c.model(n);
      t.add({m.name, m.display_name, m.dataset,
             m.seq_len_settable ? std::to_string(m.default_tokens) + " of " + std::to_string(m.max_tokens) + " tokens"
                                : std::to_string(m.input_shape[0]) + "x" + std::to_string(m.input_shape[1]) + "x" +
                                      std::to_string(m.input_shape[2]),
             std::to_string(m.tensors.size()), std::to_string(m.total_params), format_bytes(m.gradient_bytes())});
    }
    out << "Models (" << c.model_names().size() << ")\n" << t.str() << "\n";
  }
  if (all || section == "links") {
    Table t({"link class", "kind", "bandwidth", "latency", "description"});
    for (const auto& n : c.link_names()) {
      const LinkClass& l = c.link(n);
      t.add({l.name, std::string(to_string(l.kind)), format_bandwidth(l.bandwidth), format_time(l.latency),
             l.description});
    }
    out << "Link classes (" << c.link_names().size() << ")\n" << t.str() << "\n";
  }
  if (all || section == "storage") {
    Table t({"backend", "kind", "limits per", "bandwidth", "IOPS", "request latency", "cache", "description"});
    for (const auto& n : c.storage_backend_names()) {
      const StorageBackendSpec& b = *c.find_storage_backend(n);
      std::string per(to_string(b.scaling));
      if (b.scaling == StorageScaling::PerServer) per += " (default " + std::to_string(b.default_servers) + ")";
      t.add({b.name, b.kind == StorageKind::Local ? "local" : "network", per, format_bandwidth(b.bandwidth),
             num(b.iops, 0), format_time(b.request_latency),
             b.cache.empty() ? "-" : b.cache + (b.cache_default ? " (on)" : " (off)"), b.description});
    }
    out << "Storage backends (" << c.storage_backend_names().size() << ")\n" << t.str() << "\n";
  }
  const std::string prices_file = (std::filesystem::path(c.dir()) / "prices.yaml").string();
  std::error_code ec;
  if ((all || section == "prices") && std::filesystem::exists(prices_file, ec)) {
    const PriceTable prices = PriceTable::load(prices_file, c);
    for (const auto& region : prices.region_names()) {
      const RegionPrices& r = *prices.region(region);
      Table t({"SKU", "dedicated", "low-priority", "quota family"});
      for (const auto& n : c.sku_names()) {
        const auto d = prices.price(region, n, false);
        if (!d) continue;
        const auto lp = prices.price(region, n, true);
        t.add({n, "$" + num(d->usd, 3), lp ? "$" + num(lp->usd, 3) + (lp->estimated ? " (est.)" : "") : "-",
               c.sku(n).quota_family.empty() ? "-" : c.sku(n).quota_family});
      }
      out << "Prices, " << region << " (" << r.display_name << "), " << prices.currency << " per VM-hour, " << r.date
          << ", source " << r.source << "\n"
          << t.str() << "\n";
    }
  }
  out << "Catalog: " << c.dir() << "\n";
  return out.str();
}

}  // namespace ringsim
