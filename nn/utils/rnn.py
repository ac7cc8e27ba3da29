"""``nn.utils.rnn``: variable-length batches for the recurrent layers (PyTorch's names and layout).

A ``PackedSequence`` holds the time steps of a batch of sequences sorted by decreasing length, step after step:
``data[:batch_sizes[0]]`` is every sequence's first element, the next ``batch_sizes[1]`` rows their second
elements (of the sequences that have one)... ``sorted_indices[i]`` is the original batch index of sorted row
``i``; ``unsorted_indices`` is its inverse. ``batch_sizes`` is an int64 cpu tensor, as in PyTorch.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

import autograd as ag

__all__ = ["PackedSequence", "pack_padded_sequence", "pad_packed_sequence", "pad_sequence", "pack_sequence",
           "unpad_sequence", "unpack_sequence", "invert_permutation"]


class PackedSequence(NamedTuple):
    data: ag.Tensor
    batch_sizes: ag.Tensor
    sorted_indices: ag.Tensor | None = None
    unsorted_indices: ag.Tensor | None = None

    def to(self, *args, **kwargs) -> PackedSequence:
        """The same sequence with ``data`` (and the index tensors) moved; ``batch_sizes`` stays on the cpu."""
        data = self.data.to(*args, **kwargs)
        dev = data.device

        def move(t):
            return None if t is None else t.to(dev)

        return PackedSequence(data, self.batch_sizes, move(self.sorted_indices), move(self.unsorted_indices))

    def cpu(self) -> PackedSequence:
        return self.to("cpu")

    def cuda(self, device=None) -> PackedSequence:
        return self.to("cuda" if device is None else device)

    @property
    def is_cuda(self) -> bool:
        return self.data.is_cuda

    def is_pinned(self) -> bool:
        return False


def invert_permutation(permutation):
    if permutation is None:
        return None
    out = ag.empty_like(permutation)
    out[permutation] = ag.arange(permutation.numel(), device=permutation.device)
    return out


def _lengths(op, lengths) -> np.ndarray:
    if isinstance(lengths, ag.Tensor):
        if lengths.is_floating_point() or lengths.ndim != 1:
            raise ValueError(f"{op}: lengths must be a 1-D integer tensor or list, got {lengths.dtype} of shape "
                             f"{list(lengths.shape)}")
        arr = lengths.cpu().numpy().astype(np.int64)
    else:
        arr = np.asarray(list(lengths), dtype=np.int64)
    if arr.ndim != 1:
        raise ValueError(f"{op}: lengths must be 1-D, got shape {list(arr.shape)}")
    return arr


def pack_padded_sequence(input, lengths, batch_first: bool = False, enforce_sorted: bool = True) -> PackedSequence:
    """Pack a padded batch ``(T, B, *)`` (``(B, T, *)`` with ``batch_first``) whose sequence ``b`` has
    ``lengths[b]`` valid steps. ``enforce_sorted``: lengths must be decreasing; else they are sorted here and
    the order is kept in ``sorted_indices``/``unsorted_indices``."""
    op = "pack_padded_sequence"
    lens = _lengths(op, lengths)
    batch_dim = 0 if batch_first else 1
    if input.ndim < 2:
        raise ValueError(f"{op}: input must be at least 2-D (T, B, *), got shape {list(input.shape)}")
    if len(lens) != input.shape[batch_dim]:
        raise ValueError(f"{op}: Expected `len(lengths)` to be equal to batch_size, but got {len(lens)} (batch_size="
                         f"{input.shape[batch_dim]})")
    if len(lens) and lens.min() <= 0:
        raise RuntimeError(f"{op}: Length of all samples has to be greater than 0, but found an element in 'lengths' "
                           f"that is <= 0 (lengths {lens.tolist()})")
    if len(lens) and lens.max() > input.shape[1 - batch_dim]:
        raise RuntimeError(f"{op}: a length {int(lens.max())} is longer than the padded sequences "
                           f"({input.shape[1 - batch_dim]} steps)")
    if enforce_sorted:
        if np.any(np.diff(lens) > 0):
            raise RuntimeError(f"{op}: `lengths` array must be sorted in decreasing order when `enforce_sorted` is "
                               f"True (got {lens.tolist()}); hint: pass enforce_sorted=False to sort them here")
        sorted_idx = None
    else:
        order = np.argsort(-lens, kind="stable")
        lens = lens[order]
        sorted_idx = ag.tensor(order, dtype=ag.int64, device=input.device)
        input = input.index_select(batch_dim, sorted_idx)
    if batch_first:
        input = input.transpose(0, 1)
    steps = int(lens[0]) if len(lens) else 0
    batch_sizes = np.array([(lens > t).sum() for t in range(steps)], dtype=np.int64)
    data = ag.cat([input[t, :int(b)] for t, b in enumerate(batch_sizes)]) if steps else input[:0, 0]
    return PackedSequence(data, ag.tensor(batch_sizes), sorted_idx, invert_permutation(sorted_idx))


def pad_packed_sequence(sequence: PackedSequence, batch_first: bool = False, padding_value: float = 0.0,
                        total_length: int | None = None):
    """Unpack to ``(padded, lengths)``: padded ``(T, B, *)`` (``(B, T, *)`` with ``batch_first``) in the original
    batch order, and the lengths as an int64 cpu tensor."""
    data, batch_sizes = sequence.data, sequence.batch_sizes.numpy().astype(np.int64)
    steps = len(batch_sizes)
    if total_length is not None:
        if total_length < steps:
            raise ValueError(f"pad_packed_sequence: Expected total_length to be at least the length of the longest "
                             f"sequence in the input ({steps}), but got total_length={total_length}")
        steps_out = total_length
    else:
        steps_out = steps
    b = int(batch_sizes[0]) if steps else 0
    rows, off = [], 0
    for t in range(steps_out):
        n = int(batch_sizes[t]) if t < steps else 0
        step = data[off:off + n]
        off += n
        if n < b:
            pad = ag.full((b - n, *data.shape[1:]), padding_value, dtype=data.dtype, device=data.device)
            step = ag.cat([step, pad]) if n else pad
        rows.append(step)
    padded = ag.stack(rows) if rows else data.new_zeros((0, b, *data.shape[1:]))
    lengths = np.array([(batch_sizes > i).sum() for i in range(b)], dtype=np.int64)
    if sequence.unsorted_indices is not None:
        padded = padded.index_select(1, sequence.unsorted_indices)
        lengths = lengths[sequence.unsorted_indices.cpu().numpy()]
    if batch_first:
        padded = padded.transpose(0, 1)
    return padded, ag.tensor(lengths)


def pad_sequence(sequences, batch_first: bool = False, padding_value: float = 0.0, padding_side: str = "right"):
    """Stack tensors of shapes ``(L_i, *)`` into ``(max L, B, *)`` (``(B, max L, *)`` with ``batch_first``)."""
    if padding_side not in ("right", "left"):
        raise ValueError(f"pad_sequence: padding_side must be 'left' or 'right', got {padding_side!r}")
    sequences = list(sequences)
    if not sequences:
        raise RuntimeError("pad_sequence: received an empty list of sequences")
    trailing = tuple(sequences[0].shape[1:])
    for i, s in enumerate(sequences):
        if tuple(s.shape[1:]) != trailing:
            raise RuntimeError(f"pad_sequence: sequence {i} has shape {list(s.shape)}; every sequence must have the "
                               f"trailing shape {list(trailing)}")
    longest = max(s.shape[0] for s in sequences)
    rows = []
    for s in sequences:
        n = longest - s.shape[0]
        if n:
            pad = ag.full((n, *trailing), padding_value, dtype=s.dtype, device=s.device)
            s = ag.cat([s, pad] if padding_side == "right" else [pad, s])
        rows.append(s)
    out = ag.stack(rows, dim=0 if batch_first else 1)
    return out


def unpad_sequence(padded_sequences, lengths, batch_first: bool = False):
    """The inverse of ``pad_sequence``: a list of ``(L_i, *)`` tensors."""
    lens = _lengths("unpad_sequence", lengths)
    if not batch_first:
        padded_sequences = padded_sequences.transpose(0, 1)
    return [padded_sequences[i, :int(n)] for i, n in enumerate(lens)]


def pack_sequence(sequences, enforce_sorted: bool = True) -> PackedSequence:
    """Pack a list of ``(L_i, *)`` tensors (``pad_sequence`` then ``pack_padded_sequence``)."""
    lengths = [s.shape[0] for s in sequences]
    return pack_padded_sequence(pad_sequence(sequences), lengths, enforce_sorted=enforce_sorted)


def unpack_sequence(packed_sequences: PackedSequence):
    """The inverse of ``pack_sequence``: a list of ``(L_i, *)`` tensors in the original order."""
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)
