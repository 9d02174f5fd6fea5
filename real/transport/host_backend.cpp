#include "transport/host_backend.h"

#include <cstdlib>
#include <cstring>
#include <new>
#include <numeric>

namespace ringsim::real {

MPI_Datatype mpi_type(DataType t) {
  switch (t) {
    case DataType::Float32:
      return MPI_FLOAT;
    case DataType::Int32:
      return MPI_INT32_T;
    case DataType::Float64:
      return MPI_DOUBLE;
  }
  return MPI_BYTE;
}

MemberBuffers HostBackend::allocate(std::size_t bytes) {
  MemberBuffers b;
  b.bytes = bytes;
  const std::size_t n = bytes ? bytes : 1;
  b.device = std::calloc(n, 1);
  b.host = std::calloc(n, 1);
  if (!b.device || !b.host) throw std::bad_alloc();
  return b;
}

void HostBackend::release(MemberBuffers& b) {
  std::free(b.device);
  std::free(b.host);
  b = {};
}

void HostBackend::upload(const MemberBuffers& b, const void* src, std::size_t bytes) {
  if (bytes) std::memcpy(b.device, src, bytes);
}

void HostBackend::download(const MemberBuffers& b, void* dst, std::size_t bytes) {
  if (bytes) std::memcpy(dst, b.device, bytes);
}

void HostBackend::baseline(std::string_view op, const MemberBuffers& b, const std::vector<int>& counts) {
  const int total = std::accumulate(counts.begin(), counts.end(), 0);
  if (op == "allreduce") {
    MPI_Allreduce(MPI_IN_PLACE, b.device, total, mpi_type(type_), MPI_SUM, comm_);
  } else if (op == "reduce_scatter") {
    MPI_Reduce_scatter(b.device, b.host, counts.data(), mpi_type(type_), MPI_SUM, comm_);
  } else {
    std::vector<int> displs(counts.size(), 0);
    for (std::size_t i = 1; i < counts.size(); ++i) displs[i] = displs[i - 1] + counts[i - 1];
    MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, b.device, counts.data(), displs.data(), mpi_type(type_), comm_);
  }
}

std::string HostBackend::baseline_name(std::string_view op) const {
  return op == "allreduce" ? "MPI_Allreduce" : op == "reduce_scatter" ? "MPI_Reduce_scatter" : "MPI_Allgatherv";
}

std::unique_ptr<Backend> make_host_backend(MPI_Comm comm, DataType type, double timeout_s) {
  return std::make_unique<HostBackend>(comm, type, timeout_s);
}

}  // namespace ringsim::real
