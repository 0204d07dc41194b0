// Tensor::str(): the repr PyTorch prints (torch/_tensor_str.py; options as set_printoptions
// sets them, default precision 4, threshold 1000, edgeitems 3, linewidth 80), with "torch."
// spelled "ember.".
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "ember/core/errors.h"
#include "ember/ops.h"
#include "ember/print_options.h"

namespace ember {

namespace {

PrintOptions g_print_options;  // set_printoptions; read when a tensor is printed

enum class Kind { Float, Int, Bool };

// The elements in row-major order, in the form they are formatted from.
struct Values {
  Kind kind;
  std::vector<double> f;    // Float (float16/bfloat16 widened to float first, as torch does)
  std::vector<int64_t> i;   // Int and Bool
};

std::string fmt(const char* spec, double v) {
  char buf[512];
  std::snprintf(buf, sizeof(buf), spec, v);
  return buf;
}

// v with `precision` digits after the point, 'e' (scientific) or 'f' (fixed).
std::string fmt_prec(char conv, int precision, double v) {
  char buf[512];
  const char spec[] = {'%', '.', '*', conv, '\0'};
  std::snprintf(buf, sizeof(buf), spec, precision, v);
  return buf;
}

// Python's str(float) spellings for the non-finite values.
std::string nonfinite(double v) { return std::isnan(v) ? "nan" : (v > 0 ? "inf" : "-inf"); }

// PyTorch's _Formatter: picks int / fixed / scientific mode and a common width from the
// elements that will be shown.
class Formatter {
 public:
  Formatter(const Values& vals, const std::vector<int64_t>& shown)
      : kind_(vals.kind), precision_(g_print_options.precision) {
    if (kind_ != Kind::Float) {
      for (int64_t k : shown) max_width_ = std::max(max_width_, int64_t(int_str(vals.i[k]).size()));
      return;
    }
    std::vector<double> nz;
    for (int64_t k : shown) {
      double v = vals.f[k];
      if (std::isfinite(v) && v != 0.0) nz.push_back(v);
    }
    if (nz.empty()) return;
    double lo = std::abs(nz[0]), hi = lo;
    for (double v : nz) {
      lo = std::min(lo, std::abs(v));
      hi = std::max(hi, std::abs(v));
      if (v != std::ceil(v)) int_mode_ = false;
    }
    sci_mode_ = int_mode_ ? (hi / lo > 1000.0 || hi > 1.0e8) : (hi / lo > 1000.0 || hi > 1.0e8 || lo < 1.0e-4);
    // torch 2.x: a forced sci_mode replaces the choice before the widths are measured
    if (g_print_options.sci_mode) sci_mode_ = *g_print_options.sci_mode;
    for (double v : nz) {
      int64_t w = sci_mode_ ? int64_t(fmt_prec('e', precision_, v).size())
                  : int_mode_ ? int64_t(fmt("%.0f", v).size()) + 1
                              : int64_t(fmt_prec('f', precision_, v).size());
      max_width_ = std::max(max_width_, w);
    }
  }

  int64_t width() const { return max_width_; }

  std::string format(const Values& vals, int64_t k) const {
    std::string s;
    if (kind_ == Kind::Float) {
      double v = vals.f[k];
      if (!std::isfinite(v)) s = nonfinite(v);
      else if (sci_mode_) s = fmt_prec('e', precision_, v);
      else if (int_mode_) s = fmt("%.0f", v) + ".";
      else s = fmt_prec('f', precision_, v);
    } else {
      s = int_str(vals.i[k]);
    }
    if (int64_t(s.size()) < max_width_) s.insert(0, size_t(max_width_ - int64_t(s.size())), ' ');
    return s;
  }

 private:
  std::string int_str(int64_t v) const {
    if (kind_ == Kind::Bool) return v ? "True" : "False";
    return std::to_string(v);
  }

  Kind kind_;
  int precision_;
  bool int_mode_ = true;
  bool sci_mode_ = false;
  int64_t max_width_ = 1;
};

// Walks the (possibly summarised) tensor the way _tensor_str_with_formatter does. With
// fmt == nullptr it only records which elements are shown (for the formatter).
struct Printer {
  const Shape& sizes;
  Shape strides;  // contiguous strides of `sizes`
  bool summarize;
  const Values& vals;
  const Formatter* fmt = nullptr;
  std::vector<int64_t>* shown = nullptr;
  // Complex tensors: the imaginary parts and their own formatter (torch's formatter2).
  const Values* imag_vals = nullptr;
  const Formatter* imag_fmt = nullptr;

