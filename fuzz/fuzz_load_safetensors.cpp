// libFuzzer target for the safetensors reader: load or ember::Error, nothing else.
#include <ember/ember.h>
#include <ember/serialize/serialize.h>

#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    auto tensors = ember::safetensors::load_from_bytes(std::string(reinterpret_cast<const char*>(data), size));
    for (auto& [name, t] : tensors) (void)t.sum();
  } catch (const ember::Error&) {
  }
  return 0;
}
