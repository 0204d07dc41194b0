// File-backed datasets: IDX files (raw and gzip, every dtype, hostile headers), MNIST and
// Fashion-MNIST layouts, CIFAR-10 batches and the character-level text dataset. Every test writes
// its own small files; the real Fashion-MNIST is loaded when Debian's package is installed.
#include <gtest/gtest.h>
#include <unistd.h>
#include <zlib.h>

#include <atomic>
#include <bit>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "ember/data/datasets.h"
#include "ember/ember.h"

using namespace ember;
using namespace ember::datasets;
using namespace std::string_literals;
namespace fs = std::filesystem;

namespace {

struct TempDir {
  fs::path p;
  TempDir() {
    static std::atomic<int> counter{0};
    p = fs::temp_directory_path() /
        ("ember_datasets_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    fs::remove_all(p);
    fs::create_directories(p);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(p, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  fs::path operator/(const std::string& name) const { return p / name; }
};

void write_file(const fs::path& path, const std::string& bytes) {
  fs::create_directories(path.parent_path());
  std::ofstream f(path, std::ios::binary);
  f.write(bytes.data(), std::streamsize(bytes.size()));
  ASSERT_TRUE(f.good()) << path;
}

std::string gzip(const std::string& raw) {
  z_stream zs{};
  EXPECT_EQ(deflateInit2(&zs, Z_BEST_SPEED, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY), Z_OK);
  std::string out(deflateBound(&zs, uLong(raw.size())), '\0');
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(raw.data()));
  zs.avail_in = uInt(raw.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = uInt(out.size());
  EXPECT_EQ(deflate(&zs, Z_FINISH), Z_STREAM_END);
  out.resize(zs.total_out);
  deflateEnd(&zs);
  return out;
}

void put_be32(std::string& s, uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) s += char((v >> shift) & 0xff);
}

// Big-endian bytes of each value, as IDX stores them.
template <class T>
std::string be_bytes(const std::vector<T>& values) {
  std::string s;
  for (T v : values) {
    char b[sizeof(T)];
    std::memcpy(b, &v, sizeof(T));
    for (size_t i = sizeof(T); i-- > 0;) s += b[i];
  }
  return s;
}

std::string idx(uint8_t type, const std::vector<uint32_t>& dims, const std::string& data) {
  std::string s = {0, 0, char(type), char(dims.size())};
  for (uint32_t d : dims) put_be32(s, d);
  return s + data;
}

// The message of the exception of type E that fn throws (a test failure when it throws none).
template <class E = Error>
std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const E& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "threw the wrong exception type: " << e.what();
    return e.what();
  }
  ADD_FAILURE() << "did not throw";
  return "";
}

#define EXPECT_HAS(haystack, needle) \
  EXPECT_NE(std::string(haystack).find(needle), std::string::npos) << "message: " << (haystack)

// -------------------------------------------------------------------------------- file reading

TEST(ReadFile, RawAndGzipGiveTheSameBytes) {
  TempDir d;
  std::string bytes = "hello\0world\x1f"s;
  for (int i = 0; i < 5000; ++i) bytes += char(i * 7);
  write_file(d / "a.bin", bytes);
  write_file(d / "a.bin.gz", gzip(bytes));
  EXPECT_EQ(read_file_maybe_gzip(d / "a.bin"), bytes);
  EXPECT_EQ(read_file_maybe_gzip(d / "a.bin.gz"), bytes);
}

TEST(ReadFile, EmptyFileAndConcatenatedGzipMembers) {
  TempDir d;
  write_file(d / "empty", "");
  EXPECT_EQ(read_file_maybe_gzip(d / "empty"), "");
  write_file(d / "two.gz", gzip("first,") + gzip("second"));
  EXPECT_EQ(read_file_maybe_gzip(d / "two.gz"), "first,second");
}

TEST(ReadFile, MissingFileNamesThePath) {
  TempDir d;
  std::string msg = error_of([&] { read_file_maybe_gzip(d / "nope.gz"); });
  EXPECT_HAS(msg, "cannot open");
  EXPECT_HAS(msg, (d / "nope.gz").string());
  EXPECT_HAS(msg, "No such file or directory");
}

TEST(ReadFile, TruncatedGzip) {
  TempDir d;
  std::string gz = gzip(std::string(10000, 'x') + "tail");
  write_file(d / "cut.gz", gz.substr(0, gz.size() / 2));
  std::string msg = error_of([&] { read_file_maybe_gzip(d / "cut.gz"); });
  EXPECT_HAS(msg, (d / "cut.gz").string());
  EXPECT_HAS(msg, "truncated");
  // Only the 8-byte trailer (CRC and size) missing is truncated too.
  write_file(d / "notrailer.gz", gz.substr(0, gz.size() - 8));
  EXPECT_HAS(error_of([&] { read_file_maybe_gzip(d / "notrailer.gz"); }), "truncated");
}

TEST(ReadFile, CorruptGzip) {
  TempDir d;
  std::string gz = gzip("some text that compresses, some text that compresses");
  std::string bad_method = gz;
  bad_method[2] = 7;  // compression method other than deflate
  write_file(d / "bad.gz", bad_method);
  std::string msg = error_of([&] { read_file_maybe_gzip(d / "bad.gz"); });
  EXPECT_HAS(msg, (d / "bad.gz").string());
  EXPECT_HAS(msg, "corrupt gzip data");
  EXPECT_HAS(msg, "unknown compression method");

  std::string bad_crc = gz;
  bad_crc[gz.size() - 6] ^= 0x55;
  write_file(d / "crc.gz", bad_crc);
  msg = error_of([&] { read_file_maybe_gzip(d / "crc.gz"); });
  EXPECT_HAS(msg, "corrupt gzip data");
  EXPECT_HAS(msg, "incorrect data check");

  write_file(d / "junk.gz", gz + "junk after the stream");
  EXPECT_HAS(error_of([&] { read_file_maybe_gzip(d / "junk.gz"); }), "trailing garbage");
}

// ----------------------------------------------------------------------------------------- IDX

TEST(Idx, UInt8ImagesRawAndGzip) {
  TempDir d;
  std::string data;
  for (int i = 0; i < 2 * 3 * 4; ++i) data += char(i * 10);
  std::string file = idx(0x08, {2, 3, 4}, data);
  write_file(d / "u8", file);
  write_file(d / "u8.gz", gzip(file));
  for (const char* name : {"u8", "u8.gz"}) {
    Tensor t = read_idx(d / name);
    EXPECT_EQ(t.dtype(), kUInt8);
    EXPECT_EQ(t.sizes(), (Shape{2, 3, 4}));
    EXPECT_TRUE(t.is_contiguous());
    EXPECT_TRUE(t.equal((arange(24, {.dtype = kInt64}) * 10).to(kUInt8).reshape({2, 3, 4}))) << name;
  }
}

TEST(Idx, EveryTypeIsBigEndian) {
  TempDir d;
  struct Case { uint8_t code; std::string data; Tensor expected; };
  std::vector<Case> cases = {
      {0x09, be_bytes<int8_t>({-1, 5, -128}), tensor({-1, 5, -128}, {.dtype = kInt8})},
      {0x0B, be_bytes<int16_t>({0x0102, -2, 32767}), tensor({0x0102, -2, 32767}, {.dtype = kInt16})},
      {0x0C, be_bytes<int32_t>({0x01020304, -3, INT32_MIN}), tensor({0x01020304, -3, INT32_MIN}, {.dtype = kInt32})},
      {0x0D, be_bytes<float>({1.5f, -2.25f, 1e30f}), tensor({1.5, -2.25, 1e30}, {.dtype = kFloat32})},
      {0x0E, be_bytes<double>({3.125, -1e300, 0.1}), tensor({3.125, -1e300, 0.1}, {.dtype = kFloat64})},
  };
  for (const auto& c : cases) {
    std::string file = idx(c.code, {3}, c.data);
    write_file(d / "x", file);
    write_file(d / "x.gz", gzip(file));
    for (const char* name : {"x", "x.gz"}) {
      Tensor t = read_idx(d / name);
      EXPECT_EQ(t.dtype(), c.expected.dtype()) << int(c.code);
      EXPECT_TRUE(t.equal(c.expected)) << int(c.code) << " " << name << ": " << t;
    }
  }
  // The first bytes are the most significant: 0x0102 is stored as 01 02.
  write_file(d / "i16", idx(0x0B, {1}, "\x01\x02"));
  EXPECT_EQ(read_idx(d / "i16").item<int64_t>(), 0x0102);
}

TEST(Idx, EmptyDimensionsAndManyDimensions) {
  TempDir d;
  write_file(d / "empty", idx(0x0C, {0, 5}, ""));
  Tensor e = read_idx(d / "empty");
  EXPECT_EQ(e.sizes(), (Shape{0, 5}));
  EXPECT_EQ(e.dtype(), kInt32);
  write_file(d / "4d", idx(0x08, {1, 2, 1, 2}, "abcd"));
  EXPECT_EQ(read_idx(d / "4d").sizes(), (Shape{1, 2, 1, 2}));
}

TEST(Idx, MalformedHeaders) {
  TempDir d;
  auto msg_for = [&](const std::string& name, const std::string& bytes) {
    write_file(d / name, bytes);
    std::string msg = error_of([&] { read_idx(d / name); });
    EXPECT_HAS(msg, (d / name).string());
    return msg;
  };
  EXPECT_HAS(msg_for("short", std::string("\0\0\x08", 3)), "shorter than the 4-byte magic");
  EXPECT_HAS(msg_for("magic", idx(0x08, {1}, "a").replace(0, 1, "\x12")), "bad magic");
  std::string unknown = msg_for("type", idx(0x0A, {1}, "a"));
  EXPECT_HAS(unknown, "unknown IDX type code 0x0A");
  EXPECT_HAS(msg_for("ndim0", idx(0x08, {}, "")), "0 dimensions");
  EXPECT_HAS(msg_for("header", idx(0x08, {2, 3}, "").substr(0, 9)), "truncated IDX header");
  EXPECT_HAS(msg_for("negative", idx(0x08, {0xFFFFFFFEu}, "")), "dimension 0 is negative (-2)");
  // The same checks apply inside a gzip file.
  EXPECT_HAS(msg_for("magic.gz", gzip("\x01\x02\x08\x01")), "bad magic");
}

TEST(Idx, DataSizeMustMatchTheDims) {
  TempDir d;
  write_file(d / "truncated", idx(0x0C, {2, 3}, std::string(23, '\0')));
  std::string msg = error_of([&] { read_idx(d / "truncated"); });
  EXPECT_HAS(msg, (d / "truncated").string());
  EXPECT_HAS(msg, "dims [2, 3] of int32 need 24 bytes");
  EXPECT_HAS(msg, "has 23 bytes");

  write_file(d / "extra.gz", gzip(idx(0x08, {4}, "abcde")));
  msg = error_of([&] { read_idx(d / "extra.gz"); });
  EXPECT_HAS(msg, (d / "extra.gz").string());
  EXPECT_HAS(msg, "need 4 bytes, but the file has 5 bytes");
}

TEST(Idx, HostileDimsDoNotOverflow) {
  TempDir d;
  write_file(d / "huge", idx(0x0E, {0x7fffffff, 0x7fffffff, 0x7fffffff}, "12345678"));
  std::string msg = error_of([&] { read_idx(d / "huge"); });
  EXPECT_HAS(msg, (d / "huge").string());
  EXPECT_HAS(msg, "more than 2^63");
  // A product that fits in 64 bits but not in the file is refused before allocating.
  write_file(d / "big", idx(0x08, {0x7fffffff, 0x7fffffff}, "x"));
  EXPECT_HAS(error_of([&] { read_idx(d / "big"); }), "need 4611686014132420609 bytes");
  // A zero dim does not hide overflowing ones.
  write_file(d / "zero", idx(0x08, {0, 0x7fffffff, 0x7fffffff, 0x7fffffff}, ""));
  EXPECT_HAS(error_of([&] { read_idx(d / "zero"); }), "more than 2^63");
}

// --------------------------------------------------------------------------------------- MNIST

// N images of h x w with pixel (n, r, c) = n * 16 + r * w + c, and labels (n * 3) % 10.
struct FakeMnist {
  int64_t n, h, w;
  std::string images() const {
    std::string data;
    for (int64_t i = 0; i < n; ++i)
      for (int64_t p = 0; p < h * w; ++p) data += char(i * 16 + p);
    return idx(0x08, {uint32_t(n), uint32_t(h), uint32_t(w)}, data);
  }
  std::string labels() const {
    std::string data;
    for (int64_t i = 0; i < n; ++i) data += char((i * 3) % 10);
    return idx(0x08, {uint32_t(n)}, data);
  }
  void write(const fs::path& folder, const std::string& split, bool gz) const {
    const std::string ext = gz ? ".gz" : "";
    write_file(folder / (split + "-images-idx3-ubyte" + ext), gz ? gzip(images()) : images());
    write_file(folder / (split + "-labels-idx1-ubyte" + ext), gz ? gzip(labels()) : labels());
  }
};

VisionOptions test_split() {
  VisionOptions o;
  o.train = false;
  return o;
}

TEST(MNIST, FilesInRootRaw) {
  TempDir d;
  FakeMnist{5, 28, 28}.write(d.p, "train", false);
  MNIST ds(d.p);
  EXPECT_EQ(ds.size(), 5);
  EXPECT_EQ(ds.name(), "MNIST");
  EXPECT_EQ(ds.folder(), d.p);
  EXPECT_EQ(ds.data().dtype(), kUInt8);
  EXPECT_EQ(ds.data().sizes(), (Shape{5, 28, 28}));
  EXPECT_EQ(ds.targets().dtype(), kInt64);
  EXPECT_TRUE(ds.targets().equal(tensor({0, 3, 6, 9, 2}, {.dtype = kInt64})));
  ASSERT_EQ(ds.classes().size(), 10u);
  EXPECT_EQ(ds.classes()[0], "0 - zero");
  EXPECT_EQ(ds.classes()[9], "9 - nine");

  Value sample = ds.get(3);
  ASSERT_TRUE(sample.is_tuple());
  ASSERT_EQ(sample.size(), 2u);
  const Tensor& image = sample[0].to_tensor();
  EXPECT_EQ(image.dtype(), kUInt8);
  EXPECT_EQ(image.sizes(), (Shape{1, 28, 28}));
  EXPECT_TRUE(image.equal(ds.data()[3].unsqueeze(0)));
  EXPECT_EQ(image[0][0][5].item<int64_t>(), (3 * 16 + 5) % 256);
  EXPECT_EQ(sample[1].to_int(), 9);
}

TEST(MNIST, TorchvisionLayoutGzipAndSplits) {
  TempDir d;
  FakeMnist{4, 28, 28}.write(d / "MNIST" / "raw", "train", true);
  FakeMnist{2, 28, 28}.write(d / "MNIST" / "raw", "t10k", true);
  MNIST train(d.p);
  MNIST test(d.p, test_split());
  EXPECT_EQ(train.size(), 4);
  EXPECT_EQ(test.size(), 2);
  EXPECT_EQ(train.folder(), d / "MNIST" / "raw");
  // The test split reads t10k-*: a different labels file from train's.
  write_file(d / "MNIST" / "raw" / "t10k-labels-idx1-ubyte.gz", gzip(idx(0x08, {2}, "\x07\x01")));
  EXPECT_TRUE(MNIST(d.p, test_split()).targets().equal(tensor({7, 1}, {.dtype = kInt64})));
  EXPECT_TRUE(MNIST(d.p).targets().equal(tensor({0, 3, 6, 9}, {.dtype = kInt64})));
}

TEST(MNIST, RootWinsOverRawSubfolderAndOtherImageSizes) {
  TempDir d;
  FakeMnist{3, 4, 5}.write(d.p, "train", false);
  FakeMnist{7, 28, 28}.write(d / "MNIST" / "raw", "train", false);
  MNIST ds(d.p);
  EXPECT_EQ(ds.size(), 3);
  EXPECT_EQ(ds.get(0)[0].to_tensor().sizes(), (Shape{1, 4, 5}));
}

TEST(MNIST, NegativeAndOutOfRangeIndices) {
  TempDir d;
  FakeMnist{5, 28, 28}.write(d.p, "train", false);
  FashionMNIST ds(d.p);
  EXPECT_EQ(ds.get(-1)[1].to_int(), ds.get(4)[1].to_int());
  EXPECT_TRUE(ds.get(-5)[0].to_tensor().equal(ds.get(0)[0].to_tensor()));
  EXPECT_EQ(error_of<IndexError>([&] { ds.get(5); }), "index 5 is out of range for FashionMNIST of size 5");
  EXPECT_EQ(error_of<IndexError>([&] { ds.get(-6); }), "index -6 is out of range for FashionMNIST of size 5");
}

TEST(MNIST, SamplesAreCopiesWithoutATransform) {
  TempDir d;
  FakeMnist{2, 28, 28}.write(d.p, "train", false);
  MNIST ds(d.p);
  Tensor image = ds.get(1)[0].to_tensor();
  image.fill_(0);
  EXPECT_EQ(ds.get(1)[0].to_tensor()[0][0][1].item<int64_t>(), 17);
}

struct AddOne : transforms::TransformBase {
  Tensor operator()(const Tensor& image) const override { return image.to(kFloat32) + 1; }
  std::string repr() const override { return "AddOne()"; }
};

TEST(MNIST, TransformAndTargetTransform) {
  TempDir d;
  FakeMnist{3, 28, 28}.write(d.p, "t10k", false);
  VisionOptions o;
  o.train = false;
  o.transform = AddOne();
  o.target_transform = [](int64_t label) { return Value("class " + std::to_string(label)); };
  FashionMNIST ds(d.p, o);
  Value s = ds.get(2);
  const Tensor& image = s[0].to_tensor();
  EXPECT_EQ(image.dtype(), kFloat32);
  EXPECT_EQ(image.sizes(), (Shape{1, 28, 28}));
  EXPECT_EQ(image[0][0][1].item<double>(), double((2 * 16 + 1) % 256 + 1));
  EXPECT_EQ(s[1].to_string(), "class 6");
  // The dataset's own tensor is untouched.
  EXPECT_EQ(ds.data().dtype(), kUInt8);
  EXPECT_EQ(ds.data()[2][0][1].item<int64_t>(), 33);
}

TEST(MNIST, FashionClasses) {
  TempDir d;
  FakeMnist{1, 28, 28}.write(d / "FashionMNIST" / "raw", "train", true);
  FashionMNIST ds(d.p);
  EXPECT_EQ(ds.name(), "FashionMNIST");
  EXPECT_EQ(ds.classes(), (std::vector<std::string>{"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
                                                   "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot"}));
}

TEST(MNIST, MissingFileSaysWhereToGetIt) {
  TempDir d;
  std::string msg = error_of([&] { FashionMNIST ds(d.p); });
  EXPECT_HAS(msg, "FashionMNIST");
  EXPECT_HAS(msg, "train-images-idx3-ubyte");
  EXPECT_HAS(msg, d.p.string());
  EXPECT_HAS(msg, (d / "FashionMNIST" / "raw").string());
  EXPECT_HAS(msg, "dataset-fashion-mnist");
  EXPECT_HAS(msg, "https://github.com/zalandoresearch/fashion-mnist");

  // Images present, labels missing: the message names the labels file of the right split.
  FakeMnist{2, 28, 28}.write(d.p, "t10k", false);
  fs::remove(d / "t10k-labels-idx1-ubyte");
  msg = error_of([&] { MNIST ds(d.p, test_split()); });
  EXPECT_HAS(msg, "MNIST: cannot find t10k-labels-idx1-ubyte");
  EXPECT_HAS(msg, "yann.lecun.com");
  EXPECT_EQ(msg.find("dataset-fashion-mnist"), std::string::npos);
}

TEST(MNIST, CountMismatch) {
  TempDir d;
  FakeMnist{3, 28, 28}.write(d.p, "train", false);
  write_file(d / "train-labels-idx1-ubyte", FakeMnist{2, 28, 28}.labels());
  std::string msg = error_of([&] { MNIST ds(d.p); });
  EXPECT_HAS(msg, (d / "train-images-idx3-ubyte").string() + " has 3 images");
  EXPECT_HAS(msg, (d / "train-labels-idx1-ubyte").string() + " has 2 labels");
}

TEST(MNIST, LabelOutOfRange) {
  TempDir d;
  FakeMnist{3, 28, 28}.write(d.p, "train", false);
  write_file(d / "train-labels-idx1-ubyte", idx(0x08, {3}, "\x01\x0a\x02"));
  std::string msg = error_of([&] { MNIST ds(d.p); });
  EXPECT_HAS(msg, (d / "train-labels-idx1-ubyte").string());
  EXPECT_HAS(msg, "label 1 is 10");
}

TEST(MNIST, WrongTypesOrShapes) {
  TempDir d;
  FakeMnist{2, 28, 28}.write(d.p, "train", false);
  write_file(d / "train-images-idx3-ubyte", idx(0x08, {2, 784}, std::string(2 * 784, '\0')));
  std::string msg = error_of([&] { MNIST ds(d.p); });
  EXPECT_HAS(msg, "should hold uint8 images (N, H, W)");
  EXPECT_HAS(msg, "[2, 784]");
  write_file(d / "train-images-idx3-ubyte", FakeMnist{2, 28, 28}.images());
  write_file(d / "train-labels-idx1-ubyte", idx(0x0C, {2}, std::string(8, '\0')));
  EXPECT_HAS(error_of([&] { MNIST ds(d.p); }), "should hold uint8 labels (N), but holds int32");
}

TEST(FashionMNIST, RealDataset) {
  const fs::path root = "/usr/share/datasets/fashion-mnist";
  if (!fs::exists(root / "train-images-idx3-ubyte.gz"))
    GTEST_SKIP() << root << " is not installed (apt-get install dataset-fashion-mnist)";
  FashionMNIST train(root);
  FashionMNIST test(root, test_split());
  ASSERT_EQ(train.size(), 60000);
  ASSERT_EQ(test.size(), 10000);
  for (const auto* ds : {&train, &test}) {
    EXPECT_EQ(ds->data().sizes(), (Shape{ds->size(), 28, 28}));
    Tensor image = ds->get(0)[0].to_tensor();
    EXPECT_EQ(image.sizes(), (Shape{1, 28, 28}));
    EXPECT_EQ(image.dtype(), kUInt8);
    EXPECT_GE(ds->targets().min().item<int64_t>(), 0);
    EXPECT_LE(ds->targets().max().item<int64_t>(), 9);
    const int64_t per_class = ds->size() / 10;
    EXPECT_TRUE(bincount(ds->targets(), std::nullopt, 10).equal(full({10}, per_class, {.dtype = kInt64})));
  }
  // The first training image is an ankle boot (label 9), as in every Fashion-MNIST copy.
  EXPECT_EQ(train.get(0)[1].to_int(), 9);
  EXPECT_GT(train.data()[0].to(kInt64).sum().item<int64_t>(), 0);
}

// ------------------------------------------------------------------------------------ CIFAR-10

// A record: label byte, then 3072 bytes where byte k of record `id` is (id + k) % 251.
std::string cifar_records(const std::vector<int>& labels, int first_id) {
  std::string s;
  for (size_t r = 0; r < labels.size(); ++r) {
    s += char(labels[r]);
    for (int k = 0; k < 3072; ++k) s += char((first_id + int(r) + k) % 251);
  }
  return s;
}

void write_cifar(const fs::path& folder) {
  const std::vector<std::vector<int>> batches = {{0, 1}, {2, 3, 4}, {5}, {6, 7}, {8, 9}};
  int id = 0;
  for (size_t b = 0; b < batches.size(); ++b) {
    write_file(folder / ("data_batch_" + std::to_string(b + 1) + ".bin"), cifar_records(batches[b], id));
    id += int(batches[b].size());
  }
  write_file(folder / "test_batch.bin", cifar_records({3, 1, 4}, 100));
}

TEST(CIFAR10, TrainReadsAllFiveBatchesInOrder) {
  TempDir d;
  write_cifar(d.p);
  CIFAR10 train(d.p);
  EXPECT_EQ(train.size(), 10);
  EXPECT_EQ(train.name(), "CIFAR10");
  EXPECT_EQ(train.data().sizes(), (Shape{10, 3, 32, 32}));
  EXPECT_EQ(train.data().dtype(), kUInt8);
  EXPECT_TRUE(train.targets().equal(arange(10, {.dtype = kInt64})));
  EXPECT_EQ(train.classes().front(), "airplane");
  EXPECT_EQ(train.classes().back(), "truck");

  Value s = train.get(6);  // the first record of data_batch_4
  const Tensor& image = s[0].to_tensor();
  EXPECT_EQ(image.sizes(), (Shape{3, 32, 32}));
  EXPECT_EQ(s[1].to_int(), 6);
  // Planes: channel 1 (green) row 2 col 3 is byte 1024 + 2 * 32 + 3 of the image.
  EXPECT_EQ(image[1][2][3].item<int64_t>(), (6 + 1024 + 67) % 251);
  EXPECT_EQ(image[0][0][0].item<int64_t>(), 6);
}

TEST(CIFAR10, TestSplitSubfolderAndTransforms) {
  TempDir d;
  write_cifar(d / "cifar-10-batches-bin");
  VisionOptions o = test_split();
  o.transform = AddOne();
  o.target_transform = [](int64_t label) { return Value(label * 10); };
  CIFAR10 test(d.p, o);
  EXPECT_EQ(test.size(), 3);
  Value s = test.get(-1);
  EXPECT_EQ(s[1].to_int(), 40);
  EXPECT_EQ(s[0].to_tensor().dtype(), kFloat32);
  EXPECT_EQ(s[0].to_tensor()[0][0][0].item<double>(), double(102 + 1));
  EXPECT_EQ(error_of<IndexError>([&] { test.get(3); }), "index 3 is out of range for CIFAR10 of size 3");
}

TEST(CIFAR10, Errors) {
  TempDir d;
  std::string msg = error_of([&] { CIFAR10 ds(d.p, test_split()); });
  EXPECT_HAS(msg, "test_batch.bin");
  EXPECT_HAS(msg, (d / "cifar-10-batches-bin").string());
  EXPECT_HAS(msg, "cifar-10-binary.tar.gz");

  write_cifar(d.p);
  fs::remove(d / "data_batch_5.bin");
  EXPECT_HAS(error_of([&] { CIFAR10 ds(d.p); }), "cannot find data_batch_5.bin");

  write_file(d / "test_batch.bin", cifar_records({1, 2}, 0) + "xyz");
  msg = error_of([&] { CIFAR10 ds(d.p, test_split()); });
  EXPECT_HAS(msg, (d / "test_batch.bin").string() + " has 6149 bytes");
  EXPECT_HAS(msg, "3073-byte record");
  write_file(d / "test_batch.bin", "");
  EXPECT_HAS(error_of([&] { CIFAR10 ds(d.p, test_split()); }), "has 0 bytes");

  write_file(d / "test_batch.bin", cifar_records({1, 2, 10}, 0));
  msg = error_of([&] { CIFAR10 ds(d.p, test_split()); });
  EXPECT_HAS(msg, (d / "test_batch.bin").string());
  EXPECT_HAS(msg, "record 2 has label 10");
}

// --------------------------------------------------------------------------------- CharDataset

std::vector<int64_t> values(const Tensor& t) { return t.to(kInt64).contiguous().tolist<int64_t>(); }

TEST(CharDataset, VocabularyAndWindows) {
  auto ds = CharDataset::from_text("hello world", 4);
  EXPECT_EQ(ds.name(), "CharDataset");
  EXPECT_EQ(ds.vocabulary(), (std::vector<char32_t>{U' ', U'd', U'e', U'h', U'l', U'o', U'r', U'w'}));
  EXPECT_EQ(ds.vocab_size(), 8);
  EXPECT_EQ(ds.block_size(), 4);
  EXPECT_EQ(ds.ids().dtype(), kInt64);
  EXPECT_EQ(ds.ids().numel(), 11);
  EXPECT_EQ(ds.size(), 7);
  Value s = ds.get(1);  // "ello" -> "llo "
  const Tensor& x = s[0].to_tensor();
  const Tensor& y = s[1].to_tensor();
  EXPECT_EQ(x.dtype(), kInt64);
  EXPECT_EQ(x.sizes(), (Shape{4}));
  EXPECT_EQ(ds.decode(x), "ello");
  EXPECT_EQ(ds.decode(y), "llo ");
  EXPECT_TRUE(x.narrow(0, 1, 3).equal(y.narrow(0, 0, 3)));
  EXPECT_EQ(ds.decode(ds.get(-1)[1].to_tensor()), "orld");
  EXPECT_EQ(error_of<IndexError>([&] { ds.get(7); }), "index 7 is out of range for CharDataset of size 7");
}

TEST(CharDataset, MultiByteRoundTrip) {
  const std::string text = "héllo wörld ✓ 𝄞!";
  auto ds = CharDataset::from_text(text, 3);
  EXPECT_EQ(ds.ids().numel(), 16);  // code points, not bytes
  EXPECT_EQ(ds.size(), 13);
  // Sorted by code point: the 4-byte clef is last, the check mark before it.
  EXPECT_EQ(ds.vocabulary().back(), U'\U0001D11E');
  EXPECT_EQ(ds.vocabulary()[ds.vocabulary().size() - 2], U'\u2713');
  EXPECT_EQ(ds.decode(ds.ids()), text);
  EXPECT_TRUE(ds.encode(text).equal(ds.ids()));
  EXPECT_EQ(ds.decode(ds.encode("✓é")), "✓é");
  EXPECT_EQ(ds.decode(ds.get(0)[0].to_tensor()), "hél");
  // Any integer dtype decodes.
  EXPECT_EQ(ds.decode(ds.encode("wörld").to(kInt32)), "wörld");
  EXPECT_EQ(ds.decode(ds.encode("o").reshape({})), "o");
}

TEST(CharDataset, EncodeDecodeErrors) {
  auto ds = CharDataset::from_text("abcab", 2);
  std::string msg = error_of<ValueError>([&] { ds.encode("abz"); });
  EXPECT_HAS(msg, "'z'");
  EXPECT_HAS(msg, "U+007A");
  EXPECT_HAS(msg, "not in the vocabulary");
  EXPECT_HAS(error_of<ValueError>([&] { ds.encode("aé"); }), "'é' (U+00E9)");
  msg = error_of<ValueError>([&] { ds.decode(tensor({0, 3}, {.dtype = kInt64})); });
  EXPECT_HAS(msg, "id 3");
  EXPECT_HAS(msg, "vocabulary of 3");
  EXPECT_HAS(error_of<ValueError>([&] { ds.decode(tensor({-1}, {.dtype = kInt64})); }), "id -1");
  EXPECT_HAS(error_of<TypeError>([&] { ds.decode(tensor({0.0})); }), "integer tensor");
  EXPECT_HAS(error_of<ValueError>([&] { ds.decode(zeros({2, 2}, {.dtype = kInt64})); }), "1-D");
}

TEST(CharDataset, InvalidUtf8NamesTheOffset) {
  struct Case { std::string bytes, expected; };
  const std::vector<Case> cases = {
      {"ab\x80" "cd", "byte offset 2 (unexpected continuation byte 0x80)"},
      {"abc\xff", "byte offset 3 (invalid byte 0xFF)"},
      {"a\xc3", "byte offset 1 (truncated 2-byte sequence"},
      {"ab\xe2\x9c" "x", "byte offset 2 (truncated 3-byte sequence"},
      {"\xc0\xaf", "byte offset 0 (invalid byte 0xC0)"},
      {"xy\xe0\x80\xaf", "byte offset 2 (overlong encoding"},
      {"\xed\xa0\x80", "byte offset 0 (encoded surrogate U+D800)"},
      {"12345\xf4\x90\x80\x80", "byte offset 5 (code point U+110000 is above U+10FFFF)"},
  };
  for (const auto& c : cases) {
    std::string msg = error_of<ValueError>([&] { CharDataset::from_text(c.bytes, 1); });
    EXPECT_HAS(msg, "<text>");
    EXPECT_HAS(msg, c.expected);
  }
  TempDir d;
  write_file(d / "bad.txt", "line one\nline \xa9two\n");
  std::string msg = error_of<ValueError>([&] { CharDataset ds(d / "bad.txt", 4); });
  EXPECT_HAS(msg, (d / "bad.txt").string());
  EXPECT_HAS(msg, "byte offset 14");
}

TEST(CharDataset, BlockSizeAndLength) {
  std::string msg = error_of<ValueError>([&] { CharDataset::from_text("héllo", 5); });
  EXPECT_HAS(msg, "has 5 characters");
  EXPECT_HAS(msg, "needs at least 6");
  EXPECT_EQ(CharDataset::from_text("héllo", 4).size(), 1);
  EXPECT_HAS(error_of<ValueError>([&] { CharDataset::from_text("abc", 0); }), "block_size must be at least 1");
  TempDir d;
  write_file(d / "empty.txt", "");
  msg = error_of<ValueError>([&] { CharDataset ds(d / "empty.txt", 1); });
  EXPECT_HAS(msg, (d / "empty.txt").string());
  EXPECT_HAS(msg, "has 0 characters");
}

TEST(CharDataset, FromFileMatchesFromText) {
  TempDir d;
  const std::string text = "To be, or not to be: ça, c'est la question.\n";
  write_file(d / "input.txt", text);
  write_file(d / "input.txt.gz", gzip(text));
  CharDataset a(d / "input.txt", 8);
  CharDataset gz(d / "input.txt.gz", 8);
  auto b = CharDataset::from_text(text, 8);
  EXPECT_EQ(a.vocabulary(), b.vocabulary());
  EXPECT_TRUE(a.ids().equal(b.ids()));
  EXPECT_TRUE(gz.ids().equal(b.ids()));
  EXPECT_EQ(a.size(), int64_t(b.ids().numel()) - 8);
  // Samples are copies: changing one leaves the text alone.
  Tensor x = a.get(0)[0].to_tensor();
  x.fill_(0);
  EXPECT_EQ(a.decode(a.get(0)[0].to_tensor()), "To be, o");
  // Works through the Dataset interface (what a DataLoader sees).
  const data::Dataset& base = a;
  EXPECT_EQ(values(base.get(2)[1].to_tensor()), values(a.ids().narrow(0, 3, 8)));
}

}  // namespace
