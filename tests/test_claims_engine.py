"""The claims engine: registry, user claims, a deliberately false claim, reports, determinism, CLI."""

from __future__ import annotations

import json

import pytest
import sympy as sp

import attnsym as at
from attnsym.claims import (
    CLAIM_ORDER,
    CLAIMS,
    CheckContext,
    ClaimFailed,
    Evidence,
    UnknownClaimError,
    claim,
    ordered_ids,
    verify,
    verify_all,
)
from attnsym.claims.builtin.variance import variance_scaling_evidence
from attnsym.claims.report import render_report, to_json, to_jsonable, to_markdown, write_report
from attnsym.cli import main
from attnsym.symbolic.stats import d


@pytest.fixture
def user_claims():
    """Register user claims for one test and remove them afterwards."""
    added = []

    def register(claim_id, statement, check, **kw):
        claim(claim_id, statement, **kw)(check)
        added.append(claim_id)

    yield register
    for cid in added:
        CLAIMS.pop(cid, None)


def _tiny_figure():
    from matplotlib.figure import Figure

    fig = Figure(figsize=(2, 2))
    fig.subplots().plot([0, 1, 2], [0, 1, 4], "o-")
    return fig


def _ok(ctx):
    value = float(ctx.rng("user-ok").standard_normal())
    for step in range(3):
        ctx.advance(step + 1, 3)
    return Evidence("user-ok", "Two is even.", "holds" if 2 % 2 == 0 else "fails", method="arithmetic",
                    summary="2 mod 2 = 0", equations=(("parity", sp.Eq(sp.Mod(2, 2), 0)),),
                    details={"seed": ctx.seed, "draw": value, "table": [{"a": 1, "b": 2.5}]},
                    figures={"parabola": _tiny_figure})


def _false_variance(ctx):
    """The wrong claim Var[q·k] = d**2, checked by the very same machinery as the built-in one."""
    return variance_scaling_evidence(ctx, claimed_variance=d**2, claim_id="variance-is-d-squared",
                                     statement="q·k has variance d².")


def test_builtin_claims_are_registered_in_claims_md_order():
    ids = ordered_ids()
    assert ids[:2] == ["variance-scaling", "softmax-saturation"]
    builtin = [cid for cid in ids if cid in CLAIM_ORDER]
    assert builtin == [cid for cid in CLAIM_ORDER if cid in CLAIMS]
    assert {"variance-scaling", "softmax-saturation"} <= set(CLAIMS)


def test_user_claim_is_checked_like_a_builtin(user_claims):
    user_claims("user-ok", "Two is even.", _ok)
    ev = at.verify("user-ok", seed=3)
    assert (ev.verdict, ev.as_expected, ev.details["seed"]) == ("holds", True, 3)
    assert ordered_ids()[-1] == "user-ok"
    with pytest.raises(ValueError, match="already registered"):
        claim("user-ok", "again")(_ok)
    claim("user-ok", "replaced", replace_existing=True)(_ok)
    assert CLAIMS["user-ok"].statement == "replaced"


def test_a_deliberately_false_claim_is_reported_failing(user_claims):
    user_claims("variance-is-d-squared", "q·k has variance d².", _false_variance)
    ev = verify("variance-is-d-squared", quick=True)
    assert ev.verdict == "fails" and not ev.as_expected
    assert ev.details["exact checks"]["variance"] is False
    # the Monte Carlo rejects d**2 at every d > 1 on its own
    rejected = [r["agrees"] for r in ev.details["Monte Carlo"] if r["d"] > 1]
    assert len(rejected) >= 6 and not any(rejected)
    with pytest.raises(ClaimFailed, match="expected holds, got fails"):
        verify("variance-is-d-squared", quick=True, strict=True)


def test_wrong_mean_and_wrong_scaled_variance_fail_too():
    ctx = CheckContext(quick=True)
    assert variance_scaling_evidence(ctx, claimed_mean=1).verdict == "fails"
    assert variance_scaling_evidence(ctx, claimed_scaled_variance=1 / d).verdict == "fails"


