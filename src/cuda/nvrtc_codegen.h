#pragma once
// ember.compile's CUDA kernels (src/compile/device_codegen.h): generated CUDA C++ compiled at run
// time by NVRTC into a cubin for the GPU's architecture, cached on disk next to the CPU's fused
// kernels, loaded with cudaLibraryLoadData and launched on the current stream. libnvrtc is
// opened at first use (as libnccl), not linked, so a machine without it still loads ember: its
// CUDA graphs then run unfused, after a note.
#include <string>

namespace ember::cuda {

// Whether libnvrtc could be opened (and why not, in `why`).
bool nvrtc_available(std::string* why = nullptr);
// The cubin of `source` for `arch` ("sm_90"), compiled now (no GPU needed, no cache); throws
// with NVRTC's log when it does not compile.
std::string compile_to_cubin(const std::string& source, const std::string& arch);

}  // namespace ember::cuda
