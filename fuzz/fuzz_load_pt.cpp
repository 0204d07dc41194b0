// libFuzzer target: any byte string given to the .pt loader must either load or raise an
// ember::Error — never crash, hang, read out of bounds or allocate without bound.
#include <ember/ember.h>
#include <ember/serialize/serialize.h>

#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    ember::Value v = ember::load_from_bytes(std::string(reinterpret_cast<const char*>(data), size));
    (void)v.repr();  // touch every loaded tensor
  } catch (const ember::Error&) {
  }
  return 0;
}
