"""GPT-2's byte-level BPE against transformers' own GPT2Tokenizer (and the `regex` module's
reading of GPT-2's pattern) on tokenizer files the test trains with Hugging Face `tokenizers`;
the character-level tokenizer. The transformers comparisons run in .venv-hf (scripts/setup.sh
--bench) and skip without it."""
import json
import subprocess

import pytest
from hf_env import hf_python

from ember.models import CharTokenizer, GPT2Tokenizer
from ember.models.tokenization import bytes_to_unicode, gpt2_pretokenize


SAMPLES = [
    "Hello world", "Hello  world", "  leading spaces", "trailing spaces   ", "tabs\tand\nnewlines\n\n  x",
    "I'm sure you'll see it's 'quoted' don't DON'T", "numbers 12345 and 3.14159, 1,000,000",
    "ünïcödé naïve café — “quotes” ‘single’", "日本語のテキスト and 中文", "emoji 🙂🚀 mixed👍text",
    "symbols !!! ??? ... @#$%^&*()", "<|endoftext|>after special<|endoftext|>", "", " ", "\n",
    "a  \n  b", "x\u00a0y\u2003z", "Ω≈ç√∫˜µ≤≥÷", "ⅫⅣ ½ ¾ ²³",
]

TRAIN = """
import json, sys
from tokenizers import ByteLevelBPETokenizer
folder, text = sys.argv[1], json.loads(sys.argv[2])
tok = ByteLevelBPETokenizer()
tok.train_from_iterator(text * 20, vocab_size=400, min_frequency=2, special_tokens=["<|endoftext|>"])
tok.save_model(folder)
from transformers import GPT2Tokenizer
hf = GPT2Tokenizer(folder + "/vocab.json", folder + "/merges.txt")
import regex
pat = regex.compile(r"'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+")
samples = json.loads(sys.argv[3])
print(json.dumps({"ids": [hf.encode(s) for s in samples], "pieces": [pat.findall(s) for s in samples],
                  "decoded": [hf.decode(hf.encode(s), clean_up_tokenization_spaces=False) for s in samples]}))
"""


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    py = hf_python("transformers", "tokenizers", "regex")
    if py is None:
        pytest.skip("no interpreter with transformers (scripts/setup.sh --bench makes .venv-hf)")
    folder = tmp_path_factory.mktemp("bpe")
    corpus = SAMPLES + ["the quick brown fox jumps over the lazy dog", "It's 2026; numbers like 42 and 7 matter."]
    proc = subprocess.run([py, "-c", TRAIN, str(folder), json.dumps(corpus), json.dumps(SAMPLES)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return folder, json.loads(proc.stdout)


def test_pretokenizer_matches_gpt2s_regular_expression(trained):
    _, hf = trained
    for s, want in zip(SAMPLES, hf["pieces"]):
        assert gpt2_pretokenize(s) == want, s


def test_bpe_ids_match_transformers(trained):
    folder, hf = trained
    tok = GPT2Tokenizer.from_pretrained(str(folder))
    for s, want in zip(SAMPLES, hf["ids"]):
        assert tok.encode(s) == want, s


def test_decode_round_trips(trained):
    folder, hf = trained
    tok = GPT2Tokenizer.from_pretrained(str(folder))
    for s, want in zip(SAMPLES, hf["decoded"]):
        assert tok.decode(tok.encode(s)) == want == s


def test_pretokenizer_without_transformers():
    assert gpt2_pretokenize("Hello  world") == ["Hello", " ", " world"]
    assert gpt2_pretokenize("don't stop") == ["don", "'t", " stop"]
    assert gpt2_pretokenize("a\n\nb ") == ["a", "\n", "\n", "b", " "]
    assert gpt2_pretokenize("x 42!?") == ["x", " 42", "!?"]
    assert len(set(bytes_to_unicode().values())) == 256


def test_char_tokenizer():
    tok = CharTokenizer.from_text("hello world")
    assert tok.vocab_size == 8 and tok.decode(tok.encode("hello")) == "hello"
    with pytest.raises(ValueError, match="'z'"):
        tok.encode("z")
