// The profiler's GPU tracer (profiler/gpu_tracer.h) on CUPTI's Activity API: the kernels,
// copies and memsets the GPUs ran, the runtime (or driver) calls that launched them, and the id
// of the op that was running on the launching thread, on the profiler's clock.
//
// libcupti is loaded at run time (dlopen) and never linked: ember must load on machines without
// it, where start() says why GPU activity cannot be traced. cupti.h is included only for its
// types, enums and record layouts; every function comes from dlsym, typed by its declaration.
//
// How it works: start() enables the activity kinds; CUPTI fills 4 MiB buffers we hand it and
// gives them back full (buffer_completed, on CUPTI's own thread), where the records are copied
// out and the buffer freed. Each op pushes its event id as an external correlation id while it
// runs, so CUPTI emits an EXTERNAL_CORRELATION record (correlation id -> op id) before every API
// record made inside it; kernels, copies and memsets carry the correlation id of the API call
// that launched them. stop() waits for the GPUs, stops collecting, flushes, and joins the three.
#include <cuda_runtime_api.h>
#include <cupti.h>  // types and record layouts only (see above)
#include <cxxabi.h>
#include <dlfcn.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <iterator>
#include <limits>
#include <mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "profiler/gpu_tracer.h"

namespace ember::cuda {
namespace {

namespace pd = ::ember::profiler::detail;

// ---------------------------------------------------------------------------------------------
// libcupti, loaded at run time

// The loader's search path first (LD_LIBRARY_PATH, ldconfig, the nvidia-cuda-cupti wheel's
// directory when it is on the path), then the toolkit's two usual places.
constexpr const char* kCuptiLibraries[] = {
    "libcupti.so.13",
    "libcupti.so",
    "/usr/local/cuda/lib64/libcupti.so.13",
    "/usr/local/cuda/lib64/libcupti.so",
    "/usr/local/cuda/extras/CUPTI/lib64/libcupti.so.13",
    "/usr/local/cuda/extras/CUPTI/lib64/libcupti.so",
};

// Every CUPTI function used, named and typed as cupti.h declares it.
struct CuptiApi {
  decltype(&::cuptiGetResultString) cuptiGetResultString = nullptr;
  decltype(&::cuptiActivityEnable) cuptiActivityEnable = nullptr;
  decltype(&::cuptiActivityDisable) cuptiActivityDisable = nullptr;
  decltype(&::cuptiActivityRegisterCallbacks) cuptiActivityRegisterCallbacks = nullptr;
  decltype(&::cuptiActivityFlushAll) cuptiActivityFlushAll = nullptr;
  decltype(&::cuptiActivityGetNextRecord) cuptiActivityGetNextRecord = nullptr;
  decltype(&::cuptiActivityPushExternalCorrelationId) cuptiActivityPushExternalCorrelationId = nullptr;
  decltype(&::cuptiActivityPopExternalCorrelationId) cuptiActivityPopExternalCorrelationId = nullptr;
  decltype(&::cuptiGetCallbackName) cuptiGetCallbackName = nullptr;
  decltype(&::cuptiGetTimestamp) cuptiGetTimestamp = nullptr;
  decltype(&::cuptiSetThreadIdType) cuptiSetThreadIdType = nullptr;
  // Optional: without them the clock is matched by sampling and no calls are filtered.
  decltype(&::cuptiActivityRegisterTimestampCallback) cuptiActivityRegisterTimestampCallback = nullptr;
  decltype(&::cuptiActivityEnableRuntimeApi) cuptiActivityEnableRuntimeApi = nullptr;
  decltype(&::cuptiActivityEnableDriverApi) cuptiActivityEnableDriverApi = nullptr;
};

// The driver's view of contexts (libcuda is already loaded by the CUDA runtime).
struct DriverApi {
  decltype(&::cuDeviceGet) cuDeviceGet = nullptr;
  decltype(&::cuDevicePrimaryCtxGetState) cuDevicePrimaryCtxGetState = nullptr;
};

template <class Fn>
void resolve(void* lib, const char* name, Fn& fn, std::string* missing) {
  // POSIX guarantees that a function's address survives the trip through dlsym's void*.
  fn = reinterpret_cast<Fn>(dlsym(lib, name));
  if (!fn && missing) *missing += (missing->empty() ? "" : ", ") + std::string(name);
}

#define EMBER_CUPTI_RESOLVE(lib, api, name, missing) resolve(lib, #name, (api).name, missing)

// The activity kinds traced. EXTERNAL_CORRELATION comes first so that the API records that
// follow are tagged. DRIVER is there for kernels launched through the driver API (cuBLAS,
// cuBLASLt and other libraries may use cuLaunchKernel): without its API records CUPTI writes
// no external correlation for them and they would lose the op that launched them.
constexpr CUpti_ActivityKind kKinds[] = {
    CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION,
    CUPTI_ACTIVITY_KIND_RUNTIME,
    CUPTI_ACTIVITY_KIND_DRIVER,
    CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
    CUPTI_ACTIVITY_KIND_MEMCPY,
    CUPTI_ACTIVITY_KIND_MEMSET,
};

const char* kind_name(CUpti_ActivityKind kind) {
  switch (kind) {
    case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION: return "CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION";
    case CUPTI_ACTIVITY_KIND_RUNTIME: return "CUPTI_ACTIVITY_KIND_RUNTIME";
    case CUPTI_ACTIVITY_KIND_DRIVER: return "CUPTI_ACTIVITY_KIND_DRIVER";
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: return "CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL";
    case CUPTI_ACTIVITY_KIND_MEMCPY: return "CUPTI_ACTIVITY_KIND_MEMCPY";
    case CUPTI_ACTIVITY_KIND_MEMSET: return "CUPTI_ACTIVITY_KIND_MEMSET";
    default: return "CUPTI_ACTIVITY_KIND_?";
  }
}

// Frequent calls that launch nothing: not recording them keeps the buffers small (ember asks
// for the current device around most launches). Filtering is an optimisation only.
constexpr CUpti_CallbackId kQuietRuntimeCalls[] = {
    CUPTI_RUNTIME_TRACE_CBID_cudaGetDevice_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaSetDevice_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaGetLastError_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaGetDeviceCount_v3020,
};
constexpr CUpti_CallbackId kQuietDriverCalls[] = {
    CUPTI_DRIVER_TRACE_CBID_cuCtxGetCurrent,
    CUPTI_DRIVER_TRACE_CBID_cuCtxGetDevice,
    CUPTI_DRIVER_TRACE_CBID_cuDevicePrimaryCtxGetState,
    CUPTI_DRIVER_TRACE_CBID_cuKernelGetAttribute,
};

// ---------------------------------------------------------------------------------------------
// Records as they come out of CUPTI's buffers (times still on CUPTI's clock)

struct PendingActivity {
  pd::DeviceActivity activity;       // start_ns / end_ns: CUPTI's; kernels: the mangled name
  uint32_t runtime_correlation = 0;  // memcpy: the runtime call's correlation id, when given
  bool is_kernel = false;
};

struct PendingCall {
  uint32_t cbid = 0;
  bool driver = false;  // a driver API call (else a runtime API call)
  uint64_t start = 0, end = 0;
  uint32_t thread = 0;
  uint32_t correlation = 0;
};

struct Collected {
  std::vector<PendingActivity> activities;
  std::vector<PendingCall> calls;
  std::unordered_map<uint32_t, uint64_t> external;  // API correlation id -> op event id

