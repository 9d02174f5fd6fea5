// The GPU backends (compiled only with the CUDA toolkit): cuda-staged (device buffers staged through
// pinned host memory for MPI, reduction on the GPU: MPI without CUDA awareness, as Horovod with Intel
// MPI ran on Azure) and nccl (ncclSend/ncclRecv in groups, reduction on the GPU).
#include <cuda_runtime.h>
#include <sched.h>

#include <algorithm>
#include <cstring>
#include <numeric>
#include <string>

#include "transport/backend.h"
#ifdef RINGSIM_HAVE_NCCL
#include <nccl.h>
#endif

cudaError_t ringsim_device_reduce_sum(void* dst, const void* src, std::size_t bytes, int type, cudaStream_t stream);
cudaError_t ringsim_device_spin(double seconds, cudaStream_t stream);

namespace ringsim::real {

namespace {

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
}

int type_code(DataType t) { return t == DataType::Float32 ? 0 : t == DataType::Int32 ? 1 : 2; }

// Picks this rank's GPU (local rank modulo the node's GPUs); refuses when there is none. Returns it.
int select_device(MPI_Comm comm, std::string_view transport) {
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess || count == 0)
    throw UsageError("--transport " + std::string(transport) + " needs a GPU: no CUDA device found (" +
                     (e == cudaSuccess ? std::string("0 devices") : std::string(cudaGetErrorString(e))) + ")");
  MPI_Comm local;
  MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &local);
  int local_rank = 0;
  MPI_Comm_rank(local, &local_rank);
  MPI_Comm_free(&local);
  check(cudaSetDevice(local_rank % count), "cudaSetDevice");
  return local_rank % count;
}

// Waits for `stream` with a deadline.
void sync_stream(cudaStream_t stream, double timeout_s, const std::string& what) {
  Deadline d(timeout_s);
  for (;;) {
    const cudaError_t e = cudaStreamQuery(stream);
    if (e == cudaSuccess) return;
    if (e != cudaErrorNotReady) check(e, what.c_str());
    if (d.passed()) throw TimeoutError(what + " did not complete within " + std::to_string(timeout_s) + " s");
    sched_yield();
  }
}

// The GPU compute stand-in, usable from another host thread than the one that selected the device.
class GpuCompute {
 public:
  void init(int device) { device_ = device; }
  void run(double seconds, double timeout_s) {
    check(cudaSetDevice(device_), "cudaSetDevice");  // the current device is per host thread
    if (!stream_) check(cudaStreamCreate(&stream_), "cudaStreamCreate");
    check(ringsim_device_spin(seconds, stream_), "compute stand-in kernel");
    sync_stream(stream_, timeout_s + seconds, "the compute stand-in");
  }
  ~GpuCompute() {
    if (stream_) cudaStreamDestroy(stream_);
  }

 private:
  int device_ = 0;
  cudaStream_t stream_ = nullptr;
};

class DeviceBuffers {
 public:
  MemberBuffers allocate(std::size_t bytes) {
    MemberBuffers b;
    b.bytes = bytes;
    check(cudaMalloc(&b.device, bytes ? bytes : 1), "cudaMalloc");
    check(cudaMallocHost(&b.host, bytes ? bytes : 1), "cudaMallocHost");
    check(cudaMemset(b.device, 0, bytes ? bytes : 1), "cudaMemset");
    return b;
  }
  void release(MemberBuffers& b) {
    cudaFree(b.device);
    cudaFreeHost(b.host);
    b = {};
  }
};

// A growable device scratch buffer.
struct DeviceScratch {
  void* p = nullptr;
  std::size_t size = 0;
  void* get(std::size_t bytes) {
    if (bytes > size) {
      cudaFree(p);
      check(cudaMalloc(&p, bytes), "cudaMalloc");
      size = bytes;
    }
    return p;
  }
  ~DeviceScratch() { cudaFree(p); }
};

// What both GPU backends share: the rank's GPU, device buffers with pinned host staging, host <-> device
// copies and the GPU compute stand-in.
class GpuBackend : public Backend {
 public:
  GpuBackend(MPI_Comm comm, std::string_view transport, DataType t, double timeout_s)
      : type_(t), timeout_s_(timeout_s) {
    gpu_.init(select_device(comm, transport));
  }
  MemberBuffers allocate(std::size_t bytes) override { return mem_.allocate(bytes); }
  void release(MemberBuffers& b) override { mem_.release(b); }
  void upload(const MemberBuffers& b, const void* src, std::size_t bytes) override {
    if (bytes) check(cudaMemcpy(b.device, src, bytes, cudaMemcpyHostToDevice), "upload");
  }
  void download(const MemberBuffers& b, void* dst, std::size_t bytes) override {
    if (bytes) check(cudaMemcpy(dst, b.device, bytes, cudaMemcpyDeviceToHost), "download");
  }
  void compute_stand_in(double seconds) override { gpu_.run(seconds, timeout_s_); }