  bool cut(int64_t n) const { return summarize && n > 2 * g_print_options.edgeitems; }

  std::string element(int64_t k) const {
    if (shown) shown->push_back(k);
    if (!fmt) return {};
    if (!imag_fmt) return fmt->format(vals, k);
    // real part, then the imaginary part with its sign: "1.+2.j", "1.-2.j"
    std::string im = imag_fmt->format(*imag_vals, k) + "j";
    im.erase(0, im.find_first_not_of(' '));
    return fmt->format(vals, k) + (im[0] == '+' || im[0] == '-' ? "" : "+") + im;
  }

  std::string vector_str(int64_t off, int64_t indent) const {
    int64_t n = sizes.back();
    std::vector<std::string> data;
    if (cut(n)) {
      for (int64_t j = 0; j < g_print_options.edgeitems; ++j) data.push_back(element(off + j));
      data.push_back(" ...");
      for (int64_t j = n - g_print_options.edgeitems; j < n; ++j) data.push_back(element(off + j));
    } else {
      for (int64_t j = 0; j < n; ++j) data.push_back(element(off + j));
    }
    if (!fmt) return {};
    int64_t element_length = fmt->width() + 2 + (imag_fmt ? imag_fmt->width() + 1 : 0);
    int64_t per_line = std::max<int64_t>(
        1, int64_t(std::floor(double(g_print_options.linewidth - indent) / double(element_length))));
    std::string line_sep = ",\n";
    line_sep.append(size_t(indent + 1), ' ');
    std::string out = "[";
    for (size_t j = 0; j < data.size(); ++j) {
      if (j > 0) out += int64_t(j) % per_line == 0 ? line_sep : std::string(", ");
      out += data[j];
    }
    return out + "]";
  }

