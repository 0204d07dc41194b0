#pragma once
// Device memory: one caching allocator (core/caching_allocator.h, torch's algorithm and
// statistics) per GPU over cudaMalloc/cudaFree, registered as the CUDA Allocator; and the pinned
// host allocator behind Tensor.pin_memory() and the DataLoader's pin_memory=True.
#include <cstddef>
#include <cstdint>
#include <memory>

#include "ember/core/allocator.h"
#include "ember/core/backend.h"
#include "ember/core/caching_allocator.h"

namespace ember::cuda {

CachingAllocator& device_allocator(int device);
// Frees every cached block of every GPU that has an allocator (torch.cuda.empty_cache).
void empty_all_caches();

// CUDA graphs' private memory pools (cuda_graph.cpp). Pool ids are handed out here
// (torch.cuda.graph_pool_handle); a graph retains its pool on its device, and while a capture of
// (device, stream) is registered, every allocation made with that stream current comes from the
// capture's pool. A pool's memory goes back to the device once no graph retains it and every
// tensor allocated from it is freed.
int64_t new_graph_pool_id();
void retain_graph_pool(int64_t pool, int device);
void release_graph_pool(int64_t pool);
void begin_pool_capture(int device, int64_t stream, int64_t pool);
void end_pool_capture(int device, int64_t stream);
bool captures_underway();
// The bytes a pool holds from the device (0 for a pool that is gone or not made yet).
int64_t graph_pool_bytes(int64_t pool);
// The graph engine (cuda_graph.cpp) and whether work queued on `stream` is being captured.
std::unique_ptr<DeviceGraph> make_cuda_graph();
bool stream_is_capturing(Stream stream);

// Page-locked host memory, cached by size (cudaHostAlloc is slow: it maps pages for the
// device). A block freed while a non_blocking copy may still read or write it is reused only
// after the events recorded on those copies' streams have completed.
DataPtr allocate_pinned(size_t nbytes);
bool is_pinned_ptr(const void* p);
// A non_blocking copy on `stream` uses the pinned block that holds `p` (any pointer inside it).
void record_pinned_use(const void* p, Stream stream);

}  // namespace ember::cuda
