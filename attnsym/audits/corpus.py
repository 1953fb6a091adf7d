"""Corpora for audits: a text file (a text per line) or JSON Lines, read with a line-length cap; the standard library's prose.

* :func:`read_corpus` — ``(id, text)`` pairs from a file; a line is read at most
  :data:`MAX_LINE_BYTES` bytes at a time, so a 1 GB line is refused before it is read whole;
* :func:`corpus_of` — the same pairs from a list of texts or from a path;
* :func:`stdlib_corpus` — English prose every Python ships: the paragraphs of
  ``pydoc_data.topics`` (the help texts of ``help("topic")``), no download.

Blank lines (and JSON records whose text is blank) are skipped and counted, not audited:
:class:`Corpus` keeps how many.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ..errors import AttnsymError

__all__ = ["ID_FIELDS", "MAX_LINE_BYTES", "Corpus", "CorpusError", "corpus_of", "read_corpus", "stdlib_corpus"]

#: the longest line read (bytes): a longer one is refused before it is read whole
MAX_LINE_BYTES = 8 * 1024 * 1024
#: JSON Lines fields taken as a record's id, the first present (else its line number)
ID_FIELDS = ("id", "_id", "doc_id", "uid", "key", "name", "title")


class CorpusError(AttnsymError, ValueError):
    """A corpus that cannot be read: bad bytes, bad JSON, a line past the cap, duplicate ids."""


@dataclass(frozen=True)
class Corpus:
    """Texts to audit, each with its id (unique), in order.

    Attributes
    ----------
    ids, texts : tuple of str
    skipped : int
        Blank lines or records skipped.
    """

    ids: tuple[str, ...]
    texts: tuple[str, ...]
    skipped: int = 0

    def __len__(self) -> int:
        return len(self.texts)

    def fingerprint(self) -> str:
        """BLAKE2b (16 hex digits) of the ids and texts: what an audit's output folder is tied to."""
        digest = hashlib.blake2b(digest_size=8)
        for i, t in zip(self.ids, self.texts, strict=True):
            digest.update(f"{len(i)}:{i}{len(t)}:".encode())
            digest.update(t.encode("utf-8"))
        return digest.hexdigest()


def _decode(raw: bytes, path: Path, line: int) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as error:
        raise CorpusError(f"{path}: line {line} is not UTF-8 (byte {raw[error.start]:#04x} at column "
                          f"{error.start + 1}); convert the file to UTF-8") from None


def read_corpus(path: str | os.PathLike, *, max_line_bytes: int = MAX_LINE_BYTES, id_field: str | None = None) -> Corpus:
    """Read a corpus file: JSON Lines when it ends in ``.jsonl`` / ``.ndjson``, else a text per line.

    Parameters
    ----------
    path : path
    max_line_bytes : int
        A line longer than this is refused after reading this many bytes of it.
    id_field : str, optional
        JSON Lines: the field holding a record's id (default: the first of :data:`ID_FIELDS`
        present, else the line number). A text file's ids are its line numbers (from 1).

    Raises
    ------
    CorpusError
        A missing file, bytes that are not UTF-8, a line past ``max_line_bytes``, a JSON line
        that is not an object with a string ``"text"``, duplicate ids, no text at all.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "c.jsonl"
    >>> _ = p.write_text('{"id": "a", "text": "One."}\\n\\n{"text": "Two."}\\n')
    >>> c = read_corpus(p)
    >>> c.ids, c.texts, c.skipped
    (('a', '3'), ('One.', 'Two.'), 1)
    """
    path = Path(path)
    if not path.is_file():
        raise CorpusError(f"corpus {str(path)!r} is not a file")
    jsonl = path.suffix.lower() in (".jsonl", ".ndjson")
    ids: list[str] = []
    texts: list[str] = []
    skipped = 0
    with path.open("rb") as f:
        line = 0
        while True:
            raw = f.readline(max_line_bytes + 1)
            if not raw:
                break
            line += 1
            if len(raw) > max_line_bytes:
                raise CorpusError(f"{path}: line {line} is longer than {max_line_bytes} bytes (refused before it is "
                                  "read whole); split it into several texts")
            text = _decode(raw, path, line).rstrip("\r\n")
            if jsonl and text.strip():
                text, ident = _record(text, path, line, id_field)
            else:
                ident = str(line)
            if not text.strip():
                skipped += 1
                continue
            ids.append(ident)
            texts.append(text)
    return _checked(ids, texts, skipped, str(path))


def _record(line_text: str, path: Path, line: int, id_field: str | None) -> tuple[str, str]:
    try:
        record = json.loads(line_text)
    except json.JSONDecodeError as error:
        raise CorpusError(f"{path}: line {line} is not JSON ({error.msg} at column {error.colno})") from None
    if not isinstance(record, dict) or not isinstance(record.get("text"), str):
        raise CorpusError(f"{path}: line {line} must be a JSON object with a string field \"text\"")
    fields = (id_field,) if id_field is not None else ID_FIELDS
    for name in fields:
        if name in record and record[name] is not None:
            return record["text"], str(record[name])
    if id_field is not None:
        raise CorpusError(f"{path}: line {line} has no field {id_field!r} (id_field)")
    return record["text"], str(line)


def _checked(ids: list[str], texts: list[str], skipped: int, where: str) -> Corpus:
    seen: dict[str, int] = {}
    for k, ident in enumerate(ids):
        if ident in seen:
            raise CorpusError(f"{where}: id {ident!r} appears twice (texts {seen[ident] + 1} and {k + 1}); ids must be "
                              "unique")
        seen[ident] = k
    if not texts:
        raise CorpusError(f"{where} holds no text (only blank lines)" if skipped else f"{where} holds no text")
    return Corpus(ids=tuple(ids), texts=tuple(texts), skipped=skipped)


def corpus_of(texts_or_path: Sequence[str] | str | os.PathLike, *, max_line_bytes: int = MAX_LINE_BYTES,
              id_field: str | None = None) -> Corpus:
    """A :class:`Corpus` from a list of texts (ids ``1 …``, blank texts skipped) or a file (:func:`read_corpus`)."""
    if isinstance(texts_or_path, Corpus):
        return texts_or_path
    if isinstance(texts_or_path, (str, os.PathLike)):
        return read_corpus(texts_or_path, max_line_bytes=max_line_bytes, id_field=id_field)
    if not isinstance(texts_or_path, Sequence):
        raise CorpusError(f"texts_or_path must be a list of texts or a path (got {type(texts_or_path).__name__})")
    ids, texts, skipped = [], [], 0
    for k, text in enumerate(texts_or_path):
        if not isinstance(text, str):
            raise CorpusError(f"text {k + 1} must be a string (got {type(text).__name__})")
        if not text.strip():
            skipped += 1
            continue
        ids.append(str(k + 1))
        texts.append(text)
    return _checked(ids, texts, skipped, "the list of texts")


def stdlib_corpus(*, min_words: int = 20) -> list[str]:
    """Paragraphs of English prose from the standard library: ``pydoc_data.topics``, in topic order.

    Each topic's help text is cut at blank lines; a paragraph keeps its words joined by single
    spaces; those of fewer than ``min_words`` words (headings, code) are left out.

    >>> texts = stdlib_corpus()
    >>> len(texts) > 500, all(len(t.split()) >= 20 for t in texts)
    (True, True)
    """
    from pydoc_data.topics import topics

    out = []
    for name in sorted(topics):
        for paragraph in re.split(r"\n\s*\n", topics[name]):
            words = paragraph.split()
            if len(words) >= min_words and not paragraph.startswith((" ", "\t", ">>>")):
                out.append(" ".join(words))
    return out