 protected:
  DataType type_;
  double timeout_s_;

 private:
  GpuCompute gpu_;
  DeviceBuffers mem_;
};

// ---- cuda-staged ----
class CudaStagedTransport final : public collective::Transport {
 public:
  CudaStagedTransport(MPI_Comm comm, DataType t, double timeout_s) : comm_(comm), type_(t), timeout_s_(timeout_s) {
    MPI_Comm_rank(comm, &rank_);
    check(cudaStreamCreate(&stream_), "cudaStreamCreate");
  }
  ~CudaStagedTransport() override {
    for (void* p : pinned_) cudaFreeHost(p);
    cudaStreamDestroy(stream_);
  }
  void bind(const MemberBuffers& b) { buf_ = b; }
  cudaStream_t stream() const { return stream_; }

  void post(int index, const collective::RankStep& step) override {
    reqs_.clear();
    recv_host_.clear();
    std::size_t k = 0;
    // Stage every send to pinned host memory first (one copy per chunk), then post the messages.
    send_host_.clear();
    for (const auto& t : step.sends) {
      void* h = pinned(k++, t.bytes);
      if (t.bytes)
        check(cudaMemcpyAsync(h, buf_.at(t.src_space, t.offset), t.bytes, cudaMemcpyDefault, stream_), "D2H");
      send_host_.push_back(h);
    }
    sync_stream(stream_, timeout_s_, "rank " + std::to_string(rank_) + ": staging of step " + std::to_string(index));
    for (const auto& r : step.recvs) {
      void* h = pinned(k++, r.bytes);
      recv_host_.push_back(h);
      if (r.src == r.dst) continue;
      reqs_.emplace_back();
      MPI_Irecv(h, static_cast<int>(r.bytes), MPI_BYTE, r.src, index % 32768, comm_, &reqs_.back());
    }
    for (std::size_t i = 0; i < step.sends.size(); ++i) {
      const auto& t = step.sends[i];
      if (t.src == t.dst) continue;
      reqs_.emplace_back();
      MPI_Isend(send_host_[i], static_cast<int>(t.bytes), MPI_BYTE, t.dst, index % 32768, comm_, &reqs_.back());
    }
  }
  void wait(int index, const collective::RankStep& step) override {
    Deadline d(timeout_s_);
    int done = reqs_.empty();
    while (!done) {
      MPI_Testall(static_cast<int>(reqs_.size()), reqs_.data(), &done, MPI_STATUSES_IGNORE);
      if (!done && d.passed())
        throw TimeoutError("rank " + std::to_string(rank_) + ": step " + std::to_string(index) +
                           " did not complete within " + std::to_string(static_cast<int>(timeout_s_)) + " s");
      if (!done) sched_yield();
    }
    next_ = 0;
    for (std::size_t i = 0; i < step.recvs.size(); ++i) {
      const auto& r = step.recvs[i];
      if (r.reduce || !r.bytes) continue;
      const void* from = r.src == r.dst ? send_host_[0] : recv_host_[i];
      check(cudaMemcpyAsync(buf_.at(r.dst_space, r.offset), from, r.bytes, cudaMemcpyDefault, stream_), "H2D");
    }
    reducing_ = &step;
    sync_stream(stream_, timeout_s_, "rank " + std::to_string(rank_) + ": unstaging of step " + std::to_string(index));
  }
  void reduce(const collective::Transfer& r) override {
    // The i-th reducing receive of the step: find its host copy.
    std::size_t i = 0, seen = 0;
    for (; i < reducing_->recvs.size(); ++i)
      if (reducing_->recvs[i].reduce && seen++ == next_) break;
    ++next_;
    void* tmp = scratch_.get(r.bytes);
    check(cudaMemcpyAsync(tmp, recv_host_.at(i), r.bytes, cudaMemcpyHostToDevice, stream_), "H2D");
    check(ringsim_device_reduce_sum(buf_.at(r.dst_space, r.offset), tmp, r.bytes, type_code(type_), stream_),
          "reduce kernel");
    sync_stream(stream_, timeout_s_, "rank " + std::to_string(rank_) + ": reduction");
  }
  void update(std::uint64_t) override {}

 private:
  void* pinned(std::size_t k, std::size_t bytes) {
    if (pinned_.size() <= k) {
      pinned_.resize(k + 1, nullptr);
      pinned_size_.resize(k + 1, 0);
    }
    if (pinned_size_[k] < bytes) {
      cudaFreeHost(pinned_[k]);
      check(cudaMallocHost(&pinned_[k], bytes), "cudaMallocHost");
      pinned_size_[k] = bytes;
    }
    return pinned_[k];
  }
  MPI_Comm comm_;
  int rank_ = 0;
  DataType type_;
  double timeout_s_;
  cudaStream_t stream_{};
  MemberBuffers buf_;
  std::vector<MPI_Request> reqs_;
  std::vector<void*> pinned_, send_host_, recv_host_;
  std::vector<std::size_t> pinned_size_;
  DeviceScratch scratch_;
  const collective::RankStep* reducing_ = nullptr;
  std::size_t next_ = 0;
};

