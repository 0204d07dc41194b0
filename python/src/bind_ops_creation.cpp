// Factory functions with torch's Python signatures: sizes as f(2, 3), f((2, 3)) or f(x.shape),
// keyword-only dtype/layout/device/pin_memory/requires_grad (layout and pin_memory are accepted
// and ignored: ember has strided CPU memory only), generator= for the random ones.
#include <cmath>

#include "bind_ops.h"

namespace ember::python {
namespace {

// The keyword arguments every factory takes. After *size they are keyword-only already.
#define EMBER_FACTORY_KW                                                                        \
  nb::arg("dtype") = nb::none(), nb::arg("layout") = nb::none(), nb::arg("device") = nb::none(), \
  nb::arg("pin_memory") = false, nb::arg("requires_grad") = false
#define EMBER_FACTORY_PARAMS \
  std::optional<DType> dtype, nb::handle /*layout*/, std::optional<Device> device, bool /*pin_memory*/, bool requires_grad
#define EMBER_OPTS make_options(dtype, device, requires_grad)

using SizeFactory = Tensor (*)(IntArrayRef, TensorOptions);

// Sizes from *size, or from size= when no positional sizes were given.
std::vector<int64_t> factory_sizes(const nb::args& args, nb::handle size_kw, const char* op) {
  if (!size_kw.is_none()) {
    EMBER_CHECK_TYPE(args.size() == 0, op, "() got multiple values for argument 'size'");
    return sizes_from_args(nb::borrow<nb::args>(nb::make_tuple(size_kw)), op);
  }
  return sizes_from_args(args, op);
}

template <SizeFactory F>
void def_size_factory(nb::module_& m, const char* name) {
  m.def(name, [name](nb::args size, nb::handle size_kw, nb::handle /*out*/, EMBER_FACTORY_PARAMS,
                     nb::handle /*memory_format*/) {
    return F(factory_sizes(size, size_kw, name), EMBER_OPTS);
  }, nb::arg("sizes"), nb::arg("size") = nb::none(), nb::arg("out") = nb::none(), EMBER_FACTORY_KW,
        nb::arg("memory_format") = nb::none());
}

Tensor zeros_f(IntArrayRef s, TensorOptions o) { return zeros(s, o); }
Tensor ones_f(IntArrayRef s, TensorOptions o) { return ones(s, o); }
Tensor empty_f(IntArrayRef s, TensorOptions o) { return empty(s, o); }

// randint's positional forms: randint(high, size), randint(low, high, size), plus keywords.
Tensor randint_args(const nb::args& args, std::optional<int64_t> low, std::optional<int64_t> high,
                    nb::handle size, Generator* gen, TensorOptions opts) {
  std::vector<int64_t> ints;
  std::optional<std::vector<int64_t>> shape;
  for (nb::handle a : args) {
    if (PyTuple_Check(a.ptr()) || PyList_Check(a.ptr())) {
      EMBER_CHECK_TYPE(!shape, "randint(): the size was given twice");
      shape = sizes_from_args(nb::borrow<nb::args>(nb::make_tuple(a)), "randint");
    } else {
      EMBER_CHECK_TYPE(!shape && PyIndex_Check(a.ptr()) && !PyBool_Check(a.ptr()),
                       "randint() received an invalid combination of arguments: expected (int high, tuple size) or "
                       "(int low, int high, tuple size), got an argument of type ", Py_TYPE(a.ptr())->tp_name);
      ints.push_back(nb::cast<int64_t>(a));
    }
  }
  if (!size.is_none()) {
    EMBER_CHECK_TYPE(!shape, "randint() got multiple values for argument 'size'");
    shape = sizes_from_args(nb::borrow<nb::args>(nb::make_tuple(size)), "randint");
  }
  EMBER_CHECK_TYPE(shape.has_value(), "randint() missing required argument 'size'");
  EMBER_CHECK_TYPE(ints.size() <= 2, "randint() takes at most 2 integer bounds (low, high), got ", ints.size());
  if (ints.size() == 2) {
    EMBER_CHECK_TYPE(!low && !high, "randint() got multiple values for argument 'low'/'high'");
    low = ints[0], high = ints[1];
  } else if (ints.size() == 1) {
    if (high) low = ints[0];  // randint(0, high=10, size=...)
    else high = ints[0];
  }
  EMBER_CHECK_TYPE(high.has_value(), "randint() missing required argument 'high'");
  if (!opts.dtype) opts.dtype = kInt64;
  return randint(low.value_or(0), *high, *shape, opts, gen);
}

}  // namespace

void bind_ops_creation(nb::module_& m, TensorClass& cls) {
  def_size_factory<zeros_f>(m, "zeros");
  def_size_factory<ones_f>(m, "ones");
  def_size_factory<empty_f>(m, "empty");

  m.def("full", [](IntArrayRef size, const Scalar& fill, nb::handle, EMBER_FACTORY_PARAMS) {
    return full(size, fill, EMBER_OPTS);
  }, nb::arg("size"), nb::arg("fill_value"), nb::kw_only(), nb::arg("out") = nb::none(), EMBER_FACTORY_KW);
  m.def("empty_strided", [](IntArrayRef size, IntArrayRef stride, EMBER_FACTORY_PARAMS) {
    return empty_strided(size, stride, EMBER_OPTS);
  }, nb::arg("size"), nb::arg("stride"), nb::kw_only(), EMBER_FACTORY_KW);
  m.def("scalar_tensor", [](const Scalar& s, EMBER_FACTORY_PARAMS) {
    TensorOptions o = EMBER_OPTS;
    if (!o.dtype) o.dtype = default_dtype();  // torch.scalar_tensor(1) is a float tensor
    return scalar_tensor(s, o);
  }, nb::arg("s"), nb::kw_only(), EMBER_FACTORY_KW);

  // ---- random factories
  m.def("rand", [](nb::args size, Generator* gen, nb::handle, EMBER_FACTORY_PARAMS) {
    return rand(sizes_from_args(size, "rand"), EMBER_OPTS, gen);
  }, nb::arg("size"), nb::arg("generator") = nb::none(), nb::arg("out") = nb::none(), EMBER_FACTORY_KW);
  m.def("randn", [](nb::args size, Generator* gen, nb::handle, EMBER_FACTORY_PARAMS) {
    return randn(sizes_from_args(size, "randn"), EMBER_OPTS, gen);
  }, nb::arg("size"), nb::arg("generator") = nb::none(), nb::arg("out") = nb::none(), EMBER_FACTORY_KW);
  m.def("randint", [](nb::args args, std::optional<int64_t> low, std::optional<int64_t> high, nb::handle size,
                      Generator* gen, nb::handle, EMBER_FACTORY_PARAMS) {
    return randint_args(args, low, high, size, gen, EMBER_OPTS);
  }, nb::arg("args"), nb::arg("low") = nb::none(), nb::arg("high") = nb::none(), nb::arg("size") = nb::none(),
        nb::arg("generator") = nb::none(), nb::arg("out") = nb::none(), EMBER_FACTORY_KW);
  m.def("randperm", [](int64_t n, Generator* gen, nb::handle, EMBER_FACTORY_PARAMS) {
    TensorOptions o = EMBER_OPTS;
    if (!o.dtype) o.dtype = kInt64;
    return randperm(n, o, gen);
  }, nb::arg("n"), nb::kw_only(), nb::arg("generator") = nb::none(), nb::arg("out") = nb::none(), EMBER_FACTORY_KW);
  m.def("normal", [](double mean, double std, IntArrayRef size, Generator* gen, nb::handle, EMBER_FACTORY_PARAMS) {
    return normal(mean, std, size, EMBER_OPTS, gen);
  }, nb::arg("mean"), nb::arg("std"), nb::arg("size"), nb::kw_only(), nb::arg("generator") = nb::none(),
        nb::arg("out") = nb::none(), EMBER_FACTORY_KW);
  m.def("normal", [](const Tensor& mean, const Tensor& std, Generator* gen) { return normal(mean, std, gen); },
        nb::arg("mean"), nb::arg("std"), nb::kw_only(), nb::arg("generator") = nb::none());
  m.def("normal", [](const Tensor& mean, double std, Generator* gen) {
    return normal(mean, std, gen);
  }, nb::arg("mean"), nb::arg("std") = 1.0, nb::kw_only(), nb::arg("generator") = nb::none());
  m.def("normal", [](double mean, const Tensor& std, Generator* gen) {
    return normal(mean, std, gen);
  }, nb::arg("mean"), nb::arg("std"), nb::kw_only(), nb::arg("generator") = nb::none());
  m.def("bernoulli", [](const Tensor& p, Generator* gen, nb::handle) { return bernoulli(p, gen); },
        nb::arg("input"), nb::kw_only(), nb::arg("generator") = nb::none(), nb::arg("out") = nb::none());
  m.def("bernoulli", [](const Tensor& input, double p, Generator* gen) {
    Tensor out = empty_like(input);
    return bernoulli_(out, p, gen);
  }, nb::arg("input"), nb::arg("p"), nb::kw_only(), nb::arg("generator") = nb::none());

  // ---- ranges
  m.def("arange", [](const Scalar& end, nb::handle, EMBER_FACTORY_PARAMS) { return arange(end, EMBER_OPTS); },
        nb::arg("end"), nb::kw_only(), nb::arg("out") = nb::none(), EMBER_FACTORY_KW);
  m.def("arange", [](const Scalar& start, const Scalar& end, const Scalar& step, nb::handle, EMBER_FACTORY_PARAMS) {
    return arange(start, end, step, EMBER_OPTS);
  }, nb::arg("start"), nb::arg("end"), nb::arg("step") = 1, nb::kw_only(), nb::arg("out") = nb::none(),
        EMBER_FACTORY_KW);
  m.def("linspace", [](const Scalar& start, const Scalar& end, int64_t steps, nb::handle, EMBER_FACTORY_PARAMS) {
    return linspace(start, end, steps, EMBER_OPTS);
  }, nb::arg("start"), nb::arg("end"), nb::arg("steps"), nb::kw_only(), nb::arg("out") = nb::none(),
        EMBER_FACTORY_KW);
  m.def("logspace", [](const Scalar& start, const Scalar& end, int64_t steps, double base, nb::handle,
                       EMBER_FACTORY_PARAMS) { return logspace(start, end, steps, base, EMBER_OPTS); },
        nb::arg("start"), nb::arg("end"), nb::arg("steps"), nb::arg("base") = 10.0, nb::kw_only(),
        nb::arg("out") = nb::none(), EMBER_FACTORY_KW);
  m.def("eye", [](int64_t n, std::optional<int64_t> mcols, nb::handle, EMBER_FACTORY_PARAMS) {
    return eye(n, mcols, EMBER_OPTS);
  }, nb::arg("n"), nb::arg("m") = nb::none(), nb::kw_only(), nb::arg("out") = nb::none(), EMBER_FACTORY_KW);

  // ---- *_like: dtype and device from the input unless given
#define EMBER_LIKE(name)                                                                           \
  m.def(#name, [](const Tensor& like, EMBER_FACTORY_PARAMS, nb::handle) { return name(like, EMBER_OPTS); }, \
        nb::arg("input"), nb::kw_only(), EMBER_FACTORY_KW, nb::arg("memory_format") = nb::none());
  EMBER_LIKE(empty_like) EMBER_LIKE(zeros_like) EMBER_LIKE(ones_like)
#undef EMBER_LIKE
  m.def("full_like", [](const Tensor& like, const Scalar& fill, EMBER_FACTORY_PARAMS, nb::handle) {
    return full_like(like, fill, EMBER_OPTS);
  }, nb::arg("input"), nb::arg("fill_value"), nb::kw_only(), EMBER_FACTORY_KW, nb::arg("memory_format") = nb::none());
  m.def("rand_like", [](const Tensor& like, Generator* gen, EMBER_FACTORY_PARAMS, nb::handle) {
    return rand_like(like, EMBER_OPTS, gen);
  }, nb::arg("input"), nb::kw_only(), nb::arg("generator") = nb::none(), EMBER_FACTORY_KW,
        nb::arg("memory_format") = nb::none());
  m.def("randn_like", [](const Tensor& like, Generator* gen, EMBER_FACTORY_PARAMS, nb::handle) {
    return randn_like(like, EMBER_OPTS, gen);
  }, nb::arg("input"), nb::kw_only(), nb::arg("generator") = nb::none(), EMBER_FACTORY_KW,
        nb::arg("memory_format") = nb::none());
  // randint_like(input, high) and randint_like(input, low, high)
  m.def("randint_like", [](const Tensor& like, int64_t a, std::optional<int64_t> b, Generator* gen,
                           EMBER_FACTORY_PARAMS, nb::handle) {
    int64_t low = b ? a : 0, high = b ? *b : a;
    return randint_like(like, low, high, EMBER_OPTS, gen);
  }, nb::arg("input"), nb::arg("low"), nb::arg("high") = nb::none(), nb::kw_only(), nb::arg("generator") = nb::none(),
        EMBER_FACTORY_KW, nb::arg("memory_format") = nb::none());

  // ---- Tensor.new_*: dtype and device default to self's
  auto self_opts = [](const Tensor& self, std::optional<DType> dtype, std::optional<Device> device, bool rg) {
    return make_options(dtype ? dtype : self.dtype(), device ? device : self.device(), rg);
  };
#define EMBER_NEW(name, factory)                                                                 \
  cls.def(name, [self_opts](const Tensor& self, nb::args size, EMBER_FACTORY_PARAMS) {           \
    return factory(sizes_from_args(size, name), self_opts(self, dtype, device, requires_grad));  \
  }, nb::arg("size"), EMBER_FACTORY_KW);
  EMBER_NEW("new_zeros", zeros_f) EMBER_NEW("new_ones", ones_f) EMBER_NEW("new_empty", empty_f)
#undef EMBER_NEW
  cls.def("new_full", [self_opts](const Tensor& self, IntArrayRef size, const Scalar& fill, EMBER_FACTORY_PARAMS) {
    return full(size, fill, self_opts(self, dtype, device, requires_grad));
  }, nb::arg("size"), nb::arg("fill_value"), nb::kw_only(), EMBER_FACTORY_KW);
  cls.def("new_tensor", [](const Tensor& self, nb::handle data, EMBER_FACTORY_PARAMS) {
    return tensor_from_data(data, dtype ? dtype : self.dtype(), device ? device : self.device(), requires_grad);
  }, nb::arg("data"), nb::kw_only(), EMBER_FACTORY_KW);
  cls.def("new_empty_strided", [self_opts](const Tensor& self, IntArrayRef size, IntArrayRef stride,
                                           EMBER_FACTORY_PARAMS) {
    return empty_strided(size, stride, self_opts(self, dtype, device, requires_grad));
  }, nb::arg("size"), nb::arg("stride"), nb::kw_only(), EMBER_FACTORY_KW);

  // ---- random fills in place (return self, the same Python object)
  using Self = nb::handle_t<Tensor>;
  cls.def("uniform_", [](Self self, double from, double to, Generator* gen) {
    uniform_(tensor_of(self), from, to, gen);
    return nb::borrow(self);
  }, nb::arg("from") = 0.0, nb::arg("to") = 1.0, nb::kw_only(), nb::arg("generator") = nb::none());
  cls.def("normal_", [](Self self, double mean, double std, Generator* gen) {
    normal_(tensor_of(self), mean, std, gen);
    return nb::borrow(self);
  }, nb::arg("mean") = 0.0, nb::arg("std") = 1.0, nb::kw_only(), nb::arg("generator") = nb::none());
  // random_(), random_(to), random_(from, to), random_(from, None) (torch's to=None: up to the
  // dtype's end). `to` left out is told from `to=None` by its Ellipsis default.
  cls.def("random_", [](Self self, std::optional<int64_t> a, nb::handle b, Generator* gen) {
    Tensor& t = tensor_of(self);
    const bool b_given = !b.is(nb::ellipsis());
    if (a && b_given && b.is_none()) random_from_(t, *a, gen);
    else if (a && b_given) random_(t, *a, nb::cast<int64_t>(b), gen);
    else if (a) random_(t, *a, gen);
    else if (b_given && !b.is_none()) random_(t, nb::cast<int64_t>(b), gen);
    else random_(t, gen);
    return nb::borrow(self);
  }, nb::arg("from") = nb::none(), nb::arg("to").none() = nb::ellipsis(), nb::kw_only(),
     nb::arg("generator") = nb::none());
  cls.def("bernoulli_", [](Self self, double p, Generator* gen) {
    bernoulli_(tensor_of(self), p, gen);
    return nb::borrow(self);
  }, nb::arg("p") = 0.5, nb::kw_only(), nb::arg("generator") = nb::none());
  cls.def("bernoulli_", [](Self self, const Tensor& p, Generator* gen) {
    bernoulli_(tensor_of(self), p, gen);
    return nb::borrow(self);
  }, nb::arg("p"), nb::kw_only(), nb::arg("generator") = nb::none());
  cls.def("bernoulli", [](const Tensor& self, Generator* gen) { return bernoulli(self, gen); }, nb::kw_only(),
          nb::arg("generator") = nb::none());
  cls.def("bernoulli", [](const Tensor& self, double p, Generator* gen) { return bernoulli(self, p, gen); },
          nb::arg("p"), nb::kw_only(), nb::arg("generator") = nb::none());
  cls.def("exponential_", [](Self self, double lambd, Generator* gen) {
    exponential_(tensor_of(self), lambd, gen);
    return nb::borrow(self);
  }, nb::arg("lambd") = 1.0, nb::kw_only(), nb::arg("generator") = nb::none());
  cls.def("log_normal_", [](Self self, double mean, double std, Generator* gen) {
    log_normal_(tensor_of(self), mean, std, gen);
    return nb::borrow(self);
  }, nb::arg("mean") = 1.0, nb::arg("std") = 2.0, nb::kw_only(), nb::arg("generator") = nb::none());
  auto multinomial_f = [](const Tensor& self, int64_t n, bool replacement, Generator* gen) {
    return multinomial(self, n, replacement, gen);
  };
  def_both(m, cls, "multinomial", multinomial_f, nb::arg("num_samples"), nb::arg("replacement") = false,
           nb::kw_only(), nb::arg("generator") = nb::none());
}

}  // namespace ember::python
