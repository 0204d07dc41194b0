// safetensors: round trips for every dtype, byte-exact fixtures written from the format spec
// (the Python safetensors package is not installed here, so no interop run), and hostile inputs
// that must each give an ember::Error.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "ember/ember.h"
#include "ember/serialize/serialize.h"

using namespace ember;
namespace st = ember::safetensors;

namespace {

std::string u64le(uint64_t n) {
  std::string s;
  for (int k = 0; k < 8; ++k) s += char((n >> (8 * k)) & 0xFF);
  return s;
}
std::string file_of(const std::string& header, const std::string& data) { return u64le(header.size()) + header + data; }
std::string f32_bytes(std::vector<float> v) { return std::string(reinterpret_cast<const char*>(v.data()), v.size() * 4); }

void expect_same(const Tensor& a, const Tensor& b) {
  EXPECT_EQ(a.dtype(), b.dtype());
  EXPECT_EQ(a.sizes(), b.sizes());
  EXPECT_EQ(a.contiguous().tolist<double>(), b.contiguous().tolist<double>());
}

void expect_error(const std::string& bytes, const char* what) {
  try {
    st::load_from_bytes(bytes);
    ADD_FAILURE() << "no error for: " << what;
  } catch (const Error&) {
  }
}

const std::string kOneF32Header = R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";

}  // namespace

TEST(Safetensors, RoundTripEveryDType) {
  std::vector<std::pair<std::string, Tensor>> ts;
  const DType dtypes[] = {kBool, kUInt8, kInt8, kInt16, kInt32, kInt64, kFloat16, kBFloat16, kFloat32, kFloat64};
  for (DType d : dtypes) {
    Tensor t = arange(-3, 9, 1, {.dtype = kFloat64}).reshape({3, 4});
    if (d == kUInt8) t = t + 3;
    if (d == kBool) t = t.remainder(2);
    ts.emplace_back(std::string("t_") + dtype_name(d), t.to(d));
  }
  ts.emplace_back("scalar", scalar_tensor(2.5, {.dtype = kFloat32}));
  ts.emplace_back("empty", zeros({0, 3}, {.dtype = kFloat32}));
  ts.emplace_back("empty_i64", zeros({2, 0}, {.dtype = kInt64}));
  ts.emplace_back("noncontig", arange(0, 6, 1, {.dtype = kFloat32}).reshape({2, 3}).t());
  std::string bytes = st::save_to_bytes(ts);
  auto back = st::load_from_bytes(bytes);
  ASSERT_EQ(back.size(), ts.size());
  auto sorted = ts;
  std::sort(sorted.begin(), sorted.end(), [](auto& a, auto& b) { return a.first < b.first; });
  for (size_t i = 0; i < back.size(); ++i) {
    EXPECT_EQ(back[i].first, sorted[i].first);
    expect_same(back[i].second, sorted[i].second);
  }
  // Header length is a multiple of 8 and the header starts with '{'.
  uint64_t n = 0;
  std::memcpy(&n, bytes.data(), 8);
  EXPECT_EQ(n % 8, 0u);
  EXPECT_EQ(bytes[8], '{');
}

TEST(Safetensors, ByteExactFixture) {
  // From the spec: header {"a": F32 [2] at [0, 8]}, padded with spaces to a multiple of 8.
  std::string header = kOneF32Header;  // 54 bytes -> padded to 56
  ASSERT_EQ(header.size(), 54u);
  std::string expected = file_of(header + "  ", f32_bytes({1.0f, 2.0f}));
  std::string got = st::save_to_bytes({{"a", tensor(std::vector<float>{1.0f, 2.0f})}});
  EXPECT_EQ(got, expected);
  // Two tensors, name-sorted in the buffer, with metadata first.
  std::string h2 =
      R"({"__metadata__":{"format":"pt"},"a":{"dtype":"I16","shape":[],"data_offsets":[0,2]},)"
      R"("b":{"dtype":"U8","shape":[1,2],"data_offsets":[2,4]}})";
  h2.append((8 - h2.size() % 8) % 8, ' ');
  std::string d2 = std::string("\x07\x00", 2) + std::string("\x05\x06", 2);
  std::string got2 = st::save_to_bytes(
      {{"b", tensor(std::vector<uint8_t>{5, 6}).reshape({1, 2})}, {"a", scalar_tensor(7, {.dtype = kInt16})}},
      {{"format", "pt"}});
  EXPECT_EQ(got2, file_of(h2, d2));
}

