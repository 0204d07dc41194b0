#pragma once
// Device memory: one caching allocator (core/caching_allocator.h, torch's algorithm and
// statistics) per GPU over cudaMalloc/cudaFree, registered as the CUDA Allocator; and the pinned
// host allocator behind Tensor.pin_memory() and the DataLoader's pin_memory=True.
#include <cstddef>

#include "ember/core/allocator.h"
#include "ember/core/backend.h"
#include "ember/core/caching_allocator.h"

namespace ember::cuda {

CachingAllocator& device_allocator(int device);
// Frees every cached block of every GPU that has an allocator (torch.cuda.empty_cache).
void empty_all_caches();

// Page-locked host memory, cached by size (cudaHostAlloc is slow: it maps pages for the
// device). A block freed while a non_blocking copy may still read or write it is reused only
// after the events recorded on those copies' streams have completed.
DataPtr allocate_pinned(size_t nbytes);
bool is_pinned_ptr(const void* p);
// A non_blocking copy on `stream` uses the pinned block that holds `p` (any pointer inside it).
void record_pinned_use(const void* p, Stream stream);

}  // namespace ember::cuda
