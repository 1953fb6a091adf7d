"""The tensors of ``model.safetensors``, renamed into attnsym's layout and checked.

Every weight matrix is stored as it is *applied*, row vectors times matrix (``Q = X W_Q``,
the convention of :mod:`attnsym.numeric` and :class:`~attnsym.AttentionSpec`): shape
``(d_in, d_out)``. PyTorch's ``nn.Linear`` (BERT) stores ``(d_out, d_in)`` and is transposed
once at load time; GPT-2's ``Conv1D`` already stores ``(d_in, d_out)``, and its packed
``c_attn`` matrix ``(d, 3d)`` is split column-wise into ``W_Q | W_K | W_V`` (bias likewise).

Names per layer (:class:`LayerWeights`): ``W_Q, b_Q, W_K, b_K, W_V, b_V`` (projections),
``W_O, b_O`` (output projection), ``W_1, b_1, W_2, b_2`` (feed-forward ``x W_1`` then ``W_2``),
``ln1_*`` / ``ln2_*`` (the two LayerNorms: after attention and after the feed-forward in BERT,
before them in GPT-2).

The three projections are also kept packed side by side, ``W_QKV = [W_Q | W_K | W_V]``
``(d, 3d)`` and ``b_QKV``, prepared once when a :class:`LayerWeights` is made: the forward pass
computes ``Q, K, V`` with one matrix product, and ``W_Q``, ``W_K``, ``W_V`` (and their biases)
are views into the packed arrays, so no parameter is stored twice.

The files are read by a small reader of the safetensors format (an 8-byte header length, a JSON
header of dtype, shape and byte offsets, then the raw little-endian data), memory-mapped. The
``safetensors`` library's NumPy API cannot return ``BF16`` tensors (``get_tensor`` raises
"data type 'bfloat16' not understood"), and its ``safe_open`` does not expose a tensor's byte
offsets, which widening bfloat16 exactly needs; so the reader checks every header entry (dtype,
shape, offsets against the file's length) before reading a tensor's bytes, and reads only the
tensors the architecture uses. ``tests/test_models_hostile.py`` ties it to
``safetensors.numpy.load_file`` on the tensors both can read.
"""

from __future__ import annotations

import hashlib
import json
import struct
from dataclasses import dataclass, field, fields
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from ..numeric.backend import array_namespace, asarray_in
from .config import ModelConfig
from .errors import CorruptWeightsError

__all__ = ["LayerWeights", "Weights", "read_weights"]


@dataclass(frozen=True)
class LayerWeights:
    """The parameters of one transformer layer, in ``(d_in, d_out)`` layout (module docstring)."""

    W_Q: Any
    b_Q: Any
    W_K: Any
    b_K: Any
    W_V: Any
    b_V: Any
    W_O: Any
    b_O: Any
    ln1_weight: Any
    ln1_bias: Any
    W_1: Any
    b_1: Any
    W_2: Any
    b_2: Any
    ln2_weight: Any
    ln2_bias: Any
    W_QKV: Any = field(init=False, repr=False, compare=False)  # (d, 3d) = [W_Q | W_K | W_V]
    b_QKV: Any = field(init=False, repr=False, compare=False)  # (3d,)

    def __post_init__(self) -> None:
        xp = array_namespace(self.W_Q, self.W_K, self.W_V)
        widths = [self.W_Q.shape[1], self.W_K.shape[1], self.W_V.shape[1]]
        packed = {"W_QKV": xp.concat([self.W_Q, self.W_K, self.W_V], axis=1),
                  "b_QKV": xp.concat([self.b_Q, self.b_K, self.b_V], axis=0)}
        starts = [0, widths[0], widths[0] + widths[1]]
        for name, start, width in zip("QKV", starts, widths, strict=True):  # the separate names become views
            object.__setattr__(self, f"W_{name}", packed["W_QKV"][:, start:start + width])
            object.__setattr__(self, f"b_{name}", packed["b_QKV"][start:start + width])
        for name, value in packed.items():
            object.__setattr__(self, name, value)

    def arrays(self) -> dict[str, Any]:
        """Name -> array of every parameter, in declaration order (the packed ``W_QKV``, ``b_QKV`` excluded)."""
        return {f.name: getattr(self, f.name) for f in fields(self) if f.init}

    def digest(self) -> dict[str, str]:
        """A BLAKE2b fingerprint of every parameter (its dtype, shape and bytes): equal digests, equal weights."""
        return {name: _digest(value) for name, value in self.arrays().items()}


