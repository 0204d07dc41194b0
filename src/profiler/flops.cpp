// with_flops: the floating-point operations torch's profiler counts, from the recorded input
// shapes. Matmuls and convolutions count a multiply and an add per term (2 * terms); mul and
// add count one per output element. Other ops count none, as in torch.
#include <algorithm>
#include <cstdlib>

#include "profiler/raw_events.h"

namespace ember::profiler::detail {

namespace {

int64_t product(const std::vector<int64_t>& v) {
  int64_t p = 1;
  for (int64_t x : v) p *= x;
  return p;
}

// "[1, 2]" (a ScalarList's recorded value) -> {1, 2}; a single "3" -> {3}.
std::vector<int64_t> parse_ints(const std::string& s) {
  std::vector<int64_t> out;
  const char* p = s.c_str();
  while (*p) {
    if ((*p >= '0' && *p <= '9') || *p == '-') {
      char* end = nullptr;
      out.push_back(std::strtoll(p, &end, 10));
      p = end;
    } else {
      ++p;
    }
  }
  return out;
}

bool is_tensor(const InputInfo& i) { return !i.type.empty() && i.type != "Scalar" && i.type != "ScalarList" && i.type != "TensorList"; }

// 2-d convolution: 2 * N * Cout * Hout * Wout * (Cin / groups) * kh * kw.
int64_t conv2d_flops(const std::vector<InputInfo>& in) {
  if (in.size() < 7 || in[0].dims.size() != 4 || in[1].dims.size() != 4) return 0;
  auto stride = parse_ints(in[3].concrete), padding = parse_ints(in[4].concrete), dilation = parse_ints(in[5].concrete);
  auto pick = [](const std::vector<int64_t>& v, size_t k, int64_t dflt) { return v.empty() ? dflt : v[std::min(k, v.size() - 1)]; };
  const auto& x = in[0].dims;
  const auto& w = in[1].dims;
  int64_t out_hw = 1;
  for (size_t k = 0; k < 2; ++k) {
    int64_t extent = pick(dilation, k, 1) * (w[2 + k] - 1) + 1;
    int64_t out = (x[2 + k] + 2 * pick(padding, k, 0) - extent) / std::max<int64_t>(1, pick(stride, k, 1)) + 1;
    out_hw *= std::max<int64_t>(0, out);
  }
  return 2 * x[0] * w[0] * out_hw * w[1] * w[2] * w[3];
}

}  // namespace

int64_t estimate_flops(const std::string& name, const std::vector<InputInfo>& in) {
  auto dims = [&](size_t k) -> const std::vector<int64_t>& {
    static const std::vector<int64_t> none;
    return k < in.size() ? in[k].dims : none;
  };
  if (name == "aten::mm" && dims(0).size() == 2 && dims(1).size() == 2)
    return 2 * dims(0)[0] * dims(0)[1] * dims(1)[1];
  if (name == "aten::addmm" && dims(1).size() == 2 && dims(2).size() == 2)
    return 2 * dims(1)[0] * dims(1)[1] * dims(2)[1];
  if (name == "aten::bmm" && dims(0).size() == 3 && dims(1).size() == 3)
    return 2 * dims(0)[0] * dims(0)[1] * dims(0)[2] * dims(1)[2];
  if (name == "aten::baddbmm" && dims(1).size() == 3 && dims(2).size() == 3)
    return 2 * dims(1)[0] * dims(1)[1] * dims(1)[2] * dims(2)[2];
  if (name == "aten::conv2d_forward") return conv2d_flops(in);
  if (name == "aten::mul" || name == "aten::add" || name == "aten::mul_" || name == "aten::add_") {
    // One operation per element of the broadcast result.
    std::vector<int64_t> shape;
    for (const auto& i : in) {
      if (!is_tensor(i)) continue;
      const auto& d = i.dims;
      if (d.size() > shape.size()) shape.insert(shape.begin(), d.size() - shape.size(), 1);
      for (size_t k = 0; k < d.size(); ++k) {
        int64_t& s = shape[shape.size() - d.size() + k];
        if (s == 1) s = d[k];
      }
    }
    return shape.empty() && in.empty() ? 0 : product(shape);
  }
  return 0;
}

}  // namespace ember::profiler::detail
