// The CUDA builder of ember.compile's fused kernels (nvrtc_codegen.h, device_codegen.h).
//
// NVRTC has no C++ standard library, and the formulas header includes <cmath>, <cstdint> and
// <type_traits> for what it uses of them (a few type traits, the fixed-width integers, NAN,
// INFINITY and the M_ constants); the builder hands NVRTC small headers of those names with just
// that, and the formulas themselves from memory (embedded at build time by
// cmake/embed_text.cmake), so nothing depends on a source tree or CUDA's include directory at
// run time.
//
// A cubin is cached as <kernel cache>/<key>.cubin, the key a hash of everything that decides its
// bytes (source, formulas, shims, options, architecture, NVRTC's version); the file starts with
// the key, so a foreign or torn file is rebuilt, never loaded. Written under a temporary name and
// renamed, as the CPU's objects.
#include "cuda/nvrtc_codegen.h"

#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <nvrtc.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <fstream>
#include <mutex>
#include <sstream>
#include <unordered_map>
#include <vector>

#include "compile/device_codegen.h"
#include "compile/kernel_cache.h"
#include "cuda/cuda_check.h"
#include "cuda/cuda_state.h"
#include "ember/core/errors.h"

namespace ember::cuda {
namespace {

namespace fs = std::filesystem;

const char kFormulas[] =
#include "elementwise_formulas_text.inc"
    ;

const char kTypeTraits[] = R"(#pragma once
// (ember's stand-in for <type_traits> under NVRTC: what ops/elementwise_formulas.h uses)
namespace std {
template <class T, T v> struct integral_constant { static constexpr T value = v; };
using true_type = integral_constant<bool, true>;
using false_type = integral_constant<bool, false>;
template <class A, class B> struct is_same : false_type {};
template <class A> struct is_same<A, A> : true_type {};
template <class A, class B> inline constexpr bool is_same_v = is_same<A, B>::value;
template <class T> struct remove_cv { using type = T; };
template <class T> struct remove_cv<const T> { using type = T; };
template <class T> struct remove_cv<volatile T> { using type = T; };
template <class T> struct remove_cv<const volatile T> { using type = T; };
template <class T> using remove_cv_t = typename remove_cv<T>::type;
template <class T, class... U> inline constexpr bool one_of_v = (is_same_v<remove_cv_t<T>, U> || ...);
template <class T> inline constexpr bool is_floating_point_v = one_of_v<T, float, double, long double>;
template <class T> inline constexpr bool is_integral_v =
    one_of_v<T, bool, char, signed char, unsigned char, short, unsigned short, int, unsigned, long, unsigned long,
             long long, unsigned long long, char16_t, char32_t, wchar_t>;
template <class T> inline constexpr bool is_arithmetic_v = is_integral_v<T> || is_floating_point_v<T>;
template <class T> inline constexpr bool is_signed_v = is_arithmetic_v<T> && T(-1) < T(0);
template <class T> inline constexpr bool is_unsigned_v = is_arithmetic_v<T> && T(0) < T(-1);
template <bool B, class T, class F> struct conditional { using type = T; };
template <class T, class F> struct conditional<false, T, F> { using type = F; };
template <bool B, class T, class F> using conditional_t = typename conditional<B, T, F>::type;
template <class T> struct make_unsigned;
template <> struct make_unsigned<char> { using type = unsigned char; };
template <> struct make_unsigned<signed char> { using type = unsigned char; };
template <> struct make_unsigned<unsigned char> { using type = unsigned char; };
template <> struct make_unsigned<short> { using type = unsigned short; };
template <> struct make_unsigned<unsigned short> { using type = unsigned short; };
template <> struct make_unsigned<int> { using type = unsigned; };
template <> struct make_unsigned<unsigned> { using type = unsigned; };
template <> struct make_unsigned<long> { using type = unsigned long; };
template <> struct make_unsigned<unsigned long> { using type = unsigned long; };
template <> struct make_unsigned<long long> { using type = unsigned long long; };
template <> struct make_unsigned<unsigned long long> { using type = unsigned long long; };
template <class T> using make_unsigned_t = typename make_unsigned<T>::type;
template <class T> struct make_signed;
template <> struct make_signed<char> { using type = signed char; };
template <> struct make_signed<signed char> { using type = signed char; };
template <> struct make_signed<unsigned char> { using type = signed char; };
template <> struct make_signed<short> { using type = short; };
template <> struct make_signed<unsigned short> { using type = short; };
template <> struct make_signed<int> { using type = int; };
template <> struct make_signed<unsigned> { using type = int; };
template <> struct make_signed<long> { using type = long; };
template <> struct make_signed<unsigned long> { using type = long; };
template <> struct make_signed<long long> { using type = long long; };
template <> struct make_signed<unsigned long long> { using type = long long; };
template <class T> using make_signed_t = typename make_signed<T>::type;
}  // namespace std
)";

const char kCstdint[] = R"(#pragma once
// (ember's stand-in for <cstdint> under NVRTC)
typedef signed char int8_t;
typedef short int16_t;
typedef int int32_t;
typedef long long int64_t;
typedef unsigned char uint8_t;
typedef unsigned short uint16_t;
typedef unsigned int uint32_t;
typedef unsigned long long uint64_t;
namespace std {
using ::int8_t; using ::int16_t; using ::int32_t; using ::int64_t;
using ::uint8_t; using ::uint16_t; using ::uint32_t; using ::uint64_t;
}
)";

