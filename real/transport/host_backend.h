// The host backend: buffers in host memory, the MPI host transport, MPI's own collectives as baseline.
// The emulated backend (emulate/) derives from it.
#pragma once

#include <mpi.h>

#include "transport/backend.h"
#include "transport/mpi_host_transport.h"

namespace ringsim::real {

class HostBackend : public Backend {
 public:
  HostBackend(MPI_Comm comm, DataType type, double timeout_s)
      : comm_(comm), type_(type), transport_(comm, type, timeout_s) {}
  std::string_view name() const override { return "host"; }
  MemberBuffers allocate(std::size_t bytes) override;
  void release(MemberBuffers& b) override;
  void upload(const MemberBuffers& b, const void* src, std::size_t bytes) override;
  void download(const MemberBuffers& b, void* dst, std::size_t bytes) override;
  void* host_address(const MemberBuffers& b) const override { return b.device; }
  collective::Transport& transport(const MemberBuffers& b) override {
    transport_.bind(b);
    return transport_;
  }
  void baseline(std::string_view op, const MemberBuffers& b, const std::vector<int>& counts) override;
  std::string baseline_name(std::string_view op) const override;

 protected:
  MPI_Comm comm_;
  DataType type_;

 private:
  MpiHostTransport transport_;
};

}  // namespace ringsim::real
