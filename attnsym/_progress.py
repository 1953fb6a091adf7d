"""Progress bars for the long loops of the Python API and the CLI: one helper, drawn by rich.

A long call takes ``progress=`` (``False`` by default in the API; the CLI passes ``True``). A
bar is drawn only when it is asked for *and* someone can see it: standard error is a terminal,
or the code runs in a Jupyter kernel with ``ipywidgets`` installed (rich draws its live bar there
with a widget). In a pipe, a file, a CI log or a test nothing is drawn,
so output stays byte for byte the same. The bar goes to standard error and disappears when the
loop ends (``transient``), leaving the caller's own output alone; it never changes a result.

rich is imported only when a bar is drawn: ``rich.progress`` costs ~0.09 s to import, which a
call without a bar (every test, every pipe) should not pay.

>>> [x * x for x in track(range(4), "squaring", progress=False)]
[0, 1, 4, 9]
>>> with bar("working", total=2, progress=False) as advance:
...     advance(); advance()
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Callable, Iterable, Iterator, Sized
from contextlib import contextmanager
from typing import TypeVar

from ._checks import boolean

__all__ = ["bar", "shown", "track"]

T = TypeVar("T")


def _in_jupyter() -> bool:
    """True inside a Jupyter (IPython kernel) session with ipywidgets, which rich needs to draw a live bar there."""
    shell = sys.modules.get("IPython")
    get = getattr(shell, "get_ipython", None)
    return (get is not None and type(get()).__name__ == "ZMQInteractiveShell"
            and importlib.util.find_spec("ipywidgets") is not None)


def shown(progress: bool) -> bool:
    """Whether a bar asked for with ``progress`` is drawn: asked, and standard error is a terminal or Jupyter.

    >>> shown(False)
    False
    """
    if not boolean("progress", progress):
        return False
    isatty = getattr(sys.stderr, "isatty", None)
    return bool(isatty is not None and isatty()) or _in_jupyter()


@contextmanager
def bar(description: str, total: int | None, *, progress: bool) -> Iterator[Callable[..., None]]:
    """A bar of ``total`` steps (``None``: unknown, a spinner); yields ``advance(steps=1)``.

    Nothing is imported or drawn unless :func:`shown` says so; ``advance`` then does nothing.
    """
    if not shown(progress):
        yield lambda steps=1: None
        return
    # lazy: see the module docstring (0.09 s that a call without a bar does not pay)
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        SpinnerColumn,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    columns = [SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
               TimeElapsedColumn(), TextColumn("eta"), TimeRemainingColumn()]
    with Progress(*columns, console=Console(stderr=True), transient=True) as shown_bar:
        task = shown_bar.add_task(description, total=total)

        def advance(steps: int = 1) -> None:
            shown_bar.advance(task, steps)

        yield advance


def track(items: Iterable[T], description: str, *, total: int | None = None, progress: bool) -> Iterator[T]:
    """Iterate over ``items``, advancing a :func:`bar` by one per item (``total`` defaults to ``len(items)``)."""
    if total is None and isinstance(items, Sized):
        total = len(items)
    with bar(description, total, progress=progress) as advance:
        for item in items:
            yield item
            advance()