// (the device math functions themselves are NVRTC's built-ins)
const char kCmath[] = R"(#pragma once
// (ember's stand-in for <cmath> under NVRTC: the macros ops/elementwise_formulas.h uses)
#define NAN __int_as_float(0x7fc00000)
#define INFINITY __int_as_float(0x7f800000)
#define M_SQRT2 1.41421356237309504880
#define M_SQRT1_2 0.70710678118654752440
#define M_2_SQRTPI 1.12837916709551257390
#define M_PI 3.14159265358979323846
#define M_LN2 0.69314718055994530942
#define M_LN10 2.30258509299404568402
)";

// The generated code writes infinities and NaN as GCC builtins (fusion.cpp: float_literal).
const char kPrelude[] =
    "#define __builtin_inff() __int_as_float(0x7f800000)\n#define __builtin_nanf(s) __int_as_float(0x7fc00000)\n";

// ---------------------------------------------------------------- libnvrtc, opened at first use
struct Nvrtc {
  decltype(&nvrtcCreateProgram) create = nullptr;
  decltype(&nvrtcCompileProgram) compile = nullptr;
  decltype(&nvrtcGetProgramLogSize) log_size = nullptr;
  decltype(&nvrtcGetProgramLog) log = nullptr;
  decltype(&nvrtcGetCUBINSize) cubin_size = nullptr;
  decltype(&nvrtcGetCUBIN) cubin = nullptr;
  decltype(&nvrtcDestroyProgram) destroy = nullptr;
  decltype(&nvrtcVersion) version = nullptr;
  std::string error;  // why it could not be opened
  std::string version_text;
};

