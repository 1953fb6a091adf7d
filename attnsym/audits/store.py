"""An audit's output folder: a manifest, one Parquet part per finished text, and the final table.

Layout of ``out/``::

    manifest.json          what this audit is (model, revision, corpus fingerprint, options)
    parts/000042.parquet   the rows of text 42, written atomically when the text is done
    heads.parquet          the union of the parts ordered by text index (written at the end)

A part is written whole or not at all (:func:`attnsym._io.atomic_write`), so an audit killed at
any moment — SIGKILL included — leaves finished texts and nothing half-done: the next run
with the same manifest skips the texts that have a part and measures the rest. A folder whose
manifest describes another audit (another model or revision, corpus, option) is refused.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import numpy as np

from .._io import atomic_write
from .errors import AuditError
from .result import STATISTICS, require
from .work import TextResult

__all__ = ["FINAL", "FORMAT", "MANIFEST", "Store", "schema"]

#: the version of the folder layout and columns
FORMAT = 1
MANIFEST = "manifest.json"
FINAL = "heads.parquet"
_PARTS = "parts"


def schema():
    """The Parquet schema of every part and of the final table (one row per text × layer × head)."""
    pa = require("pyarrow", "audit", "an audit")
    return pa.schema([("text_index", pa.int64()), ("text_id", pa.string()), ("tokens", pa.int64()),
                      ("truncated", pa.bool_()), ("model", pa.string()), ("revision", pa.string()),
                      ("layer", pa.int32()), ("head", pa.int32()), *((name, pa.float64()) for name in STATISTICS)])


def _parquet_bytes(table) -> bytes:
    pa = require("pyarrow", "audit", "an audit")
    import pyarrow.parquet as pq

    sink = pa.BufferOutputStream()
    pq.write_table(table, sink, compression="zstd")
    return sink.getvalue().to_pybytes()


class Store:
    """The output folder of one audit (see the module docstring)."""

    def __init__(self, out: str | os.PathLike, manifest: dict[str, Any]) -> None:
        self.out = Path(out)
        self.manifest = manifest
        self.parts = self.out / _PARTS

    def open(self) -> set[int]:
        """Create the folder, or check it holds this audit; returns the indices of the texts already done."""
        path = self.out / MANIFEST
        if self.out.exists() and not self.out.is_dir():
            raise AuditError(f"out {str(self.out)!r} is a file, not a folder")
        if path.is_file():
            try:
                found = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError) as error:
                raise AuditError(f"{path} cannot be read ({error}); give another out folder") from None
            differs = [k for k in self.manifest if found.get(k) != self.manifest[k]]
            if differs:
                what = ", ".join(f"{k} {found.get(k)!r} there, {self.manifest[k]!r} here" for k in differs[:3])
                raise AuditError(f"{self.out} holds another audit's results ({what}); give another out folder, or "
                                 "the same model, corpus and options to resume it")
        elif self.out.is_dir() and any(self.out.iterdir()):
            raise AuditError(f"{self.out} is not empty and holds no audit ({MANIFEST} missing); give an empty or new "
                             "folder")
        else:
            self.parts.mkdir(parents=True, exist_ok=True)
            atomic_write(path, json.dumps(self.manifest, indent=1, sort_keys=True) + "\n")
        self.parts.mkdir(exist_ok=True)
        return {int(p.name.split(".")[0]) for p in self.parts.glob("*.parquet") if p.name.split(".")[0].isdigit()}

    def part_path(self, index: int) -> Path:
        return self.parts / f"{index:06d}.parquet"

    def write(self, result: TextResult, text_id: str) -> None:
        """The rows of one finished text, as its own part (a refused text: no rows, its reason in the metadata)."""
        pa = require("pyarrow", "audit", "an audit")
        m = self.manifest
        if result.means is None:
            table = schema().empty_table()
        else:
            L, H = result.means["entropy"].shape
            count = L * H
            columns = {"text_index": np.full(count, result.index, np.int64), "text_id": [text_id] * count,
                       "tokens": np.full(count, result.tokens, np.int64), "truncated": np.full(count, result.truncated),
                       "model": [m["model"]] * count, "revision": [m["revision"]] * count,
                       "layer": np.repeat(np.arange(L, dtype=np.int32), H), "head": np.tile(np.arange(H, dtype=np.int32), L),
                       **{name: np.ascontiguousarray(result.means[name], dtype=np.float64).reshape(-1)
                          for name in STATISTICS}}
            table = pa.table(columns, schema=schema())
        status = {"status": result.status, "index": str(result.index), "text_id": text_id, "tokens": str(result.tokens),
                  "truncated": str(result.truncated).lower(), "reason": result.reason}
        table = table.replace_schema_metadata({f"attnsym.{k}": v for k, v in status.items()})
        atomic_write(self.part_path(result.index), _parquet_bytes(table), overwrite=True)

    def statuses(self) -> list[dict[str, str]]:
        """The status of every finished text (from its part's metadata), by index."""
        import pyarrow.parquet as pq

        out = []
        for p in sorted(self.parts.glob("*.parquet")):
            meta = pq.read_schema(p).metadata or {}
            out.append({k.decode()[len("attnsym."):]: v.decode() for k, v in meta.items() if k.startswith(b"attnsym.")})
        return sorted(out, key=lambda s: int(s["index"]))

    def finish(self, count: int) -> Path:
        """Write the final table, the union of the ``count`` parts ordered by text index; returns its path."""
        pa = require("pyarrow", "audit", "an audit")
        import pyarrow.parquet as pq

        missing = [k for k in range(count) if not self.part_path(k).is_file()]
        if missing:
            raise AuditError(f"{len(missing)} texts of {self.out} have no part yet (first: text {missing[0] + 1}); "
                             "run the audit again to finish them")
        tables = [pq.read_table(self.part_path(k), schema=schema()).replace_schema_metadata(None) for k in range(count)]
        table = pa.concat_tables(tables) if tables else schema().empty_table()
        return atomic_write(self.out / FINAL, _parquet_bytes(table), overwrite=True)
