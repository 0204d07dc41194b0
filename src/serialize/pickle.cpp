#include "pickle.h"

#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>

#include "ember/ops.h"

namespace ember::serialize {

namespace {
struct StorageName { DType t; const char* name; };
constexpr StorageName kStorageNames[] = {
    {kBool, "BoolStorage"},   {kUInt8, "ByteStorage"},     {kInt8, "CharStorage"},
    {kInt16, "ShortStorage"}, {kInt32, "IntStorage"},      {kInt64, "LongStorage"},
    {kFloat16, "HalfStorage"}, {kBFloat16, "BFloat16Storage"}, {kFloat32, "FloatStorage"},
    {kFloat64, "DoubleStorage"}, {kComplex64, "ComplexFloatStorage"}, {kComplex128, "ComplexDoubleStorage"},
};
}  // namespace

const char* storage_type_name(DType t) {
  for (const auto& s : kStorageNames)
    if (s.t == t) return s.name;
  return "?";
}
bool dtype_from_storage_name(std::string_view name, DType* out) {
  for (const auto& s : kStorageNames)
    if (name == s.name) { *out = s.t; return true; }
  return false;
}

// ------------------------------------------------------------------------------------ writer
namespace {
class Writer {
 public:
  explicit Writer(const PersistFn& p) : persist_(p) {}
  std::string out;

  void op(char c) { out.push_back(c); }
  void u32(uint32_t v) { for (int i = 0; i < 4; ++i) out.push_back(char((v >> (8 * i)) & 0xff)); }
  void str(const std::string& s) {
    EMBER_CHECK(s.size() < 0xFFFFFFFFull, "save: string too long");
    op('X'); u32(uint32_t(s.size())); out += s;
  }
  void global(const char* mod, const char* name) { op('c'); out += mod; out += '\n'; out += name; out += '\n'; }
  void integer(int64_t v) {
    if (v >= 0 && v < 256) { op('K'); out.push_back(char(v)); }
    else if (v >= 0 && v < 65536) { op('M'); out.push_back(char(v & 0xff)); out.push_back(char(v >> 8)); }
    else if (v >= INT32_MIN && v <= INT32_MAX) { op('J'); u32(uint32_t(int32_t(v))); }
    else {
      // LONG1: little-endian two's complement, minimal length.
      unsigned char b[8];
      for (int i = 0; i < 8; ++i) b[i] = (uint64_t(v) >> (8 * i)) & 0xff;
      int n = 8;
      while (n > 1 && ((b[n - 1] == 0 && !(b[n - 2] & 0x80)) || (b[n - 1] == 0xff && (b[n - 2] & 0x80)))) --n;
      op('\x8a'); out.push_back(char(n));
      for (int i = 0; i < n; ++i) out.push_back(char(b[i]));
    }
  }
  void tuple_of_ints(const Shape& s) {
    if (s.empty()) { op(')'); return; }
    if (s.size() > 3) op('(');
    for (int64_t x : s) integer(x);
    op(s.size() == 1 ? '\x85' : s.size() == 2 ? '\x86' : s.size() == 3 ? '\x87' : 't');
  }
  void value(const Value& v, int depth) {
    EMBER_CHECK(depth < 1000, "save: object nested too deeply");
    switch (v.kind()) {
      case Value::Kind::None: op('N'); break;
      case Value::Kind::Bool: op(v.to_bool() ? '\x88' : '\x89'); break;
      case Value::Kind::Int: integer(v.to_int()); break;
      case Value::Kind::Double: {
        double d = v.to_double();
        uint64_t bits; std::memcpy(&bits, &d, 8);
        op('G');
        for (int i = 7; i >= 0; --i) out.push_back(char((bits >> (8 * i)) & 0xff));
        break;
      }
      case Value::Kind::String: str(v.to_string()); break;
      case Value::Kind::Tensor: tensor(v.to_tensor()); break;
      case Value::Kind::List: {
        op(']');
        if (!v.items_list().empty()) {
          op('(');
          for (const auto& x : v.items_list()) value(x, depth + 1);
          op('e');
        }
        break;
      }
      case Value::Kind::Tuple: {
        const auto& xs = v.items_list();
        if (xs.empty()) { op(')'); break; }
        if (xs.size() > 3) op('(');
        for (const auto& x : xs) value(x, depth + 1);
        op(xs.size() == 1 ? '\x85' : xs.size() == 2 ? '\x86' : xs.size() == 3 ? '\x87' : 't');
        break;
      }
      case Value::Kind::Dict: {
        op('}');
        if (!v.items().empty()) {
          op('(');
          for (const auto& [k, x] : v.items()) { value(k, depth + 1); value(x, depth + 1); }
          op('u');
        }
        break;
      }
    }
  }
  void tensor(const Tensor& t) {
    TensorRecord r = persist_(t);
    global("torch._utils", "_rebuild_tensor_v2");
    op('(');
    op('(');
    str("storage");
    global("torch", storage_type_name(r.dtype));
    str(r.key);
    str(r.location);
    integer(r.storage_numel);
    op('t');
    op('Q');
    integer(r.offset);
    tuple_of_ints(r.sizes);
    tuple_of_ints(r.strides);
    op('\x89');
    global("collections", "OrderedDict");
    op(')');
    op('R');
    op('t');
    op('R');
  }