const Nvrtc& nvrtc() {
  static const Nvrtc lib = [] {
    Nvrtc n;
    void* h = nullptr;
    for (const char* name : {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"})
      if ((h = dlopen(name, RTLD_NOW | RTLD_LOCAL))) break;
    if (!h) {
      n.error = "libnvrtc (NVRTC, CUDA's run-time compiler) was not found on the library path";
      return n;
    }
    auto sym = [&](auto& fn, const char* name) { fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(h, name)); };
    sym(n.create, "nvrtcCreateProgram");
    sym(n.compile, "nvrtcCompileProgram");
    sym(n.log_size, "nvrtcGetProgramLogSize");
    sym(n.log, "nvrtcGetProgramLog");
    sym(n.cubin_size, "nvrtcGetCUBINSize");
    sym(n.cubin, "nvrtcGetCUBIN");
    sym(n.destroy, "nvrtcDestroyProgram");
    sym(n.version, "nvrtcVersion");
    if (!n.create || !n.compile || !n.log_size || !n.log || !n.cubin_size || !n.cubin || !n.destroy || !n.version) {
      n.error = "libnvrtc lacks the functions ember uses (nvrtcGetCUBIN needs CUDA 11.1 or newer)";
      n.create = nullptr;
      return n;
    }
    int major = 0, minor = 0;
    n.version(&major, &minor);
    n.version_text = std::to_string(major) + "." + std::to_string(minor);
    return n;
  }();
  return lib;
}

std::vector<std::string> options(const std::string& arch) {
  return {"--gpu-architecture=" + arch, "--std=c++20", "-DNDEBUG"};
}

// ---------------------------------------------------------------- launching

int64_t param_bytes(const compiler::DeviceKernelShape& s, bool backward) {
  const int64_t in = std::max(s.n_in, 1), out = std::max(s.n_out, 1);
  const int64_t bytes = 16 + 8 * in + 8 * out + (backward ? 8 * in : 0) + 4 * in;
  return (bytes + 7) / 8 * 8;
}

class NvrtcKernel final : public compiler::DeviceKernel {
 public:
  NvrtcKernel(const std::string& image, const compiler::DeviceKernelShape& shape) : shape_(shape) {
    EMBER_CUDA_CHECK(cudaLibraryLoadData(&library_, image.data(), nullptr, nullptr, 0, nullptr, nullptr, 0));
    EMBER_CUDA_CHECK(cudaLibraryGetKernel(&forward_, library_, "ember_fused"));
    if (shape.has_backward) EMBER_CUDA_CHECK(cudaLibraryGetKernel(&backward_, library_, "ember_fused_backward"));
  }
  // (the library lives as long as the process: autograd nodes may still hold the kernel)

  void run(const Device& device, int64_t numel, int64_t inner, const void* const* in, void* const* out,
           const float* scalars) const override {
    std::vector<char> p(size_t(param_bytes(shape_, false)), 0);
    char* at = header(p.data(), numel, inner);
    at = put(at, in, shape_.n_in);
    at = put(at, out, shape_.n_out);
    std::memcpy(at, scalars, sizeof(float) * size_t(shape_.n_in));
    launch(device, forward_, numel, p);
  }

  void run_backward(const Device& device, int64_t numel, int64_t inner, const void* const* in,
                    const void* const* grad_out, void* const* grad_in, const float* scalars) const override {
    EMBER_CHECK(backward_, "ember.compile: this fused CUDA kernel was built without a backward");
    std::vector<char> p(size_t(param_bytes(shape_, true)), 0);
    char* at = header(p.data(), numel, inner);
    at = put(at, in, shape_.n_in);
    at = put(at, grad_out, shape_.n_out);
    at = put(at, grad_in, shape_.n_in);
    std::memcpy(at, scalars, sizeof(float) * size_t(shape_.n_in));
    launch(device, backward_, numel, p);
  }

 private:
  static char* header(char* at, int64_t numel, int64_t inner) {
    const long long v[2] = {numel, inner};
    std::memcpy(at, v, sizeof v);
    return at + sizeof v;
  }
  // n pointers into an array of max(n, 1) slots
  template <class P> static char* put(char* at, P const* ptrs, int n) {
    if (n) std::memcpy(at, ptrs, sizeof(void*) * size_t(n));
    return at + sizeof(void*) * size_t(std::max(n, 1));
  }
  void launch(const Device& on, cudaKernel_t kernel, int64_t numel, std::vector<char>& params) const {
    if (numel == 0) return;
    const int device = on.index >= 0 ? on.index : current_gpu();
    GpuGuard guard(device);  // (the library is context-independent: its kernels run on any GPU)
    // enough blocks to fill the GPU (8 of 256 threads per SM), each thread striding on from there
    static int sms[kMaxGpus] = {};
    if (!sms[device]) EMBER_CUDA_CHECK(cudaDeviceGetAttribute(&sms[device], cudaDevAttrMultiProcessorCount, device));
    const int64_t blocks = std::min<int64_t>((numel + 255) / 256, int64_t(sms[device]) * 8);
    void* args[] = {params.data()};
    EMBER_CUDA_CHECK(cudaLaunchKernel(reinterpret_cast<const void*>(kernel), dim3(unsigned(blocks)), dim3(256), args, 0,
                                      current_cuda_stream(device)));
  }

  compiler::DeviceKernelShape shape_;
  cudaLibrary_t library_ = nullptr;
  cudaKernel_t forward_ = nullptr, backward_ = nullptr;
};

std::string architecture() {
  const int device = current_gpu();
  int major = 0, minor = 0;
  EMBER_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  EMBER_CUDA_CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device));
  return "sm_" + std::to_string(major) + std::to_string(minor);
}

