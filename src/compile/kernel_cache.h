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

}  // namespace ember::compiler
