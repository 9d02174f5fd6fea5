// A backend = where the member's buffers live plus the transport that moves them, plus the library's
// own collectives on the same buffers as the baseline: host (MPI on host memory), cuda-staged (GPU
// buffers staged through host memory for MPI, GPU reduction) and nccl (ncclSend/ncclRecv, GPU reduction).
#pragma once

#include <mpi.h>

#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "collective/transport.h"
#include "transport/transport_base.h"

namespace ringsim::real {

// A launch the backend cannot serve (no GPU, no CUDA in this build): reported, exit status 2.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string_view name() const = 0;
  virtual MemberBuffers allocate(std::size_t bytes) = 0;
  virtual void release(MemberBuffers& b) = 0;
  virtual void upload(const MemberBuffers& b, const void* src, std::size_t bytes) = 0;  // host -> Space::Device
  virtual void download(const MemberBuffers& b, void* dst, std::size_t bytes) = 0;      // Space::Device -> host
  // The transport, bound to `b`, for the member this process runs.
  virtual collective::Transport& transport(const MemberBuffers& b) = 0;
  virtual void synchronize() {}
  // The compute stand-in for `seconds` of a layer's work, called from the training compute thread: on the
  // CPU (host) a timed busy loop or, with set_stand_in(Sleep), a sleep; a timed kernel on the rank's GPU
  // (CUDA backends).
  virtual void compute_stand_in(double seconds) { stand_in_.run(seconds); }
  void set_stand_in(ComputeStandIn::Mode m) { stand_in_ = ComputeStandIn(m); }
  // The library's own collective, in place on b's Space::Device buffer ("allreduce"), or b.device ->
  // b.host ("reduce_scatter": this rank's chunk of `counts`; "allgather": counts per rank, in place).
  virtual void baseline(std::string_view op, const MemberBuffers& b, const std::vector<int>& counts) = 0;
  virtual std::string baseline_name(std::string_view op) const = 0;

  // The training loop's host memory (gradients, staging) and its copies. Under emulation the memory is
  // SMPI-shared between ranks and copies move nothing (their cost is charged by charge_fusion_copy).
  virtual void* allocate_host(std::size_t bytes);
  virtual void release_host(void* p);
  virtual void host_copy(void* dst, const void* src, std::size_t bytes);
  // b's Space::Device buffer where the host can address it (host memory), else nullptr.
  virtual void* host_address(const MemberBuffers& b) const {
    (void)b;
    return nullptr;
  }
  // True for the SMPI build's backend: time is simulated, and buffers are shared between ranks, so
  // results cannot be checked.
  virtual bool emulated() const { return false; }
  // The space the training loop's collectives keep their data in: the fusion buffer itself (Device) on
  // real machines; under emulation the data space of the emulated library (host-staged for MPI).
  virtual collective::Space collective_space() const { return collective::Space::Device; }
  // Costs only an emulated run has to charge (on real hardware the operations themselves take the
  // time): a collective call's overhead (its protocol's, where the library's tuning picked one; that
  // protocol then governs the call's messages), and one fusion-buffer copy (in or out) of `bytes`.
  virtual void charge_collective_call(const collective::Protocol& protocol) { (void)protocol; }
  virtual void charge_fusion_copy(std::uint64_t bytes) { (void)bytes; }

 private:
  ComputeStandIn stand_in_;
};

// transport: "host", "cuda-staged" or "nccl". Throws UsageError when this build or machine cannot run it.
std::unique_ptr<Backend> make_backend(std::string_view transport, MPI_Comm comm, DataType type, double timeout_s);
std::vector<std::string> backend_names();  // those compiled into this build

MPI_Datatype mpi_type(DataType t);

}  // namespace ringsim::real