std::shared_ptr<const compiler::DeviceKernel> build(const std::string& source,
                                                    const compiler::DeviceKernelShape& shape) {
  static std::mutex mu;
  static std::unordered_map<std::string, std::string> images;  // key -> cubin, this process
  const std::string arch = architecture();
  std::string why;
  EMBER_CHECK(nvrtc_available(&why), "ember.compile: CUDA kernels cannot be built: ", why);
  std::string everything = nvrtc().version_text + "\n" + arch + "\n" + kFormulas + kTypeTraits + kCstdint + kCmath +
                           kPrelude + "\n" + source;
  for (const auto& o : options(arch)) everything += "\n" + o;
  const std::string key = compiler::content_key(everything) + "-" + arch;
  const std::string magic = "ember cubin " + key + "\n";
  const auto start = std::chrono::steady_clock::now();
  std::lock_guard<std::mutex> lock(mu);
  bool from_cache = true;
  auto it = images.find(key);
  if (it == images.end()) {
    const fs::path dir = compiler::kernel_cache_dir(), file = dir / (key + ".cubin");
    std::string image;
    {
      std::ifstream f(file, std::ios::binary);
      std::stringstream bytes;
      bytes << f.rdbuf();
      const std::string all = bytes.str();
      if (all.size() > magic.size() && all.compare(0, magic.size(), magic) == 0) image = all.substr(magic.size());
    }
    if (image.empty()) {
      from_cache = false;
      image = compile_to_cubin(source, arch);
      std::error_code ec;
      fs::create_directories(dir, ec);
      const fs::path tmp = dir / (key + ".tmp" + std::to_string(::getpid()));
      {
        std::ofstream f(tmp, std::ios::binary);
        f << magic << image;
      }
      fs::rename(tmp, file, ec);  // (a cache that cannot be written only costs the next process a build)
      if (ec) fs::remove(tmp, ec);
    }
    it = images.emplace(key, std::move(image)).first;
  }
  auto kernel = std::make_shared<NvrtcKernel>(it->second, shape);
  kernel->from_cache = from_cache;
  kernel->seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return kernel;
}

[[maybe_unused]] const bool registered = (compiler::register_device_codegen(DeviceType::CUDA, &build), true);

}  // namespace

bool nvrtc_available(std::string* why) {
  const Nvrtc& n = nvrtc();
  if (why) *why = n.error;
  return n.create != nullptr;
}

std::string compile_to_cubin(const std::string& source, const std::string& arch) {
  const Nvrtc& n = nvrtc();
  EMBER_CHECK(n.create, "ember.compile: CUDA kernels cannot be built: ", n.error);
  const char* headers[] = {kFormulas, kTypeTraits, kCstdint, kCmath};
  const char* names[] = {"ops/elementwise_formulas.h", "type_traits", "cstdint", "cmath"};
  const std::string text = std::string(kPrelude) + source;
  nvrtcProgram prog = nullptr;
  nvrtcResult r = n.create(&prog, text.c_str(), "ember_fused.cu", 4, headers, names);
  EMBER_CHECK(r == NVRTC_SUCCESS, "ember.compile: nvrtcCreateProgram failed (", int(r), ")");
  const std::vector<std::string> opts = options(arch);
  std::vector<const char*> argv;
  for (const auto& o : opts) argv.push_back(o.c_str());
  r = n.compile(prog, int(argv.size()), argv.data());
  size_t log_size = 0;
  n.log_size(prog, &log_size);
  std::string log(log_size, '\0');
  if (log_size) n.log(prog, log.data());
  std::string cubin;
  if (r == NVRTC_SUCCESS) {
    size_t size = 0;
    n.cubin_size(prog, &size);
    cubin.resize(size);
    n.cubin(prog, cubin.data());
  }
  n.destroy(&prog);
  EMBER_CHECK(r == NVRTC_SUCCESS && !cubin.empty(), "ember.compile: NVRTC could not compile a fused kernel for ", arch,
              ":\n", log, "\n", source);
  return cubin;
}

}  // namespace ember::cuda