@dataclass(frozen=True)
class Weights:
    """All parameters of a model: embeddings, the layers, and the LayerNorm around them.

    ``token_type`` and ``embed_ln_*`` exist for BERT (the embeddings are summed, then
    normalised); ``final_ln_*`` for GPT-2 (``ln_f`` after the last block).
    """

    word: Any  # (vocab, d)
    position: Any  # (max_positions, d)
    layers: tuple[LayerWeights, ...]
    token_type: Any = None  # (type_vocab, d)
    embed_ln_weight: Any = None
    embed_ln_bias: Any = None
    final_ln_weight: Any = None
    final_ln_bias: Any = None

    def to(self, xp: ModuleType) -> Weights:
        """The same weights as arrays of the namespace ``xp`` (NumPy, CuPy, torch)."""
        convert = {f.name: asarray_in(xp, getattr(self, f.name)) for f in fields(self) if f.name != "layers"}
        layers = tuple(LayerWeights(**{k: asarray_in(xp, v) for k, v in lw.arrays().items()}) for lw in self.layers)
        return Weights(layers=layers, **convert)

    @property
    def parameter_count(self) -> int:
        """Number of scalars in every tensor (the pooler of a BERT checkpoint is not loaded)."""
        total = sum(int(np.prod(getattr(self, f.name).shape)) for f in fields(self)
                    if f.name != "layers" and getattr(self, f.name) is not None)
        return total + sum(int(np.prod(v.shape)) for lw in self.layers for v in lw.arrays().values())


def _digest(value: Any) -> str:
    if hasattr(value, "detach"):  # torch
        value = value.detach().cpu().numpy()
    elif hasattr(value, "get") and type(value).__module__.startswith("cupy"):
        value = value.get()
    value = np.ascontiguousarray(value)
    h = hashlib.blake2b(digest_size=16)
    h.update(f"{value.dtype.str}{value.shape}".encode())
    h.update(memoryview(value).cast("B"))
    return h.hexdigest()


#: safetensors dtype names read, with their NumPy storage dtype; ``BF16`` is widened exactly
#: (its 16 bits are the high half of a float32)
_DTYPES: dict[str, str] = {"F64": "<f8", "F32": "<f4", "F16": "<f2", "BF16": "<u2"}

#: the largest safetensors header read (bytes); real headers are well under a megabyte per shard
_MAX_HEADER = 100 << 20


def _header(path: Path) -> tuple[dict[str, Any], int]:
    """The JSON header of one safetensors file and the offset where its data starts."""
    try:
        with path.open("rb") as handle:
            head = handle.read(8)
            if len(head) < 8:
                raise CorruptWeightsError(f"{path} cannot be read as a safetensors file (shorter than 8 bytes)")
            (length,) = struct.unpack("<Q", head)
            if length > _MAX_HEADER:
                raise CorruptWeightsError(f"{path} cannot be read as a safetensors file (header of {length} bytes)")
            text = handle.read(length)
        header = json.loads(text.decode("utf-8"))
    except (OSError, UnicodeDecodeError, ValueError, RecursionError) as error:
        raise CorruptWeightsError(f"{path} cannot be read as a safetensors file ({type(error).__name__}: "
                                  f"{str(error)[:200]})") from None
    if not isinstance(header, dict):
        raise CorruptWeightsError(f"{path} cannot be read as a safetensors file (its header is not a JSON object)")
    header.pop("__metadata__", None)
    return header, 8 + length


def _files(path: Path) -> dict[str, Path]:
    """Tensor name -> safetensors file: ``path`` itself, or the shards its ``.index.json`` names."""
    index = path.with_name(path.name + ".index.json")
    if path.is_file() or not index.is_file():
        return {}
    try:
        with index.open("rb") as handle:
            text = handle.read(_MAX_HEADER + 1)
        if len(text) > _MAX_HEADER:
            raise CorruptWeightsError(f"{index} is larger than {_MAX_HEADER >> 20} MiB; a safetensors index is a small "
                                      "JSON file")
        raw = json.loads(text.decode("utf-8"))
    except (OSError, UnicodeDecodeError, ValueError, RecursionError) as error:
        raise CorruptWeightsError(f"{index} is not a safetensors index ({type(error).__name__}: {str(error)[:200]})") from None
    weight_map = raw.get("weight_map") if isinstance(raw, dict) else None
    if not isinstance(weight_map, dict) or not all(isinstance(v, str) for v in weight_map.values()):
        raise CorruptWeightsError(f"{index} is not a safetensors index (its 'weight_map' must map tensor names to "
                                  "file names)")
    out = {}
    for name, file in weight_map.items():
        shard = path.parent / file
        if Path(file).name != file:
            raise CorruptWeightsError(f"{index}: shard {file!r} must be a file name in the model folder")
        out[name] = shard
    return out


