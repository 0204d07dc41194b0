#pragma once
// A refcounted block of memory. Views of one tensor share a Storage.
#include <cstddef>
#include <memory>

#include "ember/core/allocator.h"
#include "ember/core/device.h"

namespace ember {

class Storage {
 public:
  // Allocates nbytes on device with that device's registered allocator.
  Storage(size_t nbytes, Device device);
  // Wraps memory someone else owns; deleter (may be null) runs when the last user is gone.
  Storage(void* data, size_t nbytes, Device device, void (*deleter)(void*, void*), void* ctx);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  void* data() const { return data_.ptr; }
  size_t nbytes() const { return nbytes_; }
  Device device() const { return device_; }

  // FSDP's "resize the storage to 0 and back": release_data() frees the memory while tensors
  // viewing this storage stay alive (autograd saved them for backward), and allocate_data() gives
  // it fresh memory of the same size (then refilled) before they are read again. A tensor whose
  // storage is released raises when its data is asked for, instead of reading freed memory.
  void release_data();
  void allocate_data();
  // No memory behind it: FSDP released it, or it is a meta storage (which never has any).
  bool released() const { return released_; }

 private:
  DataPtr data_;
  size_t nbytes_;
  Device device_;
  bool reported_ = false;  // its allocation was reported to a profiling session, so is its free
  bool released_ = false;
};

using StoragePtr = std::shared_ptr<Storage>;

}  // namespace ember
