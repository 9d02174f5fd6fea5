#include "load/units.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <utility>

#include "load/input_error.h"

namespace ringsim {
namespace {

struct Unit {
  const char* name;
  double factor;  // to SI base unit
};

// Decimal prefixes are powers of 1000, binary ones powers of 1024 (IEC). Bit rates are divided by 8.
constexpr Unit kBytes[] = {{"B", 1},           {"kB", 1e3},           {"MB", 1e6},
                           {"GB", 1e9},        {"TB", 1e12},          {"KiB", 1024.0},
                           {"MiB", 1048576.0}, {"GiB", 1073741824.0}, {"TiB", 1099511627776.0}};
constexpr Unit kBandwidth[] = {
    {"B/s", 1},          {"kB/s", 1e3},        {"MB/s", 1e6},           {"GB/s", 1e9},      {"TB/s", 1e12},
    {"Bps", 1},          {"kBps", 1e3},        {"MBps", 1e6},           {"GBps", 1e9},      {"TBps", 1e12},
    {"KiB/s", 1024.0},   {"MiB/s", 1048576.0}, {"GiB/s", 1073741824.0}, {"b/s", 1 / 8.0},   {"kb/s", 1e3 / 8},
    {"Mb/s", 1e6 / 8},   {"Gb/s", 1e9 / 8},    {"Tb/s", 1e12 / 8},      {"bps", 1 / 8.0},   {"kbps", 1e3 / 8},
    {"Mbps", 1e6 / 8},   {"Gbps", 1e9 / 8},    {"Tbps", 1e12 / 8},      {"bit/s", 1 / 8.0}, {"kbit/s", 1e3 / 8},
    {"Mbit/s", 1e6 / 8}, {"Gbit/s", 1e9 / 8},  {"Tbit/s", 1e12 / 8}};
constexpr Unit kTime[] = {{"ns", 1e-9}, {"us", 1e-6}, {"\xC2\xB5s", 1e-6}, {"ms", 1e-3},
                          {"s", 1},     {"min", 60},  {"h", 3600},         {"d", 86400}};
constexpr Unit kFlopRate[] = {{"FLOPS", 1},     {"kFLOPS", 1e3},  {"MFLOPS", 1e6},   {"GFLOPS", 1e9},
                              {"TFLOPS", 1e12}, {"PFLOPS", 1e15}, {"FLOP/s", 1},     {"kFLOP/s", 1e3},
                              {"MFLOP/s", 1e6}, {"GFLOP/s", 1e9}, {"TFLOP/s", 1e12}, {"PFLOP/s", 1e15}};

std::pair<const Unit*, const Unit*> units_of(Quantity kind) {
  switch (kind) {
    case Quantity::Bytes:
      return {std::begin(kBytes), std::end(kBytes)};
    case Quantity::Bandwidth:
      return {std::begin(kBandwidth), std::end(kBandwidth)};
    case Quantity::Time:
      return {std::begin(kTime), std::end(kTime)};
    case Quantity::FlopRate:
      return {std::begin(kFlopRate), std::end(kFlopRate)};
  }
  return {nullptr, nullptr};
}

bool is_space(char c) { return c == ' ' || c == '\t'; }

std::string fmt(double v, const char* unit) {
  char buf[64];
  // from 10,000 up to a billion in whole units (12000 h, not 1.2e+04 h)
  if (std::fabs(v) >= 1e4 && std::fabs(v) < 1e9)
    std::snprintf(buf, sizeof buf, "%.0f %s", v, unit);
  else if (v != 0 && (std::fabs(v) < 0.01 || std::fabs(v) >= 1e5))
    std::snprintf(buf, sizeof buf, "%.3g %s", v, unit);
  else
    std::snprintf(buf, sizeof buf, "%.4g %s", v, unit);
  return buf;
}

}  // namespace

std::string_view quantity_name(Quantity kind) {
  switch (kind) {
    case Quantity::Bytes:
      return "a size";
    case Quantity::Bandwidth:
      return "a bandwidth";
    case Quantity::Time:
      return "a time";
    case Quantity::FlopRate:
      return "a FLOP rate";
  }
  return "a quantity";
}

std::string_view quantity_example(Quantity kind) {
  switch (kind) {
    case Quantity::Bytes:
      return "'64 MiB'";
    case Quantity::Bandwidth:
      return "'12.5 GB/s' or '100 Gb/s'";
    case Quantity::Time:
      return "'1.5 us' or '5 ms'";
    case Quantity::FlopRate:
      return "'15.7 TFLOPS'";
  }
  return "";
}

std::vector<std::string> unit_names(Quantity kind) {
  auto [b, e] = units_of(kind);
  std::vector<std::string> names;
  for (auto* u = b; u != e; ++u) names.emplace_back(u->name);
  return names;
}

double parse_quantity(std::string_view text, Quantity kind) {
  std::size_t i = 0;
  while (i < text.size() && is_space(text[i])) ++i;
  std::size_t end = text.size();
  while (end > i && is_space(text[end - 1])) --end;
  const std::string_view body = text.substr(i, end - i);
  const std::string expected =
      "expected " + std::string(quantity_name(kind)) + " with a unit, such as " + std::string(quantity_example(kind));
  if (body.empty()) throw UnitError(expected + "; got an empty value");

  double value = 0;
  auto [ptr, ec] = std::from_chars(body.data(), body.data() + body.size(), value, std::chars_format::general);
  if (ec != std::errc() || ptr == body.data())
    throw UnitError(expected + "; got '" + std::string(body) + "' (no number in front)");
  if (!std::isfinite(value)) throw UnitError(expected + "; got '" + std::string(body) + "' (not a finite number)");
  std::string_view rest = body.substr(static_cast<std::size_t>(ptr - body.data()));
  while (!rest.empty() && is_space(rest.front())) rest.remove_prefix(1);
  if (rest.empty()) {
    if (value == 0) return 0;
    throw UnitError(expected + "; got '" + std::string(body) + "' (the unit is missing)");
  }
  auto [b, e] = units_of(kind);
  for (auto* u = b; u != e; ++u)
    if (rest == u->name) return value * u->factor;
  throw UnitError(expected + "; '" + std::string(rest) + "' is not a unit of " + std::string(quantity_name(kind)) +
                  suggestion_suffix(rest, unit_names(kind)));
}

std::string format_quantity(double v, Quantity kind) {
  switch (kind) {
    case Quantity::Bytes:
      return format_bytes(v);
    case Quantity::Bandwidth:
      return format_bandwidth(v);
    case Quantity::Time:
      return format_time(v);
    case Quantity::FlopRate:
      return format_flop_rate(v);
  }
  return format_number(v);
}

std::string format_bytes(double bytes) {
  const double a = std::fabs(bytes);
  if (a >= 10000 * 1073741824.0) return fmt(bytes / 1099511627776.0, "TiB");  // 10000 GiB would print as 1e+04
  if (a >= 1073741824.0) return fmt(bytes / 1073741824.0, "GiB");
  if (a >= 1048576.0) return fmt(bytes / 1048576.0, "MiB");
  if (a >= 1024.0) return fmt(bytes / 1024.0, "KiB");
  return fmt(bytes, "B");
}

std::string format_bandwidth(double bps) {
  const double a = std::fabs(bps);
  if (a >= 1e9) return fmt(bps / 1e9, "GB/s");
  if (a >= 1e6) return fmt(bps / 1e6, "MB/s");
  if (a >= 1e3) return fmt(bps / 1e3, "kB/s");
  return fmt(bps, "B/s");
}

std::string format_time(double s) {
  const double a = std::fabs(s);
  if (a == 0) return "0 s";
  if (a < 1e-6) return fmt(s * 1e9, "ns");
  if (a < 1e-3) return fmt(s * 1e6, "us");
  if (a < 1) return fmt(s * 1e3, "ms");
  if (a < 60 * 60) return fmt(s, "s");
  return fmt(s / 3600, "h");
}

std::string format_flop_rate(double f) {
  const double a = std::fabs(f);
  if (a >= 1e12) return fmt(f / 1e12, "TFLOPS");
  if (a >= 1e9) return fmt(f / 1e9, "GFLOPS");
  return fmt(f, "FLOPS");
}

}  // namespace ringsim

namespace ringsim {
std::string format_number(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}
std::uint64_t parse_message_size(std::string_view text) {
  const std::string s(text);
  std::size_t used = 0;
  double v = -1;
  try {
    v = std::stod(s, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  const std::string suffix = s.substr(used);
  double mult = 1;
  if (suffix == "K" || suffix == "k")
    mult = 1024;
  else if (suffix == "M" || suffix == "m")
    mult = 1024.0 * 1024;
  else if (suffix == "G" || suffix == "g")
    mult = 1024.0 * 1024 * 1024;
  else if (!suffix.empty() || used == 0)
    throw UnitError("size '" + s + "': expected a number with an optional K, M or G suffix (8, 64K, 1G)");
  if (v < 0 || !std::isfinite(v * mult) || v * mult > 1e18) throw UnitError("size '" + s + "' is out of range");
  return static_cast<std::uint64_t>(v * mult);
}

}  // namespace ringsim
