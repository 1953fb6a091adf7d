"""The tokenizer a GGUF file describes, built with the ``tokenizers`` library from its metadata.

A GGUF file stores its vocabulary as metadata: ``tokenizer.ggml.model`` (the kind),
``.tokens``, ``.merges``, ``.token_type`` (1 normal, 3 control, 4 user-defined …), the special
ids, ``add_bos_token`` / ``add_eos_token`` and ``pre`` (how text is split before BPE). Two kinds
are built, both as ``tokenizers`` BPE models (no BPE written here):

* ``gpt2`` — byte-level BPE (GPT-2, LLaMA 3, Qwen, SmolLM …): the ByteLevel pre-tokenizer with
  the split of ``pre`` (:data:`PRE_SPLITS`), the file's merges.
* ``llama`` — SentencePiece-style BPE (LLaMA 1/2, Mistral …): ``▁`` for spaces (Metaspace),
  byte fallback; the merges from the file, or, where it has none, recovered from the
  vocabulary and its scores (each token that splits into two tokens gives the merge of the two,
  ranked by the token's score).

Control tokens (type 3) become special tokens, user-defined ones (type 4) added tokens, so both
stay whole in a text (``<|im_start|>`` is one id). A ``pre`` or a ``tokenizer.ggml.model`` not
listed here is refused: a different split gives different ids, silently.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, pre_tokenizers, processors

from .errors import ModelError, UnsupportedModelError

__all__ = ["PRE_SPLITS", "gguf_tokenizer"]

#: the GPT-2 split (``'s|'t|…| ?\p{L}+| ?\p{N}+|…``), which the ByteLevel pre-tokenizer applies itself
_GPT2 = None
#: LLaMA 3's split (llama.cpp's ``llama3`` pre-tokenizer): case-insensitive contractions, numbers of 1-3 digits
_LLAMA3 = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+"
           r"|\s+(?!\S)|\s+")
#: Qwen 2's split: as LLaMA 3's with single digits
_QWEN2 = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+"
          r"|\s+(?!\S)|\s+")

#: ``tokenizer.ggml.pre`` -> (a regex split before the byte-level step or None for GPT-2's own, digits one by one)
PRE_SPLITS: dict[str, tuple[str | None, bool]] = {
    "default": (_GPT2, False), "gpt-2": (_GPT2, False), "gpt2": (_GPT2, False),
    "smollm": (_GPT2, True),  # SmolLM's tokenizer.json: Digits(individual) then ByteLevel
    "llama3": (_LLAMA3, False), "llama-v3": (_LLAMA3, False), "llama-bpe": (_LLAMA3, False),
    "qwen2": (_QWEN2, False),
}

#: token types of ``tokenizer.ggml.token_type``
CONTROL, USER_DEFINED = 3, 4


def _byte_chars() -> list[str]:
    """GPT-2's printable spelling of the 256 bytes, in byte order (the alphabet of byte-level vocabularies)."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    chars, extra = [], 0
    for b in range(256):
        if b in printable:
            chars.append(chr(b))
        else:
            chars.append(chr(256 + extra))
            extra += 1
    return chars


def _list(meta: dict[str, Any], key: str, kind: type, path: Path, needed: bool = True) -> list[Any] | None:
    value = meta.get(key)
    if value is None:
        if needed:
            raise ModelError(f"{path}: the GGUF metadata has no {key!r}, which its tokenizer needs")
        return None
    if not isinstance(value, list) or not all(isinstance(v, kind) and not isinstance(v, bool) for v in value):
        raise ModelError(f"{path}: GGUF key {key!r} must be a list of {kind.__name__}")
    return value


def _merges(raw: list[str], path: Path) -> list[tuple[str, str]]:
    out = []
    for merge in raw:
        parts = merge.split(" ")
        if len(parts) != 2:
            raise ModelError(f"{path}: GGUF tokenizer merge {merge[:40]!r} is not two tokens separated by one space")
        out.append((parts[0], parts[1]))
    return out


def _merges_from_scores(tokens: list[str], scores: list[float] | None) -> list[tuple[str, str]]:
    """SentencePiece vocabularies list no merges: each token that splits into two tokens is their merge, best score first."""
    rank = {t: i for i, t in enumerate(tokens)}
    score = (lambda t: -scores[rank[t]]) if scores is not None else (lambda t: rank[t])
    found = []
    for token in tokens:
        for k in range(1, len(token)):
            left, right = token[:k], token[k:]
            if left in rank and right in rank:
                found.append((score(token), rank[left], rank[right], left, right))
    found.sort()
    return [(left, right) for *_, left, right in found]


def _byte_level(meta: dict[str, Any], tokens: list[str], path: Path) -> Tokenizer:
    pre = meta.get("tokenizer.ggml.pre", "default")
    if pre not in PRE_SPLITS:
        raise UnsupportedModelError(f"{path}: GGUF key tokenizer.ggml.pre={pre!r} is not supported (attnsym splits "
                                    f"byte-level text as {', '.join(map(repr, PRE_SPLITS))})")
    spelling = dict(enumerate(_byte_chars()))
    alphabet = set(spelling.values())
    vocab = {t if set(t) <= alphabet else "".join(spelling[b] for b in t.encode("utf-8")): i
             for i, t in enumerate(tokens)}
    merges = _merges(_list(meta, "tokenizer.ggml.merges", str, path) or [], path)
    tok = Tokenizer(models.BPE(vocab, merges, fuse_unk=False))
    split, digits = PRE_SPLITS[pre]
    steps: list[Any] = [pre_tokenizers.Digits(individual_digits=True)] if digits else []
    if split is None:
        steps.append(pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True))
    else:
        steps += [pre_tokenizers.Split(Regex(split), behavior="isolated"),
                  pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)]
    tok.pre_tokenizer = steps[0] if len(steps) == 1 else pre_tokenizers.Sequence(steps)
    tok.decoder = decoders.ByteLevel()
    return tok


