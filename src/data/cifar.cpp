// CIFAR-10, the binary version (cifar-10-binary.tar.gz): fixed-size records, a label byte then
// the R, G and B planes of a 32x32 image.
#include <cstring>
#include <string>
#include <system_error>
#include <vector>

#include "ember/core/errors.h"
#include "ember/data/datasets.h"
#include "ember/ops.h"

namespace ember::datasets {

namespace fs = std::filesystem;

namespace {

constexpr int64_t kImageBytes = 3 * 32 * 32;
constexpr int64_t kRecordBytes = 1 + kImageBytes;
constexpr int64_t kNumClasses = 10;

std::vector<std::string> batch_names(bool train) {
  if (!train) return {"test_batch.bin"};
  std::vector<std::string> names;
  for (int b = 1; b <= 5; ++b) names.push_back("data_batch_" + std::to_string(b) + ".bin");
  return names;
}

fs::path find_batch(const fs::path& root, const std::string& name) {
  const fs::path folders[] = {root, root / "cifar-10-batches-bin"};
  for (const auto& folder : folders) {
    std::error_code ec;
    if (fs::is_regular_file(folder / name, ec)) return folder / name;
  }
  throw Error(detail::cat("CIFAR10: cannot find ", name, "; searched ", folders[0].string(), ", ",
                          folders[1].string(), ". To get the dataset, download "
                          "https://www.cs.toronto.edu/~kriz/cifar-10-binary.tar.gz and extract it into root"));
}

}  // namespace

CIFAR10::CIFAR10(const fs::path& root, VisionOptions options)
    : options_(std::move(options)),
      classes_{"airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck"} {
  std::vector<std::string> files;
  for (const auto& name : batch_names(options_.train)) {
    const fs::path file = find_batch(root, name);
    std::string bytes = read_file_maybe_gzip(file);
    EMBER_CHECK(!bytes.empty() && bytes.size() % kRecordBytes == 0, "CIFAR10: ", file.string(), " has ",
                bytes.size(), " bytes, which is not a positive multiple of the ", kRecordBytes,
                "-byte record (1 label byte + 3072 image bytes)");
    for (size_t r = 0; r < bytes.size() / kRecordBytes; ++r) {
      const int label = uint8_t(bytes[r * kRecordBytes]);
      EMBER_CHECK(label < kNumClasses, "CIFAR10: ", file.string(), ": record ", r, " has label ", label,
                  ", but there are only ", kNumClasses, " classes (0..9)");
    }
    files.push_back(std::move(bytes));
  }

  int64_t n = 0;
  for (const auto& f : files) n += int64_t(f.size()) / kRecordBytes;
  data_ = empty({n, 3, 32, 32}, {.dtype = kUInt8});
  targets_ = empty({n}, {.dtype = kInt64});
  uint8_t* images = data_.data_ptr<uint8_t>();
  int64_t* labels = targets_.data_ptr<int64_t>();
  int64_t i = 0;
  for (const auto& f : files)
    for (size_t off = 0; off < f.size(); off += kRecordBytes, ++i) {
      labels[i] = uint8_t(f[off]);
      std::memcpy(images + i * kImageBytes, f.data() + off + 1, kImageBytes);
    }
}

Value CIFAR10::get(int64_t index) const {
  const int64_t n = size();
  const int64_t i = index < 0 ? index + n : index;
  EMBER_CHECK_INDEX(i >= 0 && i < n, "index ", index, " is out of range for CIFAR10 of size ", n);
  Tensor image = data_.select(0, i);
  // Without a transform the caller gets a copy: writing to it must not change the dataset.
  image = options_.transform ? options_.transform(image) : image.clone();
  const int64_t label = targets_.data_ptr<int64_t>()[i];
  return Value::tuple({image, options_.target_transform ? options_.target_transform(label) : Value(label)});
}

}  // namespace ember::datasets
