"""The order and grouping in which xdist hands out the test files (tests/conftest.py)."""

from __future__ import annotations

import contextlib
import sys
import threading
from pathlib import Path

import conftest

TESTS = Path(__file__).parent


def test_every_timed_or_grouped_file_exists():
    """A renamed or removed file would leave a stale hint or break a group's shared cache silently."""
    names = {*conftest.FILE_SECONDS, *conftest._GROUP_OF}
    assert sorted(name for name in names if not (TESTS / f"{name}.py").is_file()) == []
    assert len(conftest._GROUP_OF) == sum(len(files) for files in conftest.SHARED_WORK.values())  # one group a file


def test_units_go_out_slowest_first_groups_whole_and_ties_in_order():
    queue = conftest._SlowestFirstQueue()
    for scope in ("attnsym/a.py", "tests/test_unlisted.py", "tests/test_backprop.py", "group:smollm2",
                  "tests/test_tour.py", "tests/test_other_unlisted.py"):
        queue[scope] = {}
    order = [queue.popitem(last=False)[0] for _ in range(len(queue))]
    assert order == ["group:smollm2", "tests/test_backprop.py", "tests/test_tour.py", "attnsym/a.py",
                     "tests/test_unlisted.py", "tests/test_other_unlisted.py"]
    assert conftest.scope_seconds("group:smollm2") == sum(conftest.FILE_SECONDS.get(name, conftest.SMALL_FILE_SECONDS)
                                                          for name in conftest.SHARED_WORK["smollm2"])


def test_a_grouped_file_is_one_unit_with_its_group_and_any_other_file_its_own():
    class Config:
        """What xdist's scheduler reads of pytest's config: ``-n 2 --dist loadfile``."""

        def getvalue(self, name):
            return {"dist": "loadfile", "tx": ["2*popen"]}[name]

    scheduler = conftest.pytest_xdist_make_scheduler(Config(), None)
    assert scheduler._split_scope("tests/test_models_causal.py::test_smollm2_predicts_paris") == "group:smollm2"
    assert scheduler._split_scope("tests/test_models_gguf.py::test_smollm2_plan") == "group:smollm2"
    assert scheduler._split_scope("tests/test_backprop.py::test_docs_page_generates") == "tests/test_backprop.py"
    assert scheduler._split_scope("attnsym/heads.py::attnsym.heads.probe") == "attnsym/heads.py"
    assert isinstance(scheduler.workqueue, conftest._SlowestFirstQueue)


def test_every_untraced_test_exists():
    """A renamed test would leave a stale UNTRACED entry (it would then be traced again: the figure errs low)."""
    import ast

    stale = []
    for stem, names in conftest.UNTRACED.items():
        path = TESTS / f"{stem}.py"
        defined = {node.name for node in ast.parse(path.read_text(encoding="utf-8")).body
                   if isinstance(node, ast.FunctionDef)} if path.is_file() else set()
        stale += [f"{stem}::{name}" for name in names if name not in defined]
    assert stale == []


def test_an_untraced_test_runs_with_coverage_s_tracer_off_and_others_do_not():
    """The hook takes a coverage tracer off around a listed test (any parameter), puts it back, and leaves others."""
    class Tracer:  # stands for coverage's CTracer: the hook removes only a tracer from coverage's modules
        __module__ = "coverage.tracer"

        def __call__(self, frame, event, arg):
            return None

    class Item:
        def __init__(self, path, name):
            self.path, self.name, self.originalname = Path(path), f"{name}[p]", name

    stem, names = next(iter(conftest.UNTRACED.items()))
    ours, theirs = Tracer(), (lambda frame, event, arg: None)
    original, original_threads = sys.gettrace(), threading.gettrace()
    try:
        for item, tracer, off in ((Item(TESTS / f"{stem}.py", names[0]), ours, True),
                                  (Item(TESTS / f"{stem}.py", "test_not_listed"), ours, False),
                                  (Item(TESTS / "test_not_a_listed_file.py", names[0]), ours, False),
                                  (Item(TESTS / f"{stem}.py", names[0]), theirs, False)):  # a debugger's stays
            sys.settrace(tracer)
            threading.settrace(tracer)
            protocol = conftest.pytest_runtest_protocol(item, None)
            next(protocol)  # the test runs here
            during = sys.gettrace(), threading.gettrace()
            with contextlib.suppress(StopIteration):
                next(protocol)
            after = sys.gettrace(), threading.gettrace()
            sys.settrace(original)
            assert during == ((None, None) if off else (tracer, tracer))
            assert after == (tracer, tracer)
    finally:
        sys.settrace(original)
        threading.settrace(original_threads)


def test_the_untraced_measure_gives_up_the_cheapest_owner_of_a_line_only_they_run():
    """benchmarks/untraced_tests.py: a line run only by candidates keeps one of them (the cheapest) traced."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("untraced_tests", TESTS.parent / "benchmarks" / "untraced_tests.py")
    measure = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(measure)
    assert measure.function_of("tests/test_a.py::test_b[x-1]|run") == "test_a::test_b"
    assert measure.function_of("") == ""
    lines = {("m.py", 1): {"", "test_a::slow"},            # also run at import: never missed
             ("m.py", 2): {"test_a::slow", "test_a::fast"},  # only candidates run it: one must stay traced
             ("m.py", 3): {"test_a::slow", "test_b::small"},  # a test below the threshold runs it too
             ("m.py", 4): {"test_a::slower"}}                 # only one candidate: it stays traced
    seconds = {"test_a::slow": 9.0, "test_a::fast": 5.0, "test_a::slower": 20.0, "test_b::small": 1.0}
    assert measure.propose(lines, seconds, min_seconds=4.0) == {"test_a::slow"}
    assert measure.only_by(lines, {"test_a::slow", "test_a::fast"}) == [("m.py", 2)]