 private:
  const PersistFn& persist_;
};
}  // namespace

std::string pickle_dump(const Value& v, const PersistFn& persist) {
  Writer w(persist);
  w.op('\x80'); w.out.push_back(2);
  w.value(v, 0);
  w.op('.');
  return std::move(w.out);
}

// ------------------------------------------------------------------------------------ reader
namespace {
[[noreturn]] void bad(const std::string& what) { throw Error("invalid checkpoint (pickle): " + what); }

constexpr size_t kMaxStack = 1 << 20;
constexpr size_t kMaxMemo = 1 << 22;
constexpr int kMaxDepth = 500;
constexpr int64_t kMaxDims = 64;
constexpr const char* kStorageMarker = "\x01torch-storage:";

enum class Global { OrderedDict, RebuildTensorV2, RebuildParameter, Storage };

struct Item {
  enum K { Val, Mark, Glob } k = Val;
  Value v;
  Global g{};
  DType storage_dtype{};
};

class VM {
 public:
  VM(std::string_view d, const StorageFn& s) : d_(d), storage_(s) {}

  Value run() {
    while (true) {
      uint8_t c = u8();
      switch (c) {
        case 0x80: { uint8_t proto = u8(); if (proto > 5) bad("unsupported protocol " + std::to_string(proto)); break; }
        case 0x95: take(8); break;  // FRAME: lengths are advisory
        case '.': {
          if (stack_.size() != 1) bad("STOP with " + std::to_string(stack_.size()) + " items on the stack");
          return value(pop());
        }
        case '}': push_val(Value::dict()); break;
        case ']': push_val(Value::list()); break;
        case ')': push_val(Value::tuple()); break;
        case 'N': push_val(Value()); break;
        case 0x88: push_val(Value(true)); break;
        case 0x89: push_val(Value(false)); break;
        case '(': { Item m; m.k = Item::Mark; push(std::move(m)); break; }
        case 'K': push_val(Value(int64_t(u8()))); break;
        case 'M': { auto p = take(2); push_val(Value(int64_t(uint8_t(p[0]) | (uint8_t(p[1]) << 8)))); break; }
        case 'J': push_val(Value(int64_t(int32_t(le32())))); break;
        case 0x8a: {  // LONG1
          uint8_t n = u8();
          if (n > 8) bad("integer wider than 64 bits");
          auto p = take(n);
          uint64_t v = 0;
          for (int i = 0; i < n; ++i) v |= uint64_t(uint8_t(p[i])) << (8 * i);
          if (n > 0 && n < 8 && (uint8_t(p[n - 1]) & 0x80)) v |= ~uint64_t(0) << (8 * n);
          push_val(Value(int64_t(v)));
          break;
        }
        case 'G': {
          auto p = take(8);
          uint64_t bits = 0;
          for (int i = 0; i < 8; ++i) bits = (bits << 8) | uint8_t(p[i]);
          double x; std::memcpy(&x, &bits, 8);
          push_val(Value(x));
          break;
        }
        case 'X': { uint32_t n = le32(); push_val(Value(std::string(take(n)))); break; }
        case 0x8c: { uint8_t n = u8(); push_val(Value(std::string(take(n)))); break; }
        case 'T': { int32_t n = int32_t(le32()); if (n < 0) bad("negative string length"); push_val(Value(std::string(take(size_t(n))))); break; }
        case 'U': { uint8_t n = u8(); push_val(Value(std::string(take(n)))); break; }
        case 'q': memo_put(u8()); break;
        case 'r': memo_put(le32()); break;
        case 0x94: memo_put(memo_.size()); break;
        case 'h': memo_get(u8()); break;
        case 'j': memo_get(le32()); break;
        case '0': pop(); break;
        case '1': pop_mark(); break;
        case '2': { if (stack_.empty()) bad("stack underflow"); push(Item(stack_.back())); break; }
        case 't': { auto xs = pop_mark(); push_val(make_tuple(std::move(xs))); break; }
        case 0x85: case 0x86: case 0x87: {
          size_t n = c - 0x84;
          if (stack_.size() < n) bad("stack underflow");
          std::vector<Item> xs(std::make_move_iterator(stack_.end() - n), std::make_move_iterator(stack_.end()));
          stack_.resize(stack_.size() - n);
          push_val(make_tuple(std::move(xs)));
          break;
        }
        case 'l': { auto xs = pop_mark(); Value l = Value::list(); append_all(l, xs); push_val(l); break; }
        case 'd': { auto xs = pop_mark(); Value dd = Value::dict(); set_all(dd, xs); push_val(dd); break; }
        case 'a': { Item x = pop(); std::vector<Item> xs; xs.push_back(std::move(x)); Value l = top_value(); append_all(l, xs); break; }
        case 'e': { auto xs = pop_mark(); Value l = top_value(); append_all(l, xs); break; }
        case 's': { Item v = pop(); Item k = pop(); std::vector<Item> xs; xs.push_back(std::move(k)); xs.push_back(std::move(v)); Value dd = top_value(); set_all(dd, xs); break; }
        case 'u': { auto xs = pop_mark(); Value dd = top_value(); set_all(dd, xs); break; }
        case 'c': {
          std::string mod = line(), name = line();
          push(global(mod, name));
          break;
        }
        case 0x93: bad("STACK_GLOBAL is not supported");
        case 'R': {
          Item args = pop();
          Item fn = pop();
          push_val(reduce(fn, args));
          break;
        }
        case 'b': {  // BUILD: only OrderedDict's attribute state (_metadata), which we drop
          Item state = pop();
          (void)state;
          if (stack_.empty() || stack_.back().k != Item::Val || !stack_.back().v.is_dict())
            bad("BUILD is only supported on OrderedDict");
          break;
        }
        case 'Q': {
          Item pid = pop();
          push_val(persistent_load(pid));
          break;
        }
        default: {
          char buf[8];
          std::snprintf(buf, sizeof buf, "0x%02x", c);
          bad(std::string("unsupported opcode ") + buf + " at offset " + std::to_string(pos_ - 1));
        }
      }
    }
  }

