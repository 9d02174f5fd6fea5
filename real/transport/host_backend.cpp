#include <cstdlib>
#include <cstring>
#include <numeric>

#include "transport/backend.h"
#include "transport/mpi_host_transport.h"

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

namespace {

class HostBackend final : public Backend {
 public:
  HostBackend(MPI_Comm comm, DataType type, double timeout_s)
      : comm_(comm), type_(type), transport_(comm, type, timeout_s) {}
  std::string_view name() const override { return "host"; }
  MemberBuffers allocate(std::size_t bytes) override {
    MemberBuffers b;
    b.bytes = bytes;
    const std::size_t n = bytes ? bytes : 1;
    b.device = std::calloc(n, 1);
    b.host = std::calloc(n, 1);
    if (!b.device || !b.host) throw std::bad_alloc();
    return b;
  }
  void release(MemberBuffers& b) override {
    std::free(b.device);
    std::free(b.host);
    b = {};
  }
  void upload(const MemberBuffers& b, const void* src, std::size_t bytes) override {
    if (bytes) std::memcpy(b.device, src, bytes);
  }
  void download(const MemberBuffers& b, void* dst, std::size_t bytes) override {
    if (bytes) std::memcpy(dst, b.device, bytes);
  }
  collective::Transport& transport(const MemberBuffers& b) override {
    transport_.bind(b);
    return transport_;
  }
  void baseline(std::string_view op, const MemberBuffers& b, const std::vector<int>& counts) override {
    int rank = 0;
    MPI_Comm_rank(comm_, &rank);
    const int total = std::accumulate(counts.begin(), counts.end(), 0);
    if (op == "allreduce") {
      MPI_Allreduce(MPI_IN_PLACE, b.device, total, mpi_type(type_), MPI_SUM, comm_);
    } else if (op == "reduce_scatter") {
      MPI_Reduce_scatter(b.device, b.host, counts.data(), mpi_type(type_), MPI_SUM, comm_);
    } else {
      std::vector<int> displs(counts.size(), 0);
      for (std::size_t i = 1; i < counts.size(); ++i) displs[i] = displs[i - 1] + counts[i - 1];
      MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, b.device, counts.data(), displs.data(), mpi_type(type_),
                     comm_);
    }
  }
  std::string baseline_name(std::string_view op) const override {
    return op == "allreduce" ? "MPI_Allreduce" : op == "reduce_scatter" ? "MPI_Reduce_scatter" : "MPI_Allgatherv";
  }

 private:
  MPI_Comm comm_;
  DataType type_;
  MpiHostTransport transport_;
};

}  // namespace

std::unique_ptr<Backend> make_host_backend(MPI_Comm comm, DataType type, double timeout_s) {
  return std::make_unique<HostBackend>(comm, type, timeout_s);
}

}  // namespace ringsim::real
