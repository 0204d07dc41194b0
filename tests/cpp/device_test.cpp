// The test device: a second backend in the PrivateUse1 slot ("testdevice"), registered the way
// CUDA registers (an allocator, a DeviceBackend, a kernel per op), whose kernels run the CPU's
// on the same bytes. Every op test body runs on it as well as on the CPU (device_test.h), so
// generic code that assumes the CPU (a result left on the CPU, a device taken from nowhere, a
// kernel missing from the backend) fails here before a real accelerator exists.
#include "device_test.h"

#include <atomic>
#include <cstdlib>
#include <mutex>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <vector>

#include "ember/core/backend.h"
#include "ops/op_handles.h"

namespace ember::testing {
namespace {

constexpr int kTestDeviceCount = 2;  // two, so DeviceGuard has somewhere to switch to

std::atomic<int64_t> g_allocations{0};

class TestDeviceAllocator final : public Allocator {
 public:
  DataPtr allocate(size_t nbytes, Device) override {
    ++g_allocations;
    // 64-byte aligned like the CPU's, so CPU kernels running on these bytes keep their fast paths.
    void* p = std::aligned_alloc(64, (nbytes + 63) / 64 * 64 + 64);
    return {p, [](void* ptr, void*) { std::free(ptr); }, nullptr};
  }
};

class TestDeviceBackend final : public DeviceBackend {
 public:
  DeviceType type() const override { return DeviceType::PrivateUse1; }
  int device_count() const override { return kTestDeviceCount; }
  int current_device() const override { return current_; }
  void set_device(int index) override {
    EMBER_CHECK_INDEX(index >= 0 && index < kTestDeviceCount, "testdevice: invalid device index ", index);
    current_ = index;
  }
  void synchronize(int) override {}
  Stream current_stream(int index) const override { return current_streams_[index]; }
  void set_current_stream(Stream stream) override { current_streams_[stream.device.index] = stream; }
  Stream new_stream(int index, int) override { return Stream{Device(DeviceType::PrivateUse1, int16_t(index)), ++next_stream_}; }
  void synchronize_stream(Stream) override {}
  bool query_stream(Stream) const override { return true; }
  Generator& default_generator(int index) override { return generators_[index]; }
  void copy_bytes(void* dst, Device, const void* src, Device, size_t nbytes, Stream) override {
    if (dst != src && nbytes) std::memcpy(dst, src, nbytes);
  }

 private:
  static thread_local int current_;
  static thread_local Stream current_streams_[kTestDeviceCount];
  std::atomic<int64_t> next_stream_{0};
  Generator generators_[kTestDeviceCount];
};
thread_local int TestDeviceBackend::current_ = 0;
thread_local Stream TestDeviceBackend::current_streams_[kTestDeviceCount] = {
    Stream{Device(DeviceType::PrivateUse1, 0), 0}, Stream{Device(DeviceType::PrivateUse1, 1), 0}};

bool on_test_device(const Tensor& t) { return t.defined() && t.device().type == DeviceType::PrivateUse1; }

// ---- running a CPU kernel on test-device tensors

// One call's bookkeeping: the CPU views made of test-device arguments (so results that share
// their bytes map back to the argument) and the device the results belong to.
struct Call {
  std::vector<std::pair<const TensorImpl*, Tensor>> aliases;  // CPU view impl -> original
  std::optional<Device> device;
  bool host_tensor = false;  // a CPU tensor of one or more dims among the arguments

  Tensor to_cpu(const Tensor& t) {
    if (!on_test_device(t)) {
      if (t.defined() && t.is_cpu() && t.dim() > 0) host_tensor = true;
      return t;
    }
    if (!device) device = t.device();
    const auto& s = t.impl()->storage();
    auto storage = std::make_shared<Storage>(s->data(), s->nbytes(), Device(DeviceType::CPU), nullptr, nullptr);
    Tensor view(std::make_shared<TensorImpl>(std::move(storage), t.dtype(), t.sizes(), t.strides(),
                                             t.storage_offset()));
    view.impl()->set_wrapped_number(t.impl()->is_wrapped_number());
    aliases.emplace_back(view.impl(), t);
    return view;
  }

