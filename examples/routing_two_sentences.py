"""Two sentences, one set of weights: export both routing graphs and the MLP's fixed graph.

The embeddings are random stand-ins for two sentences of five tokens. Both go through the
same W_Q, W_K, W_V; the attention (routing) graphs differ, the MLP graph does not. Writes
GraphML (opens in Gephi, yEd, Cytoscape) and node-link JSON.

    python examples/routing_two_sentences.py [OUTPUT_DIR]      # default: a new temporary folder
"""

import sys
import tempfile
from pathlib import Path

import numpy as np

import attnsym as at

SENTENCES = (["the", "cat", "sat", "on", "mats"], ["a", "dog", "ran", "to", "parks"])


def main(out: Path) -> list[Path]:
    rng = np.random.default_rng(0)
    d = 8
    W_Q, W_K, W_V = (rng.standard_normal((d, d)) / np.sqrt(d) for _ in range(3))
    W_mlp = rng.standard_normal((d, d)) / np.sqrt(d)
    written, maps = [], []
    for k, tokens in enumerate(SENTENCES, start=1):
        X = rng.standard_normal((len(tokens), d))  # stand-in embeddings of the sentence
        _, A = at.numeric.attention(X, W_Q, W_K, W_V)
        maps.append(A)
        G = at.graphs.routing_graph(A, tokens=tokens)
        for suffix in (".graphml", ".json"):
            written.append(at.graphs.export(G, out / f"sentence-{k}{suffix}", overwrite=True))
        key, query, weight = max(G.edges(data="weight"), key=lambda edge: edge[2])
        print(f"sentence {k}: {G.number_of_edges()} edges; strongest: {G.nodes[query]['token']!r} attends to "
              f"{G.nodes[key]['token']!r} with weight {weight:.2f}")
    print(f"routing distance between the two sentences: {at.graphs.routing_distance(*maps):.3f}")
    M = at.graphs.mlp_graph(W_mlp)
    written.append(at.graphs.export(M, out / "mlp.graphml", overwrite=True))
    return written


if __name__ == "__main__":
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(tempfile.mkdtemp(prefix="attnsym-"))
    for path in main(out):
        print("wrote", path)
