"""The ``attnsym`` command-line tool: ``attnsym {tour,derive,verify,graph,plot,route,explore}``.

Each sub-command lives in its own module of this package, which defines
``add_parser(subparsers)``; the parser it adds sets ``run(args) -> int``. This package is the
only part of attnsym that prints.

Exit status: 0 success, 1 a check failed (a claim that should hold did not), 2 an error the
user can fix (a usage error, bad sizes, an unreadable file, an existing output without
``--force``), 3 an internal error (an unexpected exception: a bug to report). Each error is
printed as one line; ``--debug`` also shows the traceback, with the same exit status.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import sys
import traceback
from collections.abc import Sequence
from typing import NoReturn

from .. import __version__
from .._checks import finite_real, non_negative_int, positive_int
from ..errors import AttnsymError, OverwriteError, SpecError

__all__ = ["EXIT_INTERNAL", "EXIT_USAGE", "build_parser", "console", "exit_status", "main"]

COMMANDS = ("tour", "derive", "verify", "graph", "plot", "route", "explore", "heads")

_DESCRIPTION = """\
attnsym makes the mathematics of self-attention explicit.

An MLP mixes token features with a fixed matrix, y = W x. Attention first computes its
mixing matrix from the data, A(X) = softmax(Q K^T / sqrt(d_k)), then applies it:
Y = A(X) V, i.e. y = W(x) x. The commands below derive those equations (SymPy), check the
claims made about them (exactly and by Monte Carlo), and draw attention as a routing graph.
"""

_EPILOG = """\
examples:
  attnsym tour                              # everything, written to ./attnsym-tour/
  attnsym derive --n 2 --d 2 --format md    # the forward pass, step by step
  attnsym verify variance-scaling           # check one claim
  attnsym graph --n 6 --heads 2 -o out/     # routing graphs as GraphML
  attnsym route "I ate an apple for lunch" "I bought an Apple phone today" --word apple -o out/
                                            # a real model's routing, the same word in two contexts

'attnsym COMMAND --help' explains each command.

exit status: 0 success, 1 a check failed (a claim expected to hold did not), 2 an error you
can fix (a usage error, bad input, an existing output without --force), 3 an internal error
(an unexpected exception: please report it; --debug shows the traceback)
"""


class _Parser(argparse.ArgumentParser):
    """argparse, with a usage error printed as one line (the sub-command parsers inherit it)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see '{self.prog} --help')\n")


def _positive_or_inf(name: str, value: float) -> float:
    if value != value or value <= 0:
        raise SpecError(f"{name} must be a positive number or inf (got {value})")
    return value


#: option dest -> the validator its value goes through, whichever sub-command defines it
_OPTION_CHECKS = {
    "n": positive_int, "d_model": positive_int, "heads": positive_int, "inputs": positive_int,
    "top_k": positive_int, "dpi": positive_int, "seed": non_negative_int,
    "threshold": finite_real, "max_terms": _positive_or_inf,
}


def _check_options(args: argparse.Namespace, options: dict[str, str]) -> None:
    """Range-check every numeric option in one place, naming it as typed (``--n must be ... (got 0)``)."""
    for dest, check in _OPTION_CHECKS.items():
        value = getattr(args, dest, None)
        if value is not None and dest in options:
            check(options[dest], value)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every sub-command registered."""
    parser = _Parser(
        prog="attnsym",
        description=_DESCRIPTION,
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"attnsym {__version__}")
    parser.add_argument("--debug", action="store_true", help="show full tracebacks instead of one-line errors")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS:
        importlib.import_module(f"{__name__}.{name}").add_parser(subparsers)
    return parser


def _options_as_typed(parser: argparse.ArgumentParser, command: str, argv: Sequence[str]) -> dict[str, str]:
    """``dest -> option`` of the sub-command's flags, spelled as the user typed them (``--d`` or ``--d-model``)."""
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices[command]
    typed = {arg.split("=", 1)[0] for arg in argv if arg.startswith("-")}
    names = {}
    for action in sub._actions:
        if action.option_strings and action.dest not in ("help", "force", "output"):
            spelled = [o for o in action.option_strings if o in typed]
            names[action.dest] = (spelled or [o for o in action.option_strings if o.startswith("--")]
                                  or action.option_strings)[0]
    return names


