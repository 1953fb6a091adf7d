"""``attnsym verify``: check the claims of the shipped claims list and show the verdicts as a table.

Exit status: 0 when every checked claim has its expected verdict, 1 when one does not (so the
command can guard a CI job), 2 for usage errors (unknown claim id, bad seed, a report file
that exists without ``--force``).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from rich.console import Console, Group, RenderableType
from rich.padding import Padding
from rich.progress import BarColumn, Progress, SpinnerColumn, TaskID, TextColumn, TimeElapsedColumn
from rich.rule import Rule
from rich.table import Table
from rich.text import Text

from .._io import refuse_existing

__all__ = ["add_parser", "print_table", "run", "summary_line"]

_EPILOG = """\
examples:
  attnsym verify                                # every claim: a table of verdicts
  attnsym verify variance-scaling               # one claim
  attnsym verify variance-scaling --report out/ # Markdown report with equations and figures
  attnsym verify --quick --json > claims.json   # fast, machine-readable (CI)
  attnsym verify --list                         # the claim ids

exit status: 0 all claims as expected, 1 a claim expected to hold failed, 2 usage error,
3 an internal error (a bug; please report it)
"""


def _integer_at_least(name: str, minimum: int):
    """An argparse ``type``: an integer ≥ ``minimum`` (0 or 1), refused in one line naming the option."""
    expected = "a positive integer" if minimum == 1 else "a non-negative integer"

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{name} must be {expected} (got {text!r})") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"{name} must be {expected} (got {value})")
        return value

    return parse


_jobs = _integer_at_least("jobs", 1)
_seed = _integer_at_least("seed", 0)


def add_parser(subparsers) -> argparse.ArgumentParser:
    """Register ``attnsym verify``."""
    parser = subparsers.add_parser(
        "verify",
        help="check the claims about self-attention (exactly and by Monte Carlo)",
        description=("Check claims about self-attention; all of them when none is given. 'attnsym verify --list' "
                     "prints every claim id with its statement, expected verdict and source (the claims list "
                     "shipped with attnsym)."),
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("claims", nargs="*", metavar="CLAIM", help="claim ids to check (default: all)")
    parser.add_argument("--quick", action="store_true", help="smallest meaningful sizes and sample counts (CI)")
    parser.add_argument("--seed", type=_seed, default=0, help="seed of every random draw (default 0)")
    parser.add_argument("--json", action="store_true", help="print the evidence as JSON instead of a table")
    parser.add_argument("--timings", action="store_true",
                        help="with --json: add each check's wall seconds (the JSON is otherwise the same on every run)")
    parser.add_argument("-j", "--jobs", type=_jobs, default=None, metavar="N",
                        help="check the claims in N worker processes (default: one per CPU; 1: one after another "
                             "in this process, with per-claim progress); the evidence is the same")
    parser.add_argument("--report", type=Path, metavar="DIR", default=None,
                        help="write report.md, claims.json and figures/ (PNG and SVG) into DIR")
    parser.add_argument("--no-figures", action="store_true", help="with --report: skip the figures")
    parser.add_argument("--force", action="store_true", help="replace existing report files")
    parser.add_argument("--list", action="store_true", help="list the claim ids and statements, then exit")
    parser.set_defaults(run=run)
    return parser


#: How each verdict reads in the table, and its colour.
_VERDICT_WORDS = {"holds": "holds", "holds-under-conditions": "holds under conditions", "fails": "fails"}
_STYLE = {"holds": "green", "holds-under-conditions": "yellow", "fails": "red"}
#: The one sentence that explains why "holds under conditions" meets an expected "holds".
AS_EXPECTED_NOTE = ("as expected = the verdict the sources lead one to expect; 'holds under conditions' "
                    "meets an expected 'holds' (the check found the conditions the sources leave implicit)")
#: Below this terminal width each claim is shown as a block (name, verdict, time; then method and
#: evidence on their own wrapped lines) instead of a five-column table.
WIDE = 120


def _print_list() -> int:
    """The shipped claims list (``attnsym/claims/claims.toml``), then claims a user registered."""
    # lazy: importing attnsym.claims costs ~1.0 s CPU, which every `attnsym --help` would pay
    from ..claims import CLAIMS, catalogue, ordered_ids

    shipped = {e.id for e in catalogue()}
    rows = [(e.id, e.expected, e.statement, e.source) for e in catalogue()]
    rows += [(cid, CLAIMS[cid].expected, CLAIMS[cid].statement, CLAIMS[cid].source or "user claim")
             for cid in ordered_ids() if cid not in shipped]
    console = _console()
    if console.width >= WIDE:
        table = Table(title="claims attnsym checks", show_lines=False)
        table.add_column("claim id", style="bold", no_wrap=True)
        table.add_column("expected verdict", no_wrap=True)
        table.add_column("statement", ratio=3)
        table.add_column("source", ratio=1)
        for cid, expected, statement, source in rows:
            table.add_row(cid, _VERDICT_WORDS.get(expected, expected), statement, source)
        console.print(table)
    else:  # a block per claim: id and expected verdict, then statement and source, wrapped
        console.print(Text("claims attnsym checks (claim id, expected verdict; statement; source)", style="italic"))
        for cid, expected, statement, source in rows:
            console.print(Rule(style="dim"))
            console.print(Text(cid, style="bold") + Text(f"  expected: {_VERDICT_WORDS.get(expected, expected)}"))
            console.print(Padding(Text(statement), (0, 0, 0, 2)))
            console.print(Padding(Text("source: ", style="dim") + Text(source or "—"), (0, 0, 0, 2)))
    console.print(AS_EXPECTED_NOTE + ".", style="dim", highlight=False)
    return 0


def _short_method(method: str) -> str:
    """The kinds of evidence without their parenthesised details: 'symbolic proof + Monte Carlo'."""
    depth, kept = 0, []
    for char in method:
        depth += (char == "(") - (char == ")")
        if depth == 0 and char != ")":
            kept.append(char)
    return " ".join("".join(kept).split())


def _prose(text: str):
    """Plain text with its `code` spans shown styled, without the backticks."""

    out = Text()
    for i, part in enumerate(text.split("`")):
        out.append(part, style="cyan" if i % 2 else "")
    return out


def _verdict(ev):

    verdict = Text(_VERDICT_WORDS.get(ev.verdict, ev.verdict), style=_STYLE.get(ev.verdict, ""))
    if not ev.as_expected:
        verdict.append(f" (expected {_VERDICT_WORDS.get(ev.expected, ev.expected)})", style="bold red")
    return verdict


def _construction_mark(ev) -> str:
    """A note on the method when parts of the check are true by construction (they could not fail)."""
    from ..claims import BY_CONSTRUCTION  # lazy: see _print_list

    return f" (+ {len(ev.by_construction)} part(s) {BY_CONSTRUCTION})" if ev.by_construction else ""


def _wide_table(evidences):

    table = Table(title="attnsym verify", show_lines=True)
    table.add_column("claim", style="bold", no_wrap=True)
    table.add_column("verdict")
    table.add_column("method", ratio=1)
    table.add_column("key evidence", ratio=3)
    table.add_column("time (s)", justify="right", no_wrap=True)
    for ev in evidences:
        table.add_row(ev.claim, _verdict(ev), ev.method + _construction_mark(ev), _prose(ev.summary), f"{ev.seconds:.1f}")
    return table


def _blocks(evidences, width: int):
    """The narrow layout: per claim a line 'claim  verdict  time', then method and evidence, wrapped and indented."""

    head = Table.grid(expand=True, padding=(0, 1))
    head.add_column(ratio=1, no_wrap=True)
    head.add_column(no_wrap=True)
    head.add_column(justify="right", no_wrap=True, width=8)
    head.add_row(Text("claim", style="bold underline"), Text("verdict", style="bold underline"),
                 Text("time (s)", style="bold underline"))
    parts: list[RenderableType] = [Text("attnsym verify", style="italic", justify="center"), head]
    for ev in evidences:
        row = Table.grid(expand=True, padding=(0, 1))
        row.add_column(ratio=1, no_wrap=True, overflow="fold")
        row.add_column(no_wrap=True)
        row.add_column(justify="right", no_wrap=True, width=8)
        row.add_row(Text(ev.claim, style="bold"), _verdict(ev), f"{ev.seconds:.1f}")
        method = Text("method: ", style="dim") + Text(_short_method(ev.method) + _construction_mark(ev))
        evidence = Text("evidence: ", style="dim") + _prose(ev.summary)
        parts += [Rule(style="dim"), row, Padding(method, (0, 0, 0, 2)), Padding(evidence, (0, 0, 0, 2))]
    return Group(*parts)


def summary_line(evidences) -> str:
    """One line: how many claims, per verdict, and how many are not as expected.

    >>> from attnsym.claims import Evidence
    >>> summary_line([Evidence("a", "s", "holds", "m", "e"), Evidence("b", "s", "holds-under-conditions", "m", "e")])
    '2 claims: 1 holds, 1 holds under conditions, 0 fail; all as expected'
    """
    counts = {v: sum(ev.verdict == v for ev in evidences) for v in _VERDICT_WORDS}
    off = [ev.claim for ev in evidences if not ev.as_expected]
    verdicts = (f"{counts['holds']} {'holds' if counts['holds'] == 1 else 'hold'}, "
                f"{counts['holds-under-conditions']} {'holds' if counts['holds-under-conditions'] == 1 else 'hold'} "
                f"under conditions, {counts['fails']} {'fails' if counts['fails'] == 1 else 'fail'}")
    tail = "all as expected" if not off else f"{len(off)} not as expected ({', '.join(off)})"
    return f"{len(evidences)} claim{'s' if len(evidences) != 1 else ''}: {verdicts}; {tail}"


def _console():


    console = Console()
    if not console.is_terminal and "COLUMNS" not in os.environ:  # a file or a pipe: no terminal to fit
        console = Console(width=max(console.width, 160))
    return console


def print_table(evidences, console) -> None:
    """The verdicts: a table at 120 columns and more, a block per claim below; then the summary line."""
    console.print(_wide_table(evidences) if console.width >= WIDE else _blocks(evidences, console.width))
    console.print(summary_line(evidences), highlight=False)
    console.print("(" + AS_EXPECTED_NOTE + ")", style="dim", highlight=False)


def _check_report_dir(directory: Path, *, force: bool) -> None:
    """Fail before any claim is checked if the report could not be written at the end."""

    refuse_existing([directory / "report.md", directory / "claims.json"], overwrite=force)
    refuse_existing([directory], overwrite=force, folders=True)  # a non-empty folder needs --force, as everywhere
    existing = next((p for p in [directory, *directory.parents] if p.exists()), None)
    if existing is not None and not os.access(existing, os.W_OK | os.X_OK):
        raise PermissionError(f"--report {directory}: {existing} is not writable")


def run(args: argparse.Namespace) -> int:
    """Check the claims; print a table (or JSON); write a report; return the exit status."""

    # lazy: see _print_list
    from ..claims import UnknownClaimError, default_jobs, ordered_ids, verify_all
    from ..claims.report import FIGURE_FORMATS, to_json, write_report

    if args.list:
        return _print_list()
    known = ordered_ids()
    ids = list(dict.fromkeys(args.claims)) or known
    unknown = [cid for cid in ids if cid not in known]
    if unknown:
        raise UnknownClaimError(f"unknown claim {unknown[0]!r}; known claims: {', '.join(known)} (attnsym verify --list)")
    if args.report is not None:
        _check_report_dir(args.report, force=args.force)

    jobs = default_jobs() if args.jobs is None else args.jobs
    formats = FIGURE_FORMATS if args.report is not None and not args.no_figures else ()
    err = Console(stderr=True)
    # with worker processes the bar is redrawn as each claim finishes (no refresh thread: the
    # workers are forked from this process, and a fork should not copy a thread holding a lock)
    with Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), TextColumn("{task.completed}/{task.total}"),
                  TimeElapsedColumn(), console=err, transient=True, disable=not err.is_terminal,
                  auto_refresh=jobs == 1) as progress:
        overall = progress.add_task("claims", total=len(ids))
        inner: dict[str, TaskID] = {}

        def claim_progress(cid: str):
            inner[cid] = progress.add_task(f"  {cid}", total=None)

            def advance(done: int, total: int, _task=inner[cid]) -> None:
                progress.update(_task, completed=done, total=total)

            return advance

        def finished(ev) -> None:
            if ev.claim in inner:
                progress.remove_task(inner.pop(ev.claim))
            progress.advance(overall)
            progress.refresh()

        evidences = verify_all(ids=ids, seed=args.seed, quick=args.quick, jobs=jobs, formats=formats,
                               render_json=args.json or args.report is not None,
                               claim_progress=claim_progress, on_result=finished)

    if args.json:
        sys.stdout.write(to_json(evidences, seed=args.seed, quick=args.quick, timing=args.timings))
    else:
        print_table(evidences, _console())
    if args.report is not None:
        written = write_report(evidences, args.report, seed=args.seed, quick=args.quick, overwrite=args.force,
                               figures=not args.no_figures)
        print(f"wrote {written[0]} (+{len(written) - 1} files)", file=sys.stderr)
    failed = [ev.claim for ev in evidences if not ev.as_expected]
    if failed:
        print(f"attnsym verify: {len(failed)} claim(s) not as expected: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0
