#pragma once
// Collation: how a DataLoader turns a list of samples into a batch (torch.utils.data's
// default_collate and default_convert).
#include <functional>
#include <vector>

#include "ember/serialize/value.h"

namespace ember::data {

using CollateFn = std::function<Value(std::vector<Value>)>;

// Batches samples of one structure: tensors are stacked along a new first dimension (all must
// have one shape), ints become an int64 tensor, floats a float64 tensor, bools a bool tensor,
// strings a list of strings, dicts a dict of collated values per key, and tuples and lists a list
// of collated fields (each sample must have as many), recursively. None is a TypeError.
Value default_collate(std::vector<Value> batch);

// Without automatic batching: numbers, strings and tensors pass through unchanged; containers
// are converted element-wise.
Value default_convert(Value sample);

}  // namespace ember::data
