"""The tensors of ``model.safetensors``, renamed into attnsym's layout and checked, for every family.

Every weight matrix is stored as it is *applied*, row vectors times matrix (``Q = X W_Q``,
the convention of :mod:`attnsym.numeric` and :class:`~attnsym.AttentionSpec`): shape
``(d_in, d_out)``. PyTorch's ``nn.Linear`` (BERT, LLaMA, ...) stores ``(d_out, d_in)`` and is
transposed once at load time; GPT-2's ``Conv1D`` already stores ``(d_in, d_out)``. A fused q|k|v
matrix is split once: by columns ``[Q | K | V]`` (GPT-2's ``c_attn``) or per head (GPT-NeoX,
BLOOM). Which tensors, under which names, stored how: the plan's
:class:`~attnsym.models.plan.Layout` (the family table's :data:`~attnsym.models.families.LAYOUTS`);
this module never tests a family's name.

Names per layer (:class:`LayerWeights`): ``W_Q, b_Q, W_K, b_K, W_V, b_V`` (projections),
``W_O, b_O`` (output projection), ``W_gate, W_up, b_up, W_down, b_down`` (the MLP),
``attn_norm`` / ``mlp_norm`` (+ ``_bias`` for a LayerNorm: the norms before attention and MLP
in a pre-norm block, after them in BERT's post-norm block), ``g_Q``, ``g_K`` (QK-norm),
``post_attn_norm`` / ``post_mlp_norm`` (Gemma 2), ``s_sink`` (a sink logit per head, gpt-oss), the
experts of a mixture (``W_router``, ``b_router``; ``W_experts_gate`` … ``b_experts_down``, one
``(E, d_in, d_out)`` stack each: gpt-oss's ``gate_up_proj`` split into its interleaved gate and
up columns; DeepSeek's ``b_choice``). Multi-head latent attention (a spec with ``kv_latent_rank``) keeps its
latents' projections: ``W_Q`` ``(d, r_q)`` (``q_a_proj``; ``q_proj`` ``(d, H·d_k)`` without a query latent),
``g_Q_latent``, ``W_Q_up`` (``q_b_proj``), ``W_K`` ``(d, r + rotary)`` (``kv_a_proj_with_mqa``: the latent, then
the one rotary key), ``g_KV_latent``, ``W_KV_up`` (``kv_b_proj``: per head its non-rotary key, then its value) and
an empty ``W_V`` ``(d, 0)``, as the checkpoint stores them. A norm a block does not have (OLMo 2 norms only
sublayer outputs) is None. The three
projections are also kept packed side by side, ``W_QKV = [W_Q | W_K | W_V]`` and ``b_QKV``, made
once with the :class:`LayerWeights`: the forward pass projects with one product, and ``W_Q``, ``W_K``,
``W_V`` (and their biases) are views into the packed arrays, so no parameter is stored twice.

The files are read by a small reader of the safetensors format (an 8-byte header length, a JSON
header of dtype, shape and byte offsets, then the raw little-endian data), each tensor read straight
into its array (no memory map: a loaded model holds no file pages; bfloat16 widened a block at a time). The
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
import re
import struct
from dataclasses import dataclass, field, fields
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from .._io import open_regular, read_capped
from ..numeric.backend import array_namespace, asarray_in
from .errors import CorruptWeightsError
from .plan import Layout, ModelPlan, Norm

__all__ = ["LayerWeights", "Weights", "read_weights", "stored_layers"]


@dataclass(frozen=True)
class LayerWeights:
    """The parameters of one block in ``(d_in, d_out)`` layout (module docstring); absent biases / gains are None."""

    attn_norm: Any
    W_Q: Any
    W_K: Any
    W_V: Any
    W_O: Any
    mlp_norm: Any
    W_up: Any
    W_down: Any
    b_Q: Any = None
    b_K: Any = None
    b_V: Any = None
    b_O: Any = None
    g_Q: Any = None
    g_K: Any = None
    post_attn_norm: Any = None
    post_mlp_norm: Any = None
    attn_norm_bias: Any = None
    mlp_norm_bias: Any = None
    b_up: Any = None
    b_down: Any = None
    W_gate: Any = None
    s_sink: Any = None
    W_router: Any = None
    b_router: Any = None
    W_experts_gate: Any = None  # (E, d, f); the shared expert of a mixture (Llama 4) is W_gate, W_up, W_down
    b_experts_gate: Any = None
    W_experts_up: Any = None
    b_experts_up: Any = None
    W_experts_down: Any = None
    b_experts_down: Any = None
    W_shared_router: Any = None  # (d, 1): the logit of the shared expert's sigmoid gate (Qwen3-Next)
    W_G: Any = None  # (d, H·d_v): the attention's output gate (spec.output_gate)
    b_choice: Any = None  # (E,): DeepSeek's score correction bias, added to the scores for the choice only
    W_Q_up: Any = None  # multi-head latent attention: (r_q, H·d_k), W_Q then being (d, r_q)
    g_Q_latent: Any = None  # (r_q,)
    W_KV_up: Any = None  # (r, H·(d_k − rotary + d_v)), W_K then being (d, r + rotary) and W_V (d, 0)
    g_KV_latent: Any = None  # (r,)

    W_QKV: Any = field(init=False, repr=False, compare=False)  # (d, q + 2 kv) = [W_Q | W_K | W_V]
    b_QKV: Any = field(init=False, repr=False, compare=False)  # (q + 2 kv,) or None

    def __post_init__(self) -> None:
        """Pack ``[W_Q | W_K | W_V]`` (and the biases) once: the pass projects with one product, and ``W_Q`` … are views."""
        xp = array_namespace(self.W_Q, self.W_K, self.W_V)
        widths = [int(self.W_Q.shape[1]), int(self.W_K.shape[1]), int(self.W_V.shape[1])]
        starts = [0, widths[0], widths[0] + widths[1]]
        packed = {"W_QKV": xp.concat([self.W_Q, self.W_K, self.W_V], axis=1), "b_QKV": None}
        biases = [self.b_Q, self.b_K, self.b_V]
        if all(b is not None for b in biases):
            packed["b_QKV"] = xp.concat(biases, axis=0)
        for letter, start, width in zip("QKV", starts, widths, strict=True):  # the separate names become views
            object.__setattr__(self, f"W_{letter}", packed["W_QKV"][:, start:start + width])
            if packed["b_QKV"] is not None:
                object.__setattr__(self, f"b_{letter}", packed["b_QKV"][start:start + width])
        for name, value in packed.items():
            object.__setattr__(self, name, value)

    def arrays(self) -> dict[str, Any]:
        """Name -> array of every parameter present (the packed ``W_QKV``, ``b_QKV`` excluded: views share them)."""
        return {f.name: getattr(self, f.name) for f in fields(self) if f.init and getattr(self, f.name) is not None}

    def digest(self) -> dict[str, str]:
        """A BLAKE2b fingerprint of every parameter (its dtype, shape and bytes): equal digests, equal weights."""
        return {name: _digest(value) for name, value in self.arrays().items()}


@dataclass(frozen=True)
class Weights:
    """All parameters of a model: token embedding ``(vocab, d)``, the blocks, the norms around them.

    ``position`` ``(max_positions, d)`` and ``token_type`` ``(types, d)`` exist where the plan has
    learned positions (BERT, GPT-2) and token types (BERT); ``embed_norm*`` where it norms the
    embedding (BERT, BLOOM); ``final_norm*`` where a norm follows the last block (all but BERT);
    ``lm_head`` ``(d, vocab)`` (applied as ``logits = h lm_head``) where a decoder's checkpoint holds
    an output matrix of its own (``tie_word_embeddings`` false): with tied embeddings the logits
    use ``word`` itself and no second matrix is held.
    """

    word: Any
    layers: tuple[LayerWeights, ...]
    final_norm: Any = None
    final_norm_bias: Any = None
    embed_norm: Any = None
    embed_norm_bias: Any = None
    position: Any = None
    token_type: Any = None
    lm_head: Any = None

    def arrays(self) -> dict[str, Any]:
        """Name -> array of every model-level parameter present (the layers' are in :attr:`layers`)."""
        return {f.name: getattr(self, f.name) for f in fields(self)
                if f.name != "layers" and getattr(self, f.name) is not None}

    def to(self, xp: ModuleType) -> Weights:
        """The same weights as arrays of the namespace ``xp`` (NumPy, CuPy, torch)."""
        layers = tuple(LayerWeights(**{k: asarray_in(xp, v) for k, v in lw.arrays().items()}) for lw in self.layers)
        return Weights(layers=layers, **{k: asarray_in(xp, v) for k, v in self.arrays().items()})

    @property
    def parameter_count(self) -> int:
        """Number of scalars held (a BERT checkpoint's pooler is not loaded; an untied LM head is, :attr:`lm_head`)."""
        total = sum(int(np.prod(v.shape)) for v in self.arrays().values())
        return total + sum(int(np.prod(v.shape)) for lw in self.layers for v in lw.arrays().values())


def _digest(value: Any) -> str:
    if hasattr(value, "detach"):  # torch
        value = value.detach().cpu().numpy()
    elif hasattr(value, "get") and type(value).__module__.startswith("cupy"):
        value = value.get()
    value = np.ascontiguousarray(value)
    h = hashlib.blake2b(digest_size=16)
    h.update(f"{value.dtype.str}{value.shape}".encode())
    h.update(memoryview(value.reshape(-1)).cast("B"))  # 1-D: an empty array (a latent layer's W_V) casts too
    return h.hexdigest()


#: safetensors dtype names read, with their NumPy storage dtype; ``BF16`` is widened exactly
#: (its 16 bits are the high half of a float32)
_DTYPES: dict[str, str] = {"F64": "<f8", "F32": "<f4", "F16": "<f2", "BF16": "<u2"}

#: the largest safetensors header read (bytes); real headers are well under a megabyte per shard
_MAX_HEADER = 100 << 20


def _header(path: Path) -> tuple[dict[str, Any], int]:
    """The JSON header of one safetensors file and the offset where its data starts."""
    try:
        with open_regular(path, error=CorruptWeightsError) as handle:  # a FIFO or device is refused, never waited on
            head = handle.read(8)
            if len(head) < 8:
                raise CorruptWeightsError(f"{path} cannot be read as a safetensors file (shorter than 8 bytes)")
            (length,) = struct.unpack("<Q", head)
            if length > _MAX_HEADER:
                raise CorruptWeightsError(f"{path} cannot be read as a safetensors file (header of {length} bytes)")
            text = handle.read(length)
        header = json.loads(text.decode("utf-8"))
    except CorruptWeightsError:
        raise
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
    if path.is_file() or not index.exists():
        return {}
    text = read_capped(index, _MAX_HEADER, error=CorruptWeightsError)  # a regular file, a small JSON one
    try:
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
    """Named lookup into safetensors files: each tensor's dtype and shape are checked from the header before
    any of its bytes are read, and only the tensors asked for are read, straight into their arrays
    (:func:`_read`: no memory map, so a loaded model holds its arrays and no file pages)."""

    def __init__(self, path: Path, prefixes: tuple[str, ...], dtype: np.dtype) -> None:
        self.path, self.dtype = path, dtype
        shards = _files(path)
        self.entries: dict[str, tuple[Path, dict[str, Any], int]] = {}
        for file in sorted(set(shards.values())) if shards else [path]:
            header, start = _header(file)
            for name, entry in header.items():
                if not shards or shards.get(name) == file:
                    self.entries[name] = (file, entry, start)
        self.prefix = next((p for p in prefixes if any(k.startswith(p) for k in self.entries)), "")

    def _key(self, name: str) -> str:
        """The stored name: with the prefix, or as given when only that is stored (an LM head outside the prefix)."""
        key = self.prefix + name
        return name if key not in self.entries and name in self.entries else key

    def __contains__(self, name: str) -> bool:
        return self._key(name) in self.entries

    def _locate(self, key: str, expected: tuple[int, ...]) -> tuple[Path, int, str]:
        """Where the tensor's bytes start (file, offset) and its dtype name, after every check of its header entry."""
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
        begin = start + offsets[0]
        try:
            length = file.stat().st_size
        except OSError as error:
            raise CorruptWeightsError(f"{file} cannot be read ({error})") from None
        if begin + size > length:
            raise CorruptWeightsError(f"{file} cannot be read as a safetensors file: it is truncated "
                                      f"(tensor {key!r} ends past its end)")
        return file, begin, kind

    def __call__(self, name: str, shape: tuple[int, ...], *, transpose: bool = False) -> np.ndarray:
        key = self._key(name)
        if key not in self.entries:
            raise CorruptWeightsError(f"{self.path} has no tensor {key!r}, which this architecture needs "
                                      f"({len(self.entries)} tensors found, e.g. {sorted(self.entries)[:3]})")
        expected = shape[::-1] if transpose else shape
        file, begin, kind = self._locate(key, expected)
        stored = _read(file, begin, expected, kind)  # an array of our own, float32 for BF16
        out = np.ascontiguousarray(stored.T if transpose else stored, dtype=self.dtype)  # a copy only if needed
        del stored
        if not np.all(np.isfinite(out)):
            raise CorruptWeightsError(f"{self.path}: tensor {key!r} holds non-finite values (inf or nan)")
        return out


#: the layer number in a tensor name: its first all-digit part (``model.layers.3.mlp...``, ``h.11.attn...``)
_LAYER_NUMBER = re.compile(r"(?:^|\.)(\d+)\.")


def stored_layers(path: str | Path) -> int:
    """How many layers ``model.safetensors`` (or its shards) holds tensors of, read from the headers alone.

    The count of distinct layer numbers in the tensor names (``model.layers.3.…``,
    ``encoder.layer.3.…``, ``h.3.…``): :func:`attnsym.models.load` checks ``config.json``'s
    layer count against it before building a plan, so a config claiming millions of layers
    over a file of two is refused at once, not after building millions of blocks.

    Raises
    ------
    CorruptWeightsError
        The file (or a shard, or the index) cannot be read as safetensors.
    """
    names = _Tensors(Path(path), (), np.dtype(np.float32)).entries
    return len({match.group(1) for name in names if (match := _LAYER_NUMBER.search(name))})


#: elements of a bfloat16 tensor read and widened per step (:func:`_read`): 2 MiB of file at a time
_WIDEN_ELEMENTS = 2**20


def _fill(handle, buffer: memoryview, file: Path) -> None:
    """Read exactly ``len(buffer)`` bytes from ``handle`` into ``buffer``."""
    while buffer:
        got = handle.readinto(buffer)
        if not got:
            raise CorruptWeightsError(f"{file} cannot be read as a safetensors file: it ended while a tensor was read")
        buffer = buffer[got:]


def _read(file: Path, begin: int, shape: tuple[int, ...], kind: str) -> np.ndarray:
    """The tensor at byte ``begin`` of ``file`` as a new array: read into it directly, no map and no second copy.

    Reading (not memory-mapping) keeps the file's pages out of the process: a loaded model holds its
    arrays and nothing else. BF16 is widened to float32 exactly (its bits are the top half of a
    float32's), a block of :data:`_WIDEN_ELEMENTS` at a time read into a small buffer and shifted
    straight into the result (``np.left_shift(..., out=)``), so no full-size temporary is made.
    """
    try:
        with open_regular(file, error=CorruptWeightsError) as handle:
            handle.seek(begin)
            if kind != "BF16":
                out = np.empty(shape, np.dtype(_DTYPES[kind]))
                _fill(handle, out.reshape(-1).view(np.uint8).data, file)
                return out
            out = np.empty(shape, np.float32)
            bits = out.reshape(-1).view(np.uint32)
            block = np.empty(min(_WIDEN_ELEMENTS, bits.size), np.uint16)
            for k in range(0, bits.size, block.size):
                part = block[:min(block.size, bits.size - k)]
                _fill(handle, part.view(np.uint8).data, file)
                np.left_shift(part, 16, out=bits[k:k + part.size], dtype=np.uint32)
            return out
    except OSError as error:
        raise CorruptWeightsError(f"{file} cannot be read ({error})") from None


def read_weights(path: str | Path, plan: ModelPlan, dtype: Any = np.float32, *, tensors: Any = None) -> Weights:
    """Read ``model.safetensors`` (only the tensors used, no PyTorch) into :class:`Weights` for ``plan``.

    Parameters
    ----------
    path : str or Path
        The safetensors file; when it is absent and ``<path>.index.json`` exists, the shards that
        index names (a sharded checkpoint).
    plan : ModelPlan
        Decides which tensors are read (its :class:`~attnsym.models.plan.Layout` their names and
        storage) and checks every shape.
    dtype : NumPy float dtype, default float32
        The dtype of the returned arrays (float16 and bfloat16 tensors are widened exactly).
    tensors : tensor source, optional
        Where the tensors come from instead of ``path``'s safetensors: any object with the
        interface of the safetensors source (``name in tensors``; ``tensors(name, shape,
        transpose=...)`` returning a checked array of ``dtype``), e.g. a GGUF file's
        (:class:`attnsym.models.gguf_file.GGUFTensors`). ``path`` then only names the file.

    Raises
    ------
    CorruptWeightsError
        The file is not a readable safetensors file (truncated, bad header), a tensor has a dtype
        other than F64, F32, F16, BF16 (named in the message, e.g. ``F8_E4M3``), or a tensor the
        architecture uses is missing, misshapen or not finite. Only those tensors are read, each
        after its shape and dtype have been checked; a decoder's untied LM head (the layout's
        ``lm_head``, default ``lm_head.weight``) is read when the file holds it (a base model saved
        without its head loads all the same, and has no logits).
    """
    layout = plan.layout
    if layout is None:
        raise CorruptWeightsError(f"the plan of {plan.model_type!r} has no checkpoint layout; build it with read_config")
    t = _Tensors(Path(path), layout.prefixes, np.dtype(dtype)) if tensors is None else tensors
    d = plan.width

    def norm(role: str, kind: Norm, i: int | None = None) -> dict[str, Any]:
        name = layout.names[role] if i is None else layout.names[role].format(i=i)
        out = {role: t(name, (d,))}
        if kind.kind == "layer":
            out[role + "_bias"] = t(name.removesuffix("weight") + "bias", (d,))
        return out

    layers = []
    for i, block in enumerate(plan.blocks):
        s = block.attention
        name = {k: v.format(i=i) for k, v in layout.names.items()}

        def mat(role: str, d_in: int, d_out: int, name: dict[str, str] = name) -> np.ndarray:
            return t(name[role], (d_in, d_out), transpose=layout.transposed)

        parts: dict[str, Any] = _projections(t, layout, name, mat, s, d)  # read in checkpoint order: q, k, v first
        parts["W_O"] = mat("W_O", s.heads * s.d_v, d)
        if block.placement == "output":  # OLMo 2: no norm before a sublayer
            parts.update(attn_norm=None, mlp_norm=None)
        else:
            parts.update({**norm("attn_norm", block.norm, i), **norm("mlp_norm", block.norm, i)})
        if s.bias is True:
            parts["b_O"] = t(name["b_O"], (d,))
        if s.qk_norm and "g_Q" not in name:  # a weightless norm (Llama 4): gains 0 under the spec's offset 1
            shapes = s.shapes
            parts.update(g_Q=np.zeros(shapes["g_Q"][1], t.dtype), g_K=np.zeros(shapes["g_K"][1], t.dtype))
        elif s.qk_norm:
            shapes = s.shapes
            parts.update(g_Q=t(name["g_Q"], (shapes["g_Q"][1],)), g_K=t(name["g_K"], (shapes["g_K"][1],)))
        if s.sink:
            parts["s_sink"] = t(name["s_sink"], (s.heads,))
        if block.post_norms:
            parts.update(post_attn_norm=t(name["post_attn_norm"], (d,)), post_mlp_norm=t(name["post_mlp_norm"], (d,)))
        parts.update(_mlp_weights(t, name, mat, block, d))
        layers.append(LayerWeights(**parts))
    model: dict[str, Any] = {"word": t(layout.names["embed"], (plan.vocab_size, d))}
    if plan.learned_positions:
        model["position"] = t(layout.names["position"], (plan.max_positions, d))
    if plan.type_vocab_size:
        model["token_type"] = t(layout.names["token_type"], (plan.type_vocab_size, d))
    if plan.embed_norm is not None:
        model.update(norm("embed_norm", plan.embed_norm))
    if plan.final_norm is not None:
        model.update(norm("final_norm", plan.final_norm))
    head = layout.names.get("lm_head", "lm_head.weight")
    if plan.causal and not plan.tie_word_embeddings and head in t:  # stored (vocab, d), as nn.Linear, in every format
        model["lm_head"] = t(head, (d, plan.vocab_size), transpose=True)
    return Weights(layers=tuple(layers), **model)


def _mlp_weights(t: Any, name: dict[str, str], mat: Any, block: Any, d: int) -> dict[str, Any]:
    """The MLP's arrays: dense (gated or plain, a fused ``gate_up`` split in halves) or a mixture of experts."""
    f, e = block.ffn_width, block.experts
    if e is not None and e.routing == "softmax":  # Qwen3-Next: one nn.Linear triple per expert, a gated shared expert
        g, each = e.shared_width or f, name["W_experts"]  # each: the experts' prefix, "{prefix}.{k}.gate_proj.weight"
        per = {part: np.stack([t(f"{each}.{k}.{part}_proj.weight", shape, transpose=True) for k in range(e.count)])
               for part, shape in (("gate", (d, f)), ("up", (d, f)), ("down", (f, d)))}  # (E, d_in, d_out) each
        return {"W_router": mat("W_router", d, e.count), "W_experts_gate": per["gate"], "W_experts_up": per["up"],
                "W_experts_down": per["down"], "W_gate": mat("W_shared_gate", d, g), "W_up": mat("W_shared_up", d, g),
                "W_down": mat("W_shared_down", g, d),
                "W_shared_router": mat("W_shared_router", d, 1) if e.shared_gate else None}
    if e is not None and e.routing == "sigmoid_input":  # Llama 4: (E, d, 2f) gate | up halves, a shared expert
        gate_up = t(name["W_experts_gate_up"], (e.count, d, 2 * f))
        return {"W_router": mat("W_router", d, e.count), "W_experts_gate": np.ascontiguousarray(gate_up[..., :f]),
                "W_experts_up": np.ascontiguousarray(gate_up[..., f:]),
                "W_experts_down": t(name["W_experts_down"], (e.count, f, d)),
                "W_gate": mat("W_shared_gate", d, f), "W_up": mat("W_shared_up", d, f),
                "W_down": mat("W_shared_down", f, d)}
    if e is not None and e.routing == "sigmoid_group":  # DeepSeek V3: one nn.Linear per expert ({e} in its names)
        def stack(role: str, d_in: int, d_out: int) -> np.ndarray:
            return np.stack([t(name[role].format(e=k), (d_in, d_out), transpose=True) for k in range(e.count)])

        g = e.shared_width or f
        return {"W_router": mat("W_router", d, e.count), "b_choice": t(name["b_choice"], (e.count,)),
                "W_experts_gate": stack("W_expert_gate", d, f), "W_experts_up": stack("W_expert_up", d, f),
                "W_experts_down": stack("W_expert_down", f, d),
                "W_gate": mat("W_shared_gate", d, g), "W_up": mat("W_shared_up", d, g),
                "W_down": mat("W_shared_down", g, d)}
    if e is not None:  # gpt-oss: (E, d, 2f) with gate and up interleaved column by column
        gate_up, b_gate_up = t(name["W_experts_gate_up"], (e.count, d, 2 * f)), t(name["b_experts_gate_up"],
                                                                                   (e.count, 2 * f))
        return {"W_router": mat("W_router", d, e.count), "b_router": t(name["b_router"], (e.count,)),
                "W_experts_gate": np.ascontiguousarray(gate_up[..., ::2]),
                "W_experts_up": np.ascontiguousarray(gate_up[..., 1::2]),
                "b_experts_gate": np.ascontiguousarray(b_gate_up[..., ::2]),
                "b_experts_up": np.ascontiguousarray(b_gate_up[..., 1::2]),
                "W_experts_down": t(name["W_experts_down"], (e.count, f, d)),
                "b_experts_down": t(name["b_experts_down"], (e.count, d)),
                "W_up": None, "W_down": None}
    out = {"W_down": mat("W_down", f, d)}
    if "W_gate_up" in name:  # Phi-3: one (d, 2f) matrix, gate then up
        both = mat("W_gate_up", d, 2 * f)
        out.update(W_gate=np.ascontiguousarray(both[:, :f]), W_up=np.ascontiguousarray(both[:, f:]))
    elif block.mlp == "gated":
        out.update(W_up=mat("W_up", d, f), W_gate=mat("W_gate", d, f))
    else:
        out.update(W_up=mat("W_up", d, f), b_up=t(name["b_up"], (f,)), b_down=t(name["b_down"], (d,)))
    return out


def _projections(t: Any, layout: Layout, name: dict[str, str], mat: Any, s: Any, d: int) -> dict[str, Any]:
    """``W_Q, W_K, W_V`` (and their biases when ``s.bias``): three tensors, or one fused one split once; multi-head
    latent attention's latent projections (module docstring)."""
    q, kv = s.heads * s.d_k, s.kv_heads * s.d_k
    if layout.qkv == "separate" and s.output_gate:  # Qwen3-Next: q_proj makes each head's query, then its gate
        both = mat("W_Q", d, 2 * q).reshape(d, s.heads, 2, s.d_k)  # (d, H, query | gate, d_k)
        return {"W_Q": np.ascontiguousarray(both[:, :, 0].reshape(d, q)), "W_K": mat("W_K", d, kv),
                "W_V": mat("W_V", d, kv), "W_G": np.ascontiguousarray(both[:, :, 1].reshape(d, q))}
    if s.kv_latent_rank is not None:
        r, rope = s.kv_latent_rank, s.rotary_dims
        out = {"W_K": mat("W_KV_down", d, r + rope), "W_V": np.zeros((d, 0), t.dtype),
               "g_KV_latent": t(name["g_KV_latent"], (r,)), "W_KV_up": mat("W_KV_up", r, s.heads * (s.d_k - rope + s.d_v))}
        if s.q_latent_rank is None:
            return {"W_Q": mat("W_Q", d, q), **out}
        return {"W_Q": mat("W_Q_down", d, s.q_latent_rank), "g_Q_latent": t(name["g_Q_latent"], (s.q_latent_rank,)),
                "W_Q_up": mat("W_Q_up", s.q_latent_rank, q), **out}
    if layout.qkv == "separate":
        out = {"W_Q": mat("W_Q", d, q), "W_K": mat("W_K", d, kv), "W_V": mat("W_V", d, kv)}
        if s.bias:
            out.update(b_Q=t(name["b_Q"], (q,)), b_K=t(name["b_K"], (kv,)), b_V=t(name["b_V"], (kv,)))
        return out
    W = mat("W_QKV", d, q + 2 * kv)  # (d, q + 2 kv)
    b = t(name["b_QKV"], (q + 2 * kv,)) if s.bias else np.zeros(q + 2 * kv, W.dtype)  # Phi-3: no bias
    if layout.qkv == "columns":  # [Q | K | V]
        cuts = ((0, q), (q, q + kv), (q + kv, q + 2 * kv))
        parts = [(W[:, i0:i1], b[i0:i1]) for i0, i1 in cuts]
    else:  # per head: its q, k and v rows side by side (heads == kv_heads)
        H, w = s.heads, s.d_k
        W3, b3 = W.reshape(d, H, 3, w), b.reshape(H, 3, w)
        parts = [(W3[:, :, k].reshape(d, q), b3[:, k].reshape(q)) for k in range(3)]
    out = {}
    for letter, (Wk, bk) in zip("QKV", parts, strict=True):
        out[f"W_{letter}"] = np.ascontiguousarray(Wk)
        if s.bias:
            out[f"b_{letter}"] = np.ascontiguousarray(bk)
    return out