def test_expected_fails_claim_is_as_expected_when_it_fails(user_claims):
    user_claims("known-false", "q·k has variance d².", _false_variance, expected="fails")
    assert verify("known-false", quick=True).as_expected


def test_engine_errors():
    with pytest.raises(UnknownClaimError, match="unknown claim 'nope'; known claims: variance-scaling"):
        verify("nope")
    with pytest.raises(KeyError):
        verify("nope")
    with pytest.raises(ValueError, match="seed must be a non-negative integer"):
        verify("variance-scaling", seed=-1)
    with pytest.raises(UnknownClaimError):
        verify_all(ids=["variance-scaling", "nope"])
    with pytest.raises(ValueError, match="verdict must be one of"):
        Evidence("x", "x", "maybe", method="m", summary="s")


def test_check_must_return_evidence(user_claims):
    user_claims("returns-none", "bad", lambda ctx: None)
    with pytest.raises(TypeError, match="must return an Evidence"):
        verify("returns-none")


def test_context_streams_are_reproducible_and_independent():
    ctx = CheckContext(seed=5)
    assert ctx.rng("a", 1).standard_normal() == CheckContext(seed=5).rng("a", 1).standard_normal()
    assert ctx.rng("a", 1).standard_normal() != ctx.rng("a", 2).standard_normal()
    assert ctx.rng("a").standard_normal() != CheckContext(seed=6).rng("a").standard_normal()


def test_progress_callback_is_driven(user_claims):
    user_claims("user-ok", "Two is even.", _ok)
    seen = []
    verify("user-ok", progress=lambda done, total: seen.append((done, total)))
    assert seen == [(1, 3), (2, 3), (3, 3)]


# ----------------------------------------------------------------------------- reports

@pytest.fixture(scope="module")
def quick_evidence():
    return [verify("variance-scaling", quick=True, seed=0)]


def test_markdown_report_has_equations_tables_and_figures(quick_evidence):
    rep = render_report(quick_evidence, seed=0, quick=True, formats=("png",))
    md = rep.markdown
    assert md.startswith("# Claims checked by attnsym")
    assert "$$\n\\operatorname{Var}\\left[q \\cdot k\\right] = d\n$$" in md
    assert "| d | samples |" in md
    assert "![variance-scaling: variance](figures/variance-scaling-variance.png)" in md
    assert rep.files["figures/variance-scaling-variance.png"][:4] == b"\x89PNG"


def test_json_is_plain_data(quick_evidence):
    doc = json.loads(to_json(quick_evidence, seed=0, quick=True))
    assert doc["seed"] == 0 and doc["all_as_expected"] is True
    entry = doc["claims"][0]
    assert entry["verdict"] == "holds-under-conditions" and "seconds" not in entry
    assert {"title", "text", "latex"} <= set(entry["equations"][0])
    assert to_jsonable({"x": sp.Rational(1, 3)}) == {"x": {"text": "1/3", "latex": "\\frac{1}{3}"}}


def test_same_seed_same_report_different_seed_different_numbers(tmp_path, quick_evidence):
    again = [verify("variance-scaling", quick=True, seed=0)]
    assert to_json(again, seed=0, quick=True) == to_json(quick_evidence, seed=0, quick=True)
    assert to_markdown(again, seed=0, quick=True) == to_markdown(quick_evidence, seed=0, quick=True)
    other = [verify("variance-scaling", quick=True, seed=1)]
    assert to_markdown(other, seed=1, quick=True) != to_markdown(quick_evidence, seed=0, quick=True)


