"""Progress bars: drawn on a terminal when asked, silent otherwise, never changing a result."""

from __future__ import annotations

import io
import sys

import numpy as np
import pytest

from attnsym import _progress
from attnsym.errors import SpecError


class _Terminal(io.StringIO):
    """Standard error as a terminal would be."""

    def isatty(self) -> bool:
        return True


def test_no_bar_unless_asked_and_seen(capsys):
    assert list(_progress.track(range(3), "x", progress=True)) == [0, 1, 2]  # capsys: not a terminal
    assert list(_progress.track(range(3), "x", progress=False)) == [0, 1, 2]
    assert capsys.readouterr().err == ""
    assert _progress.shown(False) is False


def test_a_terminal_gets_a_bar_with_counts(monkeypatch):
    terminal = _Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    assert _progress.shown(True)
    assert [x * 2 for x in _progress.track([1, 2, 3], "doubling", progress=True)] == [2, 4, 6]
    drawn = terminal.getvalue()
    assert "doubling" in drawn and "3/3" in drawn


def test_progress_must_be_a_bool():
    with pytest.raises(SpecError, match="progress must be True or False"):
        list(_progress.track([1], "x", progress="yes"))


@pytest.fixture(scope="module")
def model():
    from attnsym.models.evidence import packaged_model

    m = packaged_model()
    if m is None:
        pytest.skip("the packaged model is not installed")
    return m


def test_route_in_batches_with_a_bar_gives_the_routes_of_one_batch(model, monkeypatch):
    texts = ["a", "I like to eat apples", "the cat sat on the mat", "b c d", "apples and pears"]
    whole = model.route(texts)
    terminal = _Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    batched = model.route(texts, progress=True, batch_size=2)
    assert "routing 5 texts" in terminal.getvalue() and "3/3" in terminal.getvalue()  # 3 batches
    assert [r.tokens for r in batched] == [r.tokens for r in whole]
    for a, b in zip(batched, whole, strict=True):
        np.testing.assert_allclose(a.attention, b.attention, atol=1e-6)


def test_route_refuses_a_bad_batch_size(model):
    from attnsym.models import ModelError

    with pytest.raises(ModelError, match="batch_size must be a positive integer"):
        model.route(["a", "b"], batch_size=0)


def test_a_notebook_gets_a_bar_only_with_ipywidgets(monkeypatch):
    import types

    class ZMQInteractiveShell:  # the kernel's shell, as IPython names it
        pass

    fake = types.ModuleType("IPython")
    fake.get_ipython = ZMQInteractiveShell
    monkeypatch.setitem(sys.modules, "IPython", fake)
    monkeypatch.setattr(sys, "stderr", io.StringIO())  # a kernel's stderr is no terminal
    found = {"ipywidgets": True}
    monkeypatch.setattr(_progress.importlib.util, "find_spec", lambda name: object() if found.get(name) else None)
    assert _progress.shown(True)
    found["ipywidgets"] = False  # rich would only warn "install ipywidgets": no bar
    assert not _progress.shown(True)
