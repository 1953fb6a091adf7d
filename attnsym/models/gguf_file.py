"""Reading a GGUF file (llama.cpp's format) with the ``gguf`` package: metadata, tensors, checks.

:func:`read_gguf` opens the file with ``gguf.GGUFReader`` (the package's own parser: no GGUF
parsing here), turns its metadata into plain Python values, maps them into the same
:class:`~attnsym.models.plan.ModelPlan` as a ``config.json`` (:mod:`attnsym.models.gguf_plan`),
builds the tokenizer the metadata describes (:mod:`attnsym.models.gguf_tokenizer`) and reads the
weights with the one reader of every checkpoint, :func:`attnsym.models.weights.read_weights`,
given a GGUF tensor source (:class:`GGUFTensors`) with the same call interface as the
safetensors one.

Memory: the reader's metadata (one small array per vocabulary string) is dropped once read, and
each tensor is then read from the file and dequantized by ``gguf.quants.dequantize`` a block of
rows at a time straight into the array the forward pass uses (float32 or float64), so the
loaded model holds its arrays and neither the file's pages nor a quantized copy.

Checks, before any tensor's bytes are read: the file is a regular file (a FIFO would block on
open), every tensor lies inside the file (a truncated file, an offset past the end), every
quantization type is one ``gguf`` can dequantize (else one error naming the tensor and type),
the shapes agree with the metadata's sizes (checked by ``read_weights`` against the plan), no
tensor is left unread that would change the model.

Two layouts of llama.cpp's converter are read back into the checkpoint's (:class:`GGUFTensors`):
the experts of a mixture stacked into one ``(E, d_out, d_in)`` tensor per projection
(``blk.{i}.ffn_{gate,up,down}_exps.weight``), whose row ``e`` the plan reads under the Hugging
Face-like name ``blk.{i}.ffn_exps.{e}.{part}_proj.weight`` — only that row's bytes are read, and
the stack counts as read once every row has been; and latent attention's ``kv_b_proj`` split
into ``attn_k_b`` / ``attn_v_b``, merged back by
:func:`~attnsym.models.gguf_arch_mla.merge_kv_b` when the plan asks for ``blk.{i}.attn_kv_b.weight``
and the file holds the two halves instead. Every failure is a
:class:`~attnsym.models.CorruptWeightsError` or :class:`~attnsym.models.ModelError`.

A quantized file is the dequantized model: its weights are the quantized values, not the
original bf16 ones.
"""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gguf
import numpy as np
from gguf.quants import dequantize
from tokenizers import Tokenizer

from .errors import CorruptWeightsError, ModelError, ModelFileMissing, UnsupportedModelError
from .gguf_arch_mla import merge_kv_b
from .gguf_keys import ROPE_FREQS
from .gguf_plan import LM_HEAD, GGUFPlan, plan_from_metadata, unpermute_qk_rows
from .gguf_tokenizer import gguf_tokenizer
from .plan import ModelPlan
from .weights import Weights, read_weights

__all__ = ["GGUFModel", "GGUFTensors", "read_gguf", "read_gguf_metadata"]

#: float32 elements dequantized per step (:meth:`GGUFTensors.__call__`): 1 MiB of output at a time
_STEP_ELEMENTS = 1 << 18

#: the vocabulary arrays of the metadata: read into the tokenizer, then dropped (tens of MB as Python lists)
_VOCABULARY = ("tokenizer.ggml.tokens", "tokenizer.ggml.merges", "tokenizer.ggml.token_type", "tokenizer.ggml.scores")

#: metadata arrays longer than this are refused (a real vocabulary is a few hundred thousand entries)
_MAX_ARRAY = 1 << 24

#: one expert's matrix under its Hugging Face-like name: row ``e`` of the stack ``blk.{i}.ffn_{part}_exps.weight``
_EXPERT = re.compile(r"(blk\.\d+)\.ffn_exps\.(\d+)\.(gate|up|down)_proj\.weight")