def test_written_report_files_are_byte_identical_for_the_same_seed(tmp_path, user_claims):
    user_claims("user-ok", "Two is even.", _ok)
    a = write_report([verify("user-ok", seed=4)], tmp_path / "a", seed=4, quick=False)
    b = write_report([verify("user-ok", seed=4)], tmp_path / "b", seed=4, quick=False)
    assert [p.name for p in a] == ["report.md", "claims.json", "user-ok-parabola.png", "user-ok-parabola.svg"]
    for pa, pb in zip(a, b, strict=True):
        assert pa.read_bytes() == pb.read_bytes(), pa.name
    c = write_report([verify("user-ok", seed=5)], tmp_path / "c", seed=5, quick=False)
    assert c[1].read_bytes() != a[1].read_bytes()


def test_report_refuses_to_overwrite(tmp_path, quick_evidence):
    write_report(quick_evidence, tmp_path, seed=0, quick=True, figures=False)
    with pytest.raises(at.OverwriteError, match=r"report\.md exists"):
        write_report(quick_evidence, tmp_path, seed=0, quick=True, figures=False)
    write_report(quick_evidence, tmp_path, seed=0, quick=True, figures=False, overwrite=True)


# ----------------------------------------------------------------------------- CLI

def test_cli_json_and_exit_zero(capsys):
    assert main(["verify", "variance-scaling", "--quick", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [c["claim"] for c in doc["claims"]] == ["variance-scaling"]


def test_cli_table(capsys, user_claims):
    user_claims("user-ok", "Two is even.", _ok)
    assert main(["verify", "user-ok", "--seed", "2"]) == 0
    out = capsys.readouterr().out
    assert "user-ok" in out and "holds" in out and "arithmetic" in out


def test_cli_exit_one_when_a_claim_fails(user_claims, capsys):
    user_claims("variance-is-d-squared", "q·k has variance d².", _false_variance)
    assert main(["verify", "variance-is-d-squared", "--quick", "--json"]) == 1
    captured = capsys.readouterr()
    assert json.loads(captured.out)["claims"][0]["verdict"] == "fails"
    assert "not as expected: variance-is-d-squared" in captured.err


def test_cli_usage_errors_exit_two(tmp_path, capsys):
    assert main(["verify", "no-such-claim"]) == 2
    assert "unknown claim 'no-such-claim'" in capsys.readouterr().err
    with pytest.raises(SystemExit) as info:
        main(["verify", "--seed", "-3"])
    assert info.value.code == 2
    (tmp_path / "file").write_text("x")
    assert main(["verify", "variance-scaling", "--quick", "--report", str(tmp_path / "file")]) == 2


def test_cli_report_files_and_force(tmp_path, capsys, user_claims):
    user_claims("user-ok", "Two is even.", _ok)
    out = tmp_path / "out"
    assert main(["verify", "user-ok", "--report", str(out)]) == 0
    assert (out / "report.md").exists() and (out / "claims.json").exists()
    assert (out / "figures" / "user-ok-parabola.svg").read_bytes().startswith(b"<?xml")
    assert main(["verify", "user-ok", "--report", str(out)]) == 2
    assert "--force" in capsys.readouterr().err
    assert main(["verify", "user-ok", "--report", str(out), "--force", "--no-figures"]) == 0


def test_cli_list(capsys):
    assert main(["verify", "--list"]) == 0
    assert "softmax-saturation" in capsys.readouterr().out


def test_latex_with_bars_does_not_break_markdown_tables():
    from attnsym.claims.report import _table

    x = sp.Symbol("x")
    line = _table([{"value": sp.Abs(x), "text": "a|b"}])[2]
    assert line.count("|") - line.count("\\|") == 3  # only the cell separators


def test_verify_refuses_an_existing_report_before_checking_any_claim(tmp_path, monkeypatch, capsys):
    import attnsym.claims
    from attnsym.cli import main

    (tmp_path / "report.md").write_text("mine")
    calls = []
    monkeypatch.setattr(attnsym.claims, "verify", lambda *a, **k: calls.append(a))
    assert main(["verify", "gelu", "--quick", "--report", str(tmp_path)]) == 2
    assert calls == []
    assert "report.md exists; pass --force to replace it" in capsys.readouterr().err
    assert (tmp_path / "report.md").read_text() == "mine"
