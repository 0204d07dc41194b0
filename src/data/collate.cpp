// default_collate / default_convert: torch.utils.data's rules for turning samples into batches.
#include "ember/data/collate.h"

#include "ember/core/errors.h"
#include "ember/ops.h"

namespace ember::data {

namespace {

Value collate_numbers(const std::vector<Value>& batch) {
  bool all_bool = true, any_double = false;
  for (const Value& v : batch) {
    all_bool &= v.is_bool();
    any_double |= v.is_double();
  }
  if (all_bool) {
    std::vector<uint8_t> flags;
    for (const Value& v : batch) flags.push_back(v.to_bool());
    return tensor(flags, {.dtype = kUInt8}).to(kBool);
  }
  if (any_double) {
    std::vector<double> xs;
    for (const Value& v : batch) xs.push_back(v.to_double());
    return tensor(xs, {.dtype = kFloat64});
  }
  std::vector<int64_t> xs;
  for (const Value& v : batch) xs.push_back(v.to_int());
  return tensor(xs, {.dtype = kInt64});
}

[[noreturn]] void mixed_kinds(const Value& first, const Value& other) {
  throw TypeError(detail::cat("default_collate: every sample must have the same structure, but got a ",
                              value_kind_name(first.kind()), " and a ", value_kind_name(other.kind())));
}

}  // namespace

Value default_collate(std::vector<Value> batch) {
  EMBER_CHECK_VALUE(!batch.empty(), "default_collate: the batch is empty");
  const Value& first = batch.front();
  Value::Kind kind = first.kind();
  for (const Value& v : batch) {
    bool same = v.kind() == kind || (first.is_number() && v.is_number()) ||
                ((first.is_list() || first.is_tuple()) && (v.is_list() || v.is_tuple()));
    if (!same) mixed_kinds(first, v);
  }
  switch (kind) {
    case Value::Kind::Tensor: {
      std::vector<Tensor> ts;
      ts.reserve(batch.size());
      for (const Value& v : batch) ts.push_back(v.to_tensor());
      return stack(ts, 0);
    }
    case Value::Kind::Bool:
    case Value::Kind::Int:
    case Value::Kind::Double:
      return collate_numbers(batch);
    case Value::Kind::String: {
      ValueList strings(batch.begin(), batch.end());
      return Value::list(std::move(strings));
    }
    case Value::Kind::Dict: {
      ValueItems out;
      for (const auto& [key, unused] : first.items()) {
        std::vector<Value> field;
        field.reserve(batch.size());
        for (const Value& v : batch) {
          EMBER_CHECK_AS(TypeError, v.contains(key), "default_collate: a sample lacks the key ", key.repr(),
                         " that the first sample has");
          field.push_back(v.at(key));
        }
        out.emplace_back(key, default_collate(std::move(field)));
      }
      return Value::dict(std::move(out));
    }
    case Value::Kind::List:
    case Value::Kind::Tuple: {
      size_t n = first.size();
      for (const Value& v : batch)
        EMBER_CHECK_AS(Error, v.size() == n, "each element in list of batch should be of equal size");
      // Tuples collate to lists, as PyTorch does ("images, labels = batch" works either way).
      ValueList out;
      out.reserve(n);
      for (size_t i = 0; i < n; ++i) {
        std::vector<Value> field;
        field.reserve(batch.size());
        for (const Value& v : batch) field.push_back(v.items_list()[i]);
        out.push_back(default_collate(std::move(field)));
      }
      return Value::list(std::move(out));
    }
    case Value::Kind::None:
      break;
  }
  throw TypeError(detail::cat("default_collate: batch must contain tensors, numbers, strings, dicts or lists; found ",
                              value_kind_name(kind)));
}

Value default_convert(Value sample) { return sample; }

}  // namespace ember::data