TEST(Safetensors, ReadsHandWrittenFile) {
  // Whitespace, key order and an unpadded header as other writers may produce.
  std::string header =
      "{ \"w\" : {\"shape\": [2, 1], \"dtype\": \"F64\", \"data_offsets\": [8, 24]},\n"
      "  \"b\": {\"dtype\":\"BF16\",\"shape\":[4],\"data_offsets\":[0,8]}, \"__metadata__\": {\"k\\u00e9\": \"v\\n\"}}";
  double w[2] = {1.5, -2.25};
  uint16_t b[4] = {0x3F80, 0x4000, 0xC040, 0x0000};  // 1, 2, -3, 0 in bfloat16
  std::string data(reinterpret_cast<char*>(b), 8);
  data.append(reinterpret_cast<char*>(w), 16);
  auto ts = st::load_from_bytes(file_of(header, data));
  ASSERT_EQ(ts.size(), 2u);
  EXPECT_EQ(ts[0].first, "b");
  EXPECT_EQ(ts[0].second.dtype(), kBFloat16);
  EXPECT_EQ(ts[0].second.tolist<double>(), (std::vector<double>{1, 2, -3, 0}));
  EXPECT_EQ(ts[1].first, "w");
  EXPECT_EQ(ts[1].second.sizes(), (Shape{2, 1}));
  EXPECT_EQ(ts[1].second.tolist<double>(), (std::vector<double>{1.5, -2.25}));
}

