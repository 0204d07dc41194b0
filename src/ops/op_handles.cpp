// Defines the dispatcher entry of every op in op_list.h. Function-local statics: an entry exists
// before any static registrar in another file touches it. Every op also gets its Tracer kernel
// here (ember.compile's capture, compile/capture_kernel.h), the one place they are instantiated.
#include "ops/op_handles.h"

#include "compile/capture_kernel.h"

namespace ember::ops {
#define EMBER_OP(name, ...) \
  ::ember::Op<__VA_ARGS__>& name() { static ::ember::Op<__VA_ARGS__> op(#name); return op; }
#include "ops/op_list.h"
#undef EMBER_OP

namespace {
#define EMBER_OP(name, ...)                                                                     \
  [[maybe_unused]] const bool name##_traced =                                                   \
      (name().set_kernel(::ember::DispatchKey::Tracer, &::ember::compiler::detail::CaptureKernel<&name>::run), \
       ::ember::compiler::detail::register_replay_factory(#name,                                  \
                                                          &::ember::compiler::detail::CaptureKernel<&name>::from_args), \
       true);
#include "ops/op_list.h"
#undef EMBER_OP
}  // namespace
}  // namespace ember::ops
