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
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field, fields
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
from safetensors import SafetensorError
from safetensors.numpy import load_file

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


class _Tensors:
    """Named lookup into the file's tensors with shape checks; names are tried with each known prefix."""

    def __init__(self, path: Path, tensors: dict[str, np.ndarray], prefixes: tuple[str, ...], dtype: np.dtype) -> None:
        self.path, self.tensors, self.dtype = path, tensors, dtype
        self.prefix = next((p for p in prefixes if any(k.startswith(p) for k in tensors)), "")

    def __call__(self, name: str, shape: tuple[int, ...], *, transpose: bool = False) -> np.ndarray:
        key = self.prefix + name
        if key not in self.tensors:
            raise CorruptWeightsError(f"{self.path} has no tensor {key!r}, which this architecture needs "
                                      f"({len(self.tensors)} tensors found, e.g. {sorted(self.tensors)[:3]})")
        value = self.tensors[key]
        expected = shape[::-1] if transpose else shape
        if tuple(value.shape) != expected:
            raise CorruptWeightsError(f"{self.path}: tensor {key!r} must have shape {expected} for config.json's "
                                      f"sizes (got {tuple(value.shape)})")
        if value.dtype.kind != "f":
            raise CorruptWeightsError(f"{self.path}: tensor {key!r} must hold floats (got dtype {value.dtype})")
        out = np.ascontiguousarray(value.T if transpose else value, dtype=self.dtype)
        if not np.all(np.isfinite(out)):
            raise CorruptWeightsError(f"{self.path}: tensor {key!r} holds non-finite values (inf or nan)")
        return out


def read_weights(path: str | Path, config: ModelConfig, dtype: Any = np.float32) -> Weights:
    """Read ``model.safetensors`` (NumPy API, no PyTorch) into :class:`Weights` for ``config``.

    Parameters
    ----------
    path : str or Path
        The safetensors file.
    config : ModelConfig
        Decides the tensor names and checks every shape.
    dtype : NumPy float dtype, default float32
        The dtype of the returned arrays (float16 files are widened).

    Raises
    ------
    CorruptWeightsError
        The file is not a readable safetensors file (truncated, bad header, a dtype NumPy
        lacks such as bfloat16), or a tensor is missing, misshapen, not float, or not finite.
    """
    path = Path(path)
    try:
        tensors = load_file(path)
    except (SafetensorError, OSError, ValueError, TypeError) as error:
        raise CorruptWeightsError(f"{path} cannot be read as a safetensors file ({type(error).__name__}: {error})") from None
    if config.model_type == "bert":
        return _bert(_Tensors(path, tensors, ("bert.",), np.dtype(dtype)), config)
    return _gpt2(_Tensors(path, tensors, ("transformer.",), np.dtype(dtype)), config)


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
