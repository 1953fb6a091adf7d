"""``attnsym graph``: files per head and input plus the MLP graph, refusals, .npy inputs."""

from __future__ import annotations

import numpy as np
import pytest

from attnsym.cli import main
from attnsym.graphs import attention_matrix, read
from attnsym.tolerances import TOLERANCES

TOL64 = TOLERANCES["float64"]  # the one table (attnsym.tolerances)


def test_random_inputs_write_one_graph_per_head_and_input(tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["graph", "--n", "6", "--seed", "0", "--heads", "2", "--format", "graphml", "-o", str(out)]) == 0
    names = sorted(p.name for p in out.iterdir())
    assert names == [f"attention_input{k}_head{h}.graphml" for k in (1, 2) for h in (1, 2)] + ["mlp.graphml"]
    G = read(out / "attention_input2_head1.graphml")
    assert G.number_of_nodes() == 6 and G.number_of_edges() == 36
    assert np.allclose(attention_matrix(G).sum(axis=1), 1.0, atol=TOL64.atol)
    assert read(out / "mlp.graphml").number_of_edges() == 8 * 8
    text = capsys.readouterr().out
    assert "MLP graph identical = True" in text and "input 1 vs input 2" in text and "routing distance head 1:" in text
    # a second run refuses to overwrite and leaves the files alone
    before = (out / "mlp.graphml").read_bytes()
    assert main(["graph", "--n", "6", "--seed", "1", "--heads", "2", "-o", str(out)]) == 2
    assert "exist" in capsys.readouterr().err and (out / "mlp.graphml").read_bytes() == before
    assert main(["graph", "--n", "6", "--seed", "1", "--heads", "2", "-o", str(out), "--force"]) == 0
    assert (out / "mlp.graphml").read_bytes() != before


def test_npy_inputs_and_weights(tmp_path, capsys):
    rng = np.random.default_rng(3)
    X = rng.standard_normal((3, 2))
    W = {name: rng.standard_normal((2, 2)) for name in ("wq", "wk", "wv")}
    np.save(tmp_path / "x.npy", X)
    for name, value in W.items():
        np.save(tmp_path / f"{name}.npy", value)
    argv = ["graph", "--x", str(tmp_path / "x.npy"), "--format", "json", "-o", str(tmp_path / "o"), "--tokens", "a,b,c"]
    argv += [arg for name in W for arg in (f"--{name}", str(tmp_path / f"{name}.npy"))]
    assert main(argv) == 0
    G = read(tmp_path / "o" / "attention_input1_head1.json")
    Q, K = X @ W["wq"], X @ W["wk"]
    S = Q @ K.T / np.sqrt(2)
    A = np.exp(S - S.max(axis=1, keepdims=True))
    A /= A.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(attention_matrix(G), A, rtol=TOL64.rtol)
    assert [G.nodes[i]["token"] for i in range(3)] == ["a", "b", "c"]
    np.testing.assert_array_equal(
        [[read(tmp_path / "o" / "mlp.json")[j][2 + k]["weight"] for k in range(2)] for j in range(2)], W["wv"]
    )


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--tokens", "a,b"], "tokens must have one label per position: expected 6 (got 2)"),
        (["--top-k", "0"], "--top-k must be a positive integer (got 0)"),
        (["--x", "missing.npy"], "no such file"),
        (["--heads", "3"], "--heads must divide d_model"),
    ],
)
def test_errors_are_one_line(tmp_path, capsys, extra, message):
    assert main(["graph", "-o", str(tmp_path / "o"), *extra]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_too_large_a_layer_is_refused_before_building_graphs(tmp_path, capsys):
    # --n 5000 built two 25-million-edge graphs, wrote 4.4 GB and was then killed for memory.
    out = tmp_path / "out"
    assert main(["graph", "--n", "5000", "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "n=5000" in err and "edges" in err and "--n" in err
    assert not out.exists()
    assert main(["graph", "--n", "100", "--inputs", "1", "-o", str(out)]) == 0  # an ordinary size still works