  void append(Collected&& other) {
    activities.insert(activities.end(), std::make_move_iterator(other.activities.begin()),
                      std::make_move_iterator(other.activities.end()));
    calls.insert(calls.end(), other.calls.begin(), other.calls.end());
    external.insert(other.external.begin(), other.external.end());
  }
};

// Kineto's names, which torch's traces and tools show: "Memcpy HtoD (Pageable -> Device)".
const char* copy_kind_name(uint8_t kind) {
  switch (kind) {
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD: return "HtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH: return "DtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOA: return "HtoA";
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOH: return "AtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOA: return "AtoA";
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOD: return "AtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOA: return "DtoA";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD: return "DtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOH: return "HtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_PTOP: return "PtoP";
    default: return "Unknown";
  }
}

const char* memory_kind_name(unsigned kind) {
  switch (kind) {
    case CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE: return "Pageable";
    case CUPTI_ACTIVITY_MEMORY_KIND_PINNED: return "Pinned";
    case CUPTI_ACTIVITY_MEMORY_KIND_DEVICE: return "Device";
    case CUPTI_ACTIVITY_MEMORY_KIND_ARRAY: return "Array";
    case CUPTI_ACTIVITY_MEMORY_KIND_MANAGED: return "Managed";
    case CUPTI_ACTIVITY_MEMORY_KIND_DEVICE_STATIC: return "Device Static";
    case CUPTI_ACTIVITY_MEMORY_KIND_MANAGED_STATIC: return "Managed Static";
    default: return "Unknown";
  }
}

// Both timestamps 0: CUPTI could not time it (it ran out of device memory for timestamps).
// Such work cannot be placed on the timeline, so it is left out.
bool untimed(uint64_t start, uint64_t end) { return start == 0 && end == 0; }

// Device, stream, times and correlation id: the fields every timed device record has (read by
// value: the records are packed structs).
template <class Record> void set_place_and_time(pd::DeviceActivity& a, const Record& r) {
  a.device = static_cast<int>(r.deviceId);
  a.stream = r.streamId;
  a.start_ns = static_cast<int64_t>(r.start);
  a.end_ns = static_cast<int64_t>(r.end);
  a.correlation = r.correlationId;
}

// The record fields are read by value: the structs are packed, so no reference may bind to them.
// The newest layouts of CUDA 13's header; older CUPTIs write records whose leading fields (all
// that is read here) are the same, newer fields only being appended in each version.
void add_kernel(const CUpti_ActivityKernel10& k, Collected& out) {
  if (untimed(k.start, k.end)) return;
  PendingActivity p;
  pd::DeviceActivity& a = p.activity;
  a.name = k.name ? k.name : "<unnamed kernel>";
  a.kind = "kernel";
  set_place_and_time(a, k);
  a.grid = {k.gridX, k.gridY, k.gridZ};
  a.block = {k.blockX, k.blockY, k.blockZ};
  p.is_kernel = true;
  out.activities.push_back(std::move(p));
}

void add_memcpy(const CUpti_ActivityMemcpy6& m, Collected& out) {
  if (untimed(m.start, m.end)) return;
  PendingActivity p;
  pd::DeviceActivity& a = p.activity;
  a.name = std::string("Memcpy ") + copy_kind_name(m.copyKind) + " (" + memory_kind_name(m.srcKind) + " -> " +
           memory_kind_name(m.dstKind) + ")";
  a.kind = "gpu_memcpy";
  set_place_and_time(a, m);
  a.bytes = static_cast<int64_t>(m.bytes);
  p.runtime_correlation = m.runtimeCorrelationId;
  out.activities.push_back(std::move(p));
}

void add_memset(const CUpti_ActivityMemset4& m, Collected& out) {
  if (untimed(m.start, m.end)) return;
  PendingActivity p;
  pd::DeviceActivity& a = p.activity;
  a.name = std::string("Memset (") + memory_kind_name(m.memoryKind) + ")";
  a.kind = "gpu_memset";
  set_place_and_time(a, m);
  a.bytes = static_cast<int64_t>(m.bytes);
  out.activities.push_back(std::move(p));
}

void add_call(const CUpti_ActivityAPI& c, bool driver, Collected& out) {
  if (untimed(c.start, c.end)) return;
  out.calls.push_back(PendingCall{c.cbid, driver, c.start, c.end, c.threadId, c.correlationId});
}

void add_external(const CUpti_ActivityExternalCorrelation& e, Collected& out) {
  // Other tools may push ids of other kinds; the profiler's are CUSTOM0.
  if (e.externalKind != CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0) return;
  out.external[e.correlationId] = e.externalId;
}

void add_record(const CUpti_Activity& r, Collected& out) {
  switch (r.kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
      add_kernel(reinterpret_cast<const CUpti_ActivityKernel10&>(r), out);
      break;
    case CUPTI_ACTIVITY_KIND_MEMCPY:
      add_memcpy(reinterpret_cast<const CUpti_ActivityMemcpy6&>(r), out);
      break;
    case CUPTI_ACTIVITY_KIND_MEMSET:
      add_memset(reinterpret_cast<const CUpti_ActivityMemset4&>(r), out);
      break;
    case CUPTI_ACTIVITY_KIND_RUNTIME:
    case CUPTI_ACTIVITY_KIND_DRIVER:
      add_call(reinterpret_cast<const CUpti_ActivityAPI&>(r), r.kind == CUPTI_ACTIVITY_KIND_DRIVER, out);
      break;
    case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION:
      add_external(reinterpret_cast<const CUpti_ActivityExternalCorrelation&>(r), out);
      break;
    default:
      break;  // kinds not enabled here (another tool's)
  }
}

std::string demangle(const std::string& name) {
  int status = 0;
  char* out = abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status);
  std::string result = status == 0 && out ? std::string(out) : name;  // extern "C" kernels stay as they are
  std::free(out);
  return result;
}

// "cudaLaunchKernel_v7000" -> "cudaLaunchKernel": CUPTI names a call with the version of its
// entry point; torch's traces show the name the program called.
std::string without_version_suffix(std::string name) {
  const size_t pos = name.rfind("_v");
  if (pos == std::string::npos || pos + 2 >= name.size()) return name;
  for (size_t i = pos + 2; i < name.size(); ++i) {
    if (name[i] < '0' || name[i] > '9') return name;
  }
  name.resize(pos);
  return name;
}

// The profiler's clock for CUPTI (see configure_once).
uint64_t CUPTIAPI profiler_clock() { return static_cast<uint64_t>(pd::now_ns()); }

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records);
void CUPTIAPI buffer_completed(CUcontext context, uint32_t stream, uint8_t* buffer, size_t size, size_t valid);

