// GPU reduction for the CUDA transports: dst[i] += src[i].
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace {
template <class T>
__global__ void add_kernel(T* __restrict__ dst, const T* __restrict__ src, std::size_t n) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    dst[i] += src[i];
}
template <class T>
void launch(void* dst, const void* src, std::size_t bytes, cudaStream_t stream) {
  const std::size_t n = bytes / sizeof(T);
  if (n == 0) return;
  const unsigned threads = 256;
  const unsigned blocks = static_cast<unsigned>(n / threads + 1 < 4096 ? n / threads + 1 : 4096);
  add_kernel<T><<<blocks, threads, 0, stream>>>(static_cast<T*>(dst), static_cast<const T*>(src), n);
}
}  // namespace

namespace {
// Spins for `ns` nanoseconds of the GPU's global timer: the GPU compute stand-in.
__global__ void spin_kernel(unsigned long long ns) {
  unsigned long long start, now;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  } while (now - start < ns);
}
}  // namespace

cudaError_t ringsim_device_spin(double seconds, cudaStream_t stream) {
  if (seconds <= 0) return cudaSuccess;
  spin_kernel<<<1, 1, 0, stream>>>(static_cast<unsigned long long>(seconds * 1e9));
  return cudaGetLastError();
}

// type: 0 float, 1 int32 (wrapping), 2 double
cudaError_t ringsim_device_reduce_sum(void* dst, const void* src, std::size_t bytes, int type, cudaStream_t stream) {
  switch (type) {
    case 0:
      launch<float>(dst, src, bytes, stream);
      break;
    case 1:
      launch<std::uint32_t>(dst, src, bytes, stream);
      break;
    default:
      launch<double>(dst, src, bytes, stream);
      break;
  }
  return cudaGetLastError();
}
