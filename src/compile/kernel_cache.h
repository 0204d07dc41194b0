#pragma once
// Where generated kernels are cached on disk, and the hash that names them (codegen_cpu.cpp
// defines both; the CPU's shared objects and a device builder's binaries share the directory).
#include <filesystem>
#include <string>

namespace ember::compiler {

// $EMBER_CACHE_DIR/kernels, else $XDG_CACHE_HOME/ember/kernels, else ~/.cache/ember/kernels.
std::filesystem::path kernel_cache_dir();
// A file name for contents s: its FNV-1a hash in hex and its length ("<16 hex>-<bytes>").
std::string content_key(const std::string& s);

// What code built against this ember needs (the generated kernels, ember.utils.cpp_extension):
// the C++ compiler ember was built with ($EMBER_CXX overrides it), ember's public headers and
// the path of the loaded libember.
struct Toolchain {
  std::string cxx, include_dir, library;
};
Toolchain toolchain();

}  // namespace ember::compiler