def _in_cli_words(text: str, options: dict[str, str]) -> str:
    """Name the argument an error is about (its first word: ``heads must ...``) as the option that set it."""
    first, _, rest = text.partition(" ")
    return f"{options[first]} {rest}" if first in options and rest else text


def _one_line(error: BaseException, options: dict[str, str]) -> str:
    """The message of an error the user can act on, on one line, in the command line's words."""
    if isinstance(error, OverwriteError) and error.paths:
        more = f" (and {len(error.paths) - 1} more)" if len(error.paths) > 1 else ""
        if "while this run was writing" in str(error):  # another run filled the folder meanwhile (attnsym._io)
            return (f"{error.paths[0]} was filled by another run while this one was writing (its files are left as "
                    "they are); pass --force to write into it")
        if "not empty" in str(error):
            return (f"{error.paths[0]} exists and is not empty; pass --force to write into it "
                    "(files of the same name are replaced)")
        return f"{error.paths[0]} exists{more}; pass --force to replace {'them' if more else 'it'}"
    if isinstance(error, MemoryError):
        return "out of memory; use smaller sizes (--n, --d, --heads)"
    if isinstance(error, RecursionError):
        return "the input is nested too deeply to process"
    text = str(error) or type(error).__name__
    if isinstance(error, AttnsymError):
        text = _in_cli_words(text, options)
    elif not isinstance(error, OSError):
        text = f"internal error ({type(error).__name__}: {text}); please report it, --debug shows the traceback"
    return " ".join(text.split())


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status (0 success, 1 a check failed, 2 an error, 3 an internal error).

    Every error is printed as one line on standard error, never a traceback (``--debug`` adds
    it, keeping the exit status): attnsym's own errors (:class:`~attnsym.AttnsymError`),
    file-system errors and running out of memory with status 2, as a usage error; anything
    else is an internal error (a bug; please report it) with status 3.

    >>> main(["--version"])  # doctest: +SKIP
    attnsym 0.1.0
    """
    parser = build_parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parser.parse_args(argv)  # a usage error exits 2 after one line (see _Parser.error)
    if args.command is None:
        parser.print_help()
        return 2
    options = _options_as_typed(parser, args.command, argv)
    try:
        _check_options(args, options)
        return int(args.run(args) or 0)
    except KeyboardInterrupt:
        print("attnsym: interrupted", file=sys.stderr)
        return 130
    except Exception as error:  # the one place that turns any failure into one line
        if args.debug:
            traceback.print_exc()
        message = _one_line(error, options)
        print(f"attnsym {args.command}: error: {message}", file=sys.stderr)
        return exit_status(error)


#: exit status of an error the user can fix (as argparse's usage errors)
EXIT_USAGE = 2
#: exit status of an internal error: an unexpected exception, a bug in attnsym to report
EXIT_INTERNAL = 3


def exit_status(error: BaseException) -> int:
    """2 for an error the user can fix (attnsym's own, the file system's, out of memory), 3 for an internal error."""
    if isinstance(error, AttnsymError | OSError | MemoryError | RecursionError):
        return EXIT_USAGE
    return EXIT_INTERNAL


def console(argv: Sequence[str] | None = None) -> int:
    """The ``attnsym`` program (and ``python -m attnsym``): :func:`main`, then the heap frozen for a quick exit.

    At exit CPython collects the whole heap once more before it tears the modules down; with
    SymPy, NumPy and matplotlib loaded that took 0.26–0.34 s of every ``attnsym verify
    --quick`` here, 0.04 s with the heap frozen (:func:`gc.freeze`). Nothing of attnsym's waits
    for that collection: its files are written and closed before :func:`main` returns, and
    ``atexit`` handlers still run. In-process callers (tests, notebooks) call :func:`main`,
    which freezes nothing.
    """
    code = main(argv)
    gc.freeze()
    return code


if __name__ == "__main__":  # pragma: no cover
    sys.exit(console())
