"""The command-line tokenizer (build/gpt2_tokenize) on BPE files a small trainer here writes: the
same ids as ember.models.GPT2Tokenizer (the same C++ code through the binding, which
test_tokenizers.py checks against transformers) for every sample, and exact round trips."""
import json
import os
import subprocess
from collections import Counter

import pytest

from ember.models import GPT2Tokenizer
from ember.models.tokenization import bytes_to_unicode, gpt2_pretokenize

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
BIN = os.path.join(ROOT, "build", "gpt2_tokenize")
pytestmark = pytest.mark.skipif(not os.path.exists(BIN), reason="needs build/gpt2_tokenize (the examples build)")

SAMPLES = ["Hello world", "Hello  world and   more", "  leading", "trailing   ", "tabs\tand\nnewlines\n\n  x",
           "I'm sure you'll see it's 'quoted' don't DON'T", "numbers 12345 and 3.14159, 1,000,000",
           "ünïcödé naïve café — “quotes”", "日本語のテキスト and 中文", "emoji 🙂🚀 mixed👍text",
           "symbols !!! ??? ... @#$%^&*()", "<|endoftext|>after<|endoftext|>", "x\u00a0y\u2003z", "ⅫⅣ ½ ¾ ²³"]


def train_bpe(texts, n_merges, folder):
    """A plain BPE trainer over GPT-2's pieces (most frequent pair first): files for the tests."""
    enc = bytes_to_unicode()
    words = Counter("".join(enc[b] for b in p.encode("utf-8")) for t in texts for p in gpt2_pretokenize(t))
    vocab = {c: i for i, c in enumerate(sorted(enc.values()))}
    splits = {w: list(w) for w in words}
    merges = []
    for _ in range(n_merges):
        pairs = Counter()
        for w, n in words.items():
            s = splits[w]
            for a, b in zip(s, s[1:]):
                pairs[(a, b)] += n
        if not pairs:
            break
        (a, b), _ = max(pairs.items(), key=lambda kv: (kv[1], kv[0]))
        merges.append((a, b))
        vocab.setdefault(a + b, len(vocab))
        for w in words:
            s, out, k = splits[w], [], 0
            while k < len(s):
                if k + 1 < len(s) and s[k] == a and s[k + 1] == b:
                    out.append(a + b)
                    k += 2
                else:
                    out.append(s[k])
                    k += 1
            splits[w] = out
    vocab["<|endoftext|>"] = len(vocab)
    with open(os.path.join(folder, "vocab.json"), "w", encoding="utf-8") as f:
        json.dump(vocab, f, ensure_ascii=False)
    with open(os.path.join(folder, "merges.txt"), "w", encoding="utf-8") as f:
        f.write("#version: 0.2\n" + "".join(f"{a} {b}\n" for a, b in merges))


def test_cpp_tokenizer_matches_python(tmp_path):
    corpus = SAMPLES * 3 + ["the quick brown fox jumps over the lazy dog"] * 5
    train_bpe(corpus, 200, str(tmp_path))
    py = GPT2Tokenizer.from_pretrained(str(tmp_path))
    stdin = "".join(s.replace("\n", "\\n") + "\n" for s in SAMPLES)
    proc = subprocess.run([BIN, str(tmp_path)], input=stdin, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.split("\n")
    for k, s in enumerate(SAMPLES):
        ids = [int(x) for x in lines[2 * k].split()]
        assert ids == py.encode(s), s
        assert lines[2 * k + 1] == "roundtrip ok", s
        assert py.decode(ids) == s
