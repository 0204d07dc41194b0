// libFuzzer target for the exported-program loader (ember/export.h): load or ember::Error, nothing
// else: a tampered file must never crash, hang or run anything.
#include <ember/ember.h>
#include <ember/export.h>

#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    // (without the CRC check, so mutations of the graph reach the checks behind it)
    auto program =
        ember::exporting::detail::load_from_bytes_unchecked_crc(std::string(reinterpret_cast<const char*>(data), size));
    (void)program.num_inputs();
  } catch (const ember::Error&) {
  }
  return 0;
}
