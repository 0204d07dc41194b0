#pragma once
// Datasets read from files, as torchvision.datasets provides them (no downloading: the machine
// that trains may not reach the internet; the error for a missing file says where to get it).
//
//   auto train = std::make_shared<datasets::FashionMNIST>("/usr/share/datasets/fashion-mnist",
//       datasets::VisionOptions{.train = true, .transform = transforms::ToTensor()});
//   auto [image, label] = ... train->get(0) is Value::tuple({image tensor, label int})
//
// Images come out as uint8 tensors (C, H, W) (MNIST: (1, 28, 28); CIFAR-10: (3, 32, 32)) and go
// through `transform` when one is given; labels are ints (through `target_transform`).
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "ember/data/dataset.h"
#include "ember/data/transforms.h"

namespace ember::datasets {

struct VisionOptions {
  bool train = true;                                // the training split, or the test split
  transforms::Transform transform;                  // applied to the image
  std::function<Value(int64_t)> target_transform;   // applied to the label (empty: the int itself)
};

// Reads an IDX file (the MNIST format: big-endian magic 0x0000TTNN with type TT and NN dims, the
// dims as big-endian int32, then the data), gzip-compressed or raw. Every size is checked against
// the file; errors name the file. Types: 0x08 uint8, 0x09 int8, 0x0B int16, 0x0C int32,
// 0x0D float32, 0x0E float64 (converted from big-endian).
Tensor read_idx(const std::filesystem::path& file);

// Reads a whole file into memory, transparently gunzipping it when it starts with the gzip magic.
std::string read_file_maybe_gzip(const std::filesystem::path& file);

// MNIST's layout: {train,t10k}-{images-idx3,labels-idx1}-ubyte[.gz], found directly in `root`
// or in root/<ClassName>/raw (torchvision's layout). data(): uint8 (N, 28, 28); targets(): int64 (N).
class MNIST : public data::Dataset {
 public:
  explicit MNIST(const std::filesystem::path& root, VisionOptions options = {});
  int64_t size() const override { return data_.size(0); }
  Value get(int64_t index) const override;  // (image uint8 (1, 28, 28) -> transform, label)
  std::string name() const override { return class_name_; }
  const Tensor& data() const { return data_; }
  const Tensor& targets() const { return targets_; }
  const std::vector<std::string>& classes() const { return classes_; }
  const std::filesystem::path& folder() const { return folder_; }  // where the files were found

 protected:
  MNIST(const std::filesystem::path& root, VisionOptions options, std::string class_name,
        std::vector<std::string> classes, std::string how_to_get);

 private:
  VisionOptions options_;
  std::string class_name_;
  std::vector<std::string> classes_;
  std::filesystem::path folder_;
  Tensor data_, targets_;
};

// Zalando's Fashion-MNIST: same format, classes T-shirt/top ... Ankle boot. Debian's
// dataset-fashion-mnist package installs it under /usr/share/datasets/fashion-mnist.
class FashionMNIST : public MNIST {
 public:
  explicit FashionMNIST(const std::filesystem::path& root, VisionOptions options = {});
};

// CIFAR-10, binary version: root (or root/cifar-10-batches-bin) holds data_batch_1..5.bin and
// test_batch.bin, each record a label byte then 3072 bytes (R, G, B planes of 32x32).
class CIFAR10 : public data::Dataset {
 public:
  explicit CIFAR10(const std::filesystem::path& root, VisionOptions options = {});
  int64_t size() const override { return data_.size(0); }
  Value get(int64_t index) const override;  // (image uint8 (3, 32, 32) -> transform, label)
  std::string name() const override { return "CIFAR10"; }
  const Tensor& data() const { return data_; }        // uint8 (N, 3, 32, 32)
  const Tensor& targets() const { return targets_; }  // int64 (N)
  const std::vector<std::string>& classes() const { return classes_; }

 private:
  VisionOptions options_;
  std::vector<std::string> classes_;
  Tensor data_, targets_;
};

// A character-level language-model dataset over any UTF-8 text file: the vocabulary is the
// sorted set of distinct characters (Unicode code points); sample i is (x, y) with
// x = ids[i : i + block_size] and y = ids[i + 1 : i + block_size + 1], both int64 (block_size).
class CharDataset : public data::Dataset {
 public:
  CharDataset(const std::filesystem::path& file, int64_t block_size);
  // From text in memory (the vocabulary is built from it).
  static CharDataset from_text(const std::string& utf8_text, int64_t block_size);
  int64_t size() const override;  // number of windows: len(ids) - block_size
  Value get(int64_t index) const override;
  std::string name() const override { return "CharDataset"; }
  int64_t vocab_size() const { return int64_t(itos_.size()); }
  int64_t block_size() const { return block_size_; }
  const Tensor& ids() const { return ids_; }  // the whole text encoded, int64
  Tensor encode(const std::string& utf8_text) const;  // a character outside the vocabulary is a ValueError
  std::string decode(const Tensor& ids) const;        // int tensor of ids -> UTF-8 text
  const std::vector<char32_t>& vocabulary() const { return itos_; }

 private:
  CharDataset() = default;
  void build(const std::string& utf8_text, int64_t block_size, const std::string& source);
  int64_t block_size_ = 0;
  std::vector<char32_t> itos_;
  Tensor ids_;
};

}  // namespace ember::datasets
