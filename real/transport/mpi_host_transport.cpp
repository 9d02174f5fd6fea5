#include "transport/mpi_host_transport.h"

#include <sched.h>

#include <cstring>
#include <string>

namespace ringsim::real {

namespace {
int tag_of(int step) { return step % 32768; }  // MPI guarantees tags up to 32767
}  // namespace

MpiHostTransport::MpiHostTransport(MPI_Comm comm, DataType type, double timeout_s)
    : comm_(comm), type_(type), timeout_s_(timeout_s) {
  MPI_Comm_rank(comm, &rank_);
}

void MpiHostTransport::post(int index, const collective::RankStep& step) {
  requests_.clear();
  next_scratch_ = 0;
  std::size_t s = 0;
  reduce_from_.clear();
  for (const auto& r : step.recvs) {
    if (r.src == r.dst) continue;  // a local copy, done by the matching send below
    void* into;
    if (r.reduce) {
      into = scratch(s++, r.bytes);
      reduce_from_.push_back(into);
    } else {
      into = buf_.at(r.dst_space, r.offset);
    }
    requests_.emplace_back();
    MPI_Irecv(into, static_cast<int>(r.bytes), MPI_BYTE, r.src, tag_of(index), comm_, &requests_.back());
  }
  for (const auto& t : step.sends) {
    if (t.src == t.dst) {
      local_copy(buf_.at(t.dst_space, t.offset), buf_.at(t.src_space, t.offset), t.bytes);
      continue;
    }
    requests_.emplace_back();
    MPI_Isend(buf_.at(t.src_space, t.offset), static_cast<int>(t.bytes), MPI_BYTE, t.dst, tag_of(index), comm_,
              &requests_.back());
  }
}

void MpiHostTransport::wait(int index, const collective::RankStep& step) {
  if (requests_.empty()) return;
  Deadline deadline(timeout_s_);
  int done = 0;
  for (;;) {
    MPI_Testall(static_cast<int>(requests_.size()), requests_.data(), &done, MPI_STATUSES_IGNORE);
    if (done) return;
    if (deadline.passed()) {
      std::string peers;
      for (const auto& r : step.recvs)
        if (r.src != r.dst) peers += (peers.empty() ? "" : ", ") + std::to_string(r.src);
      for (const auto& t : step.sends)
        if (t.src != t.dst) peers += (peers.empty() ? "" : ", ") + std::to_string(t.dst);
      throw TimeoutError("rank " + std::to_string(rank_) + ": step " + std::to_string(index) +
                         " did not complete within " + std::to_string(static_cast<int>(timeout_s_)) +
                         " s (waiting on ranks " + peers + ")");
    }
    sched_yield();
  }
}

void* MpiHostTransport::scratch(std::size_t i, std::size_t bytes) {
  if (scratch_.size() <= i) scratch_.resize(i + 1);
  scratch_[i].resize(bytes);
  return scratch_[i].data();
}

void MpiHostTransport::local_copy(void* dst, const void* src, std::size_t bytes) { std::memmove(dst, src, bytes); }

void MpiHostTransport::reduce(const collective::Transfer& r) {
  host_reduce_sum(buf_.at(r.dst_space, r.offset), reduce_from_.at(next_scratch_++), r.bytes, type_);
}

void MpiHostTransport::update(std::uint64_t) {
  // Parameter servers apply the update to their shard; the host transport's data is the reduced
  // gradient itself, which stays as received (the update's cost is what `train` times).
}

}  // namespace ringsim::real
