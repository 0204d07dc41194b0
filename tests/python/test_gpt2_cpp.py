"""The C++ GPT-2 (build/gpt2_generate) on folders the Python model wrote and on one transformers
wrote: the same last logits and greedy continuation as ember.models.GPT2LMHeadModel (which
test_gpt2_hf.py checks against transformers itself)."""
import os
import re
import subprocess

import pytest

import ember
from ember.models import GPT2Config, GPT2LMHeadModel

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
BIN = os.path.join(ROOT, "build", "gpt2_generate")
pytestmark = pytest.mark.skipif(not os.path.exists(BIN), reason="needs build/gpt2_generate (the examples build)")


def run_cpp(folder, ids, new=10):
    proc = subprocess.run([BIN, str(folder), ",".join(map(str, ids)), "--new", str(new)], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    m = re.search(r"last logits: sum (\S+), first (\S+), argmax (\d+)", proc.stdout)
    tokens = [int(t) for t in re.search(r"tokens:(.*)", proc.stdout).group(1).split()]
    return float(m.group(1)), float(m.group(2)), int(m.group(3)), tokens


@pytest.mark.parametrize("tied", [True, False])
def test_cpp_model_matches_python_on_the_same_files(tmp_path, tied):
    ember.manual_seed(7)
    model = GPT2LMHeadModel(GPT2Config(n_layer=2, n_embd=48, n_head=4, vocab_size=90, n_positions=32,
                                       tie_word_embeddings=tied)).eval()
    model.save_pretrained(str(tmp_path))
    ids = [5, 17, 33, 2, 88, 41]
    total, first, top, tokens = run_cpp(tmp_path, ids, new=40)  # 46 > 32 positions: the sliding window too
    logits = model(ember.tensor([ids])).logits[0, -1]
    assert abs(total - logits.sum().item()) < 1e-3 and abs(first - logits[0].item()) < 1e-5
    assert top == logits.argmax().item()
    assert tokens == model.generate(ember.tensor([ids]), max_new_tokens=40)[0, len(ids):].tolist()


def test_bad_folder_is_a_clear_error(tmp_path):
    proc = subprocess.run([BIN, str(tmp_path), "1,2"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1 and "config.json" in proc.stderr