class CudaStagedBackend final : public GpuBackend {
 public:
  CudaStagedBackend(MPI_Comm comm, DataType t, double timeout_s)
      : GpuBackend(comm, "cuda-staged", t, timeout_s), comm_(comm), transport_(comm, t, timeout_s) {}
  std::string_view name() const override { return "cuda-staged"; }
  collective::Transport& transport(const MemberBuffers& b) override {
    transport_.bind(b);
    return transport_;
  }
  void synchronize() override { sync_stream(transport_.stream(), timeout_s_, "the collective"); }
  void baseline(std::string_view op, const MemberBuffers& b, const std::vector<int>& counts) override {
    // MPI without CUDA awareness: stage the whole buffer through host memory around the MPI collective.
    const std::size_t elem = element_size(type_);
    const std::size_t total = std::accumulate(counts.begin(), counts.end(), std::size_t{0}) * elem;
    download(b, b.host, total);
    int rank = 0;
    MPI_Comm_rank(comm_, &rank);
    if (op == "allreduce") {
      MPI_Allreduce(MPI_IN_PLACE, b.host, static_cast<int>(total / elem), mpi_type(type_), MPI_SUM, comm_);
    } else if (op == "reduce_scatter") {
      std::vector<char> out(static_cast<std::size_t>(counts[rank]) * elem + 1);
      MPI_Reduce_scatter(b.host, out.data(), counts.data(), mpi_type(type_), MPI_SUM, comm_);
    } else {
      std::vector<int> displs(counts.size(), 0);
      for (std::size_t i = 1; i < counts.size(); ++i) displs[i] = displs[i - 1] + counts[i - 1];
      MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, b.host, counts.data(), displs.data(), mpi_type(type_), comm_);
    }
    upload(b, b.host, total);
  }
  std::string baseline_name(std::string_view op) const override {
    return std::string(op == "allreduce"        ? "MPI_Allreduce"
                       : op == "reduce_scatter" ? "MPI_Reduce_scatter"
                                                : "MPI_Allgatherv") +
           " (host-staged)";
  }

 private:
  MPI_Comm comm_;
  CudaStagedTransport transport_;
};

#ifdef RINGSIM_HAVE_NCCL
void nccl_check(ncclResult_t r, const char* what) {
  if (r != ncclSuccess) throw std::runtime_error(std::string(what) + ": " + ncclGetErrorString(r));
}

ncclDataType_t nccl_type(DataType t) {
  return t == DataType::Float32 ? ncclFloat32 : t == DataType::Int32 ? ncclInt32 : ncclFloat64;
}

class NcclTransport final : public collective::Transport {
 public:
  NcclTransport(ncclComm_t comm, cudaStream_t stream, DataType t, double timeout_s, int rank)
      : comm_(comm), stream_(stream), type_(t), timeout_s_(timeout_s), rank_(rank) {}
  void bind(const MemberBuffers& b) { buf_ = b; }
  void post(int, const collective::RankStep& step) override {
    std::size_t need = 0;
    for (const auto& r : step.recvs)
      if (r.reduce) need += r.bytes;
    char* scratch = static_cast<char*>(scratch_.get(need ? need : 1));
    scratch_at_.clear();
    nccl_check(ncclGroupStart(), "ncclGroupStart");
    for (const auto& r : step.recvs) {
      if (r.src == r.dst) continue;
      void* into = buf_.at(r.dst_space, r.offset);
      if (r.reduce) {
        into = scratch;
        scratch_at_.push_back(scratch);
        scratch += r.bytes;
      }
      nccl_check(ncclRecv(into, r.bytes, ncclInt8, r.src, comm_, stream_), "ncclRecv");
    }
    for (const auto& t : step.sends) {
      if (t.src == t.dst) {
        check(cudaMemcpyAsync(buf_.at(t.dst_space, t.offset), buf_.at(t.src_space, t.offset), t.bytes,
                              cudaMemcpyDefault, stream_),
              "local copy");
        continue;
      }
      nccl_check(ncclSend(buf_.at(t.src_space, t.offset), t.bytes, ncclInt8, t.dst, comm_, stream_), "ncclSend");
    }
    nccl_check(ncclGroupEnd(), "ncclGroupEnd");
    next_ = 0;
  }
  void wait(int index, const collective::RankStep&) override {
    sync_stream(stream_, timeout_s_, "rank " + std::to_string(rank_) + ": step " + std::to_string(index));
  }
  void reduce(const collective::Transfer& r) override {
    check(ringsim_device_reduce_sum(buf_.at(r.dst_space, r.offset), scratch_at_.at(next_++), r.bytes, type_code(type_),
                                    stream_),
          "reduce kernel");
  }
  void update(std::uint64_t) override {}

