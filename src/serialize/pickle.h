#pragma once
// The subset of Python's pickle (protocol 2) that PyTorch's .pt files use, for ember::Value.
// The reader is a small VM over an allowlist of globals (what torch.load(weights_only=True)
// accepts); it never calls out to anything else, and checks every length, index and depth.
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "ember/serialize/value.h"

namespace ember::serialize {

// "FloatStorage" etc. <-> DType.
const char* storage_type_name(DType t);
bool dtype_from_storage_name(std::string_view name, DType* out);

// How a tensor is written: its storage (by key) and its window onto it.
struct TensorRecord {
  std::string key;  // the zip entry "data/<key>"
  DType dtype;
  int64_t storage_numel;
  int64_t offset;
  Shape sizes, strides;
  std::string location = "cpu";  // torch's storage location: "cpu", "cuda:0", ...
};
using PersistFn = std::function<TensorRecord(const Tensor&)>;
std::string pickle_dump(const Value& v, const PersistFn& persist);

// Returns the storage (a 1-D tensor of `numel` elements) for a key, on the device its recorded
// location names; throws if it is missing.
using StorageFn =
    std::function<Tensor(const std::string& key, DType dtype, int64_t numel, const std::string& location)>;
Value pickle_load(std::string_view data, const StorageFn& storage);

}  // namespace ember::serialize
