// Building generated kernels (fusion.h: build_cpu_kernel): the system C++ compiler, with the
// flags of ember's own elementwise kernels, into a shared object cached on disk by a hash of
// everything that decides its contents (source, compiler, flags, the ember headers it includes),
// so a second process starts
// without compiling. The object is written under a temporary name and renamed into place, so a
// reader never sees half of one, and it carries its key, so a file that does not match (a
// collision, a foreign file) is rebuilt instead of trusted.
#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <unordered_map>
#include <vector>

#include "compile/fusion.h"
#include "compile/kernel_cache.h"
#include "ember/core/errors.h"

#ifndef EMBER_SOURCE_DIR
#error "EMBER_SOURCE_DIR (the ember source tree, whose src/ the generated kernels include) must be defined"
#endif
#ifndef EMBER_CXX_COMPILER
#define EMBER_CXX_COMPILER "c++"
#endif
#ifndef EMBER_CODEGEN_NATIVE
#define EMBER_CODEGEN_NATIVE 1
#endif

namespace fs = std::filesystem;

namespace ember::compiler {

std::string content_key(const std::string& s) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
  return std::string(hex) + "-" + std::to_string(s.size());
}

Toolchain toolchain() {
  Dl_info info{};
  const bool found = dladdr(reinterpret_cast<void*>(&toolchain), &info) != 0 && info.dli_fname;
  const char* cxx = std::getenv("EMBER_CXX");
  return {cxx && *cxx ? cxx : EMBER_CXX_COMPILER, (fs::path(EMBER_SOURCE_DIR) / "include").string(),
          found ? fs::absolute(info.dli_fname).string() : std::string()};
}

fs::path kernel_cache_dir() {
  if (const char* d = std::getenv("EMBER_CACHE_DIR"); d && *d) return fs::path(d) / "kernels";
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return fs::path(x) / "ember" / "kernels";
  if (const char* h = std::getenv("HOME"); h && *h) return fs::path(h) / ".cache" / "ember" / "kernels";
  return fs::temp_directory_path() / "ember-kernels";
}

namespace {


std::string compiler() {
  return toolchain().cxx;
}

std::string flags() {
  std::string f = "-O3 -DNDEBUG -std=c++20 -fPIC -shared -fno-math-errno -ffp-contract=off";
  if (EMBER_CODEGEN_NATIVE) f += " -march=native";
  return f + " -I" + std::string(EMBER_SOURCE_DIR) + "/src -I" + std::string(EMBER_SOURCE_DIR) + "/include";
}

// The ember headers a kernel includes (cpu/elementwise_math.h, cpu/vec16.h, ember/core/half.h
// and, transitively, their local includes, from src/ or include/), read once per process: part of the cache key, so an ember whose
// formulas changed builds new kernels instead of loading ones compiled against the old headers.
const std::string& header_fingerprint() {
  static const std::string all = [] {
    std::string text_of_all;
    std::vector<std::string> todo = {"cpu/elementwise_math.h", "cpu/vec16.h", "ember/core/half.h"};
    std::vector<std::string> seen;
    while (!todo.empty()) {
      const std::string rel = todo.back();
      todo.pop_back();
      if (std::find(seen.begin(), seen.end(), rel) != seen.end()) continue;
      seen.push_back(rel);
      const fs::path in_src = fs::path(EMBER_SOURCE_DIR) / "src" / rel;
      std::ifstream f(fs::exists(in_src) ? in_src : fs::path(EMBER_SOURCE_DIR) / "include" / rel);
      std::stringstream text;
      text << f.rdbuf();
      const std::string body = text.str();
      text_of_all += rel + "\n" + body;
      for (size_t at = body.find("#include \""); at != std::string::npos; at = body.find("#include \"", at + 1)) {
        const size_t end = body.find('"', at + 10);
        if (end != std::string::npos) todo.push_back(body.substr(at + 10, end - at - 10));
      }
    }
    return content_key(text_of_all);  // (hashed once)
  }();
  return all;
}

// The key the object must carry, appended to the source as a symbol.
std::string with_key(const std::string& source, const std::string& key) {
  return source + "\nextern \"C\" const char ember_fused_key[] = \"" + key + "\";\n";
}

BuiltKernel open_object(const fs::path& so, const std::string& key) {
  void* h = dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) return {};
  const auto* stored = static_cast<const char*>(dlsym(h, "ember_fused_key"));
  BuiltKernel k;
  k.fn = reinterpret_cast<FusedKernelFn>(dlsym(h, "ember_fused"));
  k.backward = reinterpret_cast<FusedBackwardFn>(dlsym(h, "ember_fused_backward"));
  if (!stored || key != stored || !k.fn) {
    dlclose(h);
    return {};
  }
  return k;  // never closed: the kernel lives as long as the process
}

std::string run_compiler(const fs::path& src, const fs::path& out) {
  const fs::path log = out.string() + ".log";
  const std::string cmd = compiler() + " " + flags() + " -o '" + out.string() + "' '" + src.string() + "' > '" +
                          log.string() + "' 2>&1";
  const int rc = std::system(cmd.c_str());
  std::ifstream in(log);
  std::stringstream text;
  text << in.rdbuf();
  std::error_code ec;
  fs::remove(log, ec);
  return rc == 0 ? std::string() : "`" + cmd + "` failed:\n" + text.str();
}

}  // namespace

BuiltKernel build_cpu_kernel(const std::string& source) {
  static std::mutex mu;
  static std::unordered_map<std::string, BuiltKernel> loaded;
  const std::string everything = compiler() + "\n" + flags() + "\n" + header_fingerprint() + "\n" + source;
  const std::string key = content_key(everything);
  std::lock_guard<std::mutex> lock(mu);
  if (auto it = loaded.find(key); it != loaded.end()) {
    BuiltKernel k = it->second;
    k.from_cache = true;
    k.seconds = 0;
    return k;
  }
  const auto start = std::chrono::steady_clock::now();
  const fs::path dir = kernel_cache_dir();
  std::error_code ec;
  fs::create_directories(dir, ec);
  EMBER_CHECK(!ec, "ember.compile: cannot create the kernel cache ", dir.string(), ": ", ec.message(),
              " (EMBER_CACHE_DIR picks another place)");
  const fs::path so = dir / (key + ".so");
  BuiltKernel built;
  if (fs::exists(so)) built = open_object(so, key);
  built.from_cache = built.fn != nullptr;
  if (!built.fn) {
    const std::string tmp = key + ".tmp" + std::to_string(::getpid());
    const fs::path src = dir / (tmp + ".cpp"), obj = dir / (tmp + ".so");
    {
      std::ofstream f(src);
      f << with_key(source, key);
      EMBER_CHECK(f.good(), "ember.compile: cannot write ", src.string());
    }
    const std::string err = run_compiler(src, obj);
    fs::remove(src, ec);
    if (!err.empty()) {
      fs::remove(obj, ec);
      throw Error("ember.compile: building a fused kernel failed (set EMBER_CXX to another compiler, or "
                         "EMBER_COMPILE_FUSE=0 to run without fusion): " + err);
    }
    fs::rename(obj, so, ec);  // atomic: a concurrent builder of the same key wrote the same bytes
    EMBER_CHECK(!ec, "ember.compile: cannot move the kernel into ", so.string(), ": ", ec.message());
    built = open_object(so, key);
    EMBER_CHECK(built.fn, "ember.compile: the kernel built into ", so.string(), " does not load: ",
                dlerror() ? dlerror() : "its key does not match");
    built.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  loaded[key] = built;
  return built;
}

}  // namespace ember::compiler