  // A CPU kernel's result, as a tensor of the test device over the same bytes.
  Tensor to_device(const Tensor& r) {
    if (!r.defined() || !r.is_cpu() || !device) return r;
    for (auto& [impl, original] : aliases) {
      if (r.impl() == impl) return original;  // the kernel returned its argument
      const void* bytes = r.impl()->storage()->data();
      if (bytes && bytes == original.impl()->storage()->data()) {  // (empty storages may all be null)
        // A view of an argument: the argument's storage, the result's window.
        Tensor v(std::make_shared<TensorImpl>(original.impl()->storage(), r.dtype(), r.sizes(), r.strides(),
                                              r.storage_offset()));
        v.impl()->share_version_counter(original.impl()->version_counter());
        return v;
      }
    }
    // Fresh CPU memory: hand it to a test-device storage that keeps the CPU storage alive.
    auto* keep = new StoragePtr(r.impl()->storage());
    auto storage = std::make_shared<Storage>((*keep)->data(), (*keep)->nbytes(), *device,
                                             [](void*, void* ctx) { delete static_cast<StoragePtr*>(ctx); }, keep);
    Tensor t(std::make_shared<TensorImpl>(std::move(storage), r.dtype(), r.sizes(), r.strides(), r.storage_offset()));
    t.impl()->set_wrapped_number(r.impl()->is_wrapped_number());
    return t;
  }
};

// Holds one argument converted for the CPU kernel, for the length of the call.
template <class A> struct Arg {
  A value;
  Arg(Call&, A v) : value(std::forward<A>(v)) {}
  A get() { return std::forward<A>(value); }
};
template <> struct Arg<const Tensor&> {
  Tensor value;
  Arg(Call& c, const Tensor& t) : value(c.to_cpu(t)) {}
  const Tensor& get() { return value; }
};
template <> struct Arg<Tensor&> {
  Tensor value;
  Arg(Call& c, Tensor& t) : value(c.to_cpu(t)) {}
  Tensor& get() { return value; }
};
template <> struct Arg<const std::optional<Tensor>&> {
  std::optional<Tensor> value;
  Arg(Call& c, const std::optional<Tensor>& t) { if (t) value = c.to_cpu(*t); }
  const std::optional<Tensor>& get() { return value; }
};
template <> struct Arg<TensorList> {
  std::vector<Tensor> value;
  Arg(Call& c, TensorList ts) { for (const auto& t : ts) value.push_back(c.to_cpu(t)); }
  TensorList get() { return value; }
};
template <> struct Arg<ArrayRef<std::optional<Tensor>>> {
  std::vector<std::optional<Tensor>> value;
  Arg(Call& c, ArrayRef<std::optional<Tensor>> ts) {
    for (const auto& t : ts) value.push_back(t ? std::optional<Tensor>(c.to_cpu(*t)) : std::nullopt);
  }
  ArrayRef<std::optional<Tensor>> get() { return value; }
};
template <> struct Arg<TensorOptions> {
  TensorOptions value;
  Arg(Call& c, TensorOptions o) : value(o) {
    Device d = o.device_or();
    if (d.type == DeviceType::PrivateUse1) {
      if (!c.device) c.device = d.has_index() ? d : Device(DeviceType::PrivateUse1, 0);
      value.device = Device(DeviceType::CPU);
    }
  }
  TensorOptions get() { return value; }
};

// Random ops without a generator draw from the device's default generator, as on CUDA; a CPU
// generator given to a device op is refused with CUDA's (and torch's) error, so a test that
// draws device inputs from a host generator fails here too, not only on a GPU machine.
template <> struct Arg<Generator*> {
  Call& call;
  Generator* given;
  Arg(Call& c, Generator* g) : call(c), given(g) {}
  Generator* get() {
    if (!given) return call.device ? &default_generator(*call.device) : nullptr;
    EMBER_CHECK(!call.device || given->device().type != DeviceType::CPU, "Expected a '", call.device->str().substr(0, call.device->str().find(':')),
                "' device type for generator but found 'cpu'");
    return given;
  }
};

template <class R> R results_to_device(Call& c, R r) {
  if constexpr (std::is_same_v<R, Tensor>) {
    return c.to_device(r);
  } else if constexpr (std::is_same_v<R, std::vector<Tensor>>) {
    for (auto& t : r) t = c.to_device(t);
    return r;
  } else if constexpr (requires { std::tuple_size<R>::value; }) {
    std::apply([&](auto&... ts) { ((ts = c.to_device(ts)), ...); }, r);
    return r;
  } else {
    return r;
  }
}

// The PrivateUse1 kernel of op Handle: run its CPU kernel on CPU views of the arguments.
template <class Sig> struct Forward;
template <class R, class... A> struct Forward<R(A...)> {
  template <Op<R(A...)>& (*Handle)()> static R call(A... args) {
    Call c;
    std::tuple<Arg<A>...> converted{Arg<A>(c, std::forward<A>(args))...};
    if (!c.device) c.device = Device(DeviceType::PrivateUse1, int16_t(device_backend(DeviceType::PrivateUse1).current_device()));
    // As CUDA: host tensors mix with device tensors only as 0-dim scalars, in copies, and as indices.
    const std::string_view op = Handle().name();
    EMBER_CHECK(!c.host_tensor || !c.aliases.size() || op == "copy_" || op == "index" || op == "index_put_",
                "Expected all tensors to be on the same device, but found at least two devices, ",
                c.device->str(), " and cpu! (when checking argument for ", op, ")");
    auto cpu_kernel = Handle().kernel(DispatchKey::CPU);
    // Inside the CPU kernel everything is the CPU's: temporaries it makes without a device
    // stay on the host, and random ops draw from the test device's generator.
    DefaultDeviceGuard host{Device(DeviceType::CPU)};  // braces: with parentheses this declared a function
    auto run = [&] {
      return std::apply([&](auto&... a) -> R { return cpu_kernel(a.get()...); }, converted);
    };
    if constexpr (std::is_same_v<R, Tensor&>) {
      run();
      return first_arg(args...);  // in-place: the caller's tensor, already written through its view
    } else if constexpr (std::is_void_v<R>) {
      run();
    } else {
      return results_to_device(c, run());
    }
  }
  template <class First, class... Rest> static First& first_arg(First& f, Rest&...) { return f; }
};

Tensor test_empty(IntArrayRef size, TensorOptions opts) {
  for (auto s : size) EMBER_CHECK(s >= 0, "empty: Trying to create tensor with negative dimension ", s, ": ", size);
  DType dt = opts.dtype_or_default();
  auto storage = std::make_shared<Storage>(size_t(shape_numel(size) * element_size(dt)), resolve_device(opts.device_or()));
  return Tensor(std::make_shared<TensorImpl>(std::move(storage), dt, size.vec(), contiguous_strides(size), 0));
}

void register_all() {
  static TestDeviceAllocator allocator;
  static TestDeviceBackend backend;
  rename_privateuse1_backend("testdevice");
  set_allocator(DeviceType::PrivateUse1, &allocator);
  register_device_backend(DeviceType::PrivateUse1, &backend);
  // Every op with a CPU kernel gets a test-device kernel; view ops keep their device-agnostic one.
#define EMBER_OP(name, ...)                                                                     \
  if (ops::name().has_kernel(DispatchKey::CPU) && !ops::name().has_kernel(DispatchKey::PrivateUse1)) \
    ops::name().set_kernel(DispatchKey::PrivateUse1, &Forward<__VA_ARGS__>::template call<&ops::name>);
#include "ops/op_list.h"
#undef EMBER_OP
  // Allocation goes through the device's own allocator, as a real backend's does.
  ops::empty().set_kernel(DispatchKey::PrivateUse1, test_empty);
}

}  // namespace

Device test_device(int index) {
  static std::once_flag once;
  std::call_once(once, register_all);
  return Device(DeviceType::PrivateUse1, int16_t(index));
}

int64_t test_device_allocations() { return g_allocations.load(); }

std::vector<Device> test_devices() {
  std::vector<Device> out{Device(DeviceType::CPU)};
  out.push_back(test_device());
  if (has_device_backend(DeviceType::CUDA) && device_backend(DeviceType::CUDA).device_count() > 0)
    out.push_back(Device(DeviceType::CUDA, 0));
  return out;
}

void run_device_case(Device device, const std::function<void()>& body) {
  // cuDNN convolutions allow TF32 by default (torch.backends.cudnn.allow_tf32), which rounds
  // float32 products to 10 mantissa bits; the cases compare float32 results at float32
  // tolerances, so CUDA runs them with it off, as torch's own tests do (tf32_off).
  struct CudnnTf32Off {
    bool on = false;
    explicit CudnnTf32Off(bool cuda) : on(cuda && cudnn_allow_tf32()) { if (on) set_cudnn_allow_tf32(false); }
    ~CudnnTf32Off() { if (on) set_cudnn_allow_tf32(true); }
  } tf32_off(device.is_cuda());
  try {
    body();
  } catch (const NotImplementedError& e) {
    const std::string msg = e.what();
    if (!device.is_cuda() || msg.find("from the 'CUDA' backend: no kernel is registered") == std::string::npos) throw;
    GTEST_SKIP() << "no CUDA kernel yet: " << msg.substr(0, msg.find(" with arguments"));
  }
}

}  // namespace ember::testing
