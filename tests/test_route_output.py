"""``attnsym route`` writes its files whole or not at all: staged in a sibling folder, renamed into place."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from models_support import minilm

from attnsym.cli import main

APPLE = ["the Apple phone launch event", "I like to eat apples"]
ROOT = Path(__file__).resolve().parents[1]


def _files(folder: Path) -> set[str]:
    return {p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()}


def _kill_while_writing(out: Path, *extra: str) -> None:
    """Start ``attnsym route`` in a process, SIGKILL it once its staging folder holds a file."""
    process = subprocess.Popen([sys.executable, "-m", "attnsym", "route", *APPLE, "--token", "apple", "-o", str(out),
                                *extra], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline and process.poll() is None:
            stages = [p for p in out.parent.glob(f".{out.name}.*.tmp") if p.is_dir()]
            if any(p.is_file() for stage in stages for p in stage.rglob("*")):
                break
            time.sleep(0.005)
        assert process.poll() is None, "route finished before it could be killed while writing"
        os.kill(process.pid, signal.SIGKILL)
    finally:
        process.wait(timeout=60)
    assert process.returncode == -signal.SIGKILL


@pytest.fixture(scope="module")
def complete(tmp_path_factory):
    minilm()  # skips without the packaged model
    out = tmp_path_factory.mktemp("route") / "out"
    assert main(["route", *APPLE, "--token", "apple", "-o", str(out)]) == 0
    return out, _files(out), (out / "report.md").read_bytes()


def test_a_killed_route_leaves_nothing_at_a_new_folder(complete, tmp_path):
    out = tmp_path / "out"
    _kill_while_writing(out)
    assert not out.exists()  # the staged files never appear under the target's name
    # the next run removes the dead run's staging folder and writes the whole set
    assert main(["route", *APPLE, "--token", "apple", "-o", str(out)]) == 0
    assert _files(out) == complete[1]
    assert not list(tmp_path.glob(".out.*.tmp"))


def test_a_killed_forced_route_leaves_the_previous_complete_set(complete, tmp_path):
    out = tmp_path / "out"
    assert main(["route", *APPLE, "--token", "apple", "-o", str(out)]) == 0
    (out / "report.md").write_text("the previous set\n", encoding="utf-8")
    before = _files(out)
    _kill_while_writing(out, "--force")
    assert _files(out) == before == complete[1]  # nothing added, nothing lost
    assert (out / "report.md").read_text(encoding="utf-8") == "the previous set\n"


def test_a_non_empty_folder_needs_force_and_is_left_alone(complete, tmp_path, capsys):
    (tmp_path / "notes.txt").write_text("mine", encoding="utf-8")
    assert main(["route", APPLE[0], "-o", str(tmp_path)]) == 2
    assert "--force" in capsys.readouterr().err
    assert _files(tmp_path) == {"notes.txt"}
    assert main(["route", APPLE[0], "--no-graphs", "-o", str(tmp_path), "--force"]) == 0
    assert {"notes.txt", "report.md", "text1/heatmaps.png"} <= _files(tmp_path)


def test_force_refused_by_a_later_target_writes_nothing(complete, tmp_path):
    out = tmp_path / "out"
    assert main(["route", APPLE[0], "--no-graphs", "-o", str(out)]) == 0
    before = {name: (out / name).read_bytes() for name in _files(out)}
    (out / "text1" / "route.json").unlink()
    os.mkfifo(out / "text1" / "route.json")  # a destination that must not be replaced
    assert main(["route", APPLE[0], "--no-graphs", "-o", str(out), "--force"]) == 2
    assert (out / "report.md").read_bytes() == before["report.md"]  # no new report beside the old files


def test_graph_files_number_layers_heads_and_texts_from_1_like_their_names(complete):
    from attnsym import graphs

    out = complete[0]
    G = graphs.read(out / "text2" / "graphs" / "layer3-head5.graphml")
    assert (G.graph["layer"], G.graph["head"], G.graph["text_number"]) == (3, 5, 2)
    assert "from 1" in G.graph["numbering"]
    assert sorted(G.nodes[i]["index"] for i in G) == list(range(G.number_of_nodes()))  # A's rows, from 0


def test_two_overlapping_routes_into_one_folder_the_later_refuses_and_the_earlier_set_stays(complete, tmp_path,
                                                                                             monkeypatch, capsys):
    # issue 37: two runs without --force started together both passed the check on entry; the second to finish
    # replaced the first's files. Now the run that finishes second refuses at its move, and the first's set stays.
    from attnsym.cli import route as route_cli

    out = tmp_path / "out"
    write_file, other_done = route_cli.atomic_write, []

    def meanwhile(path, data, **kw):  # the other run completes while this one writes its staged files
        if not other_done:
            other_done.append(True)
            monkeypatch.setattr(route_cli, "atomic_write", write_file)
            route_cli.write_route(out, minilm(), [APPLE[1]], graphs=False, flow=False)
        return write_file(path, data, **kw)

    monkeypatch.setattr(route_cli, "atomic_write", meanwhile)
    assert main(["route", APPLE[0], "--no-graphs", "--no-flow", "-o", str(out)]) == 2
    assert other_done and APPLE[1] in (out / "report.md").read_text(encoding="utf-8")
    assert APPLE[0] not in (out / "report.md").read_text(encoding="utf-8")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert last == (f"attnsym route: error: {out} was filled by another run while this one was writing (its files "
                    "are left as they are); pass --force to write into it")


def test_force_does_not_write_through_a_symlinked_subfolder(complete, tmp_path, capsys):
    out, mine = tmp_path / "out", tmp_path / "mydir" / "text1"
    assert main(["route", APPLE[0], "--no-graphs", "--no-flow", "-o", str(out)]) == 0
    mine.mkdir(parents=True)
    (mine / "route.json").write_text("the user's own", encoding="utf-8")
    import shutil

    shutil.rmtree(out / "text1")
    (out / "text1").symlink_to(mine)
    report = (out / "report.md").read_bytes()
    assert main(["route", APPLE[1], "--no-graphs", "--no-flow", "-o", str(out), "--force"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert "text1 is a symbolic link" in err[-1] and not any("Traceback" in line for line in err)
    assert (mine / "route.json").read_text(encoding="utf-8") == "the user's own"
    assert sorted(p.name for p in mine.iterdir()) == ["route.json"]
    assert (out / "report.md").read_bytes() == report and (out / "text1").is_symlink()
