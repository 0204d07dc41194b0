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

struct LoadOptions {
  std::optional<Device> map_location;  // move every tensor there (torch.load's map_location)
  bool mmap = false;                   // map the file instead of reading it (large checkpoints)
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
