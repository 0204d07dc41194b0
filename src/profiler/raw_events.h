#pragma once
// What a session collects before it is turned into a ProfilerResult: per-thread event buffers
// (append-only while recording), the device tracer's activities, and the session's settings.
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "ember/profiler.h"
#include "profiler/gpu_tracer.h"

namespace ember::profiler::detail {

struct RawEvent {
  const char* static_name = nullptr;  // an op's name (prefixed "aten::" in the result)
  std::string dynamic_name;           // regions, backward nodes
  EventKind kind = EventKind::Op;
  int64_t id = 0;
  int64_t start_ns = 0, end_ns = -1;  // -1: still open when the session stopped
  int32_t parent = -1;                // index in the same buffer
  int64_t seq_nr = -1;
  uint64_t fwd_thread = 0;
  std::vector<InputInfo> inputs;
  std::vector<std::string> stack;
};

struct RawMemory {
  MemoryEvent event;   // .event is the index of the open event in the same buffer
};

struct ThreadBuffer {
  uint64_t session = 0;
  uint64_t os_tid = 0;
  std::mutex mu;
  bool closed = false;  // the session stopped: later ends are ignored
  std::vector<RawEvent> events;
  std::vector<MemoryEvent> memory;
  std::vector<int32_t> open;  // indices of the events open on this thread, innermost last
};

struct RawSession {
  ProfilerConfig config;
  uint64_t id = 0;
  int64_t start_ns = 0, stop_ns = 0;
  int64_t epoch_ns = 0;  // wall clock at start_ns (the trace's baseTimeNanoseconds)
  std::vector<std::shared_ptr<ThreadBuffer>> buffers;
  std::vector<DeviceActivity> activities;
  std::vector<RuntimeCall> runtime_calls;
  std::vector<std::string> warnings;
};

std::shared_ptr<ProfilerResult> build_result(RawSession& session);

// FLOPs torch counts for an op from its recorded inputs (0 when it counts none).
int64_t estimate_flops(const std::string& name, const std::vector<InputInfo>& inputs);

}  // namespace ember::profiler::detail