TEST(Safetensors, FileAndMetadata) {
  auto dir = std::filesystem::temp_directory_path() / ("ember_st_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::string path = (dir / "m.safetensors").string();
  st::Metadata meta = {{"format", "pt"}, {"note", "quote \" slash \\ ctrl \x01 utf8 \xc3\xa9"}};
  Tensor x = randn({3, 5});
  st::save({{"x", x}, {"y", ones({2}, {.dtype = kInt32})}}, path, meta);
  auto back = st::load(path);
  ASSERT_EQ(back.size(), 2u);
  expect_same(back[0].second, x);
  EXPECT_EQ(st::load_metadata(path), meta);
  std::filesystem::remove_all(dir);
  EXPECT_THROW(st::load(path), Error);
}

TEST(Safetensors, WriterRejectsBadInput) {
  EXPECT_THROW(st::save_to_bytes({{"a", zeros({1})}, {"a", zeros({2})}}), Error);
  EXPECT_THROW(st::save_to_bytes({{"__metadata__", zeros({1})}}), Error);
  EXPECT_THROW(st::save_to_bytes({{"a", zeros({1})}}, {{"k", "1"}, {"k", "2"}}), Error);
}

TEST(Safetensors, TruncatedAtEveryOffset) {
  std::string good = st::save_to_bytes({{"a", randn({3})}, {"b", zeros({2, 2}, {.dtype = kInt64})}}, {{"m", "v"}});
  ASSERT_NO_THROW(st::load_from_bytes(good));
  for (size_t len = 0; len < good.size(); ++len) expect_error(good.substr(0, len), "truncated");
  // Trailing bytes are not covered by any tensor.
  expect_error(good + "x", "trailing byte");
}

TEST(Safetensors, HostileHeaders) {
  const std::string data8 = f32_bytes({1.0f, 2.0f});
  // Header length larger than the file, and beyond the 100 MB limit.
  expect_error(u64le(1000) + kOneF32Header + data8, "header length > file");
  expect_error(u64le(uint64_t(1) << 62) + kOneF32Header, "huge header length");
  expect_error(u64le(~uint64_t(0)) + kOneF32Header, "max header length");
  // Bad JSON.
  for (const char* h : {"", "{", "}", "[]", "{\"a\":}", "{\"a\":{\"dtype\":\"F32\",}}", "{\"a\" {}}", "nope",
                        "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}} x",
                        "{\"a\":{\"dtype\":\"F\\q32\",\"shape\":[2],\"data_offsets\":[0,8]}}",
                        "{\"\xff\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}",
                        "{\"\xc0\xaf\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}",
                        "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}"})
    expect_error(file_of(h, data8), h);
  // Deep nesting never overflows the stack.
  expect_error(file_of(std::string(100000, '[') , data8), "deep nesting");
  expect_error(file_of("{\"a\":" + std::string(10000, '['), data8), "deep nesting in object");
  // Unknown dtype, wrong field types, negative or fractional shape.
  expect_error(file_of(R"({"a":{"dtype":"F8","shape":[2],"data_offsets":[0,8]}})", data8), "unknown dtype");
  expect_error(file_of(R"({"a":{"dtype":"C64","shape":[1],"data_offsets":[0,8]}})", data8), "complex dtype");
  expect_error(file_of(R"({"a":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", data8), "negative dim");
  expect_error(file_of(R"({"a":{"dtype":"F32","shape":[2.0],"data_offsets":[0,8]}})", data8), "fractional dim");
  expect_error(file_of(R"({"a":{"dtype":"F32","shape":"2","data_offsets":[0,8]}})", data8), "shape string");
  expect_error(file_of(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0]}})", data8), "one offset");
  expect_error(file_of(R"({"a":{"dtype":"F32","shape":[2]}})", data8), "missing offsets");
  expect_error(file_of(R"({"a":[1,2]})", data8), "tensor not an object");
  expect_error(file_of(R"({"__metadata__":{"k":1},"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", data8),
               "non-string metadata");
  // Shape overflow.
  expect_error(file_of(R"({"a":{"dtype":"F32","shape":[4294967296,4294967296,4],"data_offsets":[0,8]}})", data8),
               "shape overflow");
  expect_error(file_of(R"({"a":{"dtype":"F32","shape":[99999999999999999999999],"data_offsets":[0,8]}})", data8),
               "dim too large");
  // Size that does not match dtype and shape.
  expect_error(file_of(R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", data8), "wrong size");
  expect_error(file_of(R"({"a":{"dtype":"F64","shape":[2],"data_offsets":[0,8]}})", data8), "wrong size dtype");
  // Offsets past the buffer, reversed, overlapping, gaps, not covering everything.
  expect_error(file_of(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[8,16]}})", data8), "past the end");
  expect_error(file_of(R"({"a":{"dtype":"F32","shape":[0],"data_offsets":[8,4]}})", data8), "reversed");
  expect_error(file_of(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                       R"("b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
                       data8),
               "overlapping");
  expect_error(file_of(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                       R"("b":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})",
                       data8),
               "same start");
  expect_error(file_of(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", data8), "gap at start");
  expect_error(file_of(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", data8), "not covering");
  // Duplicate names (and duplicate fields).
  expect_error(file_of(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                       R"("a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
                       data8),
               "duplicate names");
  expect_error(file_of(R"({"a":{"dtype":"F32","dtype":"F32","shape":[2],"data_offsets":[0,8]}})", data8),
               "duplicate field");
  // Sanity: the good file loads.
  EXPECT_NO_THROW(st::load_from_bytes(file_of(kOneF32Header, data8)));
}

TEST(Safetensors, BoolBytesNormalised) {
  std::string h = R"({"m":{"dtype":"BOOL","shape":[3],"data_offsets":[0,3]}})";
  auto ts = st::load_from_bytes(file_of(h, std::string("\x00\x01\x7f", 3)));
  EXPECT_EQ(ts[0].second.tolist<double>(), (std::vector<double>{0, 1, 1}));
}

// Random byte flips of a valid file: either loads or throws an Error, never crashes.
TEST(Safetensors, FuzzedBytesNeverCrash) {
  std::string good = st::save_to_bytes({{"a", randn({4})}, {"bb", zeros({3}, {.dtype = kInt16})}}, {{"k", "v"}});
  uint32_t state = 12345;
  auto next = [&] { state = state * 1664525u + 1013904223u; return state; };
  for (int trial = 0; trial < 3000; ++trial) {
    std::string b = good;
    int flips = 1 + int(next() % 3);
    for (int f = 0; f < flips; ++f) b[next() % b.size()] = char(next() & 0xFF);
    try {
      st::load_from_bytes(b);
    } catch (const Error&) {
    }
  }
}
