// The MPI host transport: collective members are the ranks of an MPI communicator, buffers are host
// memory, messages are MPI_Isend/MPI_Irecv (tag = step), reductions run on the CPU.
#pragma once

#include <mpi.h>

#include <vector>

#include "collective/transport.h"
#include "transport/transport_base.h"

namespace ringsim::real {

class MpiHostTransport : public collective::Transport {
 public:
  MpiHostTransport(MPI_Comm comm, DataType type, double timeout_s);
  void bind(const MemberBuffers& b) { buf_ = b; }

  void post(int index, const collective::RankStep& step) override;
  void wait(int index, const collective::RankStep& step) override;
  void reduce(const collective::Transfer& received) override;
  void update(std::uint64_t bytes) override;

 protected:
  MemberBuffers buf_;
  // Where a reducing receive lands (the i-th of the step); a local copy between the member's spaces.
  // The emulated transport (emulate/) replaces these, wait() and reduce().
  virtual void* scratch(std::size_t i, std::size_t bytes);
  virtual void local_copy(void* dst, const void* src, std::size_t bytes);
  std::vector<MPI_Request>& requests() { return requests_; }

 private:
  MPI_Comm comm_;
  int rank_ = 0;
  DataType type_;
  double timeout_s_;
  std::vector<MPI_Request> requests_;
  std::vector<std::vector<char>> scratch_;  // one per reducing receive of the current step, in order
  std::vector<void*> reduce_from_;          // where each reducing receive of the current step landed
  std::size_t next_scratch_ = 0;
};

}  // namespace ringsim::real