#: latent attention's ``kv_b_proj``: stored whole (older converters) or as ``attn_k_b`` + ``attn_v_b``
_KV_B = re.compile(r"(blk\.\d+)\.attn_kv_b\.weight")


@dataclass(frozen=True)
class _TensorInfo:
    """Where one tensor lies and how it is stored, from the reader (no bytes of it read)."""

    name: str
    kind: gguf.GGMLQuantizationType
    shape: tuple[int, ...]  # NumPy order: (d_out, d_in) for a matrix
    offset: int  # of its first byte in the file
    n_bytes: int
    raw_dtype: np.dtype  # the reader's view of its bytes: float32, float16, or uint8 blocks
    raw_shape: tuple[int, ...]


def _expert_row(stack: _TensorInfo, e: int, name: str) -> _TensorInfo:
    """Row ``e`` of a stacked ``(E, d_out, d_in)`` tensor as a tensor of its own: its bytes are one contiguous
    run (a quantization block never crosses a row of ``d_in`` values), so no other expert's bytes are read."""
    per = stack.n_bytes // stack.shape[0]
    return _TensorInfo(name, stack.kind, stack.shape[1:], stack.offset + e * per, per, stack.raw_dtype,
                       stack.raw_shape[1:])


@dataclass(frozen=True)
class GGUFModel:
    """What :func:`read_gguf` returns: the plan, the weights, the tokenizer, the chat template and the metadata
    (every key but the vocabulary arrays, which live on in the tokenizer)."""

    plan: ModelPlan
    weights: Weights
    tokenizer: Tokenizer | None
    chat_template: str | None
    architecture: str
    metadata: dict[str, Any]


def _regular_file(path: Path) -> int:
    """The size of ``path``, after checking it is a regular file (never opened otherwise)."""
    try:
        info = os.stat(path)
    except FileNotFoundError:
        raise ModelFileMissing(f"GGUF file {str(path)!r} does not exist") from None
    except OSError as error:
        raise ModelError(f"GGUF file {str(path)!r} cannot be read ({type(error).__name__}: {error})") from None
    if not stat.S_ISREG(info.st_mode):
        raise ModelError(f"GGUF file {str(path)!r} is not a regular file")
    return info.st_size


def _value(field: Any, path: Path) -> Any:
    """One metadata field as a Python value (int, float, bool, str or a list of them)."""
    if len(field.types) > 1 and len(field.data) > _MAX_ARRAY:
        raise CorruptWeightsError(f"{path}: GGUF key {field.name!r} holds {len(field.data)} values (at most "
                                  f"{_MAX_ARRAY})")
    return field.contents()


def read_gguf_metadata(path: str | Path) -> tuple[dict[str, Any], dict[str, _TensorInfo], int]:
    """The metadata (key -> Python value), the tensors (name -> where and how stored) and the file size.

    The reader is dropped before this returns: the metadata it held as one array per string
    (about 150 MB for a 49 152-token vocabulary) is freed before any tensor is read.

    Raises
    ------
    CorruptWeightsError
        The file is not a GGUF file the ``gguf`` package can read (bad magic, truncated,
        metadata of the wrong types, counts past the file's end), or a tensor lies past its end.
    ModelError
        ``path`` is not a regular file.
    """
    path = Path(path)
    size = _regular_file(path)
    try:
        reader: gguf.GGUFReader | None = gguf.GGUFReader(path, "r")
        assert reader is not None
        meta = {name: _value(field, path) for name, field in reader.fields.items()
                if not name.startswith("GGUF.")}
        tensors: dict[str, _TensorInfo] = {}
        for stored in reader.tensors:
            shape = tuple(int(s) for s in reversed(stored.shape.tolist()))
            tensors[stored.name] = _TensorInfo(stored.name, gguf.GGMLQuantizationType(stored.tensor_type), shape,
                                               int(stored.data_offset), int(stored.n_bytes), stored.data.dtype,
                                               tuple(int(s) for s in stored.data.shape))
    except CorruptWeightsError:
        raise
    except (ValueError, KeyError, IndexError, TypeError, OverflowError, UnicodeDecodeError, OSError,
            MemoryError, AssertionError, NotImplementedError) as error:
        raise CorruptWeightsError(f"{path} cannot be read as a GGUF file ({type(error).__name__}: "
                                  f"{str(error)[:200]})") from None
    finally:
        reader = None  # drops the reader's map and its per-string arrays now
    for t in tensors.values():
        if t.offset < 0 or t.n_bytes < 0 or t.offset + t.n_bytes > size:
            raise CorruptWeightsError(f"{path} cannot be read as a GGUF file: tensor {t.name!r} ends at byte "
                                      f"{t.offset + t.n_bytes}, past the end of the file ({size} bytes); it is "
                                      "truncated or its tensor offsets are wrong")
        if t.raw_dtype.itemsize * int(np.prod(t.raw_shape, dtype=np.int64)) != t.n_bytes:
            raise CorruptWeightsError(f"{path}: tensor {t.name!r} of shape {t.shape} does not fill its {t.n_bytes} "
                                      f"bytes of type {t.kind.name}")
    return meta, tensors, size


