#pragma once
// What this build of ember was compiled with (torch.backends.mkldnn.is_available() & co).
#include <string>

namespace ember {

bool has_onednn();              // float32 GEMM / convolution through oneDNN
std::string onednn_version();   // "major.minor.patch", empty without oneDNN

}  // namespace ember
