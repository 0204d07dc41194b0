"""Tokenizers for language models: GPT-2's byte-level BPE (reads vocab.json + merges.txt, as
transformers.GPT2Tokenizer) and a character-level one.

    tok = GPT2Tokenizer.from_pretrained("folder")       # vocab.json, merges.txt
    ids = tok.encode("Hello world")                     # [15496, 995] with GPT-2's files
    tok.decode(ids)                                     # "Hello world"

Byte-level BPE: the text is split by GPT-2's pre-tokenisation rule (contractions, an optional
space before a run of letters, of digits or of other symbols, runs of whitespace), each piece's
UTF-8 bytes become printable characters (GPT-2's byte-to-unicode table), and the merges are
applied lowest rank first. The rule is GPT-2's regular expression
  's|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+
written as a scanner over Unicode categories (the standard library's `re` has no \\p{L}).
"""
import json
import os
import unicodedata

__all__ = ["GPT2Tokenizer", "CharTokenizer", "bytes_to_unicode", "gpt2_pretokenize"]

_CONTRACTIONS = ("s", "t", "re", "ve", "m", "ll", "d")


def bytes_to_unicode():
    """GPT-2's table: each byte -> a printable character (printable Latin-1 bytes map to
    themselves, the others to code points from 256 up)."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {b: chr(c) for b, c in zip(bs, cs)}


def _kind(c):
    if c.isspace():
        return "s"
    cat = unicodedata.category(c)
    if cat[0] == "L":
        return "L"
    if cat[0] == "N":
        return "N"
    return "o"


def gpt2_pretokenize(text):
    """The pieces GPT-2's regular expression finds in text, in order."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if c == "'":  # 's 't 're 've 'm 'll 'd
            suffix = next((s for s in _CONTRACTIONS if text.startswith(s, i + 1)), None)
            if suffix is not None:
                out.append("'" + suffix)
                i += 1 + len(suffix)
                continue
        # " ?\p{L}+", " ?\p{N}+", " ?[^\s\p{L}\p{N}]+": an optional space, then a run of one kind
        start = i + 1 if c == " " and i + 1 < n and _kind(text[i + 1]) != "s" else i
        kind = _kind(text[start])
        if kind != "s":
            j = start + 1
            while j < n and _kind(text[j]) == kind:
                j += 1
            out.append(text[i:j])
            i = j
            continue
        # whitespace: "\s+(?!\S)" leaves the last space for the word after it; else "\s+"
        j = i + 1
        while j < n and text[j].isspace():
            j += 1
        if j < n and j - 1 > i:
            j -= 1
        out.append(text[i:j])
        i = j
    return out


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
        self.byte_encoder = bytes_to_unicode()
        self.byte_decoder = {v: k for k, v in self.byte_encoder.items()}
        self.errors = errors
        self.unk_token, self.bos_token, self.eos_token, self.pad_token = unk_token, bos_token, eos_token, pad_token
        # tokens the text is split on before BPE (they are never split themselves)
        self.special_tokens = sorted({t for t in (unk_token, bos_token, eos_token, pad_token)
                                      if t is not None and t in self.encoder}, key=len, reverse=True)
        self._cache = {}

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

    def bpe(self, piece):
        """The merged symbols of one pre-tokenised piece (already byte-mapped)."""
        if piece in self._cache:
            return self._cache[piece]
        word = list(piece)
        while len(word) > 1:
            ranked = [(self.bpe_ranks.get((a, b), None), k) for k, (a, b) in enumerate(zip(word, word[1:]))]
            ranked = [(r, k) for r, k in ranked if r is not None]
            if not ranked:
                break
            best = min(ranked)[0]
            first, second = next((word[k], word[k + 1]) for r, k in ranked if r == best)
            merged, k = [], 0
            while k < len(word):  # merge every occurrence of the best pair, left to right
                if k < len(word) - 1 and word[k] == first and word[k + 1] == second:
                    merged.append(first + second)
                    k += 2
                else:
                    merged.append(word[k])
                    k += 1
            word = merged
        if len(self._cache) < 100_000:
            self._cache[piece] = word
        return word

    def _split_special(self, text):
        parts = [text]
        for tok in self.special_tokens:
            nxt = []
            for p in parts:
                if p in self.special_tokens:
                    nxt.append(p)
                    continue
                pieces = p.split(tok)
                for k, q in enumerate(pieces):
                    if k:
                        nxt.append(tok)
                    if q:
                        nxt.append(q)
            parts = nxt
        return parts

    def tokenize(self, text):
        tokens = []
        for part in self._split_special(text):
            if part in self.special_tokens:
                tokens.append(part)
                continue
            for piece in gpt2_pretokenize(part):
                mapped = "".join(self.byte_encoder[b] for b in piece.encode("utf-8"))
                tokens.extend(self.bpe(mapped))
        return tokens

    def encode(self, text):
        unk = self.encoder.get(self.unk_token)
        return [self.encoder.get(t, unk) for t in self.tokenize(text)]

    def decode(self, ids, skip_special_tokens=False):
        if hasattr(ids, "tolist"):
            ids = ids.tolist()
        tokens = [self.decoder[int(i)] for i in ids]
        if skip_special_tokens:
            tokens = [t for t in tokens if t not in self.special_tokens]
        data = bytearray()
        for t in tokens:
            if t in self.special_tokens:
                data += t.encode("utf-8")
            else:
                data += bytes(self.byte_decoder[c] for c in t)
        return data.decode("utf-8", errors=self.errors)

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