def _sentencepiece(meta: dict[str, Any], tokens: list[str], path: Path) -> Tokenizer:
    raw = _list(meta, "tokenizer.ggml.merges", str, path, needed=False)
    scores = _list(meta, "tokenizer.ggml.scores", float, path, needed=False)
    merges = _merges(raw, path) if raw is not None else _merges_from_scores(tokens, scores)
    unk = meta.get("tokenizer.ggml.unknown_token_id", 0)
    unk_token = tokens[unk] if type(unk) is int and 0 <= unk < len(tokens) else None
    tok = Tokenizer(models.BPE({t: i for i, t in enumerate(tokens)}, merges, unk_token=unk_token, fuse_unk=True,
                               byte_fallback=True))
    prefix = meta.get("tokenizer.ggml.add_space_prefix", True) is not False
    tok.normalizer = None
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="first" if prefix else "never",
                                                 split=False)
    steps = [decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse()]
    tok.decoder = decoders.Sequence(steps + ([decoders.Strip(content=" ", left=1, right=0)] if prefix else []))
    return tok


#: ``tokenizer.ggml.model`` -> builder
KINDS = {"gpt2": _byte_level, "llama": _sentencepiece}


def gguf_tokenizer(meta: dict[str, Any], path: Path, vocab_size: int) -> Tokenizer | None:
    """The ``tokenizers`` tokenizer of a GGUF file's metadata, or None when it has no ``tokenizer.ggml.model``.

    Raises
    ------
    UnsupportedModelError
        A ``tokenizer.ggml.model`` other than ``gpt2`` and ``llama``, or a ``pre`` split not in
        :data:`PRE_SPLITS`.
    ModelError
        The tokens, merges or token types are missing or of the wrong type, or there are more
        tokens than the embedding has rows.
    """
    kind = meta.get("tokenizer.ggml.model")
    if kind is None:
        return None
    if kind not in KINDS:
        raise UnsupportedModelError(f"{path}: GGUF key tokenizer.ggml.model={kind!r} is not supported (attnsym builds "
                                    f"{', '.join(map(repr, KINDS))} tokenizers)")
    tokens = _list(meta, "tokenizer.ggml.tokens", str, path) or []
    if len(tokens) > vocab_size:
        raise ModelError(f"{path}: the GGUF tokenizer has {len(tokens)} tokens, more than the {vocab_size} rows of "
                         "the token embedding")
    types = _list(meta, "tokenizer.ggml.token_type", int, path, needed=False) or [1] * len(tokens)
    try:
        tok = KINDS[kind](meta, tokens, path)
        alphabet = set(_byte_chars()) if kind == "gpt2" else None
        special = [AddedToken(t, normalized=False, special=True) for t, k in zip(tokens, types, strict=False)
                   if k == CONTROL and (alphabet is None or set(t) <= alphabet)]
        tok.add_special_tokens(special)
        tok.add_tokens([AddedToken(t, normalized=False, special=False) for t, k in zip(tokens, types, strict=False)
                        if k == USER_DEFINED])
        tok.post_processor = _template(meta, tokens, path)
    except Exception as error:  # the tokenizers library raises its own Exception subclass
        if isinstance(error, ModelError):
            raise
        raise ModelError(f"{path}: the GGUF tokenizer cannot be built by the tokenizers library ({error})") from None
    return tok


def _template(meta: dict[str, Any], tokens: list[str], path: Path) -> Any:
    """BOS / EOS around each text as ``add_bos_token`` / ``add_eos_token`` say (SentencePiece files: BOS by default)."""
    default_bos = meta.get("tokenizer.ggml.model") == "llama"
    ends: list[tuple[str, int] | None] = []
    for which, default in (("bos", default_bos), ("eos", False)):
        flag = meta.get(f"tokenizer.ggml.add_{which}_token", default)
        token_id = meta.get(f"tokenizer.ggml.{which}_token_id")
        if flag is True:
            if type(token_id) is not int or not 0 <= token_id < len(tokens):
                raise ModelError(f"{path}: GGUF key tokenizer.ggml.add_{which}_token is true but "
                                 f"tokenizer.ggml.{which}_token_id is not a token id (got {token_id!r})")
            ends.append((tokens[token_id], token_id))
        else:
            ends.append(None)
    if ends == [None, None]:
        return processors.ByteLevel(trim_offsets=False) if meta.get("tokenizer.ggml.model") == "gpt2" else None
    bos, eos = ends
    single = ([f"{bos[0]}:0"] if bos else []) + ["$A:0"] + ([f"{eos[0]}:0"] if eos else [])
    return processors.TemplateProcessing(single=" ".join(single), special_tokens=[e for e in ends if e])

