"""``attnsym audit``: every head of a model on every text of a corpus, to Parquet, resumable, on a pool or Dask."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ._common import MODEL_FOLDERS

__all__ = ["add_parser", "run"]

_DESCRIPTION = """\
Measure every attention head of a real model on every text of a corpus, exactly and without
an n x n map (one streamed pass per text): entropy, max weight, first-token, self and
previous-token mass, mean distance, and for decoders induction and duplicate-token mass.
Writes DIR/heads.parquet (a row per text x layer x head, with the text's id, token count and
the model's name and revision), DIR/report.md and figures. Killed, it resumes where it stopped
when run again with the same arguments.

CORPUS is a text file (a text per line) or JSON Lines (.jsonl: {"text": ..., "id": ...});
"stdlib" audits the standard library's prose (pydoc_data.topics, cut into paragraphs).

{MODEL_FOLDERS}

There is no --force: an audit never replaces results. DIR must be new, empty, or hold this
same audit (same model, revision and corpus), which then resumes; give another folder otherwise.
""".replace("{MODEL_FOLDERS}", MODEL_FOLDERS)

_EPILOG = """\
examples:
  attnsym audit stdlib -o results/
  attnsym audit --model path/to/model corpus.jsonl -o results/ --jobs 4
  attnsym audit corpus.txt -o results/ --executor dask --scheduler tcp://10.0.0.5:8786

exit status: 0 done, 2 an error (an unreadable corpus, a folder holding another audit, ...)
"""


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    parser = subparsers.add_parser("audit", help="every head on every text of a corpus, to Parquet (resumable)",
                                   description=_DESCRIPTION, epilog=_EPILOG,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("corpus", metavar="CORPUS", help='a text file, a .jsonl file, or "stdlib"')
    parser.add_argument("--model", default="all-MiniLM-L6-v2", metavar="NAME_OR_DIR",
                        help="a packaged model's name or a model folder (default all-MiniLM-L6-v2)")
    parser.add_argument("--dtype", choices=("float32", "float64"), default="float32")
    parser.add_argument("-o", "--output", type=Path, required=True, metavar="DIR",
                        help="a new or empty folder, or one holding this same audit (resumed)")
    parser.add_argument("--executor", choices=("serial", "process", "dask"), default="process",
                        help="serial: this process; process: a process per core (default); dask: a Dask cluster")
    parser.add_argument("--scheduler", metavar="ADDRESS", default=None,
                        help="with --executor dask: the scheduler's address (tcp://host:8786)")
    parser.add_argument("--jobs", type=int, default=None, help="processes of the pool (default: one per core)")
    parser.add_argument("--too-long", choices=("refuse", "truncate"), default="refuse",
                        help="a text past the model's context: refused (counted in the report) or truncated")
    parser.add_argument("--block", type=int, default=256, help="query rows and key columns per block (default 256)")
    parser.add_argument("--no-report", action="store_true", help="write heads.parquet only")
    parser.set_defaults(run=run)
    return parser


def run(args: argparse.Namespace) -> int:
    from ..audits import audit, stdlib_corpus
    from ..errors import SpecError
    from ..models import load

    if args.executor == "dask" and not args.scheduler:
        raise SpecError("--executor dask needs --scheduler ADDRESS (the address of a running Dask scheduler)")
    if args.scheduler and args.executor != "dask":
        raise SpecError("--scheduler is for --executor dask")
    if args.jobs is not None and args.jobs < 1:
        raise SpecError(f"--jobs must be a positive integer (got {args.jobs})")
    model = load(args.model, dtype=args.dtype)
    corpus = stdlib_corpus() if args.corpus == "stdlib" else args.corpus
    executor, client = args.executor, None
    if args.executor == "dask":
        from ..audits.result import require

        distributed = require("distributed", "dask", "--executor dask")
        client = distributed.Client(args.scheduler)
        executor = client.get_executor()
    try:
        result = audit(model, corpus, args.output, executor=executor, jobs=args.jobs, too_long=args.too_long,
                       block=args.block, report=not args.no_report)
    finally:
        if client is not None:
            client.close()
    print(f"{result.texts} texts: {result.measured} measured, {result.refused} refused, {result.truncated} truncated, "
          f"{result.skipped} blank lines skipped" + (f", {result.resumed} done before" if result.resumed else ""))
    print(f"wrote {result.table}", file=sys.stderr)
    return 0