// ---------------------------------------------------------------------------------------------
// The tracer

class CuptiTracer final : public pd::GpuTracer {
 public:
  bool start(std::string* why_not) override {
    std::lock_guard<std::mutex> lock(control_mu_);
    std::string why;
    if (start_locked(&why)) return true;
    if (why_not) *why_not = why;
    return false;
  }

  // Called around every op on any thread, so errors cannot be reported: a failed push only
  // leaves that op's kernels without their op.
  void push_external_id(int64_t id) override {
    if (!loaded_.load(std::memory_order_acquire)) return;
    (void)api_.cuptiActivityPushExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0,
                                                       static_cast<uint64_t>(id));
  }
  void pop_external_id() override {
    if (!loaded_.load(std::memory_order_acquire)) return;
    uint64_t last = 0;
    (void)api_.cuptiActivityPopExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, &last);
  }

  void stop(std::vector<pd::DeviceActivity>& activities, std::vector<pd::RuntimeCall>& calls) override {
    std::lock_guard<std::mutex> lock(control_mu_);
    if (!running_) return;
    running_ = false;
    // Kernels still queued have no end time yet: wait for them first.
    synchronize_devices();
    // Disable before the flush: a record made after it would stay in CUPTI's buffers and turn
    // up in the next session.
    disable_kinds(std::size(kKinds));
    // Forced: also the buffers CUPTI has not filled. It returns once buffer_completed has been
    // called for every buffer, so records_mu_ must not be held here.
    (void)api_.cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    Collected got = take_collected();
    assemble(got, activities, calls);
  }

  // On CUPTI's thread (or the flushing one): copy the records out of a full buffer.
  void add_buffer(uint8_t* buffer, size_t valid) noexcept {
    try {
      Collected batch;
      CUpti_Activity* record = nullptr;
      // Ends with CUPTI_ERROR_MAX_LIMIT_REACHED at the last record (or an error on a damaged one).
      while (api_.cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS) add_record(*record, batch);
      std::lock_guard<std::mutex> lock(records_mu_);
      collected_.append(std::move(batch));
    } catch (...) {
      // Out of host memory: this buffer's records are lost; CUPTI's thread must not unwind.
    }
  }

 private:
  bool start_locked(std::string* why) {
    if (running_) {
      *why = "the CUPTI tracer is already running (one profiling session at a time)";
      return false;
    }
    if (!find_gpus(why) || !load(why)) return false;
    configure_once();
    take_collected();  // anything left from an earlier session
    CUptiResult r = api_.cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed);
    if (r != CUPTI_SUCCESS) {
      *why = cupti_error("cuptiActivityRegisterCallbacks", r);
      return false;
    }
    if (!profiler_clock_registered_ && !sample_clock_offset(why)) return false;
    if (!enable_kinds(why)) return false;
    running_ = true;
    return true;
  }

  bool find_gpus(std::string* why) {
    int count = 0;
    const cudaError_t err = cudaGetDeviceCount(&count);
    if (err != cudaSuccess) {
      (void)cudaGetLastError();  // the probe's failure is not the program's error
      *why = std::string("no CUDA GPU is available (cudaGetDeviceCount: ") + cudaGetErrorString(err) + ")";
      return false;
    }
    if (count <= 0) {
      *why = "no CUDA GPU is available (cudaGetDeviceCount found 0 devices)";
      return false;
    }
    device_count_ = count;
    return true;
  }

  // Loads libcupti once; a failure is remembered and given again.
  bool load(std::string* why) {
    if (loaded_.load(std::memory_order_acquire)) return true;
    if (!load_error_.empty()) {
      *why = load_error_;
      return false;
    }
    void* lib = nullptr;
    std::string first_error;
    for (const char* path : kCuptiLibraries) {
      lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
      if (lib) break;
      const char* e = dlerror();
      if (first_error.empty() && e) first_error = e;
    }
    if (!lib) {
      load_error_ = "cannot load libcupti.so.13 (CUPTI, the CUDA toolkit's profiling library; also tried "
                    "libcupti.so, /usr/local/cuda/lib64 and /usr/local/cuda/extras/CUPTI/lib64): " +
                    first_error;
      *why = load_error_;
      return false;
    }
    // Never dlclose'd: CUPTI keeps threads and callbacks into this file for the process's life.
    std::string missing;
    EMBER_CUPTI_RESOLVE(lib, api_, cuptiGetResultString, &missing);
    EMBER_CUPTI_RESOLVE(lib, api_, cuptiActivityEnable, &missing);
    EMBER_CUPTI_RESOLVE(lib, api_, cuptiActivityDisable, &missing);
    EMBER_CUPTI_RESOLVE(lib, api_, cuptiActivityRegisterCallbacks, &missing);
    EMBER_CUPTI_RESOLVE(lib, api_, cuptiActivityFlushAll, &missing);
    EMBER_CUPTI_RESOLVE(lib, api_, cuptiActivityGetNextRecord, &missing);
    EMBER_CUPTI_RESOLVE(lib, api_, cuptiActivityPushExternalCorrelationId, &missing);
    EMBER_CUPTI_RESOLVE(lib, api_, cuptiActivityPopExternalCorrelationId, &missing);
    EMBER_CUPTI_RESOLVE(lib, api_, cuptiGetCallbackName, &missing);
    EMBER_CUPTI_RESOLVE(lib, api_, cuptiGetTimestamp, &missing);
    EMBER_CUPTI_RESOLVE(lib, api_, cuptiSetThreadIdType, &missing);
    EMBER_CUPTI_RESOLVE(lib, api_, cuptiActivityRegisterTimestampCallback, nullptr);
    EMBER_CUPTI_RESOLVE(lib, api_, cuptiActivityEnableRuntimeApi, nullptr);
    EMBER_CUPTI_RESOLVE(lib, api_, cuptiActivityEnableDriverApi, nullptr);
    if (!missing.empty()) {
      Dl_info info{};
      const char* where = dladdr(reinterpret_cast<void*>(dlsym(lib, "cuptiActivityEnable")), &info) && info.dli_fname
                              ? info.dli_fname
                              : "libcupti";
      load_error_ = std::string(where) + " lacks " + missing + " (a newer CUPTI is needed)";
      *why = load_error_;
      return false;
    }
    load_driver();
    loaded_.store(true, std::memory_order_release);
    return true;
  }

  void load_driver() {
    // RTLD_NOLOAD: only the libcuda the CUDA runtime already loaded, never a second one.
    void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
    if (!lib) return;
    EMBER_CUPTI_RESOLVE(lib, driver_, cuDeviceGet, nullptr);
    EMBER_CUPTI_RESOLVE(lib, driver_, cuDevicePrimaryCtxGetState, nullptr);
  }

  // Settings made once, before the first activity kind is enabled. Neither can fail start():
  // each has a fallback.
  void configure_once() {
    if (configured_) return;
    // Thread ids as the profiler's CPU events have them (gettid), not pthread_self(). Should
    // CUPTI refuse, the calls are reported without a thread (0) rather than with a wrong one.
    system_thread_ids_ = api_.cuptiSetThreadIdType(CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM) == CUPTI_SUCCESS;
    // CUPTI stamps records with CLOCK_REALTIME by default on Linux, which NTP may slew or step
    // while a profile runs. Given our clock (steady_clock, CLOCK_MONOTONIC), it stamps the API
    // records with it and converts the GPU's timestamps to it itself, so every time is already on
    // the profiler's clock. CUPTI asks for this before any kind is enabled, hence once, here.
    if (api_.cuptiActivityRegisterTimestampCallback) {
      profiler_clock_registered_ = api_.cuptiActivityRegisterTimestampCallback(profiler_clock) == CUPTI_SUCCESS;
    }
    configured_ = true;
  }

  // Without the timestamp callback: CUPTI's clock and ours are read together a few times and the
  // tightest pair gives the offset to add to CUPTI's times. Sound because both count nanoseconds
  // of the same oscillator: CUPTI's (CLOCK_REALTIME) differs from ours (CLOCK_MONOTONIC) only by
  // NTP's slewing, a few parts per million (microseconds over a profile of seconds), unless the
  // wall clock is stepped during the profile, which would then show as a jump.
  bool sample_clock_offset(std::string* why) {
    int64_t best_width = std::numeric_limits<int64_t>::max();
    for (int i = 0; i < 5; ++i) {
      uint64_t cupti_ns = 0;
      const int64_t before = pd::now_ns();
      const CUptiResult r = api_.cuptiGetTimestamp(&cupti_ns);
      const int64_t after = pd::now_ns();
      if (r != CUPTI_SUCCESS) {
        *why = cupti_error("cuptiGetTimestamp", r);
        return false;
      }
      if (after - before < best_width) {
        best_width = after - before;
        offset_ns_ = before + (after - before) / 2 - static_cast<int64_t>(cupti_ns);
      }
    }
    return true;
  }

  bool enable_kinds(std::string* why) {
    for (size_t i = 0; i < std::size(kKinds); ++i) {
      const CUptiResult r = api_.cuptiActivityEnable(kKinds[i]);
      if (r != CUPTI_SUCCESS) {
        *why = cupti_error(std::string("cuptiActivityEnable(") + kind_name(kKinds[i]) + ")", r);
        disable_kinds(i);
        (void)api_.cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
        take_collected();
        return false;
      }
    }
    // After enabling the kinds (which would reset these), as CUPTI asks.
    if (api_.cuptiActivityEnableRuntimeApi) {
      for (CUpti_CallbackId cbid : kQuietRuntimeCalls) (void)api_.cuptiActivityEnableRuntimeApi(cbid, 0);
    }
    if (api_.cuptiActivityEnableDriverApi) {
      for (CUpti_CallbackId cbid : kQuietDriverCalls) (void)api_.cuptiActivityEnableDriverApi(cbid, 0);
    }
    return true;
  }

  // Disables the first n of kKinds.
  void disable_kinds(size_t n) {
    for (size_t i = n; i-- > 0;) (void)api_.cuptiActivityDisable(kKinds[i]);
  }

  // A GPU whose primary context is not active has no work queued, and making it current would
  // create a context (hundreds of MiB of its memory) only to wait for nothing. When the driver
  // cannot tell, every GPU is synchronised.
  bool has_context(int device) const {
    if (!driver_.cuDeviceGet || !driver_.cuDevicePrimaryCtxGetState) return true;
    CUdevice dev = 0;
    if (driver_.cuDeviceGet(&dev, device) != CUDA_SUCCESS) return true;
    unsigned int flags = 0;
    int active = 0;
    if (driver_.cuDevicePrimaryCtxGetState(dev, &flags, &active) != CUDA_SUCCESS) return true;
    return active != 0;
  }

  // Errors are left as they are: one raised by the program's own kernels is the program's to see.
  void synchronize_devices() {
    int current = 0;
    const bool know_current = cudaGetDevice(&current) == cudaSuccess;
    for (int d = 0; d < device_count_; ++d) {
      if (!has_context(d)) continue;
      if (cudaSetDevice(d) == cudaSuccess) (void)cudaDeviceSynchronize();
    }
    if (know_current) (void)cudaSetDevice(current);
  }

  Collected take_collected() {
    std::lock_guard<std::mutex> lock(records_mu_);
    return std::exchange(collected_, Collected{});
  }

  std::string cupti_error(const std::string& call, CUptiResult r) const {
    const char* text = nullptr;
    if (api_.cuptiGetResultString(r, &text) != CUPTI_SUCCESS || !text) text = "unknown CUPTI error";
    return call + " failed: " + text + " (CUptiResult " + std::to_string(static_cast<int>(r)) + ")";
  }

  int64_t to_profiler_ns(int64_t cupti_ns) const { return cupti_ns + offset_ns_; }

  const std::string& kernel_name(const std::string& mangled) {
    auto it = demangled_.find(mangled);
    if (it == demangled_.end()) it = demangled_.emplace(mangled, demangle(mangled)).first;
    return it->second;
  }

  const std::string& call_name(const PendingCall& c) {
    const uint64_t key = (uint64_t(c.driver) << 32) | c.cbid;
    auto it = call_names_.find(key);
    if (it != call_names_.end()) return it->second;
    const char* name = nullptr;
    const auto domain = c.driver ? CUPTI_CB_DOMAIN_DRIVER_API : CUPTI_CB_DOMAIN_RUNTIME_API;
    std::string text;
    if (api_.cuptiGetCallbackName(domain, c.cbid, &name) == CUPTI_SUCCESS && name) {
      text = without_version_suffix(name);
    } else {
      text = std::string(c.driver ? "CUDA driver call " : "CUDA runtime call ") + std::to_string(c.cbid);
    }
    return call_names_.emplace(key, std::move(text)).first->second;
  }

  // Joins the records: each activity gets the op id of the API call that launched it, and that
  // call is reported (runtime calls preferred when CUPTI recorded a driver call with the same id).
  void assemble(Collected& got, std::vector<pd::DeviceActivity>& activities, std::vector<pd::RuntimeCall>& calls) {
    std::unordered_map<uint32_t, const PendingCall*> call_of;
    for (const PendingCall& c : got.calls) {
      auto [it, inserted] = call_of.emplace(c.correlation, &c);
      if (!inserted && it->second->driver && !c.driver) it->second = &c;
    }
    auto known = [&](uint32_t id) { return id != 0 && (call_of.count(id) || got.external.count(id)); };
    auto external_of = [&](uint32_t id) -> int64_t {
      auto it = got.external.find(id);
      return it == got.external.end() ? -1 : static_cast<int64_t>(it->second);
    };
    std::unordered_set<uint32_t> launchers;
    activities.reserve(activities.size() + got.activities.size());
    for (PendingActivity& p : got.activities) {
      pd::DeviceActivity& a = p.activity;
      // A copy's correlation id is documented as the driver call's, with the runtime call's
      // beside it: use whichever names a recorded call.
      uint32_t id = static_cast<uint32_t>(a.correlation);
      if (!known(id) && known(p.runtime_correlation)) id = p.runtime_correlation;
      a.correlation = id;
      a.external_id = external_of(id);
      a.start_ns = to_profiler_ns(a.start_ns);
      a.end_ns = to_profiler_ns(a.end_ns);
      if (p.is_kernel) a.name = kernel_name(a.name);
      if (call_of.count(id)) launchers.insert(id);
      activities.push_back(std::move(a));
    }
    calls.reserve(calls.size() + launchers.size());
    for (uint32_t id : launchers) {
      const PendingCall& c = *call_of.at(id);
      calls.push_back(pd::RuntimeCall{call_name(c), to_profiler_ns(static_cast<int64_t>(c.start)),
                                      to_profiler_ns(static_cast<int64_t>(c.end)),
                                      system_thread_ids_ ? c.thread : 0u, id, external_of(id)});
    }
    auto by_start = [](const auto& x, const auto& y) { return x.start_ns < y.start_ns; };
    std::stable_sort(activities.begin(), activities.end(), by_start);
    std::stable_sort(calls.begin(), calls.end(), by_start);
  }

  // control_mu_: start and stop, and what only they touch. records_mu_: what buffer_completed
  // adds to, from CUPTI's thread.
  std::mutex control_mu_;
  bool running_ = false;
  bool configured_ = false;
  bool profiler_clock_registered_ = false;
  bool system_thread_ids_ = false;  // CUPTI's thread ids are gettid()'s
  int64_t offset_ns_ = 0;  // profiler clock - CUPTI clock (0 with the timestamp callback)
  int device_count_ = 0;
  std::string load_error_;
  std::atomic<bool> loaded_{false};  // api_ is complete (push/pop read it from any thread)
  CuptiApi api_;
  DriverApi driver_;
  std::unordered_map<std::string, std::string> demangled_;
  std::unordered_map<uint64_t, std::string> call_names_;

  std::mutex records_mu_;
  Collected collected_;
};

CuptiTracer& tracer() {
  // Never destroyed: CUPTI's thread may still hand back a buffer while the process exits.
  static auto* instance = new CuptiTracer;
  return *instance;
}

// CUPTI's buffers: 4 MiB, within the 1-10 MiB CUPTI recommends, aligned as its records are.
constexpr size_t kBufferBytes = size_t(4) << 20;
static_assert(kBufferBytes % ACTIVITY_RECORD_ALIGNMENT == 0, "aligned_alloc needs a multiple of the alignment");

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(ACTIVITY_RECORD_ALIGNMENT, kBufferBytes));
  *size = *buffer ? kBufferBytes : 0;  // no buffer: CUPTI drops records rather than failing
  *max_records = 0;                    // as many as fit
}

void CUPTIAPI buffer_completed(CUcontext /*context*/, uint32_t /*stream*/, uint8_t* buffer, size_t /*size*/,
                               size_t valid) {
  if (buffer && valid > 0) tracer().add_buffer(buffer, valid);
  std::free(buffer);
}

const bool registered = [] {
  pd::register_gpu_tracer(&tracer());
  return true;
}();

}  // namespace
}  // namespace ember::cuda
