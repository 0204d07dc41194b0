// MNIST and Fashion-MNIST from their IDX files, as torchvision.datasets.MNIST reads them (minus
// the download: the error for a missing file says where to get it).
#include <string>
#include <system_error>
#include <vector>

#include "ember/core/errors.h"
#include "ember/data/datasets.h"
#include "ember/ops.h"

namespace ember::datasets {

namespace fs = std::filesystem;

namespace {

const char* const kMnistHowToGet =
    "download it from https://yann.lecun.com/exdb/mnist/ (or the mirror "
    "https://ossci-datasets.s3.amazonaws.com/mnist/) and place the files in root";
const char* const kFashionHowToGet =
    "install it with `apt-get install dataset-fashion-mnist` (Debian; installs "
    "/usr/share/datasets/fashion-mnist) or download it from https://github.com/zalandoresearch/fashion-mnist";

std::vector<std::string> mnist_classes() {
  return {"0 - zero", "1 - one", "2 - two",   "3 - three", "4 - four",
          "5 - five", "6 - six", "7 - seven", "8 - eight", "9 - nine"};
}
std::vector<std::string> fashion_classes() {
  return {"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
          "Sandal",      "Shirt",   "Sneaker",  "Bag",   "Ankle boot"};
}

bool is_file(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec);
}

// `name` or `name`.gz, in the first of `folders` that has either.
fs::path find_idx_file(const std::vector<fs::path>& folders, const std::string& name, const std::string& dataset,
                       const std::string& how_to_get) {
  for (const auto& folder : folders)
    for (const std::string& candidate : {name, name + ".gz"})
      if (is_file(folder / candidate)) return folder / candidate;
  std::string searched;
  for (const auto& folder : folders) searched += (searched.empty() ? "" : ", ") + folder.string();
  throw Error(detail::cat(dataset, ": cannot find ", name, " (or ", name, ".gz); searched ", searched,
                          ". To get the dataset, ", how_to_get));
}

}  // namespace

MNIST::MNIST(const fs::path& root, VisionOptions options)
    : MNIST(root, std::move(options), "MNIST", mnist_classes(), kMnistHowToGet) {}

FashionMNIST::FashionMNIST(const fs::path& root, VisionOptions options)
    : MNIST(root, std::move(options), "FashionMNIST", fashion_classes(), kFashionHowToGet) {}

MNIST::MNIST(const fs::path& root, VisionOptions options, std::string class_name, std::vector<std::string> classes,
             std::string how_to_get)
    : options_(std::move(options)), class_name_(std::move(class_name)), classes_(std::move(classes)) {
  const std::vector<fs::path> folders = {root, root / class_name_ / "raw"};
  const std::string prefix = options_.train ? "train" : "t10k";
  const fs::path images_file = find_idx_file(folders, prefix + "-images-idx3-ubyte", class_name_, how_to_get);
  const fs::path labels_file = find_idx_file(folders, prefix + "-labels-idx1-ubyte", class_name_, how_to_get);
  folder_ = images_file.parent_path();

  Tensor images = read_idx(images_file);
  Tensor labels = read_idx(labels_file);
  EMBER_CHECK(images.dtype() == kUInt8 && images.dim() == 3 && images.size(1) > 0 && images.size(2) > 0,
              class_name_, ": ", images_file.string(), " should hold uint8 images (N, H, W), but holds ",
              dtype_name(images.dtype()), " of shape ", images.sizes());
  EMBER_CHECK(labels.dtype() == kUInt8 && labels.dim() == 1, class_name_, ": ", labels_file.string(),
              " should hold uint8 labels (N), but holds ", dtype_name(labels.dtype()), " of shape ", labels.sizes());
  EMBER_CHECK(images.size(0) == labels.size(0), class_name_, ": ", images_file.string(), " has ", images.size(0),
              " images but ", labels_file.string(), " has ", labels.size(0), " labels");
  const uint8_t* l = labels.data_ptr<uint8_t>();
  const int64_t num_classes = int64_t(classes_.size());
  for (int64_t i = 0; i < labels.numel(); ++i)
    EMBER_CHECK(l[i] < num_classes, class_name_, ": ", labels_file.string(), ": label ", i, " is ", int(l[i]),
                ", but there are only ", num_classes, " classes (0..", num_classes - 1, ")");
  data_ = images;
  targets_ = labels.to(kInt64);
}

Value MNIST::get(int64_t index) const {
  const int64_t n = size();
  const int64_t i = index < 0 ? index + n : index;
  EMBER_CHECK_INDEX(i >= 0 && i < n, "index ", index, " is out of range for ", class_name_, " of size ", n);
  Tensor image = data_.select(0, i).unsqueeze(0);
  // Without a transform the caller gets a copy: writing to it must not change the dataset.
  image = options_.transform ? options_.transform(image) : image.clone();
  const int64_t label = targets_.data_ptr<int64_t>()[i];
  return Value::tuple({image, options_.target_transform ? options_.target_transform(label) : Value(label)});
}

}  // namespace ember::datasets
