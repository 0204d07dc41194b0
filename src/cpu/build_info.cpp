// Build facts the CPU backend knows (EMBER_HAVE_DNNL is private to the library's build).
#include "ember/build_info.h"

#if EMBER_HAVE_DNNL
#include <oneapi/dnnl/dnnl.h>
#endif

namespace ember {

bool has_onednn() { return EMBER_HAVE_DNNL != 0; }

std::string onednn_version() {
#if EMBER_HAVE_DNNL
  const dnnl_version_t* v = dnnl_version();
  return std::to_string(v->major) + "." + std::to_string(v->minor) + "." + std::to_string(v->patch);
#else
  return {};
#endif
}

}  // namespace ember
