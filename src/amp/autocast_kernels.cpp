// The Autocast kernels of the dispatched ops in EMBER_AUTOCAST_DISPATCHED_OPS
// (src/amp/autocast_policy.h): one template instantiated per row, registered in the op's
// Autocast slot. A call whose policy does not apply (another device type's region, a None
// column) runs the op below the Autocast layer unchanged.
#include <utility>

#include "amp/autocast.h"
#include "ops/op_handles.h"

namespace ember::amp {
namespace {

template <class OpT> struct SignatureOf;
template <class R, class... A> struct SignatureOf<Op<R(A...)>> { using type = R(A...); };

template <auto Handle, AutocastOp Which, class Sig> struct AutocastKernel;
template <auto Handle, AutocastOp Which, class R, class... A> struct AutocastKernel<Handle, Which, R(A...)> {
  static R call(A... args) {
    if (auto r = detail::apply_policy(Which, [](const auto&... a) -> R { return Handle()(a...); }, args...))
      return std::move(*r);
    ExcludeDispatchKeyGuard no_autocast{DispatchKeySet(DispatchKey::Autocast)};
    return Handle()(std::forward<A>(args)...);
  }
};

#define EMBER_AUTOCAST_REGISTER(op, cuda, cpu)                                                     \
  EMBER_REGISTER_KERNEL(op, Autocast,                                                              \
                        (AutocastKernel<&ops::op, AutocastOp::op,                                  \
                                        SignatureOf<std::remove_reference_t<decltype(ops::op())>>::type>::call));
EMBER_AUTOCAST_DISPATCHED_OPS(EMBER_AUTOCAST_REGISTER)
#undef EMBER_AUTOCAST_REGISTER

}  // namespace
}  // namespace ember::amp
