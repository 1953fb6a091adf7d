"""The order and grouping in which xdist hands out the test files (tests/conftest.py)."""

from __future__ import annotations

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
