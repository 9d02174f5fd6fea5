// The host backend on a simulated cluster (SMPI build only): the real MPI host transport's sends and
// receives go through SMPI onto the platform `ringsim emulate` built from the topology graph; buffers
// are SMPI-shared (every rank maps the same pages, so 256 ranks of 100 MB gradients fit in little
// memory, and values are meaningless); reductions, updates, staging and fusion copies, the library's
// per-call overhead and the compute stand-ins cost simulated time from the emulation profile instead
// of CPU time (the run sets smpi/simulate-computation:no).
#include <mpi.h>

#include <cstdlib>
#include <fstream>
#include <simgrid/s4u.hpp>
#include <sstream>

#include "execute/emulation_profile.h"
#include "transport/host_backend.h"

namespace ringsim::real {

namespace {

void sleep_for(double seconds) {
  if (seconds > 0) simgrid::s4u::this_actor::sleep_for(seconds);
}
double time_for(std::uint64_t bytes, double bytes_per_s) {
  return bytes_per_s > 0 ? static_cast<double>(bytes) / bytes_per_s : 0;
}

EmulationProfile load_profile() {
  const char* file = std::getenv("RINGSIM_EMULATION_PROFILE");
  if (!file || !*file)
    throw UsageError(
        "this is the emulation build of ringsim-real: run it through `ringsim emulate`, which sets "
        "RINGSIM_EMULATION_PROFILE");
  std::ifstream in(file);
  if (!in) throw UsageError(std::string("cannot read the emulation profile ") + file);
  std::stringstream text;
  text << in.rdbuf();
  return EmulationProfile::parse(text.str(), file);
}

// SMPI-shared scratch buffers for reducing receives, grown as needed and kept.
class SharedScratch {
 public:
  ~SharedScratch() {
    for (auto& [p, n] : bufs_) SMPI_SHARED_FREE(p);
  }
  void* get(std::size_t i, std::size_t bytes) {
    if (bufs_.size() <= i) bufs_.resize(i + 1, {nullptr, 0});
    auto& [p, n] = bufs_[i];
    if (n < bytes) {
      if (p) SMPI_SHARED_FREE(p);
      p = SMPI_SHARED_MALLOC(bytes);
      n = bytes;
    }
    return p;
  }

 private:
  std::vector<std::pair<void*, std::size_t>> bufs_;
};

class EmulatedTransport final : public MpiHostTransport {
 public:
  EmulatedTransport(MPI_Comm comm, DataType type, double timeout_s, const EmulationProfile& profile, int rank)
      : MpiHostTransport(comm, type, timeout_s), profile_(profile), costs_(profile.members.at(rank)) {}
  // Simulated time cannot pass while a rank polls: wait in MPI (SimGrid reports a deadlock instead of a
  // timeout). Then copy what came through a node's shared memory out of it.
  void wait(int, const collective::RankStep& step) override {
    auto& r = requests();
    if (!r.empty()) MPI_Waitall(static_cast<int>(r.size()), r.data(), MPI_STATUSES_IGNORE);
    double copies = 0;
    for (const auto& t : step.recvs) copies += profile_.receive_copy_s(t);
    sleep_for(copies);
  }
  void reduce(const collective::Transfer& t) override {
    sleep_for(t.dst_space == collective::Space::Device ? costs_.reduce_device_s(t.bytes)
                                                       : time_for(t.bytes, costs_.reduce_host_bytes_per_s));
  }
  void update(std::uint64_t bytes) override { sleep_for(time_for(bytes, costs_.update_bytes_per_s)); }
  // The step's messages under the call's protocol: what it adds beyond the network's time, before sending.
  void post(int index, const collective::RankStep& step) override {
    double extra = 0;
    for (const auto& t : step.sends) extra = std::max(extra, profile_.protocol_s(protocol, t));
    sleep_for(extra);
    MpiHostTransport::post(index, step);
  }
  collective::Protocol protocol;  // of the collective running (EmulatedBackend::charge_collective_call)

 protected:
  void* scratch(std::size_t i, std::size_t bytes) override { return scratch_.get(i, bytes); }
  void local_copy(void*, const void*, std::size_t bytes) override {
    if (costs_.staging_bytes_per_s > 0)
      sleep_for(costs_.staging_latency_s + time_for(bytes, costs_.staging_bytes_per_s));
  }

 private:
  const EmulationProfile& profile_;
  EmulationProfile::Member costs_;
  SharedScratch scratch_;
};

class EmulatedBackend final : public HostBackend {
 public:
  EmulatedBackend(MPI_Comm comm, DataType type, double timeout_s, EmulationProfile profile)
      : HostBackend(comm, type, timeout_s), profile_(std::move(profile)), rank_(rank_of(comm)) {
    if (static_cast<int>(profile_.members.size()) <= rank_)
      throw UsageError("the emulation profile has " + std::to_string(profile_.members.size()) +
                       " members, fewer than the ranks launched");
    transport_ = std::make_unique<EmulatedTransport>(comm, type, timeout_s, profile_, rank_);
  }
  std::string_view name() const override { return "emulated"; }
  MemberBuffers allocate(std::size_t bytes) override {
    MemberBuffers b;
    b.bytes = bytes;
    b.device = allocate_host(bytes);
    b.host = allocate_host(bytes);
    return b;
  }
  void release(MemberBuffers& b) override {
    release_host(b.device);
    release_host(b.host);
    b = {};
  }
  void upload(const MemberBuffers&, const void*, std::size_t) override {}
  void download(const MemberBuffers&, void*, std::size_t) override {}
  collective::Transport& transport(const MemberBuffers& b) override {
    transport_->bind(b);
    return *transport_;
  }
  void compute_stand_in(double seconds) override { sleep_for(seconds); }
  void* allocate_host(std::size_t bytes) override { return SMPI_SHARED_MALLOC(bytes ? bytes : 1); }
  void release_host(void* p) override {
    if (p) SMPI_SHARED_FREE(p);
  }
  void host_copy(void*, const void*, std::size_t) override {}
  bool emulated() const override { return true; }
  collective::Space collective_space() const override { return profile_.space; }
  void charge_collective_call(const collective::Protocol& protocol) override {
    sleep_for(protocol.name.empty() ? profile_.collective_overhead_s : protocol.call_s);
    transport_->protocol = protocol;
  }
  void charge_fusion_copy(std::uint64_t bytes) override {
    sleep_for(time_for(bytes, profile_.fusion_copy_bytes_per_s));
  }

 private:
  static int rank_of(MPI_Comm comm) {
    int r = 0;
    MPI_Comm_rank(comm, &r);
    return r;
  }
  EmulationProfile profile_;
  int rank_;
  std::unique_ptr<EmulatedTransport> transport_;
};

}  // namespace

std::unique_ptr<Backend> make_emulated_backend(MPI_Comm comm, DataType type, double timeout_s) {
  return std::make_unique<EmulatedBackend>(comm, type, timeout_s, load_profile());
}

}  // namespace ringsim::real
