"""ember.nn.utils.rnn: padding and packing variable-length sequences (torch.nn.utils.rnn).

PackedSequence holds the time-major concatenation of the sequences' steps (data) and how many
sequences are still running at each step (batch_sizes), with the permutation that sorted them
by length. ember's RNN layers take padded tensors; pack/unpack round-trip exactly."""
from collections import namedtuple as _namedtuple

from ... import _C

__all__ = ["PackedSequence", "pad_sequence", "unpad_sequence", "pack_padded_sequence", "pad_packed_sequence",
           "pack_sequence", "unpack_sequence"]


def _invert_permutation(permutation):
    if permutation is None:
        return None
    out = _C.empty_like(permutation)
    out.scatter_(0, permutation, _C.arange(permutation.numel(), device=permutation.device))
    return out


class PackedSequence(_namedtuple("PackedSequence", ["data", "batch_sizes", "sorted_indices", "unsorted_indices"])):
    def __new__(cls, data, batch_sizes=None, sorted_indices=None, unsorted_indices=None):
        if unsorted_indices is None:
            unsorted_indices = _invert_permutation(sorted_indices)
        return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)

    def to(self, *args, **kwargs):
        data = self.data.to(*args, **kwargs)
        if data is self.data:
            return self
        return type(self)(data, self.batch_sizes, self.sorted_indices, self.unsorted_indices)

    def cpu(self):
        return self.to("cpu")

    def double(self):
        return self.to(dtype=_C.float64)

    def float(self):
        return self.to(dtype=_C.float32)

    @property
    def is_cuda(self):
        return self.data.is_cuda

    def is_pinned(self):
        return False


def pad_sequence(sequences, batch_first=False, padding_value=0.0, padding_side="right"):
    """Stacks tensors of shape (L_i, *) into (max L, B, *) (or (B, max L, *) with batch_first),
    filling the missing steps with padding_value on the right (or the left)."""
    if isinstance(sequences, _C.Tensor):
        sequences = sequences.unbind(0)
    sequences = list(sequences)
    if not sequences:
        raise RuntimeError("received an empty list of sequences")
    if padding_side not in ("left", "right"):
        raise ValueError(f"Expected padding_side to be one of left or right, but got {padding_side}.")
    max_len = max(s.size(0) for s in sequences)
    trailing = tuple(sequences[0].shape[1:])
    rows = []
    for s in sequences:
        n = s.size(0)
        pad = s.new_full((max_len - n,) + trailing, padding_value)
        rows.append(_C.cat([s, pad] if padding_side == "right" else [pad, s], 0))
    out = _C.stack(rows, 0)
    return out if batch_first else out.transpose(0, 1)


def unpad_sequence(padded_sequences, lengths, batch_first=False):
    if not batch_first:
        padded_sequences = padded_sequences.transpose(0, 1)
    return [seq[: int(n)] for seq, n in zip(padded_sequences, lengths)]


def _lengths_list(lengths):
    if isinstance(lengths, _C.Tensor):
        if lengths.dim() != 1:
            raise RuntimeError(f"'lengths' argument should be a 1D CPU int64 tensor, but got {lengths.dim()}D "
                               f"{lengths.device} {lengths.dtype} tensor")
        return [int(v) for v in lengths.tolist()]
    return [int(v) for v in lengths]