class GGUFTensors:
    """Named lookup into a GGUF file, with the interface :func:`~attnsym.models.weights.read_weights` calls.

    ``t(name, shape, transpose=False)`` returns the tensor ``name`` dequantized into a new array of
    ``dtype`` and shape ``shape`` (its stored shape reversed when ``transpose``), after checking
    its stored shape against ``shape``; ``name in t`` says whether the file holds it. The q/k rows
    of ``permuted`` tensors are restored to the checkpoint's order
    (:func:`~attnsym.models.gguf_plan.unpermute_qk_rows`); an expert's row of a stacked tensor and a
    split ``kv_b_proj`` are read back as the checkpoint stores them (module docstring). A name of
    ``assembled`` (a tensor the plan's layout names and no file holds, e.g. experts' gate|up) is
    ``assembled[name](self, shape)``, built from stored tensors read through this source. Every
    stored tensor read whole is recorded in :attr:`read`.
    """

    def __init__(self, path: Path, tensors: dict[str, _TensorInfo], dtype: np.dtype,
                 permuted: dict[str, int] | None = None, assembled: dict[str, Any] | None = None) -> None:
        self.path, self.tensors, self.dtype = path, tensors, np.dtype(dtype)
        self.permuted = permuted or {}
        self.assembled = assembled or {}
        self.read: set[str] = set()
        self._rows: dict[str, set[int]] = {}  # stack -> the expert rows read from it

    def _stored(self, name: str) -> tuple[_TensorInfo | None, tuple[str, int] | None]:
        """``(where the tensor lies, (the stack, the row) it is)``: a stored tensor, an expert's row, or nothing."""
        info = self.tensors.get(name)
        match = _EXPERT.fullmatch(name) if info is None else None
        if match:
            stack_name = f"{match[1]}.ffn_{match[3]}_exps.weight"
            stack, e = self.tensors.get(stack_name), int(match[2])
            if stack is not None and len(stack.shape) == 3 == len(stack.raw_shape) and e < stack.shape[0]:
                return _expert_row(stack, e, name), (stack_name, e)
        return info, None

    def _halves(self, name: str) -> tuple[str, str] | None:
        """``(attn_k_b, attn_v_b)`` names when ``name`` is a ``kv_b_proj`` the file holds split, else None."""
        match = _KV_B.fullmatch(name)
        if match is None or name in self.tensors:
            return None
        k_b, v_b = f"{match[1]}.attn_k_b.weight", f"{match[1]}.attn_v_b.weight"
        return (k_b, v_b) if k_b in self.tensors and v_b in self.tensors else None

    def __contains__(self, name: str) -> bool:
        return name in self.assembled or self._stored(name)[0] is not None or self._halves(name) is not None

    def __call__(self, name: str, shape: tuple[int, ...], *, transpose: bool = False) -> np.ndarray:
        if name in self.assembled:
            return np.ascontiguousarray(self.assembled[name](self, tuple(shape)), dtype=self.dtype)
        expected = tuple(shape[::-1] if transpose else shape)
        info, row = self._stored(name)
        halves = self._halves(name) if info is None else None
        if halves is not None:
            stored = self._merged_kv_b(name, halves, expected)
        elif info is None:
            raise CorruptWeightsError(f"{self.path} has no tensor {name!r}, which this architecture needs "
                                      f"({len(self.tensors)} tensors found, e.g. {sorted(self.tensors)[:3]})")
        else:
            if info.shape != expected:
                raise CorruptWeightsError(f"{self.path}: tensor {name!r} must have shape {expected} for the GGUF "
                                          f"metadata's sizes (got {info.shape})")
            stored = self._dequantized(info)  # (expected), float32 or the asked dtype
        heads = self.permuted.get(name)
        if heads is not None:
            if stored.shape[0] % (2 * heads):
                raise CorruptWeightsError(f"{self.path}: tensor {name!r} has {stored.shape[0]} rows, which {heads} "
                                          "heads of even width cannot hold")
            stored = unpermute_qk_rows(stored, heads)
        out = np.ascontiguousarray(stored.T if transpose else stored, dtype=self.dtype)
        del stored
        if row is not None:  # the stack is read once every expert's row has been
            rows = self._rows.setdefault(row[0], set())
            rows.add(row[1])
            if len(rows) == self.tensors[row[0]].shape[0]:
                self.read.add(row[0])
        else:
            self.read.update(halves or (name,))
        return out

    def _merged_kv_b(self, name: str, halves: tuple[str, str], expected: tuple[int, ...]) -> np.ndarray:
        """``kv_b_proj`` ``(H·(nope + d_v), r)`` from ``attn_k_b`` ``(H, r, nope)`` and ``attn_v_b`` ``(H, d_v, r)``."""
        k_b, v_b = (self.tensors[h] for h in halves)
        fits = (len(k_b.shape) == 3 == len(v_b.shape) and k_b.shape[0] == v_b.shape[0]
                and k_b.shape[1] == v_b.shape[2] and (k_b.shape[0] * (k_b.shape[2] + v_b.shape[1]), k_b.shape[1])
                == expected)
        if not fits:
            raise CorruptWeightsError(f"{self.path}: tensors {halves[0]!r} {k_b.shape} and {halves[1]!r} {v_b.shape} "
                                      f"must split {name!r} of shape {expected} for the GGUF metadata's sizes, as "
                                      "(heads, kv_lora_rank, nope) and (heads, v_head_dim, kv_lora_rank)")
        return merge_kv_b(self._dequantized(k_b), self._dequantized(v_b))

    def _dequantized(self, info: _TensorInfo) -> np.ndarray:
        """The tensor dequantized by ``gguf.quants.dequantize``, a block of rows at a time, into one new array."""
        rows = int(np.prod(info.raw_shape[:-1], dtype=np.int64)) if len(info.raw_shape) > 1 else 1  # 3-D: all rows
        raw_row = (info.raw_shape[-1] if info.raw_shape else 1)
        out_dtype = np.float64 if self.dtype == np.float64 else np.float32
        out = np.empty(info.shape, out_dtype)
        flat = out.reshape(rows, -1)
        step = max(1, _STEP_ELEMENTS // max(1, flat.shape[1]))
        try:
            with open(self.path, "rb") as handle:
                for r0 in range(0, rows, step):
                    r1 = min(rows, r0 + step)
                    raw = np.empty((r1 - r0, raw_row), info.raw_dtype)
                    handle.seek(info.offset + r0 * raw_row * info.raw_dtype.itemsize)
                    _fill(handle, raw.reshape(-1).view(np.uint8).data, self.path)
                    flat[r0:r1] = dequantize(raw, info.kind).reshape(r1 - r0, -1)
                    if not np.isfinite(flat[r0:r1]).all():  # per block: no tensor-sized mask
                        raise CorruptWeightsError(f"{self.path}: tensor {info.name!r} holds non-finite values "
                                                  "(inf or nan)")
        except NotImplementedError:
            raise UnsupportedModelError(f"{self.path}: tensor {info.name!r} is stored as {info.kind.name}, which the "
                                        "gguf package cannot dequantize") from None
        except OSError as error:
            raise CorruptWeightsError(f"{self.path} cannot be read ({error})") from None
        return out


def _fill(handle: Any, buffer: memoryview, path: Path) -> None:
    """Read exactly ``len(buffer)`` bytes from ``handle`` into ``buffer``."""
    while buffer:
        got = handle.readinto(buffer)
        if not got:
            raise CorruptWeightsError(f"{path} cannot be read as a GGUF file: it ended while a tensor was read")
        buffer = buffer[got:]


def _check_types(path: Path, tensors: dict[str, _TensorInfo]) -> None:
    """Every tensor's quantization type is one ``gguf.quants.dequantize`` implements (one error naming the first)."""
    probe: dict[gguf.GGMLQuantizationType, bool] = {}
    for t in tensors.values():
        if t.kind not in probe:
            block, size = gguf.GGML_QUANT_SIZES.get(t.kind, (0, 0))
            try:
                dequantize(np.zeros((1, size) if t.raw_dtype == np.uint8 else (block,), t.raw_dtype), t.kind)
                probe[t.kind] = True
            except (NotImplementedError, ValueError, KeyError):
                probe[t.kind] = False
        if not probe[t.kind]:
            raise UnsupportedModelError(f"{path}: tensor {t.name!r} is stored as {t.kind.name}, which the gguf "
                                        "package cannot dequantize")


def read_gguf(path: str | Path, dtype: Any = np.float32) -> GGUFModel:
    """Read a GGUF file: its plan, weights (dequantized to ``dtype``), tokenizer and chat template.

    Parameters
    ----------
    path : str or Path
        A ``.gguf`` file of an architecture of :data:`attnsym.models.gguf_plan.ARCHITECTURES`.
    dtype : NumPy float dtype, default float32
        The dtype of the arrays (every storage type is widened into it).

    Raises
    ------
    CorruptWeightsError
        Not a readable GGUF file, a tensor past the file's end, a tensor missing or misshapen
        for the metadata's sizes, or holding non-finite values.
    UnsupportedModelError
        An architecture, key or tensor that attnsym does not implement, or a quantization type
        the ``gguf`` package cannot dequantize (the tensor and type named).
    ModelError
        Not a regular file, or a key missing or of the wrong type (named).
    """
    path = Path(path)
    meta, tensors, _ = read_gguf_metadata(path)
    shapes = {name: t.shape for name, t in tensors.items()}
    freqs = None  # llama3's per-plane divisors: a few floats the plan needs, read (and checked) first
    if ROPE_FREQS in tensors:
        freqs = GGUFTensors(path, tensors, np.dtype(np.float64))(ROPE_FREQS, tensors[ROPE_FREQS].shape)
    g: GGUFPlan = plan_from_metadata(meta, shapes, path, rope_freqs=freqs)
    _check_types(path, tensors)
    tokenizer = gguf_tokenizer(meta, path, g.plan.vocab_size)
    chat_template = meta.get("tokenizer.chat_template")
    meta = {key: value for key, value in meta.items() if key not in _VOCABULARY}  # freed before the weights
    source = GGUFTensors(path, tensors, np.dtype(dtype), g.permuted, g.assembled)
    weights = read_weights(path, g.plan, dtype, tensors=source)
    unread = sorted(set(tensors) - source.read - {LM_HEAD, ROPE_FREQS})  # rope_freqs: read into the plan
    if unread:
        raise UnsupportedModelError(f"{path}: the GGUF file holds tensors the {g.plan.model_type} plan does not use "
                                    f"({', '.join(unread[:5])}{' …' if len(unread) > 5 else ''}); attnsym will not "
                                    "run the model without them")
    return GGUFModel(plan=g.plan, weights=weights, tokenizer=tokenizer,
                     chat_template=chat_template if isinstance(chat_template, str) else None,
                     architecture=g.architecture, metadata=meta)