class _Tensors:
    """Named lookup into memory-mapped safetensors files: each tensor's dtype and shape are checked from the
    header before any of its bytes are read, and only the tensors asked for are read."""

    def __init__(self, path: Path, prefixes: tuple[str, ...], dtype: np.dtype) -> None:
        self.path, self.dtype = path, dtype
        shards = _files(path)
        self.entries: dict[str, tuple[Path, dict[str, Any], int]] = {}
        for file in sorted(set(shards.values())) if shards else [path]:
            header, start = _header(file)
            for name, entry in header.items():
                if not shards or shards.get(name) == file:
                    self.entries[name] = (file, entry, start)
        self.maps: dict[Path, np.memmap] = {}
        self.prefix = next((p for p in prefixes if any(k.startswith(p) for k in self.entries)), "")

    def __contains__(self, name: str) -> bool:
        return self.prefix + name in self.entries

    def _raw(self, key: str, expected: tuple[int, ...]) -> np.ndarray:
        file, entry, start = self.entries[key]
        if not isinstance(entry, dict):
            raise CorruptWeightsError(f"{file}: tensor {key!r} has a malformed header entry")
        kind, shape, offsets = entry.get("dtype"), entry.get("shape"), entry.get("data_offsets")
        if not isinstance(shape, list) or tuple(shape) != expected:
            raise CorruptWeightsError(f"{file}: tensor {key!r} must have shape {expected} for config.json's "
                                      f"sizes (got {tuple(shape) if isinstance(shape, list) else shape!r})")
        if kind not in _DTYPES:
            raise CorruptWeightsError(f"{file}: tensor {key!r} has dtype {kind!r}; attnsym reads "
                                      f"{', '.join(_DTYPES)} tensors")
        storage = np.dtype(_DTYPES[kind])
        size = int(np.prod(expected, dtype=np.int64)) * storage.itemsize
        if (not isinstance(offsets, list) or len(offsets) != 2 or not all(type(o) is int for o in offsets)
                or offsets[1] - offsets[0] != size or offsets[0] < 0):
            raise CorruptWeightsError(f"{file}: tensor {key!r} has data offsets {offsets!r}, not {size} bytes")
        if file not in self.maps:
            try:
                self.maps[file] = np.memmap(file, dtype=np.uint8, mode="r")
            except (OSError, ValueError) as error:
                raise CorruptWeightsError(f"{file} cannot be mapped ({error})") from None
        data = self.maps[file]
        begin = start + offsets[0]
        if begin + size > data.shape[0]:
            raise CorruptWeightsError(f"{file} cannot be read as a safetensors file: it is truncated "
                                      f"(tensor {key!r} ends past its end)")
        raw = np.frombuffer(data, dtype=storage, count=size // storage.itemsize, offset=begin).reshape(expected)
        if kind == "BF16":  # exact: the bfloat16 bits are the top half of a float32's
            return (raw.astype(np.uint32) << 16).view(np.float32)
        return raw

    def __call__(self, name: str, shape: tuple[int, ...], *, transpose: bool = False) -> np.ndarray:
        key = self.prefix + name
        if key not in self.entries:
            raise CorruptWeightsError(f"{self.path} has no tensor {key!r}, which this architecture needs "
                                      f"({len(self.entries)} tensors found, e.g. {sorted(self.entries)[:3]})")
        expected = shape[::-1] if transpose else shape
        value = self._raw(key, expected)
        out = np.array(value.T if transpose else value, dtype=self.dtype, order="C")  # a copy: the map stays read-only
        if not np.all(np.isfinite(out)):
            raise CorruptWeightsError(f"{self.path}: tensor {key!r} holds non-finite values (inf or nan)")
        return out


def read_weights(path: str | Path, config: ModelConfig, dtype: Any = np.float32) -> Weights:
    """Read ``model.safetensors`` (memory-mapped, no PyTorch) into :class:`Weights` for ``config``.

    Parameters
    ----------
    path : str or Path
        The safetensors file; when it is absent and ``<path>.index.json`` exists, the shards that
        index names (a sharded checkpoint).
    config : ModelConfig
        Decides the tensor names and checks every shape.
    dtype : NumPy float dtype, default float32
        The dtype of the returned arrays (float16 and bfloat16 tensors are widened exactly).

    Raises
    ------
    CorruptWeightsError
        The file is not a readable safetensors file (truncated, bad header), a tensor has a dtype
        other than F64, F32, F16, BF16 (named in the message, e.g. ``F8_E4M3``), or a tensor the
        architecture uses is missing, misshapen or not finite. Only those tensors are read, each
        after its shape and dtype have been checked.
    """
    path = Path(path)
    t = _Tensors(path, ("bert.",) if config.model_type == "bert" else ("transformer.",), np.dtype(dtype))
    if config.model_type == "bert":
        return _bert(t, config)
    return _gpt2(t, config)


def _bert(t: _Tensors, c: ModelConfig) -> Weights:
    d, f = c.width, c.ffn_width
    layers = []
    for i in range(c.layers):
        p = f"encoder.layer.{i}."
        layers.append(LayerWeights(
            W_Q=t(p + "attention.self.query.weight", (d, d), transpose=True), b_Q=t(p + "attention.self.query.bias", (d,)),
            W_K=t(p + "attention.self.key.weight", (d, d), transpose=True), b_K=t(p + "attention.self.key.bias", (d,)),
            W_V=t(p + "attention.self.value.weight", (d, d), transpose=True), b_V=t(p + "attention.self.value.bias", (d,)),
            W_O=t(p + "attention.output.dense.weight", (d, d), transpose=True),
            b_O=t(p + "attention.output.dense.bias", (d,)),
            ln1_weight=t(p + "attention.output.LayerNorm.weight", (d,)), ln1_bias=t(p + "attention.output.LayerNorm.bias", (d,)),
            W_1=t(p + "intermediate.dense.weight", (d, f), transpose=True), b_1=t(p + "intermediate.dense.bias", (f,)),
            W_2=t(p + "output.dense.weight", (f, d), transpose=True), b_2=t(p + "output.dense.bias", (d,)),
            ln2_weight=t(p + "output.LayerNorm.weight", (d,)), ln2_bias=t(p + "output.LayerNorm.bias", (d,)),
        ))
    return Weights(
        word=t("embeddings.word_embeddings.weight", (c.vocab_size, d)),
        position=t("embeddings.position_embeddings.weight", (c.max_positions, d)),
        token_type=t("embeddings.token_type_embeddings.weight", (c.type_vocab_size, d)),
        embed_ln_weight=t("embeddings.LayerNorm.weight", (d,)), embed_ln_bias=t("embeddings.LayerNorm.bias", (d,)),
        layers=tuple(layers),
    )


def _gpt2(t: _Tensors, c: ModelConfig) -> Weights:
    d, f = c.width, c.ffn_width
    layers = []
    for i in range(c.layers):
        p = f"h.{i}."
        W = t(p + "attn.c_attn.weight", (d, 3 * d))  # Conv1D: (d_in, d_out), columns [Q | K | V]
        b = t(p + "attn.c_attn.bias", (3 * d,))
        W_Q, W_K, W_V = (W[:, k * d:(k + 1) * d] for k in range(3))  # repacked by LayerWeights
        b_Q, b_K, b_V = (b[k * d:(k + 1) * d] for k in range(3))
        layers.append(LayerWeights(
            W_Q=W_Q, b_Q=b_Q, W_K=W_K, b_K=b_K, W_V=W_V, b_V=b_V,
            W_O=t(p + "attn.c_proj.weight", (d, d)), b_O=t(p + "attn.c_proj.bias", (d,)),
            ln1_weight=t(p + "ln_1.weight", (d,)), ln1_bias=t(p + "ln_1.bias", (d,)),
            W_1=t(p + "mlp.c_fc.weight", (d, f)), b_1=t(p + "mlp.c_fc.bias", (f,)),
            W_2=t(p + "mlp.c_proj.weight", (f, d)), b_2=t(p + "mlp.c_proj.bias", (d,)),
            ln2_weight=t(p + "ln_2.weight", (d,)), ln2_bias=t(p + "ln_2.bias", (d,)),
        ))
    return Weights(
        word=t("wte.weight", (c.vocab_size, d)),
        position=t("wpe.weight", (c.max_positions, d)),
        final_ln_weight=t("ln_f.weight", (d,)), final_ln_bias=t("ln_f.bias", (d,)),
        layers=tuple(layers),
    )
