#include "ember/core/generator.h"

#include <cstring>
#include <random>

#include "ember/core/errors.h"

namespace ember {

// ---- Mt19937
// Knuth's initialisation (init_genrand): word j from word j - 1. Only the low 32 bits of the
// seed take part; torch remembers the full 64-bit seed for initial_seed().
void Mt19937::seed_with(uint64_t seed) {
  seed_ = seed;
  state_[0] = uint32_t(seed);
  for (int j = 1; j < kN; ++j) state_[j] = 1812433253u * (state_[j - 1] ^ (state_[j - 1] >> 30)) + uint32_t(j);
  left_ = 1;  // the first draw refills
  next_ = 0;
}

// The twist: every word from itself, its successor and the word 397 ahead (wrapping).
void Mt19937::refill() {
  constexpr int kM = 397;
  constexpr uint32_t kMatrixA = 0x9908b0dfu, kUpper = 0x80000000u, kLower = 0x7fffffffu;
  auto twist = [](uint32_t u, uint32_t v) {
    uint32_t y = (u & kUpper) | (v & kLower);
    return (y >> 1) ^ ((v & 1u) ? kMatrixA : 0u);
  };
  int j = 0;
  for (; j < kN - kM; ++j) state_[j] = state_[j + kM] ^ twist(state_[j], state_[j + 1]);
  for (; j < kN - 1; ++j) state_[j] = state_[j + kM - kN] ^ twist(state_[j], state_[j + 1]);
  state_[kN - 1] = state_[kM - 1] ^ twist(state_[kN - 1], state_[0]);
  left_ = kN;
  next_ = 0;
}

// torch accepts 0 < left <= 624 and next <= 624. The draws read word `next` while left > 1, so
// the position must also be consistent (left + next == 625, as every draw keeps it) unless the
// next draw refills (left == 1): otherwise a crafted state would read past the words.
bool Mt19937::set(uint64_t seed, int32_t left, uint32_t next, const uint32_t* words) {
  if (left <= 0 || left > kN || next > uint32_t(kN)) return false;
  if (left != 1 && uint32_t(left) + next != uint32_t(kN) + 1) return false;
  seed_ = seed;
  left_ = left;
  next_ = next;
  std::memcpy(state_, words, sizeof(state_));
  return true;
}

// ---- Generator
Generator::Generator(const Generator& other) {
  std::lock_guard g(other.mu_);
  engine_ = other.engine_;
  next_double_normal_ = other.next_double_normal_;
  next_float_normal_ = other.next_float_normal_;
  philox_offset_ = other.philox_offset_;
  device_ = other.device_;
}

Generator& Generator::operator=(const Generator& other) {
  if (this == &other) return *this;
  std::scoped_lock g(mu_, other.mu_);
  engine_ = other.engine_;
  next_double_normal_ = other.next_double_normal_;
  next_float_normal_ = other.next_float_normal_;
  philox_offset_ = other.philox_offset_;
  device_ = other.device_;
  return *this;
}

void Generator::manual_seed(uint64_t seed) {
  std::lock_guard g(mu_);
  engine_.seed_with(seed);
  next_double_normal_.reset();
  next_float_normal_.reset();
  philox_offset_ = 0;
}

uint64_t Generator::seed() {
  std::random_device rd;
  uint64_t s = (uint64_t(rd()) << 32) | rd();
  manual_seed(s);
  return s;
}

namespace {
thread_local Generator* thread_default_generator = nullptr;

// Offsets of torch's CPUGeneratorImplState (x86-64 layout, natural alignment): the legacy POD
// {u64 the_initial_seed; i32 left; i32 seeded; u64 next; u64 state[624]; f64 normal_x, normal_y,
// normal_rho; i32 normal_is_valid;} padded to 5048, then {f32 next_float_normal_sample; bool
// is_next_float_normal_sample_valid;} padded to 5056. Padding and the unused doubles are zero.
constexpr size_t kSeedAt = 0, kLeftAt = 8, kSeededAt = 12, kNextAt = 16, kWordsAt = 24;
constexpr size_t kNormalYAt = 5024, kNormalValidAt = 5040, kFloatNormalAt = 5048, kFloatValidAt = 5052;
static_assert(kWordsAt + 8 * Mt19937::kN == 5016);

template <class T> void put(std::string& s, size_t at, T v) { std::memcpy(s.data() + at, &v, sizeof(T)); }
template <class T> T get(const std::string& s, size_t at) {
  T v;
  std::memcpy(&v, s.data() + at, sizeof(T));
  return v;
}
}  // namespace

// A GPU generator's state (torch's CUDAGeneratorImpl::get_state): seed, then offset.
constexpr size_t kPhiloxStateBytes = 16;

std::string Generator::get_state() const {
  std::lock_guard g(mu_);
  if (!device_.is_cpu()) {
    std::string s(kPhiloxStateBytes, '\0');
    put<uint64_t>(s, 0, engine_.seed());
    put<uint64_t>(s, 8, philox_offset_);
    return s;
  }
  std::string s(kStateBytes, '\0');
  put<uint64_t>(s, kSeedAt, engine_.seed());
  put<int32_t>(s, kLeftAt, engine_.left());
  put<int32_t>(s, kSeededAt, 1);
  put<uint64_t>(s, kNextAt, engine_.next());
  for (int j = 0; j < Mt19937::kN; ++j) put<uint64_t>(s, kWordsAt + 8 * size_t(j), engine_.words()[j]);
  if (next_double_normal_) {
    put<double>(s, kNormalYAt, *next_double_normal_);
    put<int32_t>(s, kNormalValidAt, 1);
  }
  if (next_float_normal_) {
    put<float>(s, kFloatNormalAt, *next_float_normal_);
    put<uint8_t>(s, kFloatValidAt, 1);
  }
  return s;
}

void Generator::set_state(const std::string& s) {
  if (!device_.is_cpu()) {
    EMBER_CHECK(s.size() == kPhiloxStateBytes, "RNG state is wrong size: expected ", kPhiloxStateBytes,
                " bytes (seed and offset), got ", s.size());
    const uint64_t seed = get<uint64_t>(s, 0), offset = get<uint64_t>(s, 8);
    std::lock_guard g(mu_);
    engine_.seed_with(seed);
    philox_offset_ = offset;
    return;
  }
  EMBER_CHECK(s.size() == kStateBytes, "Expected a CPUGeneratorImplState of size ", kStateBytes,
              " but found the input RNG state size to be ", s.size());
  uint32_t words[Mt19937::kN];
  for (int j = 0; j < Mt19937::kN; ++j) words[j] = uint32_t(get<uint64_t>(s, kWordsAt + 8 * size_t(j)));
  Mt19937 e;
  bool ok = get<int32_t>(s, kSeededAt) != 0 &&
            e.set(get<uint64_t>(s, kSeedAt), get<int32_t>(s, kLeftAt), uint32_t(get<uint64_t>(s, kNextAt)), words);
  EMBER_CHECK(ok, "Invalid mt19937 state");
  std::lock_guard g(mu_);
  engine_ = e;
  next_double_normal_.reset();
  next_float_normal_.reset();
  if (get<int32_t>(s, kNormalValidAt)) next_double_normal_ = get<double>(s, kNormalYAt);
  if (get<uint8_t>(s, kFloatValidAt)) next_float_normal_ = get<float>(s, kFloatNormalAt);
}

Generator& default_generator() {
  if (thread_default_generator) return *thread_default_generator;
  static Generator gen;
  return gen;
}

ThreadDefaultGeneratorGuard::ThreadDefaultGeneratorGuard(Generator* generator)
    : previous_(thread_default_generator) {
  thread_default_generator = generator;
}

ThreadDefaultGeneratorGuard::~ThreadDefaultGeneratorGuard() { thread_default_generator = previous_; }

}  // namespace ember
