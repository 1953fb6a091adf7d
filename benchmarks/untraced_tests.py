"""Which test functions may run without coverage's tracer: tests/conftest.py's ``UNTRACED``, measured.

On Python 3.11 coverage's tracer slows every frame about 2x, SymPy's and matplotlib's included.
A test function may run untraced when every line of ``attnsym`` it runs (setup, call and
teardown) is also run by a traced test or at import: then leaving it untraced changes no line
from covered to missed. This script reads a coverage run with per-test contexts and the
JUnit report of the same run, with every test traced (``ATTNSYM_TRACE_ALL=1``)::

    ATTNSYM_TRACE_ALL=1 python -m pytest --cov-context=test --junitxml=junit.xml
    python benchmarks/untraced_tests.py .coverage junit.xml            # checks conftest's UNTRACED
    python benchmarks/untraced_tests.py .coverage junit.xml --propose  # a new list

``--propose`` takes the functions whose traced run took at least ``--min-seconds`` (their
tracing costs about half of that) and, while any line would be missed, gives up the cheapest
function that runs such a line. Check mode prints the lines that only UNTRACED functions run
(none: the list is sound) and exits 1 if there are any.
"""

from __future__ import annotations

import argparse
import collections
import re
import sys
import xml.etree.ElementTree as ET  # our own pytest's report, not untrusted input
from pathlib import Path

import coverage

ROOT = Path(__file__).resolve().parents[1]
_PARAMETERS = re.compile(r"\[.*$")


def function_of(context: str) -> str:
    """``tests/test_x.py::test_y[p]|run`` -> ``test_x::test_y`` ('' for the context of no test)."""
    if not context:
        return ""
    path, _, name = context.rsplit("|", 1)[0].partition("::")
    return f"{Path(path).stem}::{_PARAMETERS.sub('', name)}"


def lines_by_functions(data_file: str) -> dict[tuple[str, int], set[str]]:
    """Each measured line -> the test functions (and '' for import time) that ran it."""
    data = coverage.CoverageData(basename=data_file)
    data.read()
    if not data.measured_contexts() - {""}:
        sys.exit(f"{data_file} has no per-test contexts: run pytest with --cov-context=test")
    return {(path, line): {function_of(c) for c in contexts}
            for path in data.measured_files() for line, contexts in data.contexts_by_lineno(path).items()}


def seconds_by_function(junit: str) -> collections.Counter:
    """Each test function's traced seconds (all its parameters), from pytest's JUnit report."""
    seconds: collections.Counter = collections.Counter()
    for case in ET.parse(junit).getroot().iter("testcase"):
        stem = case.get("classname", "").split(".")[-1]
        seconds[f"{stem}::{_PARAMETERS.sub('', case.get('name', ''))}"] += float(case.get("time", 0.0))
    return seconds


def only_by(lines: dict[tuple[str, int], set[str]], chosen: set[str]) -> list[tuple[str, int]]:
    """The lines no test outside ``chosen`` runs, nor an import: what untracing ``chosen`` would miss."""
    return [key for key, functions in lines.items() if functions and "" not in functions and functions <= chosen]


def propose(lines, seconds, min_seconds: float) -> set[str]:
    """The functions of at least ``min_seconds`` that may run untraced: the cheapest owner of a missed line goes first."""
    chosen = {f for f, s in seconds.items() if s >= min_seconds and f.startswith("test_")}
    while missed := only_by(lines, chosen):
        owners = {f for key in missed for f in lines[key]}
        chosen.discard(min(owners, key=lambda f: seconds[f]))
    return chosen


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("coverage_file")
    parser.add_argument("junit")
    parser.add_argument("--propose", action="store_true", help="print a new UNTRACED instead of checking it")
    parser.add_argument("--min-seconds", type=float, default=4.0)
    args = parser.parse_args(argv)
    lines, seconds = lines_by_functions(args.coverage_file), seconds_by_function(args.junit)
    if args.propose:
        chosen = propose(lines, seconds, args.min_seconds)
        by_file = collections.defaultdict(list)
        for f in sorted(chosen):
            stem, name = f.split("::")
            by_file[stem].append(name)
        print(f"# {len(chosen)} functions, {sum(seconds[f] for f in chosen):.0f} s traced")
        print("UNTRACED = {")
        for stem, names in sorted(by_file.items()):
            print(f"    {stem!r}: {tuple(names)!r},")
        print("}")
        return 0
    sys.path.insert(0, str(ROOT / "tests"))
    import conftest

    listed = {f"{stem}::{name}" for stem, names in conftest.UNTRACED.items() for name in names}
    ran = set().union(*lines.values())
    if not_traced := sorted(listed - ran):
        sys.exit(f"no line was traced in {not_traced[0]} (and {len(not_traced) - 1} more): "
                 "measure the whole suite, with ATTNSYM_TRACE_ALL=1")
    missed = only_by(lines, listed)
    for path, line in sorted(missed):
        print(f"{Path(path).relative_to(ROOT)}:{line} runs only in untraced tests: {sorted(lines[(path, line)])}")
    print(f"{len(listed)} untraced functions ({sum(seconds[f] for f in listed):.0f} s traced in this run); "
          f"{len(missed)} lines only they run")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
