// The MPI host transport: collective members are the ranks of an MPI communicator, buffers are host
// memory, messages are MPI_Isend/MPI_Irecv (tag = step), reductions run on the CPU.
#pragma once

#include <mpi.h>

#include <vector>

#include "collective/transport.h"
#include "transport/transport_base.h"

namespace ringsim::real {

class MpiHostTransport final : public collective::Transport {
 public:
  MpiHostTransport(MPI_Comm comm, DataType type, double timeout_s);
  void bind(const MemberBuffers& b) { buf_ = b; }

  void post(int index, const collective::RankStep& step) override;
  void wait(int index, const collective::RankStep& step) override;
  void reduce(const collective::Transfer& received) override;
  void update(std::uint64_t bytes) override;

 private:
  MPI_Comm comm_;
  int rank_ = 0;
  DataType type_;
  double timeout_s_;
  MemberBuffers buf_;
  std::vector<MPI_Request> requests_;
  std::vector<std::vector<char>> scratch_;  // one per reducing receive of the current step, in order
  std::size_t next_scratch_ = 0;
};

}  // namespace ringsim::real
