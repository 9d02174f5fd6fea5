#include "transport/transport_base.h"

#include <thread>

namespace ringsim::real {

void busy_for(double seconds) {
  if (seconds <= 0) return;
  using Clock = std::chrono::steady_clock;
  const auto end = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  volatile double sink = 0;
  while (Clock::now() < end)
    for (int i = 0; i < 256; ++i) sink = sink * 0.5 + i;
}

void ComputeStandIn::run(double seconds) {
  if (seconds <= 0) return;
  if (mode_ == Mode::Spin) return busy_for(seconds);
  // A stand-in called within 1 ms of the last one's planned end continues from that end, not from now.
  const auto now = Clock::now();
  if (now - planned_end_ > std::chrono::milliseconds(1)) planned_end_ = now;
  planned_end_ += std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  std::this_thread::sleep_until(planned_end_);
}

std::size_t element_size(DataType t) {
  switch (t) {
    case DataType::Float32:
      return 4;
    case DataType::Int32:
      return 4;
    case DataType::Float64:
      return 8;
  }
  return 4;
}

std::string_view to_string(DataType t) {
  switch (t) {
    case DataType::Float32:
      return "float";
    case DataType::Int32:
      return "int32";
    case DataType::Float64:
      return "double";
  }
  return "?";
}

DataType parse_data_type(std::string_view name) {
  if (name == "float") return DataType::Float32;
  if (name == "int32") return DataType::Int32;
  if (name == "double") return DataType::Float64;
  throw std::invalid_argument("unknown data type '" + std::string(name) + "' (expected float, int32 or double)");
}

namespace {
template <class T>
void add(void* dst, const void* src, std::size_t bytes) {
  T* __restrict d = static_cast<T*>(dst);
  const T* __restrict s = static_cast<const T*>(src);
  const std::size_t n = bytes / sizeof(T);
  for (std::size_t i = 0; i < n; ++i) d[i] += s[i];
}
}  // namespace

void host_reduce_sum(void* dst, const void* src, std::size_t bytes, DataType t) {
  switch (t) {
    case DataType::Float32:
      return add<float>(dst, src, bytes);
    case DataType::Int32:
      return add<std::uint32_t>(dst, src, bytes);  // two's-complement sum without signed overflow
    case DataType::Float64:
      return add<double>(dst, src, bytes);
  }
}

}  // namespace ringsim::real

#include <sstream>

#include "transport/fault_injection.h"

namespace ringsim::real {
Fault Fault::parse(const std::string& spec) {
  Fault f;
  std::istringstream in(spec);
  std::string rank, step, kind;
  if (!std::getline(in, rank, ':') || !std::getline(in, step, ':') || !std::getline(in, kind) ||
      (kind != "exit" && kind != "hang"))
    throw std::invalid_argument("--inject-fault: expected RANK:STEP:exit or RANK:STEP:hang, got '" + spec + "'");
  f.rank = std::stoi(rank);
  f.step = std::stoi(step);
  f.hang = kind == "hang";
  return f;
}
}  // namespace ringsim::real