def pack_padded_sequence(input, lengths, batch_first=False, enforce_sorted=True):
    lengths = _lengths_list(lengths)
    if batch_first:
        input = input.transpose(0, 1)
    batch = input.size(1)
    if len(lengths) != batch:
        raise RuntimeError(f"Expected `len(lengths)` to be equal to batch_size, but got {len(lengths)} "
                           f"(batch_size={batch})")
    if enforce_sorted:
        if any(lengths[i] < lengths[i + 1] for i in range(len(lengths) - 1)):
            raise RuntimeError("`lengths` array must be sorted in decreasing order when `enforce_sorted` is True. "
                               "You can pass `enforce_sorted=False` to pack_padded_sequence and/or pack_sequence "
                               "to sidestep this requirement if you do not need ONNX exportability.")
        sorted_indices = None
        order = list(range(batch))
    else:
        order = sorted(range(batch), key=lambda i: -lengths[i])  # stable, as torch.sort(descending)
        sorted_indices = _C.tensor(order, dtype=_C.int64, device=input.device)
        input = input.index_select(1, sorted_indices)
    sorted_lengths = [lengths[i] for i in order]
    if sorted_lengths and sorted_lengths[-1] <= 0:
        raise RuntimeError("Length of all samples has to be greater than 0, but found an element in 'lengths' "
                           "that is <= 0")
    steps, batch_sizes = [], []
    for t in range(sorted_lengths[0] if sorted_lengths else 0):
        running = sum(1 for n in sorted_lengths if n > t)
        steps.append(input[t, :running])
        batch_sizes.append(running)
    data = _C.cat(steps, 0)
    return PackedSequence(data, _C.tensor(batch_sizes, dtype=_C.int64), sorted_indices, None)


def pad_packed_sequence(sequence, batch_first=False, padding_value=0.0, total_length=None):
    data, batch_sizes = sequence.data, [int(b) for b in sequence.batch_sizes.tolist()]
    max_len = len(batch_sizes)
    if total_length is not None:
        if total_length < max_len:
            raise ValueError("Expected total_length to be at least the length of the longest sequence in input, "
                             f"but got total_length={total_length} and max sequence length being {max_len}")
        max_len = total_length
    batch = batch_sizes[0]
    trailing = tuple(data.shape[1:])
    out = _C.full((max_len, batch) + trailing, padding_value, dtype=data.dtype, device=data.device)
    offset = 0
    for t, running in enumerate(batch_sizes):
        out[t, :running] = data[offset:offset + running]
        offset += running
    lengths = [sum(1 for b in batch_sizes if b > i) for i in range(batch)]
    lengths_t = _C.tensor(lengths, dtype=_C.int64)
    if sequence.unsorted_indices is not None:
        out = out.index_select(1, sequence.unsorted_indices)
        lengths_t = lengths_t[sequence.unsorted_indices.cpu()]
    if batch_first:
        out = out.transpose(0, 1)
    return out, lengths_t


def pack_sequence(sequences, enforce_sorted=True):
    lengths = [s.size(0) for s in sequences]
    return pack_padded_sequence(pad_sequence(sequences), lengths, enforce_sorted=enforce_sorted)


def unpack_sequence(packed_sequences):
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)


def _forward_packed(module, packed, hx=None):
    """RNN / LSTM / GRU over a PackedSequence (called by their forward). Sequences of equal length
    run together as one batch, so each direction of each layer sees exactly its own steps; the
    output is packed with the input's batch_sizes and permutation, and the final states come back
    in the caller's batch order, as torch's do."""
    padded, lengths = pad_packed_sequence(packed)  # (T, B, *) in the caller's order
    lengths = [int(n) for n in lengths.tolist()]
    is_lstm = module.mode == "LSTM"
    outputs = [None] * len(lengths)
    finals = [None] * len(lengths)
    for length in sorted(set(lengths), reverse=True):
        idx = [b for b, n in enumerate(lengths) if n == length]
        sel = _C.tensor(idx, dtype=_C.int64, device=padded.device)
        x = padded[:length].index_select(1, sel)
        if module.batch_first:
            x = x.transpose(0, 1)
        h = None
        if hx is not None:
            h = tuple(t.index_select(1, sel) for t in hx) if is_lstm else hx.index_select(1, sel)
        out, state = module(x, h)
        if module.batch_first:
            out = out.transpose(0, 1)
        for j, b in enumerate(idx):
            outputs[b] = out[:, j]
            finals[b] = tuple(s[:, j] for s in state) if is_lstm else state[:, j]
    data = pack_padded_sequence(pad_sequence(outputs), lengths, enforce_sorted=False).data
    output = PackedSequence(data, packed.batch_sizes, packed.sorted_indices, packed.unsorted_indices)
    if is_lstm:
        return output, (_C.stack([f[0] for f in finals], 1), _C.stack([f[1] for f in finals], 1))
    return output, _C.stack(finals, 1)
