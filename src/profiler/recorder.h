#pragma once
// The profiler's recording side, shared by the hooks in the dispatcher, the autograd engine,
// the storage allocator and record_function. Each thread appends to its own buffer (one
// uncontended lock per event); the session owns the buffers and turns them into a
// ProfilerResult when it stops (result.cpp).
#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "ember/core/device.h"
#include "ember/profiler.h"

namespace ember::profiler::detail {

// A small sequential id per thread (1, 2, ...), torch's "Fwd thread id".
uint64_t current_thread_id();

// Open a CPU event of any kind; seq_nr/fwd_thread as given (-1: none). Returns a handle for
// end_event, -1 when no session records.
int64_t begin_event(const char* static_name, std::string dynamic_name, EventKind kind, int64_t seq_nr,
                    uint64_t fwd_thread, std::vector<InputInfo>&& inputs);
void end_event(int64_t handle);

// Storage allocations and frees while profile_memory is on (installed as the core's
// MemoryReporter, ember/core/allocator.h).
void report_memory(const void* ptr, int64_t bytes, Device device);

// The backward node scope the autograd engine opens around a node: torch's
// "autograd::engine::evaluate_function: <name>" around "<name>".
class BackwardNodeScope {
 public:
  BackwardNodeScope(const std::string& node_name, int64_t seq_nr, uint64_t fwd_thread);
  ~BackwardNodeScope();
  // Opens the inner "<name>" event (around the node's apply), with its incoming gradients.
  void begin_apply(const std::vector<Tensor>& grads);
  void end_apply();

 private:
  std::string name_;
  int64_t seq_nr_;
  uint64_t fwd_thread_;
  int64_t outer_ = -1, inner_ = -1;
};

}  // namespace ember::profiler::detail