  std::string str(int64_t d, int64_t off, int64_t indent) const {
    int64_t nd = int64_t(sizes.size());
    if (nd - d == 0) return element(off);
    if (nd - d == 1) return vector_str(off, indent);
    int64_t n = sizes[d];
    std::vector<std::string> slices;
    if (cut(n)) {
      for (int64_t j = 0; j < g_print_options.edgeitems; ++j) slices.push_back(str(d + 1, off + j * strides[d], indent + 1));
      slices.push_back("...");
      for (int64_t j = n - g_print_options.edgeitems; j < n; ++j) slices.push_back(str(d + 1, off + j * strides[d], indent + 1));
    } else {
      for (int64_t j = 0; j < n; ++j) slices.push_back(str(d + 1, off + j * strides[d], indent + 1));
    }
    if (!fmt) return {};
    std::string sep = ",";
    sep.append(size_t(nd - d - 1), '\n');
    sep.append(size_t(indent + 1), ' ');
    std::string out = "[";
    for (size_t j = 0; j < slices.size(); ++j) {
      if (j > 0) out += sep;
      out += slices[j];
    }
    return out + "]";
  }
};

std::string tensor_body(const Tensor& self, int64_t indent) {
  Values vals;
  if (is_complex(self.dtype())) {
    Values im{Kind::Float, imag(self).tolist<double>(), {}};
    vals = Values{Kind::Float, real(self).tolist<double>(), {}};
    bool summarize = self.numel() > g_print_options.threshold;
    Printer p{self.sizes(), contiguous_strides(self.sizes()), summarize, vals};
    std::vector<int64_t> shown;
    p.shown = &shown;
    p.str(0, 0, indent);
    Formatter f(vals, shown), fi(im, shown);
    p.shown = nullptr;
    p.fmt = &f;
    p.imag_vals = &im;
    p.imag_fmt = &fi;
    return p.str(0, 0, indent);
  }
  if (is_floating(self.dtype())) {
    vals.kind = Kind::Float;
    vals.f = self.tolist<double>();
  } else {
    vals.kind = self.dtype() == DType::Bool ? Kind::Bool : Kind::Int;
    vals.i = self.tolist<int64_t>();
  }
  bool summarize = self.numel() > g_print_options.threshold;
  Printer p{self.sizes(), contiguous_strides(self.sizes()), summarize, vals};
  std::vector<int64_t> shown;
  p.shown = &shown;
  p.str(0, 0, indent);
  Formatter f(vals, shown);
  p.shown = nullptr;
  p.fmt = &f;
  return p.str(0, 0, indent);
}

std::string shape_tuple(const Shape& s) {
  std::string out = "(";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  if (s.size() == 1) out += ",";
  return out + ")";
}

}  // namespace

std::string Tensor::str() const {
  if (!defined()) return "tensor(undefined)";
  const std::string prefix = "tensor(";
  const int64_t indent = int64_t(prefix.size());
  std::vector<std::string> suffixes;
  if (!is_cpu()) suffixes.push_back("device='" + device().str() + "'");
  std::string body;
  std::string dtype_suffix = std::string("dtype=ember.") + dtype_name(dtype());
  if (is_meta()) {  // sizes without values, as torch prints them
    suffixes.push_back("size=" + shape_tuple(sizes()));
    if (dtype() != default_dtype()) suffixes.push_back(dtype_suffix);
    body = "...";
  } else if (numel() == 0) {
    if (dim() != 1) suffixes.push_back("size=" + shape_tuple(sizes()));
    if (dtype() != default_dtype()) suffixes.push_back(dtype_suffix);
    body = "[]";
  } else {
    DType dt = dtype();
    if (dt != default_dtype() && dt != real_to_complex(default_dtype()) && dt != DType::Int64 && dt != DType::Bool)
      suffixes.push_back(dtype_suffix);
    body = tensor_body(*this, indent);
  }
  // Autograd exposes only requires_grad to the core; grad_fn names are not known here.
  if (auto* m = impl()->autograd_meta(); m && m->requires_grad()) suffixes.push_back("requires_grad=True");

  // _add_suffixes: a suffix goes on a new line when it would overflow the line width.
  std::string out = prefix + body;
  size_t nl = out.rfind('\n');
  int64_t last_line_len = int64_t(out.size()) - (nl == std::string::npos ? -1 : int64_t(nl)) + 1;
  for (const auto& s : suffixes) {
    int64_t len = int64_t(s.size());
    if (last_line_len + len + 2 > g_print_options.linewidth) {
      out += ",\n";
      out.append(size_t(indent), ' ');
      out += s;
      last_line_len = indent + len;
    } else {
      out += ", " + s;
      last_line_len += len + 2;
    }
  }
  return out + ")";
}

void set_printoptions(std::optional<int> precision, std::optional<int64_t> threshold,
                      std::optional<int64_t> edgeitems, std::optional<int64_t> linewidth,
                      std::optional<std::string> profile, std::optional<std::optional<bool>> sci_mode) {
  PrintOptions o = g_print_options;
  if (profile) {
    if (*profile == "default") o = PrintOptions{};
    else if (*profile == "short") o = PrintOptions{.precision = 2, .threshold = 1000, .edgeitems = 2, .linewidth = 80, .sci_mode = std::nullopt};
    else if (*profile == "full") o = PrintOptions{.precision = 4, .threshold = INT64_MAX, .edgeitems = 3, .linewidth = 80, .sci_mode = std::nullopt};
    else EMBER_CHECK_VALUE(false, "set_printoptions: profile must be 'default', 'short' or 'full', got '", *profile, "'");
  }
  if (precision) {
    EMBER_CHECK_VALUE(*precision >= 0 && *precision <= 100, "set_printoptions: precision must be in [0, 100], got ", *precision);
    o.precision = *precision;
  }
  if (threshold) o.threshold = *threshold;
  if (edgeitems) {
    EMBER_CHECK_VALUE(*edgeitems >= 0, "set_printoptions: edgeitems must be non-negative, got ", *edgeitems);
    o.edgeitems = *edgeitems;
  }
  if (linewidth) o.linewidth = *linewidth;
  if (sci_mode) o.sci_mode = *sci_mode;
  g_print_options = o;
}

PrintOptions get_printoptions() { return g_print_options; }

}  // namespace ember