 private:
  // --- input
  uint8_t u8() { if (pos_ >= d_.size()) bad("unexpected end of data"); return uint8_t(d_[pos_++]); }
  std::string_view take(size_t n) {
    if (n > d_.size() - pos_) bad("length " + std::to_string(n) + " runs past the end of data");
    auto s = d_.substr(pos_, n); pos_ += n; return s;
  }
  uint32_t le32() { auto p = take(4); uint32_t v = 0; for (int i = 3; i >= 0; --i) v = (v << 8) | uint8_t(p[i]); return v; }
  std::string line() {
    size_t e = d_.find('\n', pos_);
    if (e == std::string_view::npos || e - pos_ > 256) bad("bad GLOBAL operand");
    std::string s(d_.substr(pos_, e - pos_)); pos_ = e + 1; return s;
  }

  // --- stack
  void push(Item it) { if (stack_.size() >= kMaxStack) bad("stack too deep"); stack_.push_back(std::move(it)); }
  void push_val(Value v) { Item it; it.v = std::move(v); push(std::move(it)); }
  Item pop() {
    if (stack_.empty() || stack_.back().k == Item::Mark) bad("stack underflow");
    Item it = std::move(stack_.back()); stack_.pop_back(); return it;
  }
  std::vector<Item> pop_mark() {
    size_t i = stack_.size();
    while (i > 0 && stack_[i - 1].k != Item::Mark) --i;
    if (i == 0) bad("MARK not found");
    std::vector<Item> xs(std::make_move_iterator(stack_.begin() + i), std::make_move_iterator(stack_.end()));
    stack_.resize(i - 1);
    return xs;
  }
  Value top_value() {
    if (stack_.empty() || stack_.back().k != Item::Val) bad("stack underflow");
    return stack_.back().v;  // shares the container
  }
  static Value value(Item it) {
    if (it.k != Item::Val) bad(it.k == Item::Mark ? "unexpected MARK" : "a global used as a value");
    return std::move(it.v);
  }

