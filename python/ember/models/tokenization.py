"""Tokenizers for language models: GPT-2's byte-level BPE (reads vocab.json + merges.txt, as
transformers.GPT2Tokenizer) and a character-level one.

    tok = GPT2Tokenizer.from_pretrained("folder")       # vocab.json, merges.txt
    ids = tok.encode("Hello world")                     # [15496, 995] with GPT-2's files
    tok.decode(ids)                                     # "Hello world"

The byte-level BPE is C++'s (ember::models::GPT2Tokenizer, include/ember/models/gpt2_tokenizer.h):
GPT-2's pre-tokenisation rule over Unicode categories, GPT-2's byte-to-unicode table, merges
lowest rank first. This class keeps what Python users read (the vocabulary and the merges as
dicts, save_pretrained, __call__).
"""
import json
import os

from .. import _C

__all__ = ["GPT2Tokenizer", "CharTokenizer", "bytes_to_unicode", "gpt2_pretokenize"]


def bytes_to_unicode():
    """GPT-2's table: each byte -> a printable character (printable Latin-1 bytes map to
    themselves, the others to code points from 256 up)."""
    return dict(enumerate(_C._models.gpt2_byte_chars()))


def gpt2_pretokenize(text):
    """The pieces GPT-2's regular expression finds in text, in order."""
    return _C._models.gpt2_pretokenize(text)


class GPT2Tokenizer:
    def __init__(self, vocab_file, merges_file, errors="replace", unk_token="<|endoftext|>",
                 bos_token="<|endoftext|>", eos_token="<|endoftext|>", pad_token=None):
        with open(vocab_file, encoding="utf-8") as f:
            self.encoder = json.load(f)
        self.decoder = {v: k for k, v in self.encoder.items()}
        with open(merges_file, encoding="utf-8") as f:
            lines = f.read().split("\n")
        merges = [tuple(line.split()) for line in lines if line and not line.startswith("#version")]
        self.bpe_ranks = {m: r for r, m in enumerate(merges) if len(m) == 2}
        self.errors = errors
        self.unk_token, self.bos_token, self.eos_token, self.pad_token = unk_token, bos_token, eos_token, pad_token
        # tokens the text is split on before BPE (they are never split themselves)
        self.special_tokens = sorted({t for t in (unk_token, bos_token, eos_token, pad_token)
                                      if t is not None and t in self.encoder}, key=len, reverse=True)
        self._bpe = _C._models.GPT2Tokenizer.from_files(os.fspath(vocab_file), os.fspath(merges_file),
                                                        self.special_tokens, unk_token or "")

    @classmethod
    def from_pretrained(cls, folder, **kwargs):
        return cls(os.path.join(folder, "vocab.json"), os.path.join(folder, "merges.txt"), **kwargs)

    def save_pretrained(self, folder):
        os.makedirs(folder, exist_ok=True)
        with open(os.path.join(folder, "vocab.json"), "w", encoding="utf-8") as f:
            json.dump(self.encoder, f, ensure_ascii=False)
        with open(os.path.join(folder, "merges.txt"), "w", encoding="utf-8") as f:
            f.write("#version: 0.2\n")
            for a, b in sorted(self.bpe_ranks, key=self.bpe_ranks.get):
                f.write(f"{a} {b}\n")

    @property
    def vocab_size(self):
        return len(self.encoder)

    def __len__(self):
        return len(self.encoder)

    @property
    def eos_token_id(self):
        return self.encoder.get(self.eos_token)

    def tokenize(self, text):
        return [self.decoder[i] for i in self.encode(text)]

    def encode(self, text):
        return self._bpe.encode(text)

    def decode(self, ids, skip_special_tokens=False):
        if hasattr(ids, "tolist"):
            ids = ids.tolist()
        ids = [int(i) for i in ids]
        if skip_special_tokens:
            ids = [i for i in ids if self.decoder.get(i) not in self.special_tokens]
        return self._bpe.decode(ids).decode("utf-8", errors=self.errors)

    def __call__(self, text, return_tensors=None):
        ids = [self.encode(t) for t in text] if isinstance(text, (list, tuple)) else self.encode(text)
        if return_tensors in ("pt", "ember"):
            import ember
            ids = ember.tensor(ids if isinstance(text, (list, tuple)) else [ids])
        return {"input_ids": ids}


class CharTokenizer:
    """One id per character of a fixed alphabet (the seeds' character-level language models)."""

    def __init__(self, chars):
        self.chars = sorted(set(chars))
        self.stoi = {c: i for i, c in enumerate(self.chars)}

    @classmethod
    def from_text(cls, text):
        return cls(text)

    @property
    def vocab_size(self):
        return len(self.chars)

    def __len__(self):
        return len(self.chars)

    def encode(self, text):
        try:
            return [self.stoi[c] for c in text]
        except KeyError as e:
            raise ValueError(f"CharTokenizer: character {e.args[0]!r} is not in the alphabet") from None

    def decode(self, ids):
        if hasattr(ids, "tolist"):
            ids = ids.tolist()
        return "".join(self.chars[int(i)] for i in ids)
