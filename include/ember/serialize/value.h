#pragma once
// ember::Value: the nested data a checkpoint holds (PyTorch's pickled objects, restricted to what
// weights_only=True accepts): None, bool, int, float, str, Tensor, list, tuple and dict (ordered,
// keys str or int). Optimizer and module state dicts are Values; save()/load() write and read
// them in PyTorch's .pt format.
//
//   Value ckpt = Value::dict();
//   ckpt["epoch"] = 3;
//   ckpt["model_state_dict"] = to_value(model.state_dict());
//   ckpt["loss"] = 0.25;
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "ember/tensor.h"

namespace ember {

class Value;
using ValueList = std::vector<Value>;
using ValueItems = std::vector<std::pair<Value, Value>>;  // dict entries in insertion order

class Value {
 public:
  enum class Kind : uint8_t { None, Bool, Int, Double, String, Tensor, List, Tuple, Dict };

  Value() = default;
  Value(std::nullptr_t) {}
  Value(bool v) : v_(v) {}
  Value(int v) : v_(int64_t(v)) {}
  Value(int64_t v) : v_(v) {}
  Value(uint64_t v) : v_(int64_t(v)) {}
  Value(double v) : v_(v) {}
  Value(float v) : v_(double(v)) {}
  Value(const char* s) : v_(std::string(s)) {}
  Value(std::string s) : v_(std::move(s)) {}
  Value(ember::Tensor t) : v_(std::move(t)) {}

  static Value list(ValueList items = {});
  static Value tuple(ValueList items = {});
  static Value dict(ValueItems items = {});

  Kind kind() const;
  bool is_none() const { return kind() == Kind::None; }
  bool is_bool() const { return kind() == Kind::Bool; }
  bool is_int() const { return kind() == Kind::Int; }
  bool is_double() const { return kind() == Kind::Double; }
  bool is_number() const { return is_int() || is_double() || is_bool(); }
  bool is_string() const { return kind() == Kind::String; }
  bool is_tensor() const { return kind() == Kind::Tensor; }
  bool is_list() const { return kind() == Kind::List; }
  bool is_tuple() const { return kind() == Kind::Tuple; }
  bool is_dict() const { return kind() == Kind::Dict; }

  // Typed access; the wrong kind is an Error naming both kinds.
  bool to_bool() const;
  int64_t to_int() const;
  double to_double() const;  // ints convert
  const std::string& to_string() const;
  const ember::Tensor& to_tensor() const;
  ember::Tensor& to_tensor();
  const ValueList& items_list() const;  // list or tuple
  ValueList& items_list();
  const ValueItems& items() const;  // dict
  ValueItems& items();

  // Indexing as in Python: a dict by key (str or int; operator[] inserts None when missing), a
  // list or tuple by position (an IndexError when out of range).
  Value& operator[](const Value& key);
  const Value& operator[](const Value& key) const { return at(key); }
  const Value& at(const Value& key) const;
  bool contains(const Value& key) const;
  size_t size() const;
  void push_back(Value v) { items_list().push_back(std::move(v)); }

  // Structural equality; tensors compare by dtype, shape and values.
  bool operator==(const Value& o) const;
  std::string repr() const;  // Python-like: {'epoch': 3, 'loss': 0.25}

 private:
  struct Seq { ValueList items; };
  struct Map { ValueItems items; };
  std::variant<std::monostate, bool, int64_t, double, std::string, ember::Tensor, std::shared_ptr<Seq>,
               std::shared_ptr<Seq>, std::shared_ptr<Map>>
      v_;
  static constexpr size_t kListIndex = 6, kTupleIndex = 7;
};

const char* value_kind_name(Value::Kind k);

// Module state dicts (ordered name -> tensor) as Values and back.
Value to_value(const std::vector<std::pair<std::string, Tensor>>& state_dict);
std::vector<std::pair<std::string, Tensor>> to_state_dict(const Value& dict);

}  // namespace ember