  // --- memo
  void memo_put(size_t i) {
    if (stack_.empty()) bad("memo put on an empty stack");
    if (i >= kMaxMemo) bad("memo index too large");
    if (stack_.back().k == Item::Mark) bad("memo put of a MARK");
    memo_[i] = stack_.back();
  }
  void memo_get(size_t i) {
    auto it = memo_.find(i);
    if (it == memo_.end()) bad("memo index " + std::to_string(i) + " not defined");
    push(Item(it->second));
  }

  // --- containers: depth tracked; a container is sealed once it is inside another one, so
  // nesting is bounded and no cycle can form.
  // Info holds a reference to its container, so no address is reused while we track it.
  struct Info {
    int depth = 0;
    bool sealed = false;
    Value keep;
    std::unordered_map<std::string, size_t> str_keys;
    std::unordered_map<int64_t, size_t> int_keys;
  };
  static const void* ident(const Value& v) {
    if (v.is_dict()) return &v.items();
    if (v.is_list() || v.is_tuple()) return &v.items_list();
    return nullptr;
  }
  Info* info(const Value& v) {
    const void* id = ident(v);
    if (!id) return nullptr;
    auto [it, inserted] = info_.try_emplace(id);
    if (inserted) it->second.keep = v;
    return &it->second;
  }
  void adopt(const Value& parent, const Value& child) {
    Info* ci = info(child);
    int d = (ci ? ci->depth : 0) + 1;
    if (d > kMaxDepth) bad("objects nested too deeply");
    Info* pi = info(parent);
    if (d > pi->depth) pi->depth = d;
    if (ci) ci->sealed = true;
  }
  void check_open(const Value& c) {
    if (info(c)->sealed) bad("modifying a container after it was nested");
  }
  Value make_tuple(std::vector<Item> xs) {
    ValueList items;
    items.reserve(xs.size());
    for (auto& x : xs) {
      // A storage type inside a persistent id tuple: kept as a marker string naming the dtype.
      if (x.k == Item::Glob && x.g == Global::Storage)
        items.push_back(Value(std::string(kStorageMarker) + storage_type_name(x.storage_dtype)));
      else
        items.push_back(value(std::move(x)));
    }
    Value t = Value::tuple(std::move(items));
    for (const auto& x : t.items_list()) adopt(t, x);
    return t;
  }
  void append_all(Value& l, std::vector<Item>& xs) {
    if (!l.is_list()) bad("APPEND to a non-list");
    check_open(l);
    for (auto& x : xs) {
      Value v = value(std::move(x));
      if (ident(v) == ident(l)) bad("a list containing itself");
      adopt(l, v);
      l.items_list().push_back(std::move(v));
    }
  }
  void set_all(Value& dd, std::vector<Item>& xs) {
    if (!dd.is_dict()) bad("SETITEM on a non-dict");
    if (xs.size() % 2) bad("SETITEMS with an odd number of items");
    check_open(dd);
    for (size_t i = 0; i < xs.size(); i += 2) {
      Value k = value(std::move(xs[i]));
      Value v = value(std::move(xs[i + 1]));
      if (!k.is_string() && !k.is_int() && !k.is_bool()) bad(std::string("dict key of type ") + value_kind_name(k.kind()));
      if (ident(v) == ident(dd)) bad("a dict containing itself");
      adopt(dd, v);
      // Hash index per dict: hostile files with many keys must not make loading quadratic.
      Info* di = info(dd);
      auto& items = dd.items();
      size_t* slot;
      if (k.is_string()) slot = &di->str_keys.try_emplace(k.to_string(), items.size()).first->second;
      else slot = &di->int_keys.try_emplace(k.to_int(), items.size()).first->second;
      if (*slot == items.size()) items.emplace_back(std::move(k), std::move(v));
      else items[*slot].second = std::move(v);
    }
  }

