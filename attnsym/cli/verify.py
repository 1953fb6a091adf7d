"""``attnsym verify``: check the claims of CLAIMS.md and show the verdicts as a table.

Exit status: 0 when every checked claim has its expected verdict, 1 when one does not (so the
command can guard a CI job), 2 for usage errors (unknown claim id, bad seed, a report file
that exists without ``--force``).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

__all__ = ["add_parser", "run"]

_EPILOG = """\
examples:
  attnsym verify                                # every claim: a table of verdicts
  attnsym verify variance-scaling               # one claim
  attnsym verify variance-scaling --report out/ # Markdown report with equations and figures
  attnsym verify --quick --json > claims.json   # fast, machine-readable (CI)
  attnsym verify --list                         # the claim ids

exit status: 0 all claims as expected, 1 a claim expected to hold failed, 2 usage error
"""


def _seed(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"seed must be a non-negative integer (got {text!r})") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"seed must be a non-negative integer (got {value})")
    return value


def add_parser(subparsers) -> argparse.ArgumentParser:
    """Register ``attnsym verify``."""
    parser = subparsers.add_parser(
        "verify",
        help="check the claims about self-attention (exactly and by Monte Carlo)",
        description="Check claims about self-attention (ids from CLAIMS.md); all of them when none is given.",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("claims", nargs="*", metavar="CLAIM", help="claim ids to check (default: all)")
    parser.add_argument("--quick", action="store_true", help="smallest meaningful sizes and sample counts (CI)")
    parser.add_argument("--seed", type=_seed, default=0, help="seed of every random draw (default 0)")
    parser.add_argument("--json", action="store_true", help="print the evidence as JSON instead of a table")
    parser.add_argument("--report", type=Path, metavar="DIR", default=None,
                        help="write report.md, claims.json and figures/ (PNG and SVG) into DIR")
    parser.add_argument("--no-figures", action="store_true", help="with --report: skip the figures")
    parser.add_argument("--force", action="store_true", help="replace existing report files")
    parser.add_argument("--list", action="store_true", help="list the claim ids and statements, then exit")
    parser.set_defaults(run=run)
    return parser


def _print_list() -> int:
    """The shipped claims list (``attnsym/claims/claims.toml``), then claims a user registered."""
    from rich.console import Console
    from rich.table import Table

    from ..claims import CLAIMS, catalogue, ordered_ids

    table = Table(title="claims", show_lines=False)
    table.add_column("id", style="bold", no_wrap=True)
    table.add_column("expected")
    table.add_column("statement")
    table.add_column("source")
    shipped = {e.id for e in catalogue()}
    for e in catalogue():
        table.add_row(e.id, e.expected, e.statement, e.source)
    for cid in ordered_ids():
        if cid not in shipped:
            table.add_row(cid, CLAIMS[cid].expected, CLAIMS[cid].statement, CLAIMS[cid].source or "user claim")
    Console().print(table)
    return 0


_STYLE = {"holds": "green", "holds-under-conditions": "yellow", "fails": "red"}


def _short_method(method: str) -> str:
    """The kinds of evidence without their parenthesised details: 'symbolic proof + Monte Carlo'."""
    depth, kept = 0, []
    for char in method:
        depth += (char == "(") - (char == ")")
        if depth == 0 and char != ")":
            kept.append(char)
    return " ".join("".join(kept).split())


def _table(evidences, width: int):
    from rich.table import Table
    from rich.text import Text

    wide = width >= 140
    table = Table(title="attnsym verify", show_lines=True)
    table.add_column("claim", style="bold", no_wrap=True)
    table.add_column("verdict", no_wrap=True)
    table.add_column("method", ratio=1)
    table.add_column("key evidence", ratio=3 if wide else 2)
    table.add_column("s", justify="right", no_wrap=True)
    for ev in evidences:
        verdict = Text(ev.verdict, style=_STYLE.get(ev.verdict, ""))
        if not ev.as_expected:
            verdict.append(f"\n(expected {ev.expected})", style="bold red")
        method = ev.method if wide else _short_method(ev.method)
        table.add_row(ev.claim, verdict, method, ev.summary, f"{ev.seconds:.1f}")
    return table


def _check_report_dir(directory: Path, *, force: bool) -> None:
    """Fail before any claim is checked if the report could not be written at the end."""
    import os

    from ..errors import OverwriteError

    if directory.exists() and not directory.is_dir():
        raise OverwriteError(f"--report {directory} exists and is not a directory")
    if not force and (directory / "report.md").exists():
        raise OverwriteError(f"--report {directory} already holds a report (report.md); pass --force to replace it")
    existing = next((p for p in [directory, *directory.parents] if p.exists()), None)
    if existing is not None and not os.access(existing, os.W_OK | os.X_OK):
        raise PermissionError(f"--report {directory}: {existing} is not writable")


def run(args: argparse.Namespace) -> int:
    """Check the claims; print a table (or JSON); write a report; return the exit status."""
    from rich.console import Console
    from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    from ..claims import UnknownClaimError, ordered_ids, verify
    from ..claims.report import to_json, write_report

    if args.list:
        return _print_list()
    known = ordered_ids()
    ids = list(dict.fromkeys(args.claims)) or known
    unknown = [cid for cid in ids if cid not in known]
    if unknown:
        raise UnknownClaimError(f"unknown claim {unknown[0]!r}; known claims: {', '.join(known)} (attnsym verify --list)")
    if args.report is not None:
        _check_report_dir(args.report, force=args.force)

    err = Console(stderr=True)
    evidences = []
    with Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), TextColumn("{task.completed}/{task.total}"),
                  TimeElapsedColumn(), console=err, transient=True, disable=not err.is_terminal) as progress:
        overall = progress.add_task("claims", total=len(ids))
        for cid in ids:
            inner = progress.add_task(f"  {cid}", total=None)

            def advance(done: int, total: int, _task=inner) -> None:
                progress.update(_task, completed=done, total=total)

            evidences.append(verify(cid, seed=args.seed, quick=args.quick, progress=advance))
            progress.remove_task(inner)
            progress.advance(overall)

    if args.json:
        sys.stdout.write(to_json(evidences, seed=args.seed, quick=args.quick))
    else:
        console = Console()
        if not console.is_terminal:  # a file or a pipe: no terminal to fit, use a readable width
            console = Console(width=max(console.width, 160))
        console.print(_table(evidences, console.width))
    if args.report is not None:
        written = write_report(evidences, args.report, seed=args.seed, quick=args.quick, overwrite=args.force,
                               figures=not args.no_figures)
        print(f"wrote {written[0]} (+{len(written) - 1} files)", file=sys.stderr)
    failed = [ev.claim for ev in evidences if not ev.as_expected]
    if failed:
        print(f"attnsym verify: {len(failed)} claim(s) not as expected: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0
