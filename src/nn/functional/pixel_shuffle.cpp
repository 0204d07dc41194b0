// pixel_shuffle, pixel_unshuffle and channel_shuffle (torch.nn.functional): rearrangements of
// channels into space and back, each a reshape, a permute and a reshape (autograd flows through
// the views), with PyTorch's argument checks and messages.
#include "ember/nn/functional.h"

namespace ember::nn::functional {

Tensor pixel_shuffle(const Tensor& input, int64_t upscale_factor) {
  EMBER_CHECK(input.dim() >= 3, "pixel_shuffle expects input to have at least 3 dimensions, but got input with ",
              input.dim(), " dimension(s)");
  const int64_t r = upscale_factor;
  EMBER_CHECK(r > 0, "pixel_shuffle expects a positive upscale_factor, but got ", r);
  const int64_t nd = input.dim(), c = input.sizes()[size_t(nd - 3)], h = input.sizes()[size_t(nd - 2)],
                w = input.sizes()[size_t(nd - 1)];
  EMBER_CHECK(c % (r * r) == 0, "pixel_shuffle expects its input's 'channel' dimension to be divisible by the square "
              "of upscale_factor, but input.size(-3)=", c, " is not divisible by ", r * r);
  Shape batch(input.sizes().begin(), input.sizes().end() - 3);
  const int64_t n = int64_t(batch.size()), oc = c / (r * r);
  Shape split = batch;
  split.insert(split.end(), {oc, r, r, h, w});
  std::vector<int64_t> perm;
  for (int64_t i = 0; i < n; ++i) perm.push_back(i);
  perm.insert(perm.end(), {n, n + 3, n + 1, n + 4, n + 2});  // (oc, h, r, w, r)
  Shape out = batch;
  out.insert(out.end(), {oc, h * r, w * r});
  return input.reshape(split).permute(perm).reshape(out);
}

Tensor pixel_unshuffle(const Tensor& input, int64_t downscale_factor) {
  EMBER_CHECK(input.dim() >= 3, "pixel_unshuffle expects input to have at least 3 dimensions, but got input with ",
              input.dim(), " dimension(s)");
  const int64_t r = downscale_factor;
  EMBER_CHECK(r > 0, "pixel_unshuffle expects a positive downscale_factor, but got ", r);
  const int64_t nd = input.dim(), c = input.sizes()[size_t(nd - 3)], h = input.sizes()[size_t(nd - 2)],
                w = input.sizes()[size_t(nd - 1)];
  EMBER_CHECK(h % r == 0, "pixel_unshuffle expects height to be divisible by downscale_factor, but input.size(-2)=", h,
              " is not divisible by ", r);
  EMBER_CHECK(w % r == 0, "pixel_unshuffle expects width to be divisible by downscale_factor, but input.size(-1)=", w,
              " is not divisible by ", r);
  Shape batch(input.sizes().begin(), input.sizes().end() - 3);
  const int64_t n = int64_t(batch.size());
  Shape split = batch;
  split.insert(split.end(), {c, h / r, r, w / r, r});
  std::vector<int64_t> perm;
  for (int64_t i = 0; i < n; ++i) perm.push_back(i);
  perm.insert(perm.end(), {n, n + 2, n + 4, n + 1, n + 3});  // (c, r, r, h/r, w/r)
  Shape out = batch;
  out.insert(out.end(), {c * r * r, h / r, w / r});
  return input.reshape(split).permute(perm).reshape(out);
}

Tensor channel_shuffle(const Tensor& input, int64_t groups) {
  EMBER_CHECK(input.dim() > 2, "channel_shuffle expects input with > 2 dims, but got input with sizes ",
              input.sizes());
  EMBER_CHECK(groups > 0, "Number of groups to divide channels in must be positive. Value of groups:", groups);
  const int64_t c = input.sizes()[1];
  EMBER_CHECK(c % groups == 0, "Number of channels must be divisible by groups. Got ", c, " channels and ", groups,
              " groups.");
  Shape split{input.sizes()[0], groups, c / groups};
  split.insert(split.end(), input.sizes().begin() + 2, input.sizes().end());
  return input.reshape(split).transpose(1, 2).reshape(input.sizes());
}

}  // namespace ember::nn::functional