  // --- globals (the allowlist)
  Item global(const std::string& mod, const std::string& name) {
    Item it;
    it.k = Item::Glob;
    DType t;
    if (mod == "collections" && name == "OrderedDict") it.g = Global::OrderedDict;
    else if (mod == "torch._utils" && name == "_rebuild_tensor_v2") it.g = Global::RebuildTensorV2;
    else if (mod == "torch._utils" && name == "_rebuild_parameter") it.g = Global::RebuildParameter;
    else if (mod == "torch" && dtype_from_storage_name(name, &t)) { it.g = Global::Storage; it.storage_dtype = t; }
    else
      throw Error("Unsupported global: GLOBAL " + mod + "." + name +
                  " was not an allowed global by default (ember loads checkpoints like "
                  "torch.load(weights_only=True) and never runs code)");
    return it;
  }

  Value reduce(const Item& fn, const Item& args_it) {
    if (fn.k != Item::Glob) bad("REDUCE on something that is not a callable global");
    if (args_it.k != Item::Val || !args_it.v.is_tuple()) bad("REDUCE arguments are not a tuple");
    const ValueList& a = args_it.v.items_list();
    switch (fn.g) {
      case Global::OrderedDict:
        if (!a.empty()) bad("OrderedDict() with arguments");
        return Value::dict();
      case Global::RebuildParameter:
        if (a.size() != 3 || !a[0].is_tensor()) bad("_rebuild_parameter: bad arguments");
        return with_requires_grad(a[0], a[1]);
      case Global::RebuildTensorV2: return rebuild_tensor(a);
      case Global::Storage: bad("calling a storage type");
    }
    bad("bad global");
  }

  static Shape int_tuple(const Value& v, const char* what) {
    if (!v.is_tuple() && !v.is_list()) bad(std::string("_rebuild_tensor_v2: ") + what + " is not a tuple");
    if (int64_t(v.items_list().size()) > kMaxDims) bad("_rebuild_tensor_v2: too many dimensions");
    Shape s;
    for (const auto& x : v.items_list()) {
      if (!x.is_int()) bad(std::string("_rebuild_tensor_v2: ") + what + " holds a non-integer");
      s.push_back(x.to_int());
    }
    return s;
  }

