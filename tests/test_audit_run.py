"""attnsym.audits.audit and ``attnsym audit``: Parquet rows, executors byte for byte, resume after SIGKILL, faults."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest
from models_support import FAMILY_WORDS, decoder_family

from attnsym import audits as audit_package
from attnsym import models
from attnsym.audits import AuditError, audit
from attnsym.cli import main

pq = pytest.importorskip("pyarrow.parquet")
ROOT = Path(__file__).resolve().parents[1]


def _texts(count: int, seed: int = 0) -> list[str]:
    rng = np.random.default_rng(seed)
    words = FAMILY_WORDS[2:]
    return [" ".join(rng.choice(words, size=int(rng.integers(5, 40)))) for _ in range(count)]


@pytest.fixture(scope="module")
def tiny():
    folder, _ = decoder_family("llama")
    return folder, models.load(folder)


@pytest.fixture(scope="module")
def reference(tiny, tmp_path_factory):
    out = tmp_path_factory.mktemp("reference") / "out"
    result = audit(tiny[1], _texts(8), out, executor="serial", block=16)
    return result, (out / "heads.parquet").read_bytes()


def test_rows_carry_ids_tokens_model_and_revision(tiny, reference):
    result, _ = reference
    t = pq.read_table(result.table).to_pydict()
    L, H = 2, 4
    assert len(t["layer"]) == 8 * L * H and result.measured == 8
    assert t["text_index"] == sorted(t["text_index"])  # ordered by text index
    assert set(t["model"]) == {tiny[1].name} and set(t["revision"]) == {audit_package.revision(tiny[1])}
    assert t["text_id"][0] == "1" and t["tokens"][0] == len(_texts(8)[0].split())
    s = tiny[1].head_stats(_texts(8)[0], block=16)
    rows = [r for r in zip(t["layer"], t["head"], t["entropy"], t["induction_mass"], strict=True)][: L * H]
    for (k, h, e, ind), rec in zip(rows, s.records(), strict=True):
        assert (k, h) == (rec["layer"], rec["head"]) and e == rec["entropy"] and ind == rec["induction_mass"]
    assert (result.out / "report.md").read_text().startswith("# Audit of")


@pytest.mark.slow
def test_serial_process_pool_and_dask_are_byte_identical(tiny, reference, tmp_path):
    distributed = pytest.importorskip("distributed")
    _, expected = reference
    audit(tiny[1], _texts(8), tmp_path / "pool", jobs=2, block=16, report=False)
    assert (tmp_path / "pool" / "heads.parquet").read_bytes() == expected
    audit(tiny[1], _texts(8), tmp_path / "threads", executor=ThreadPoolExecutor(2), block=16, report=False)
    assert (tmp_path / "threads" / "heads.parquet").read_bytes() == expected
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, host="127.0.0.1", dashboard_address=None,
                                  processes=True) as cluster, distributed.Client(cluster) as client:
        audit(tiny[1], _texts(8), tmp_path / "dask", executor=client.get_executor(), block=16, report=False)
    assert (tmp_path / "dask" / "heads.parquet").read_bytes() == expected


def test_resume_skips_done_texts_and_another_audit_is_refused(tiny, reference, tmp_path):
    _, expected = reference
    out = tmp_path / "out"
    audit(tiny[1], _texts(8), out, executor="serial", block=16, report=False)
    (out / "parts" / "000003.parquet").unlink()
    (out / "heads.parquet").unlink()
    again = audit(tiny[1], _texts(8), out, executor="serial", block=16, report=False)
    assert again.resumed == 7 and (out / "heads.parquet").read_bytes() == expected
    with pytest.raises(AuditError, match="holds another audit's results \\(corpus"):
        audit(tiny[1], _texts(9), out, executor="serial", block=16)
    with pytest.raises(AuditError, match="block 16 there, 32 here"):
        audit(tiny[1], _texts(8), out, executor="serial", block=32)
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "notes.txt").write_text("mine")
    with pytest.raises(AuditError, match="is not empty and holds no audit"):
        audit(tiny[1], _texts(8), tmp_path / "other", executor="serial")


def test_too_long_texts_are_refused_or_truncated_and_counted(tmp_path):
    m = models.load("all-MiniLM-L6-v2")
    texts = ["a short one", "word " * 600]
    refused = audit(m, texts, tmp_path / "r", executor="serial", report=True)
    assert (refused.measured, refused.refused) == (1, 1)
    assert "1 refused" in (tmp_path / "r" / "report.md").read_text()
    cut = audit(m, texts, tmp_path / "t", executor="serial", too_long="truncate", report=False)
    t = pq.read_table(cut.table).to_pydict()
    assert (cut.measured, cut.truncated) == (2, 1) and max(t["tokens"]) == 512


def test_blank_lines_are_skipped_and_counted_in_the_result_report_and_cli(tiny, tmp_path, capsys):
    corpus = tmp_path / "c.txt"
    corpus.write_text("the apple phone\n\n   \ni like to eat apples\n\t\n", encoding="utf-8")
    result = audit(tiny[1], corpus, tmp_path / "out", executor="serial", block=16)
    assert (result.texts, result.measured, result.skipped) == (2, 2, 3)
    assert "3 blank lines skipped" in (tmp_path / "out" / "report.md").read_text()
    assert main(["audit", str(corpus), "--model", str(tiny[0]), "-o", str(tmp_path / "out"), "--block", "16",
                 "--executor", "serial", "--no-report"]) == 0  # the same audit: it resumes, and says so
    assert "3 blank lines skipped, 2 done before" in capsys.readouterr().out


def _cli(folder: Path, corpus: Path, out: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "attnsym", "audit", str(corpus), "--model", str(folder), "-o", str(out),
            "--block", "16", "--no-report", *extra]


def _env():
    return {**os.environ, "PYTHONPATH": str(ROOT), "MPLBACKEND": "Agg"}


@pytest.mark.slow
def test_kill_and_resume_at_random_moments(tiny, reference, tmp_path):
    _, expected = reference
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(_texts(8)) + "\n")
    out = tmp_path / "out"
    rng = np.random.default_rng(3)
    kills = 0
    for _ in range(12):
        proc = subprocess.Popen(_cli(tiny[0], corpus, out, "--executor", "serial"), env=_env(),
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            proc.wait(timeout=float(rng.uniform(0.5, 4.0)))
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            kills += 1
            continue
        assert proc.returncode == 0, proc.stderr.read().decode()
        break
    else:
        assert subprocess.run(_cli(tiny[0], corpus, out, "--executor", "serial"), env=_env()).returncode == 0
    assert kills >= 1
    assert (out / "heads.parquet").read_bytes() == expected
    assert not list(out.rglob("*.tmp"))  # no temporary left behind


def _workers_of(pid: int) -> list[int]:
    found = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        for child in (task / "children").read_text().split():
            cmd = Path(f"/proc/{child}/cmdline").read_bytes()
            if b"spawn_main" in cmd:
                found.append(int(child))
    return found


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="finds the pool's workers through /proc")
def test_a_worker_killed_mid_text_is_redone(tiny, reference, tmp_path):
    _, expected = reference
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(_texts(8)) + "\n")
    out = tmp_path / "out"
    proc = subprocess.Popen(_cli(tiny[0], corpus, out, "--executor", "process", "--jobs", "1"), env=_env(),
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    killed = None
    deadline = time.monotonic() + 120
    while killed is None and proc.poll() is None and time.monotonic() < deadline:
        workers = _workers_of(proc.pid)
        if workers and (out / "parts").is_dir():
            time.sleep(0.3)
            os.kill(workers[0], signal.SIGKILL)
            killed = workers[0]
        time.sleep(0.05)
    assert proc.wait(timeout=300) == 0, proc.stderr.read().decode()
    assert killed is not None
    assert (out / "heads.parquet").read_bytes() == expected


@pytest.mark.parametrize("argv, match", [
    (["audit", "stdlib", "-o", "{tmp}/o", "--executor", "dask"], "needs --scheduler"),
    (["audit", "{tmp}/missing.txt", "-o", "{tmp}/o"], "is not a file"),
    (["audit", "stdlib", "-o", "{tmp}/o", "--jobs", "0"], "--jobs must be a positive integer"),
])
def test_cli_errors_are_one_line(argv, match, tmp_path, capsys):
    assert main([a.replace("{tmp}", str(tmp_path)) for a in argv]) == 2
    err = capsys.readouterr().err.strip()
    assert match in err and "\n" not in err


def test_summary_counts_sinks_and_classes(reference):
    result, _ = reference
    s = audit_package.summarise(result.table)
    t = pq.read_table(result.table).to_pydict()
    layer, first = np.asarray(t["layer"]), np.asarray(t["first_token_mass"])
    for q in range(s.layers):
        sel = layer == q
        assert s.sink_rate[q] == pytest.approx(np.mean(first[sel] >= 0.4))
        assert s.sink_low[q] <= s.sink_rate[q] + 1e-12 and s.sink_rate[q] <= s.sink_high[q] + 1e-12
        assert sum(int(c[q]) for c in s.classes.values()) == sel.sum()  # every (text, head) has one class
    assert s.entropy.shape == (8, s.layers) and np.all(s.entropy <= s.log_n[:, None] + 1e-9)
