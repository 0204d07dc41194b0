// The C++ GPT-2: KV cache against recomputation, files round trip, generation, training, config
// errors. tests/python/test_gpt2_cpp.py checks it against the Python model (and through it
// transformers) on the same files.
#include <gtest/gtest.h>

#include <filesystem>

#include "ember/ember.h"
#include "ember/models/gpt2.h"
#include "ember/models/gpt2_tokenizer.h"
#include "ember/optim.h"

namespace ember::models {
namespace {

GPT2Config tiny() {
  GPT2Config c;
  c.vocab_size = 60;
  c.n_positions = 24;
  c.n_embd = 32;
  c.n_layer = 2;
  c.n_head = 4;
  c.resid_pdrop = c.embd_pdrop = c.attn_pdrop = 0.0;
  return c;
}

TEST(GPT2, KVCacheEqualsRecomputation) {
  manual_seed(0);
  GPT2LMHeadModel m(tiny());
  m.eval();
  Tensor ids = randint(0, 60, {2, 12});
  Tensor full = m.forward(ids);
  KVCache a, b;
  Tensor first = m.forward_cached(ids.narrow(1, 0, 7), nullptr, &a);
  Tensor rest = m.forward_cached(ids.narrow(1, 7, 5), &a, &b);
  EXPECT_TRUE(cat({first, rest}, 1).allclose(full, 1e-5, 1e-5));
  Tensor gen = m.generate(ids.narrow(0, 0, 1).narrow(1, 0, 4), {.max_new_tokens = 30});  // past n_positions too
  Tensor seq = ids.narrow(0, 0, 1).narrow(1, 0, 4);
  for (int i = 0; i < 30; ++i) {
    NoGradGuard g;
    const int64_t t = seq.size(1), w = std::min<int64_t>(t, 24);
    Tensor logits = m.forward(seq.narrow(1, t - w, w));
    seq = cat({seq, logits.select(1, w - 1).argmax(-1, true)}, 1);
  }
  EXPECT_TRUE(gen.equal(seq));
}

TEST(GPT2, SaveLoadTrainAndSample) {
  manual_seed(1);
  auto m = std::make_shared<GPT2LMHeadModel>(tiny());
  Tensor ids = randint(0, 60, {4, 16});
  optim::AdamW opt(m->parameters(), {.lr = 3e-3});
  double first = 0, last = 0;
  for (int i = 0; i < 20; ++i) {
    opt.zero_grad();
    Tensor loss = m->loss(ids, ids);
    loss.backward();
    opt.step();
    (i == 0 ? first : last) = loss.item<double>();
  }
  EXPECT_LT(last, first - 1.0);
  const auto dir = std::filesystem::temp_directory_path() / ("ember_gpt2_" + std::to_string(::getpid()));
  m->save_pretrained(dir.string());
  auto again = GPT2LMHeadModel::from_pretrained(dir.string());
  m->eval();
  EXPECT_TRUE(again->forward(ids).equal(m->forward(ids)));
  EXPECT_EQ(again->config().n_layer, 2);
  Generator g;
  g.manual_seed(0);
  Tensor s = again->generate(ids.narrow(0, 0, 1).narrow(1, 0, 3),
                             {.max_new_tokens = 10, .do_sample = true, .temperature = 0.8, .top_k = 10, .top_p = 0.9,
                              .generator = &g});
  EXPECT_EQ(s.size(1), 13);
  std::filesystem::remove_all(dir);
}

TEST(GPT2, LeftPaddedBatchGeneratesWhatEachPromptAloneDoes) {
  manual_seed(3);
  GPT2LMHeadModel m(tiny());
  m.eval();
  const std::vector<std::vector<int64_t>> prompts = {{4, 8, 15, 16, 23, 42}, {7, 7}};
  std::vector<Tensor> alone;
  for (const auto& p : prompts) {
    Tensor out = m.generate(tensor(p, {.dtype = kInt64}), {.max_new_tokens = 6});
    alone.push_back(out.narrow(1, int64_t(p.size()), 6));
  }
  std::vector<int64_t> padded, mask;
  for (const auto& p : prompts)
    for (int64_t i = 0; i < 6; ++i) {
      const int64_t pad = 6 - int64_t(p.size());
      padded.push_back(i < pad ? 0 : p[size_t(i - pad)]);
      mask.push_back(i < pad ? 0 : 1);
    }
  Tensor batch = m.generate(tensor(padded, {.dtype = kInt64}).view({2, 6}),
                            {.max_new_tokens = 6, .attention_mask = tensor(mask, {.dtype = kInt64}).view({2, 6})});
  EXPECT_TRUE(batch.narrow(1, 6, 6).select(0, 0).equal(alone[0].select(0, 0)));
  EXPECT_TRUE(batch.narrow(1, 6, 6).select(0, 1).equal(alone[1].select(0, 0)));
}

TEST(GPT2Tokenizer, PretokenizesAsGPT2sRegularExpression) {
  using V = std::vector<std::string>;
  EXPECT_EQ(GPT2Tokenizer::pretokenize("Hello  world"), (V{"Hello", " ", " world"}));
  EXPECT_EQ(GPT2Tokenizer::pretokenize("don't stop"), (V{"don", "'t", " stop"}));
  EXPECT_EQ(GPT2Tokenizer::pretokenize("a\n\nb "), (V{"a", "\n", "\n", "b", " "}));
  EXPECT_EQ(GPT2Tokenizer::pretokenize("x 42!?"), (V{"x", " 42", "!?"}));
  EXPECT_EQ(GPT2Tokenizer::pretokenize("caf\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac"),  // "café 日本": letters
            (V{"caf\xc3\xa9", " \xe6\x97\xa5\xe6\x9c\xac"}));
  EXPECT_THROW(GPT2Tokenizer::from_files("/nonexistent/vocab.json", "/nonexistent/merges.txt"), Error);
}

TEST(GPT2, LoRATrainsAdaptersOnlyMergesAndRoundTrips) {
  manual_seed(4);
  GPT2LMHeadModel m(tiny());
  Tensor ids = randint(0, 60, {2, 12});
  m.eval();
  const Tensor base = m.forward(ids).detach();
  EXPECT_EQ(m.inject_lora({"c_attn", "c_proj"}, 4, 8), 6);
  EXPECT_TRUE(m.forward(ids).allclose(base, 1e-6, 1e-6));  // B = 0: the base model
  std::vector<Tensor> trainable;
  for (auto& [name, p] : m.named_parameters())
    if (p.requires_grad()) {
      EXPECT_NE(name.find(".lora_"), std::string::npos) << name;
      trainable.push_back(p);
    }
  const Tensor frozen = m.named_parameters()[0].second.detach().clone();
  optim::AdamW opt(trainable, {.lr = 1e-2});
  double first = 0, last = 0;
  for (int i = 0; i < 15; ++i) {
    opt.zero_grad();
    Tensor loss = m.loss(ids, ids);
    loss.backward();
    opt.step();
    (i == 0 ? first : last) = loss.item<double>();
  }
  EXPECT_LT(last, first);
  EXPECT_TRUE(m.named_parameters()[0].second.equal(frozen));
  m.eval();
  const Tensor adapted = m.forward(ids).detach();
  m.merge_lora(true);
  EXPECT_TRUE(m.forward(ids).allclose(adapted, 1e-5, 1e-5));
  m.merge_lora(false);
  EXPECT_TRUE(m.forward(ids).allclose(adapted, 1e-5, 1e-5));
  const auto path = std::filesystem::temp_directory_path() / ("ember_lora_" + std::to_string(::getpid()) + ".safetensors");
  m.save_lora(path.string());
  manual_seed(4);
  GPT2LMHeadModel other(tiny());
  other.inject_lora({"c_attn", "c_proj"}, 4, 8);
  other.load_lora(path.string());
  other.eval();
  EXPECT_TRUE(other.forward(ids).allclose(adapted, 1e-6, 1e-6));
  std::filesystem::remove(path);
  EXPECT_THROW(other.inject_lora({"q_proj"}), ValueError);
}

TEST(GPT2, CheckpointedBlocksGiveTheSameGradients) {
  GPT2Config c = tiny();
  manual_seed(5);
  GPT2LMHeadModel plain(c);
  c.use_checkpoint = true;
  manual_seed(5);
  GPT2LMHeadModel ckpt(c);
  Tensor ids = randint(0, 60, {2, 12});
  plain.loss(ids, ids).backward();
  ckpt.loss(ids, ids).backward();
  auto a = plain.named_parameters(), b = ckpt.named_parameters();
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i)
    EXPECT_TRUE(a[i].second.grad().allclose(b[i].second.grad(), 1e-5, 1e-6)) << a[i].first;
}

TEST(GPT2, BadConfigsAndCheckpointsAreClearErrors) {
  GPT2Config c = tiny();
  c.n_head = 5;
  EXPECT_THROW(GPT2LMHeadModel{c}, ValueError);
  GPT2LMHeadModel m(tiny());
  EXPECT_THROW(m.load_hf_state_dict({{"transformer.wte.weight", zeros({3, 3})}}), ValueError);
  try {
    m.load_hf_state_dict({{"transformer.nonsense", zeros({1})}});
    FAIL();
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("transformer.nonsense"), std::string::npos);
  }
  EXPECT_THROW(m.forward(zeros({1, 30}, {.dtype = kInt64})), ValueError);  // past n_positions
}

}  // namespace
}  // namespace ember::models