  Value rebuild_tensor(const ValueList& a) {
    if (a.size() < 6 || a.size() > 7 || !a[0].is_tensor() || !a[1].is_int())
      bad("_rebuild_tensor_v2: bad arguments");
    const Tensor& storage = a[0].to_tensor();
    int64_t offset = a[1].to_int();
    Shape sizes = int_tuple(a[2], "size"), strides = int_tuple(a[3], "stride");
    if (sizes.size() != strides.size()) bad("_rebuild_tensor_v2: size and stride differ in length");
    if (offset < 0) bad("_rebuild_tensor_v2: negative storage offset");
    int64_t numel = 1, extent = 0;  // extent: index of the last element
    bool empty = false;
    for (size_t i = 0; i < sizes.size(); ++i) {
      if (sizes[i] < 0 || strides[i] < 0) bad("_rebuild_tensor_v2: negative size or stride");
      if (sizes[i] == 0) empty = true;
      if (__builtin_mul_overflow(numel, sizes[i], &numel)) bad("_rebuild_tensor_v2: numel overflows");
    }
    if (!empty) {
      for (size_t i = 0; i < sizes.size(); ++i) {
        int64_t span;
        if (__builtin_mul_overflow(sizes[i] - 1, strides[i], &span) || __builtin_add_overflow(extent, span, &extent))
          bad("_rebuild_tensor_v2: size/stride overflow");
      }
      int64_t last;
      if (__builtin_add_overflow(offset, extent, &last) || last >= storage.numel())
        bad("_rebuild_tensor_v2: size " + detail::cat(sizes) + " with stride " + detail::cat(strides) +
            " and offset " + std::to_string(offset) + " is out of bounds for a storage of " +
            std::to_string(storage.numel()) + " elements");
    } else if (offset > storage.numel()) {
      bad("_rebuild_tensor_v2: storage offset out of bounds");
    }
    auto impl = std::make_shared<TensorImpl>(storage.impl()->storage(), storage.dtype(), sizes, strides, offset);
    return with_requires_grad(Value(Tensor(std::move(impl))), a[4]);
  }

  // torch records requires_grad with each tensor (and nn.Parameter); a saved leaf that required
  // grad loads as one again. Integer tensors cannot require grad, so the flag is ignored there.
  static Value with_requires_grad(const Value& tensor, const Value& flag) {
    if (flag.is_bool() && flag.to_bool()) {
      Tensor t = tensor.to_tensor();
      if (t.is_floating_point() && !t.requires_grad()) t.requires_grad_(true);
    }
    return tensor;
  }

  Value persistent_load(const Item& pid) {
    if (pid.k != Item::Val || !pid.v.is_tuple()) bad("persistent id is not a tuple");
    const ValueList& a = pid.v.items_list();
    if (a.size() != 5 || !a[0].is_string() || a[0].to_string() != "storage" || !a[2].is_string() ||
        !a[3].is_string() || !a[4].is_int())
      bad("persistent id is not ('storage', type, key, location, numel)");
    DType dtype;
    if (!a[1].is_string() || a[1].to_string().rfind(kStorageMarker, 0) != 0 ||
        !dtype_from_storage_name(std::string_view(a[1].to_string()).substr(std::strlen(kStorageMarker)), &dtype))
      bad("persistent id without a storage type");
    int64_t numel = a[4].to_int();
    if (numel < 0) bad("negative storage size");
    const std::string& key = a[2].to_string();
    auto c = storages_.find(key);
    if (c != storages_.end()) {
      if (c->second.dtype() != dtype || c->second.numel() != numel) bad("storage '" + key + "' used with two types or sizes");
      return Value(c->second);
    }
    Tensor t = storage_(key, dtype, numel, a[3].to_string());
    storages_.emplace(key, t);
    return Value(t);
  }

 public:

 private:
  std::string_view d_;
  size_t pos_ = 0;
  const StorageFn& storage_;
  std::vector<Item> stack_;
  std::unordered_map<size_t, Item> memo_;
  std::unordered_map<const void*, Info> info_;
  std::map<std::string, Tensor> storages_;
};
}  // namespace

Value pickle_load(std::string_view data, const StorageFn& storage) {
  VM vm(data, storage);
  return vm.run();
}

}  // namespace ember::serialize
