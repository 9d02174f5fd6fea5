// Which backends this build has: host always; cuda-staged and nccl when compiled with CUDA / NCCL.
#include <cstdlib>
#include <cstring>
#include <new>

#include "transport/backend.h"

namespace ringsim::real {

std::unique_ptr<Backend> make_host_backend(MPI_Comm comm, DataType type, double timeout_s);
#ifdef RINGSIM_SMPI
std::unique_ptr<Backend> make_emulated_backend(MPI_Comm comm, DataType type, double timeout_s);
#endif
#ifdef RINGSIM_HAVE_CUDA
std::unique_ptr<Backend> make_cuda_staged_backend(MPI_Comm comm, DataType type, double timeout_s);
#endif
#ifdef RINGSIM_HAVE_NCCL
std::unique_ptr<Backend> make_nccl_backend(MPI_Comm comm, DataType type, double timeout_s);
#endif

void* Backend::allocate_host(std::size_t bytes) {
  void* p = std::calloc(bytes ? bytes : 1, 1);
  if (!p) throw std::bad_alloc();
  return p;
}
void Backend::release_host(void* p) { std::free(p); }
void Backend::host_copy(void* dst, const void* src, std::size_t bytes) {
  if (bytes) std::memcpy(dst, src, bytes);
}

std::vector<std::string> backend_names() {
  std::vector<std::string> n = {"host"};
#ifdef RINGSIM_HAVE_CUDA
  n.push_back("cuda-staged");
#endif
#ifdef RINGSIM_HAVE_NCCL
  n.push_back("nccl");
#endif
  return n;
}

std::unique_ptr<Backend> make_backend(std::string_view transport, MPI_Comm comm, DataType type, double timeout_s) {
#ifdef RINGSIM_SMPI
  // Under SMPI the host transport runs on the simulated cluster (emulate/emulated_backend.cpp).
  if (transport == "host") return make_emulated_backend(comm, type, timeout_s);
#else
  if (transport == "host") return make_host_backend(comm, type, timeout_s);
#endif
#ifdef RINGSIM_HAVE_CUDA
  if (transport == "cuda-staged") return make_cuda_staged_backend(comm, type, timeout_s);
#endif
#ifdef RINGSIM_HAVE_NCCL
  if (transport == "nccl") return make_nccl_backend(comm, type, timeout_s);
#endif
  if (transport == "cuda-staged" || transport == "nccl")
    throw UsageError("--transport " + std::string(transport) + " is not in this build (built without " +
                     (transport == "nccl" ? "NCCL" : "the CUDA toolkit") + ")");
  throw UsageError("unknown transport '" + std::string(transport) + "'");
}

}  // namespace ringsim::real