 private:
  ncclComm_t comm_;
  cudaStream_t stream_;
  DataType type_;
  double timeout_s_;
  int rank_;
  MemberBuffers buf_;
  DeviceScratch scratch_;
  std::vector<void*> scratch_at_;
  std::size_t next_ = 0;
};

class NcclBackend final : public GpuBackend {
 public:
  NcclBackend(MPI_Comm comm, DataType t, double timeout_s) : GpuBackend(comm, "nccl", t, timeout_s) {
    MPI_Comm_rank(comm, &rank_);
    MPI_Comm_size(comm, &size_);
    ncclUniqueId id;
    if (rank_ == 0) nccl_check(ncclGetUniqueId(&id), "ncclGetUniqueId");
    MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, comm);
    nccl_check(ncclCommInitRank(&comm_, size_, id, rank_), "ncclCommInitRank");
    check(cudaStreamCreate(&stream_), "cudaStreamCreate");
    transport_ = std::make_unique<NcclTransport>(comm_, stream_, t, timeout_s, rank_);
  }
  ~NcclBackend() override {
    ncclCommDestroy(comm_);
    cudaStreamDestroy(stream_);
  }
  std::string_view name() const override { return "nccl"; }
  collective::Transport& transport(const MemberBuffers& b) override {
    transport_->bind(b);
    return *transport_;
  }
  void synchronize() override { sync_stream(stream_, timeout_s_, "the collective"); }
  void baseline(std::string_view op, const MemberBuffers& b, const std::vector<int>& counts) override {
    const std::size_t elem = element_size(type_);
    const std::size_t total = std::accumulate(counts.begin(), counts.end(), std::size_t{0});
    char* base = static_cast<char*>(b.device);
    std::vector<std::size_t> displ(counts.size(), 0);
    for (std::size_t i = 1; i < counts.size(); ++i) displ[i] = displ[i - 1] + counts[i - 1];
    const bool even = std::all_of(counts.begin(), counts.end(), [&](int c) { return c == counts[0]; });
    if (op == "allreduce") {
      nccl_check(ncclAllReduce(base, base, total, nccl_type(type_), ncclSum, comm_, stream_), "ncclAllReduce");
    } else if (op == "reduce_scatter") {
      if (even) {
        nccl_check(
            ncclReduceScatter(base, base + displ[rank_] * elem, counts[0], nccl_type(type_), ncclSum, comm_, stream_),
            "ncclReduceScatter");
      } else {  // uneven chunks: one reduce per root
        nccl_check(ncclGroupStart(), "ncclGroupStart");
        for (int r = 0; r < size_; ++r)
          nccl_check(ncclReduce(base + displ[r] * elem, base + displ[r] * elem, counts[r], nccl_type(type_), ncclSum, r,
                                comm_, stream_),
                     "ncclReduce");
        nccl_check(ncclGroupEnd(), "ncclGroupEnd");
      }
    } else {
      if (even) {
        nccl_check(ncclAllGather(base + displ[rank_] * elem, base, counts[0], nccl_type(type_), comm_, stream_),
                   "ncclAllGather");
      } else {
        nccl_check(ncclGroupStart(), "ncclGroupStart");
        for (int r = 0; r < size_; ++r)
          nccl_check(ncclBroadcast(base + displ[r] * elem, base + displ[r] * elem, counts[r], nccl_type(type_), r,
                                   comm_, stream_),
                     "ncclBroadcast");
        nccl_check(ncclGroupEnd(), "ncclGroupEnd");
      }
    }
  }
  std::string baseline_name(std::string_view op) const override {
    return op == "allreduce" ? "ncclAllReduce" : op == "reduce_scatter" ? "ncclReduceScatter" : "ncclAllGather";
  }

 private:
  int rank_ = 0, size_ = 1;
  ncclComm_t comm_{};
  cudaStream_t stream_{};
  std::unique_ptr<NcclTransport> transport_;
};
#endif

}  // namespace

std::unique_ptr<Backend> make_cuda_staged_backend(MPI_Comm comm, DataType type, double timeout_s) {
  return std::make_unique<CudaStagedBackend>(comm, type, timeout_s);
}

#ifdef RINGSIM_HAVE_NCCL
std::unique_ptr<Backend> make_nccl_backend(MPI_Comm comm, DataType type, double timeout_s) {
  return std::make_unique<NcclBackend>(comm, type, timeout_s);
}
#endif

}  // namespace ringsim::real
