#pragma once
// The Tracer layer's kernel, one per op (registered for every op in ops/op_handles.cpp, the one
// file that instantiates them): record the call into the open CaptureSession, run the op below
// the Tracer layer, record what it returned. The node keeps an owned copy of the op's non-tensor
// arguments (lists copied out of their ArrayRefs) so it can re-run the op on other tensors.
#include <array>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "ember/compile/graph.h"
#include "ember/core/generator.h"
#include "ember/dispatch/op.h"

namespace ember::compiler::detail {

// The session's side (capture.cpp).
// Values of the tensor arguments (kNoValue for undefined ones); a value that no op has written
// yet (an `empty` the program filled outside the dispatcher) becomes a constant snapshot.
std::vector<ValueId> values_of_arguments(const char* op, const std::vector<Tensor>& tensors, bool mutates);
void record_node(Node&& node, const std::vector<Tensor>& results);
// The open capture met a break: its graph is given up, so later ops run as eager ones unrecorded
// (a backward pass under a broken capture was recorded, and an optional gradient it did not
// compute crashed the recording).
bool broken();
// Notes a break for arguments a replay cannot hold (an explicit Generator); called before the op
// runs below the Tracer layer, where breaks are the op's own business.
void note_uncapturable_args(const Node& node);

// ---- an argument as the node keeps it
template <class T> struct Owning { using type = std::decay_t<T>; };
template <class T> struct Owning<ArrayRef<T>> { using type = std::vector<T>; };
template <class T> using owned_t = typename Owning<std::decay_t<T>>::type;

template <class A> owned_t<A> own(const std::decay_t<A>& v) {
  if constexpr (std::is_same_v<owned_t<A>, std::decay_t<A>>) return v;
  else return owned_t<A>(v.begin(), v.end());
}

// Visits every tensor slot of an owned argument in order: Tensor, optional<Tensor>, lists of them.
template <class O, class F> void for_each_tensor(O& o, F&& f) {
  if constexpr (std::is_same_v<O, Tensor>) f(o);
  else if constexpr (std::is_same_v<O, std::optional<Tensor>>) {
    if (o) f(*o);
    else {
      Tensor none;
      f(none);
    }
  } else if constexpr (std::is_same_v<O, std::vector<Tensor>>) {
    for (auto& t : o) f(t);
  } else if constexpr (std::is_same_v<O, std::vector<std::optional<Tensor>>>) {
    for (auto& t : o) {
      if (t) f(*t);
      else {
        Tensor none;
        f(none);
      }
    }
  }
}
// How many tensor slots an owned argument has (the replay hands that many tensors for it).
template <class O> size_t tensor_slots(const O& o) {
  if constexpr (std::is_same_v<O, Tensor> || std::is_same_v<O, std::optional<Tensor>>) return 1;
  else if constexpr (std::is_same_v<O, std::vector<Tensor>> || std::is_same_v<O, std::vector<std::optional<Tensor>>>)
    return o.size();
  else return 0;
}

// The replay's argument for parameter type A: tensors from `in` (starting at `slot`), everything
// else read from the kept copy. Lists are built as temporaries that live through the op call.
template <class A, class O> decltype(auto) replay_argument(const O& o, const std::vector<Tensor>& in, size_t slot) {
  using D = std::decay_t<A>;
  if constexpr (std::is_same_v<A, Tensor&>) return const_cast<Tensor&>(in[slot]);  // in-place self
  else if constexpr (std::is_same_v<D, Tensor>) return static_cast<const Tensor&>(in[slot]);
  else if constexpr (std::is_same_v<D, std::optional<Tensor>>)
    return in[slot].defined() ? std::optional<Tensor>(in[slot]) : std::optional<Tensor>();
  else if constexpr (std::is_same_v<O, std::vector<Tensor>>)
    return std::vector<Tensor>(in.begin() + std::ptrdiff_t(slot), in.begin() + std::ptrdiff_t(slot + o.size()));
  else if constexpr (std::is_same_v<O, std::vector<std::optional<Tensor>>>) {
    std::vector<std::optional<Tensor>> v;
    for (size_t k = 0; k < o.size(); ++k)
      v.push_back(in[slot + k].defined() ? std::optional<Tensor>(in[slot + k]) : std::nullopt);
    return v;
  } else if constexpr (std::is_same_v<O, D>) {
    return static_cast<const O&>(o);
  } else {
    return D(o);  // an ArrayRef over the kept vector
  }
}

// ---- structured arguments (graph.h: Arg), for saved graphs
Arg to_arg(const Scalar& v);
Arg to_arg(const std::string& v);
Arg to_arg(const TensorOptions& v);
Arg to_arg(DType v);
template <class O> Arg to_arg_owned(const O& o) {
  Arg a;
  if constexpr (std::is_same_v<O, Tensor> || std::is_same_v<O, std::optional<Tensor>> ||
                std::is_same_v<O, std::vector<Tensor>> || std::is_same_v<O, std::vector<std::optional<Tensor>>>) {
    a.kind = Arg::Tensors;
    a.i = int64_t(tensor_slots(o));
  } else if constexpr (std::is_same_v<O, bool>) {
    a.kind = Arg::Bool;
    a.i = o;
  } else if constexpr (std::is_integral_v<O>) {
    a.kind = Arg::Int;
    a.i = int64_t(o);
  } else if constexpr (std::is_floating_point_v<O>) {
    a.kind = Arg::Double;
    a.d = double(o);
  } else if constexpr (std::is_same_v<O, std::vector<int64_t>>) {
    a.kind = Arg::Ints;
    a.ints = o;
  } else if constexpr (std::is_same_v<O, std::vector<double>>) {
    a.kind = Arg::Doubles;
    a.doubles = o;
  } else if constexpr (std::is_same_v<O, Generator*>) {
    a.kind = Arg::Generator;
    a.i = o ? 1 : 0;
  } else if constexpr (std::is_same_v<O, std::optional<Scalar>> || std::is_same_v<O, std::optional<int64_t>> ||
                       std::is_same_v<O, std::optional<double>> || std::is_same_v<O, std::optional<DType>> ||
                       std::is_same_v<O, std::optional<std::string>> || std::is_same_v<O, std::optional<bool>>) {
    if (o) return to_arg_owned(*o);
  } else {
    return to_arg(o);  // Scalar, string, TensorOptions, DType
  }
  return a;
}

// ...and back, checking that the saved argument fits the op's parameter (a tampered file gets an
// error naming the op and the argument, never a wrong call).
[[noreturn]] void bad_arg(const char* op, size_t index, const char* expected);
Scalar scalar_from(const Arg& a, const char* op, size_t index);
std::string string_from(const Arg& a, const char* op, size_t index);
TensorOptions options_from(const Arg& a, const char* op, size_t index);
DType dtype_from(const Arg& a, const char* op, size_t index);
template <class O> O from_arg(const Arg& a, const char* op, size_t index) {
  if constexpr (std::is_same_v<O, Tensor> || std::is_same_v<O, std::optional<Tensor>>) {
    if (a.kind != Arg::Tensors || a.i != 1) bad_arg(op, index, "one tensor");
    return O();
  } else if constexpr (std::is_same_v<O, std::vector<Tensor>> || std::is_same_v<O, std::vector<std::optional<Tensor>>>) {
    if (a.kind != Arg::Tensors || a.i < 0 || a.i > (int64_t(1) << 20)) bad_arg(op, index, "a list of tensors");
    return O(size_t(a.i));
  } else if constexpr (std::is_same_v<O, bool>) {
    if (a.kind != Arg::Bool) bad_arg(op, index, "a bool");
    return a.i != 0;
  } else if constexpr (std::is_integral_v<O>) {
    if (a.kind != Arg::Int) bad_arg(op, index, "an integer");
    return O(a.i);
  } else if constexpr (std::is_floating_point_v<O>) {
    if (a.kind != Arg::Double && a.kind != Arg::Int) bad_arg(op, index, "a number");
    return a.kind == Arg::Int ? O(a.i) : O(a.d);
  } else if constexpr (std::is_same_v<O, std::vector<int64_t>>) {
    if (a.kind != Arg::Ints) bad_arg(op, index, "a list of integers");
    return a.ints;
  } else if constexpr (std::is_same_v<O, std::vector<double>>) {
    if (a.kind != Arg::Doubles) bad_arg(op, index, "a list of numbers");
    return a.doubles;
  } else if constexpr (std::is_same_v<O, Generator*>) {
    if (a.kind != Arg::Generator || a.i != 0) bad_arg(op, index, "the default generator");
    return nullptr;
  } else if constexpr (std::is_same_v<O, Scalar>) {
    return scalar_from(a, op, index);
  } else if constexpr (std::is_same_v<O, std::string>) {
    return string_from(a, op, index);
  } else if constexpr (std::is_same_v<O, TensorOptions>) {
    return options_from(a, op, index);
  } else if constexpr (std::is_same_v<O, DType>) {
    return dtype_from(a, op, index);
  } else {  // the optionals
    if (a.kind == Arg::None) return O();
    return O(from_arg<typename O::value_type>(a, op, index));
  }
}

using ReplayFactory = std::function<Replay(const std::vector<Arg>&)>;
void register_replay_factory(const char* op, ReplayFactory make);
// The op's stable name and a replay of it with these saved arguments (throws for unknown ops and
// arguments that do not fit).
std::pair<const char*, Replay> replay_for(const std::string& op, const std::vector<Arg>& args);

template <class R> void collect_results(const R& r, std::vector<Tensor>& out) {
  if constexpr (std::is_same_v<std::decay_t<R>, Tensor>) out.push_back(r);
  else std::apply([&](const auto&... t) { (out.push_back(t), ...); }, r);
}

template <class H> struct HandleSig;
template <class Sig> struct HandleSig<Op<Sig>& (*)()> { using type = Sig; };

template <auto H, class Sig> struct CaptureKernelImpl;
template <auto H, class R, class... A> struct CaptureKernelImpl<H, R(A...)> {
  static constexpr bool kMutates = std::is_same_v<R, Tensor&> || std::is_void_v<R>;
  using Owned = std::tuple<owned_t<A>...>;

  using Slots = std::array<size_t, sizeof...(A)>;

  template <size_t... I>
  static R call(const Owned& kept, const Slots& slot, const std::vector<Tensor>& in, std::index_sequence<I...>) {
    return H()(replay_argument<A>(std::get<I>(kept), in, slot[I])...);
  }

  static Replay make_replay(Owned owned) {
    Slots slot{};
    size_t next = 0, i = 0;
    std::apply([&](const auto&... o) { ((slot[i++] = next, next += tensor_slots(o)), ...); }, owned);
    return [owned = std::move(owned), slot](const std::vector<Tensor>& in) -> std::vector<Tensor> {
      std::vector<Tensor> out;
      if constexpr (std::is_void_v<R>) {  // it wrote its arguments: they are its results
        call(owned, slot, in, std::index_sequence_for<A...>{});
        for (const auto& t : in)
          if (t.defined()) out.push_back(t);
      } else {
        collect_results(call(owned, slot, in, std::index_sequence_for<A...>{}), out);
      }
      return out;
    };
  }

  // The replay of a saved node (ember/export.h), its arguments checked against the op's signature.
  template <size_t... I> static Owned parse(const std::vector<Arg>& args, std::index_sequence<I...>) {
    return Owned{from_arg<owned_t<A>>(args[I], H().name(), I)...};
  }
  static Replay from_args(const std::vector<Arg>& args) {
    if (args.size() != sizeof...(A))
      throw ValueError(std::string(H().name()) + ": a saved call has " + std::to_string(args.size()) +
                       " arguments, the op takes " + std::to_string(sizeof...(A)));
    return make_replay(parse(args, std::index_sequence_for<A...>{}));
  }

  static R run(A... args) {
    if (broken()) {  // the graph is given up already: the rest of the call runs as eager
      ExcludeDispatchKeyGuard below(DispatchKey::Tracer);
      return H()(std::forward<A>(args)...);
    }
    Node node;
    node.op = H().name();
    // in-place by signature (Tensor& or nothing returned) or by name (_amp_update_scale_ writes
    // its arguments and returns a tensor)
    const size_t len = std::char_traits<char>::length(node.op);
    node.mutates = kMutates || (len > 0 && node.op[len - 1] == '_');
    Owned owned{own<A>(args)...};
    std::vector<Tensor> tensors;
    std::apply([&](auto&... o) { (for_each_tensor(o, [&](Tensor& t) { tensors.push_back(t); }), ...); }, owned);
    node.inputs = values_of_arguments(node.op, tensors, node.mutates);
    // the node keeps no tensor of its own: the replay is handed them
    std::apply([](auto&... o) { (for_each_tensor(o, [](Tensor& t) { t = Tensor(); }), ...); }, owned);
    std::apply([&](const auto&... o) { (node.args.push_back(to_arg_owned(o)), ...); }, owned);
    note_uncapturable_args(node);
    node.replay = make_replay(std::move(owned));
    std::vector<Tensor> results;
    ExcludeDispatchKeyGuard below(DispatchKey::Tracer);
    if constexpr (std::is_void_v<R>) {
      H()(std::forward<A>(args)...);
      for (const auto& t : tensors)
        if (t.defined()) results.push_back(t);
      record_node(std::move(node), results);
    } else {
      R r = H()(std::forward<A>(args)...);
      collect_results(r, results);
      record_node(std::move(node), results);
      return r;
    }
  }
};

template <auto H> struct CaptureKernel : CaptureKernelImpl<H, typename HandleSig<decltype(H)>::type> {};

}  // namespace ember::compiler::detail
