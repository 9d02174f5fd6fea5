// Physical quantities written the way people write them: "12.5 GB/s", "100 Gb/s", "56Gbps", "1.5 us",
// "64 MiB", "5 ms", "15.7 TFLOPS". Parsed strictly: a number, optional spaces, a known unit. Results are
// in SI base units (bytes, bytes/s, seconds, FLOP/s).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ringsim {

enum class Quantity { Bytes, Bandwidth, Time, FlopRate };

// Thrown with a message meant for the user (the caller adds file:line:col).
class UnitError : public std::exception {
 public:
  explicit UnitError(std::string message) : message_(std::move(message)) {}
  const char* what() const noexcept override { return message_.c_str(); }

 private:
  std::string message_;
};

// Parses `text` as the quantity `kind`. A bare "0" is accepted (zero needs no unit); any other number
// needs a unit. Negative values parse (range checks belong to the caller, which knows the key).
double parse_quantity(std::string_view text, Quantity kind);

// A message size as nccl-tests writes it: 8, 64K, 256M, 1G (powers of 1024). Throws UnitError.
std::uint64_t parse_message_size(std::string_view text);

std::string_view quantity_name(Quantity kind);     // "a size", "a bandwidth", ...
std::string_view quantity_example(Quantity kind);  // "'64 MiB'", "'12.5 GB/s' or '100 Gb/s'", ...
std::vector<std::string> unit_names(Quantity kind);

// Compact human formatting used by reports ("12.5 GB/s", "1.5 us", "64 MiB", "15.7 TFLOPS").
std::string format_bytes(double bytes);
std::string format_bandwidth(double bytes_per_second);
std::string format_time(double seconds);
std::string format_flop_rate(double flops);
std::string format_number(double v);                   // up to 6 significant digits, no trailing zeros
std::string format_quantity(double v, Quantity kind);  // the formatter of that kind

}  // namespace ringsim
