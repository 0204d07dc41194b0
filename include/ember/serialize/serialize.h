#pragma once
// Checkpoints in PyTorch's own .pt format (a zip archive: data.pkl, a pickle protocol 2 of the
// object, plus one entry per tensor storage), and safetensors. Loading never runs code: only an
// allowlist of pickle globals is accepted (as torch.load(weights_only=True)); every size and
// offset read from a file is checked against the file. Writes are atomic (temp file + rename).
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ember/serialize/value.h"

namespace ember {

// Where storages load (torch.load's map_location): map_location, when set, takes every one;
// else a storage saved at a location listed in map_locations (torch's dict form, e.g.
// {"cuda:1", cuda:0}) goes to its device, and any other goes back to where it was saved
// ("cuda:0" needs that GPU), unless restore_locations is false (all stay on the CPU, for a
// caller that maps them itself).
struct LoadOptions {
  std::optional<Device> map_location;
  std::vector<std::pair<std::string, Device>> map_locations;
  bool restore_locations = true;
  bool mmap = false;  // map the file instead of reading it (large checkpoints)
};

// torch.save / torch.load.
void save(const Value& obj, const std::string& path);
Value load(const std::string& path, LoadOptions opts = {});
// The same through memory (tests, fuzzing, network transfer).
std::string save_to_bytes(const Value& obj);
Value load_from_bytes(const std::string& bytes, LoadOptions opts = {});

namespace safetensors {
using Metadata = std::vector<std::pair<std::string, std::string>>;
void save(const std::vector<std::pair<std::string, Tensor>>& tensors, const std::string& path,
          const Metadata& metadata = {});
std::vector<std::pair<std::string, Tensor>> load(const std::string& path, LoadOptions opts = {});
std::string save_to_bytes(const std::vector<std::pair<std::string, Tensor>>& tensors, const Metadata& metadata = {});
std::vector<std::pair<std::string, Tensor>> load_from_bytes(const std::string& bytes, LoadOptions opts = {});
Metadata load_metadata(const std::string& path);
}  // namespace safetensors

// Writes `bytes` to `path` atomically: a temporary file in the same directory, flushed (fsync)
// and renamed over the target, so a crash never leaves a half-written file in its place.
void atomic_write_file(const std::string& path, const std::string& bytes);

}  // namespace ember
