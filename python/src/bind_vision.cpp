// ember._C._vision: the C++ image transforms (include/ember/data/transforms.h) and vision datasets
// (include/ember/data/datasets.h) behind the pure-Python ember.vision package, which gives them
// torchvision's class names and signatures. Everything here is glue: argument normalisation
// (torchvision's int-or-sequence forms, enum names) happens in ember/vision/transforms.py.
#include <nanobind/stl/filesystem.h>
#include <nanobind/stl/function.h>
#include <nanobind/stl/shared_ptr.h>

#include <memory>
#include <string>
#include <utility>

#include "bind.h"
#include "ember/core/errors.h"
#include "ember/data/datasets.h"
#include "ember/data/transforms.h"

namespace ember::python {

namespace {

using transforms::Interpolation;
using transforms::PaddingMode;
using transforms::Transform;
using OptPair = std::optional<std::pair<double, double>>;

Interpolation interpolation_from(const std::string& name, const char* who) {
  if (name == "nearest") return Interpolation::Nearest;
  if (name == "bilinear") return Interpolation::Bilinear;
  throw ValueError(std::string(who) + ": interpolation must be 'nearest' or 'bilinear', got '" + name + "'");
}

PaddingMode padding_mode_from(const std::string& name) {
  if (name == "constant") return PaddingMode::Constant;
  if (name == "edge") return PaddingMode::Edge;
  if (name == "reflect") return PaddingMode::Reflect;
  if (name == "symmetric") return PaddingMode::Symmetric;
  throw ValueError("RandomCrop: padding_mode should be 'constant', 'edge', 'reflect' or 'symmetric', got '" + name +
                   "'");
}

// A Python callable as a C++ transform. The call may come from a DataLoader worker thread that
// does not hold the GIL, so calling (and finally releasing) the function takes it first.
Transform python_lambda(nb::object fn) {
  std::shared_ptr<nb::object> holder(new nb::object(std::move(fn)), [](nb::object* o) {
    nb::gil_scoped_acquire gil;
    delete o;
  });
  return transforms::Lambda([holder](const Tensor& image) -> Tensor {
    nb::gil_scoped_acquire gil;
    nb::object result = (*holder)(image);
    Tensor* out = nullptr;
    if (!nb::try_cast<Tensor*>(result, out) || !out)
      throw TypeError("Lambda: inside a composed transform the function must return a Tensor, got " +
                      std::string(nb::type_name(result.type()).c_str()));
    return *out;
  });
}

// (image, label) from a dataset sample: the C++ datasets return Value::tuple({Tensor, int}).
nb::tuple sample_to_python(const Value& sample) {
  const ValueList& items = sample.items_list();
  return nb::make_tuple(items.at(0).to_tensor(), items.at(1).to_int());
}

// The vision datasets share this surface: len, one sample, a batch of samples, the raw arrays.
template <class D>
void bind_dataset_common(nb::class_<D>& cls) {
  cls.def("__len__", &D::size)
      .def("get", [](const D& d, int64_t i) { return sample_to_python(d.get(i)); }, nb::arg("index"))
      .def(
          "get_many",
          [](const D& d, std::vector<int64_t> indices) {
            std::vector<Value> samples;
            {
              // Transforms run here; a Python Lambda among them takes the GIL back for its call.
              nb::gil_scoped_release release;
              samples = d.get_many(indices);
            }
            nb::list out;
            for (const Value& s : samples) out.append(sample_to_python(s));
            return out;
          },
          nb::arg("indices"))
      .def_prop_ro("data", [](const D& d) { return d.data(); })
      .def_prop_ro("targets", [](const D& d) { return d.targets(); })
      .def_prop_ro("classes", [](const D& d) { return d.classes(); });
}

}  // namespace

void bind_vision(nb::module_& m) {
  nb::module_ v = m.def_submodule("_vision", "ember.vision's C++ side: image transforms and datasets.");

  nb::class_<Transform>(v, "Transform", "A C++ image transform (ember.vision.transforms wraps these).")
      .def("__call__", [](const Transform& t, const Tensor& image) { return t(image); }, nb::arg("image"),
           nb::call_guard<nb::gil_scoped_release>())
      .def("__repr__", &Transform::repr);

  v.def("Compose", [](std::vector<Transform> ts) -> Transform { return transforms::Compose(std::move(ts)); });
  v.def("Lambda", &python_lambda, nb::arg("fn"));
  v.def("ToTensor", []() -> Transform { return transforms::ToTensor(); });
  v.def(
      "Normalize",
      [](std::vector<double> mean, std::vector<double> std, bool inplace) -> Transform {
        return transforms::Normalize(std::move(mean), std::move(std), inplace);
      },
      nb::arg("mean"), nb::arg("std"), nb::arg("inplace") = false);
  v.def(
      "Resize",
      [](std::vector<int64_t> size, const std::string& interpolation, bool antialias) -> Transform {
        return transforms::Resize(std::move(size), interpolation_from(interpolation, "Resize"), antialias);
      },
      nb::arg("size"), nb::arg("interpolation"), nb::arg("antialias") = false);
  v.def(
      "CenterCrop", [](std::vector<int64_t> size) -> Transform { return transforms::CenterCrop(std::move(size)); },
      nb::arg("size"));
  v.def(
      "RandomCrop",
      [](std::vector<int64_t> size, std::vector<int64_t> padding, bool pad_if_needed, double fill,
         const std::string& padding_mode) -> Transform {
        return transforms::RandomCrop(std::move(size), std::move(padding), pad_if_needed, fill,
                                      padding_mode_from(padding_mode));
      },
      nb::arg("size"), nb::arg("padding"), nb::arg("pad_if_needed"), nb::arg("fill"), nb::arg("padding_mode"));
  v.def(
      "RandomHorizontalFlip", [](double p) -> Transform { return transforms::RandomHorizontalFlip(p); },
      nb::arg("p"));
  v.def(
      "RandomVerticalFlip", [](double p) -> Transform { return transforms::RandomVerticalFlip(p); }, nb::arg("p"));
  v.def(
      "RandomRotation",
      [](std::pair<double, double> degrees, const std::string& interpolation, double fill) -> Transform {
        return transforms::RandomRotation(degrees, interpolation_from(interpolation, "RandomRotation"), fill);
      },
      nb::arg("degrees"), nb::arg("interpolation"), nb::arg("fill"));
  v.def(
      "RandomAffine",
      [](std::pair<double, double> degrees, OptPair translate, OptPair scale, OptPair shear,
         const std::string& interpolation, double fill) -> Transform {
        transforms::RandomAffine t(0, translate, scale, shear, interpolation_from(interpolation, "RandomAffine"),
                                   fill);
        // The C++ constructor takes a symmetric range; torchvision also accepts (min, max).
        EMBER_CHECK_VALUE(degrees.first <= degrees.second,
                          "RandomAffine: degrees range must be (min, max) with min <= max, got (", degrees.first,
                          ", ", degrees.second, ")");
        t.degrees = degrees;
        return t;
      },
      nb::arg("degrees"), nb::arg("translate").none(), nb::arg("scale").none(), nb::arg("shear").none(),
      nb::arg("interpolation"), nb::arg("fill"));
  v.def(
      "RandomResizedCrop",
      [](std::vector<int64_t> size, std::pair<double, double> scale, std::pair<double, double> ratio,
         const std::string& interpolation, bool antialias) -> Transform {
        return transforms::RandomResizedCrop(std::move(size), scale, ratio,
                                             interpolation_from(interpolation, "RandomResizedCrop"), antialias);
      },
      nb::arg("size"), nb::arg("scale"), nb::arg("ratio"), nb::arg("interpolation"), nb::arg("antialias"));
  v.def(
      "resized_crop",
      [](const Tensor& image, int64_t top, int64_t left, int64_t height, int64_t width, std::vector<int64_t> size,
         const std::string& interpolation, bool antialias) {
        return transforms::resized_crop(image, top, left, height, width, std::move(size),
                                        interpolation_from(interpolation, "resized_crop"), antialias);
      },
      nb::arg("image"), nb::arg("top"), nb::arg("left"), nb::arg("height"), nb::arg("width"), nb::arg("size"),
      nb::arg("interpolation"), nb::arg("antialias"), nb::call_guard<nb::gil_scoped_release>());
  v.def(
      "ColorJitter",
      [](OptPair brightness, OptPair contrast, OptPair saturation, OptPair hue) -> Transform {
        return transforms::ColorJitter(brightness, contrast, saturation, hue);
      },
      nb::arg("brightness").none(), nb::arg("contrast").none(), nb::arg("saturation").none(), nb::arg("hue").none());
  v.def(
      "Grayscale", [](int64_t n) -> Transform { return transforms::Grayscale(n); }, nb::arg("num_output_channels"));
  v.def(
      "RandomGrayscale", [](double p) -> Transform { return transforms::RandomGrayscale(p); }, nb::arg("p"));
  v.def("adjust_brightness", &transforms::adjust_brightness, nb::arg("image"), nb::arg("factor"),
        nb::call_guard<nb::gil_scoped_release>());
  v.def("adjust_contrast", &transforms::adjust_contrast, nb::arg("image"), nb::arg("factor"),
        nb::call_guard<nb::gil_scoped_release>());
  v.def("adjust_saturation", &transforms::adjust_saturation, nb::arg("image"), nb::arg("factor"),
        nb::call_guard<nb::gil_scoped_release>());
  v.def("adjust_hue", &transforms::adjust_hue, nb::arg("image"), nb::arg("hue_factor"),
        nb::call_guard<nb::gil_scoped_release>());
  v.def("rgb_to_grayscale", &transforms::rgb_to_grayscale, nb::arg("image"), nb::arg("num_output_channels"),
        nb::call_guard<nb::gil_scoped_release>());
  v.def(
      "affine",
      [](const Tensor& image, double angle, std::pair<double, double> translate, double scale,
         std::pair<double, double> shear, const std::string& interpolation, double fill) {
        return transforms::affine(image, angle, translate, scale, shear, interpolation_from(interpolation, "affine"),
                                  fill);
      },
      nb::arg("image"), nb::arg("angle"), nb::arg("translate"), nb::arg("scale"), nb::arg("shear"),
      nb::arg("interpolation"), nb::arg("fill"), nb::call_guard<nb::gil_scoped_release>());

  // Datasets. The transform given here runs inside get()/get_many() (so a C++ DataLoader worker
  // can run it without Python); ember.vision passes one only when the whole pipeline is C++.
  auto options = [](bool train, std::optional<Transform> transform) {
    datasets::VisionOptions o;
    o.train = train;
    if (transform) o.transform = *transform;
    return o;
  };
  // MNIST's images reach the transform (and, without one, the caller) as (H, W) uint8, the shape
  // torchvision's PIL 'L' images have as arrays; ToTensor makes them (1, H, W) as in torchvision.
  auto mnist_options = [options](bool train, std::optional<Transform> transform) {
    // A copy (784 bytes): the image is a view of the dataset, and the caller may write to it.
    Transform drop_channel = transforms::Lambda([](const Tensor& image) { return image.squeeze(0).clone(); });
    return options(train, transform ? Transform(transforms::Compose({drop_channel, *transform})) : drop_channel);
  };
  nb::class_<datasets::MNIST> mnist(v, "MNIST");
  mnist.def(
      "__init__",
      [mnist_options](datasets::MNIST* self, const std::filesystem::path& root, bool train,
                std::optional<Transform> transform) {
        nb::gil_scoped_release release;  // reading and gunzipping 60000 images
        new (self) datasets::MNIST(root, mnist_options(train, std::move(transform)));
      },
      nb::arg("root"), nb::arg("train"), nb::arg("transform").none());
  mnist.def_prop_ro("folder", [](const datasets::MNIST& d) { return d.folder(); });
  bind_dataset_common(mnist);
  nb::class_<datasets::FashionMNIST, datasets::MNIST>(v, "FashionMNIST")
      .def(
          "__init__",
          [mnist_options](datasets::FashionMNIST* self, const std::filesystem::path& root, bool train,
                    std::optional<Transform> transform) {
            nb::gil_scoped_release release;
            new (self) datasets::FashionMNIST(root, mnist_options(train, std::move(transform)));
          },
          nb::arg("root"), nb::arg("train"), nb::arg("transform").none());

  nb::class_<datasets::CIFAR10> cifar(v, "CIFAR10");
  cifar.def(
      "__init__",
      [options](datasets::CIFAR10* self, const std::filesystem::path& root, bool train,
                std::optional<Transform> transform) {
        nb::gil_scoped_release release;
        new (self) datasets::CIFAR10(root, options(train, std::move(transform)));
      },
      nb::arg("root"), nb::arg("train"), nb::arg("transform").none());
  bind_dataset_common(cifar);
}

}  // namespace ember::python
