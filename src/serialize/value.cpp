#include "ember/serialize/value.h"

#include <charconv>
#include <sstream>

#include "ember/ops.h"

namespace ember {

const char* value_kind_name(Value::Kind k) {
  switch (k) {
    case Value::Kind::None: return "None";
    case Value::Kind::Bool: return "bool";
    case Value::Kind::Int: return "int";
    case Value::Kind::Double: return "float";
    case Value::Kind::String: return "str";
    case Value::Kind::Tensor: return "Tensor";
    case Value::Kind::List: return "list";
    case Value::Kind::Tuple: return "tuple";
    case Value::Kind::Dict: return "dict";
  }
  return "?";
}

Value Value::list(ValueList items) {
  Value v;
  v.v_.emplace<kListIndex>(std::make_shared<Seq>(Seq{std::move(items)}));
  return v;
}
Value Value::tuple(ValueList items) {
  Value v;
  v.v_.emplace<kTupleIndex>(std::make_shared<Seq>(Seq{std::move(items)}));
  return v;
}
Value Value::dict(ValueItems items) {
  Value v;
  v.v_ = std::make_shared<Map>(Map{std::move(items)});
  return v;
}

Value::Kind Value::kind() const {
  switch (v_.index()) {
    case 0: return Kind::None;
    case 1: return Kind::Bool;
    case 2: return Kind::Int;
    case 3: return Kind::Double;
    case 4: return Kind::String;
    case 5: return Kind::Tensor;
    case kListIndex: return Kind::List;
    case kTupleIndex: return Kind::Tuple;
    default: return Kind::Dict;
  }
}

namespace {
[[noreturn]] void wrong(const char* want, Value::Kind got) {
  throw TypeError(detail::cat("Value: expected ", want, " but got ", value_kind_name(got)));
}
}  // namespace

bool Value::to_bool() const {
  if (!is_bool()) wrong("bool", kind());
  return std::get<bool>(v_);
}
int64_t Value::to_int() const {
  if (is_bool()) return std::get<bool>(v_);
  if (!is_int()) wrong("int", kind());
  return std::get<int64_t>(v_);
}
double Value::to_double() const {
  if (is_int()) return double(std::get<int64_t>(v_));
  if (is_bool()) return std::get<bool>(v_);
  if (!is_double()) wrong("float", kind());
  return std::get<double>(v_);
}
const std::string& Value::to_string() const {
  if (!is_string()) wrong("str", kind());
  return std::get<std::string>(v_);
}
const Tensor& Value::to_tensor() const {
  if (!is_tensor()) wrong("Tensor", kind());
  return std::get<Tensor>(v_);
}
Tensor& Value::to_tensor() {
  if (!is_tensor()) wrong("Tensor", kind());
  return std::get<Tensor>(v_);
}
const ValueList& Value::items_list() const {
  if (is_list()) return std::get<kListIndex>(v_)->items;
  if (is_tuple()) return std::get<kTupleIndex>(v_)->items;
  wrong("list or tuple", kind());
}
ValueList& Value::items_list() {
  if (is_list()) return std::get<kListIndex>(v_)->items;
  if (is_tuple()) return std::get<kTupleIndex>(v_)->items;
  wrong("list or tuple", kind());
}
const ValueItems& Value::items() const {
  if (!is_dict()) wrong("dict", kind());
  return std::get<std::shared_ptr<Map>>(v_)->items;
}
ValueItems& Value::items() {
  if (!is_dict()) wrong("dict", kind());
  return std::get<std::shared_ptr<Map>>(v_)->items;
}

size_t Value::size() const {
  if (is_dict()) return items().size();
  return items_list().size();
}

namespace {
bool same_key(const Value& a, const Value& b) {
  if (a.is_string() && b.is_string()) return a.to_string() == b.to_string();
  if ((a.is_int() || a.is_bool()) && (b.is_int() || b.is_bool())) return a.to_int() == b.to_int();
  return false;
}
}  // namespace

namespace {
size_t list_index(const Value& key, size_t n) {
  int64_t i = key.to_int(), size = int64_t(n);
  EMBER_CHECK_INDEX(i >= -size && i < size, "list index ", i, " out of range for length ", size);
  return size_t(i < 0 ? i + size : i);
}
}  // namespace

Value& Value::operator[](const Value& key) {
  if (is_list() || is_tuple()) return items_list()[list_index(key, items_list().size())];
  for (auto& [k, v] : items())
    if (same_key(k, key)) return v;
  items().emplace_back(key, Value());
  return items().back().second;
}
const Value& Value::at(const Value& key) const {
  if (is_list() || is_tuple()) return items_list()[list_index(key, items_list().size())];
  for (const auto& [k, v] : items())
    if (same_key(k, key)) return v;
  throw IndexError(detail::cat("KeyError: ", key.repr()));
}
bool Value::contains(const Value& key) const {
  for (const auto& [k, v] : items())
    if (same_key(k, key)) return true;
  return false;
}

bool Value::operator==(const Value& o) const {
  if (kind() != o.kind()) return false;
  switch (kind()) {
    case Kind::None: return true;
    case Kind::Bool: return to_bool() == o.to_bool();
    case Kind::Int: return to_int() == o.to_int();
    case Kind::Double: return to_double() == o.to_double();
    case Kind::String: return to_string() == o.to_string();
    case Kind::Tensor: {
      const Tensor &a = to_tensor(), &b = o.to_tensor();
      return a.dtype() == b.dtype() && IntArrayRef(a.sizes()) == IntArrayRef(b.sizes()) && a.equal(b);
    }
    case Kind::List:
    case Kind::Tuple: return items_list() == o.items_list();
    case Kind::Dict: {
      if (items().size() != o.items().size()) return false;
      for (size_t i = 0; i < items().size(); ++i)
        if (!(items()[i].first == o.items()[i].first) || !(items()[i].second == o.items()[i].second)) return false;
      return true;
    }
  }
  return false;
}

std::string Value::repr() const {
  std::ostringstream os;
  switch (kind()) {
    case Kind::None: return "None";
    case Kind::Bool: return to_bool() ? "True" : "False";
    case Kind::Int: return std::to_string(to_int());
    case Kind::Double: {  // Python's repr: shortest round-trip digits, "1.0" for whole numbers
      char buf[64];
      auto res = std::to_chars(buf, buf + sizeof(buf), to_double());
      std::string s(buf, res.ptr);
      if (s.find_first_of(".en") == std::string::npos) s += ".0";
      return s;
    }
    case Kind::String: return "'" + to_string() + "'";
    case Kind::Tensor: return to_tensor().str();
    case Kind::List:
    case Kind::Tuple: {
      os << (is_list() ? "[" : "(");
      for (size_t i = 0; i < items_list().size(); ++i) os << (i ? ", " : "") << items_list()[i].repr();
      if (is_tuple() && items_list().size() == 1) os << ",";
      os << (is_list() ? "]" : ")");
      return os.str();
    }
    case Kind::Dict: {
      os << "{";
      for (size_t i = 0; i < items().size(); ++i) os << (i ? ", " : "") << items()[i].first.repr() << ": " << items()[i].second.repr();
      os << "}";
      return os.str();
    }
  }
  return "?";
}

Value to_value(const std::vector<std::pair<std::string, Tensor>>& state_dict) {
  Value d = Value::dict();
  for (const auto& [k, t] : state_dict) d.items().emplace_back(Value(k), Value(t));
  return d;
}

std::vector<std::pair<std::string, Tensor>> to_state_dict(const Value& dict) {
  std::vector<std::pair<std::string, Tensor>> out;
  for (const auto& [k, v] : dict.items()) out.emplace_back(k.to_string(), v.to_tensor());
  return out;
}

}  // namespace ember
