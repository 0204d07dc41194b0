#pragma once
// The window geometry of im2col (F.unfold) and col2im (F.fold) from the ops' two-value kernel,
// dilation, padding and stride arguments, shared by the CPU kernels (src/cpu/fold_kernels.cpp,
// into im2col.h's WindowGeom) and the CUDA host side (src/cuda/fold_ops.cpp, into FoldLaunch),
// so both count the output positions with one formula. Arguments arrive checked by
// src/nn/functional/fold.cpp.
#include <cstdint>

#include "ember/core/array_ref.h"

namespace ember {

// G: any struct with the fields H, W, KH, KW, dh, dw, ph, pw, sh, sw, OH, OW (the others keep
// their defaults: unit depth).
template <class G>
G fold_geometry(int64_t H, int64_t W, IntArrayRef k, IntArrayRef d, IntArrayRef p, IntArrayRef s) {
  G g;
  g.H = H;
  g.W = W;
  g.KH = k[0];
  g.KW = k[1];
  g.dh = d[0];
  g.dw = d[1];
  g.ph = p[0];
  g.pw = p[1];
  g.sh = s[0];
  g.sw = s[1];
  g.OH = (H + 2 * g.ph - g.dh * (g.KH - 1) - 1) / g.sh + 1;
  g.OW = (W + 2 * g.pw - g.dw * (g.KW - 1) - 1) / g.sw + 1;
  return g;
}

}  // namespace ember
