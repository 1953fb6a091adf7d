"""Shared hypothesis strategies for the attnsym tests (add small functions; keep others' intact)."""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from attnsym import AttentionSpec


@st.composite
def attention_specs(draw, max_n: int = 4, max_d: int = 4, max_heads: int = 2, masks: bool = True) -> AttentionSpec:
    """Small valid AttentionSpecs over every variant: heads, causal, explicit masks, biases, positions, scale."""
    n = draw(st.integers(1, max_n))
    heads = draw(st.integers(1, max_heads))
    d_k = draw(st.integers(1, max(1, max_d // heads)))
    d_model = draw(st.integers(1, max_d))
    mask = None
    if masks and draw(st.booleans()):
        mask = draw(st.lists(st.lists(st.booleans(), min_size=n, max_size=n), min_size=n, max_size=n))
    return AttentionSpec(
        n=n,
        d_model=d_model,
        heads=heads,
        d_k=d_k,
        d_v=draw(st.integers(1, max(1, max_d // heads))),
        causal=draw(st.booleans()),
        mask=mask,
        scale=draw(st.sampled_from(["sqrt", "none", 0.5])),
        bias=draw(st.booleans()),
        positions=draw(st.sampled_from([None, "sinusoidal"])),
        output_projection=True if heads > 1 else draw(st.booleans()),
    )


@st.composite
def modern_attention_specs(draw, max_n: int = 5, max_heads: int = 4, qk_norm: bool = True) -> AttentionSpec:
    """Small specs with the options of today's model families drawn together: kv_heads (GQA, MQA), a window,
    softcap, QK-norm, an explicit float scale, bias="qkv", RoPE (pairing, partial rotary, scaling, float base), ALiBi."""
    n = draw(st.integers(1, max_n))
    heads = draw(st.integers(1, max_heads))
    kv_heads = draw(st.sampled_from([k for k in range(1, heads + 1) if heads % k == 0]))
    d_k = draw(st.sampled_from([2, 4]))
    positions = draw(st.sampled_from([None, "rope", "alibi"]))
    rope: dict = {}
    if positions == "rope":
        rope["rope_pairing"] = draw(st.sampled_from(["rotate_half", "interleaved"]))
        rope["rotary_pct"] = draw(st.sampled_from([1.0, 0.5])) if d_k == 4 else 1.0
        rope["position_base"] = draw(st.sampled_from([10000, 10000.0, 500000.0, 12.5]))
        rope["rope_scaling"] = draw(st.sampled_from([
            None, {"rope_type": "linear", "factor": 4.0},
            {"type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
             "original_max_position_embeddings": 8}]))
    window = draw(st.one_of(st.none(), st.integers(1, max_n + 1)))
    return AttentionSpec(
        n=n, d_model=draw(st.integers(1, 6)), heads=heads, kv_heads=kv_heads, d_k=d_k,
        d_v=draw(st.integers(1, 3)), causal=draw(st.booleans()), window=window,
        softcap=draw(st.sampled_from([None, 0.5, 50.0])),
        qk_norm=draw(st.booleans()) if qk_norm else False,
        scale=draw(st.sampled_from(["sqrt", "none", 256 ** -0.5])),
        bias=draw(st.sampled_from([False, True, "qkv"])), positions=positions,
        output_projection=True if heads > 1 else draw(st.booleans()), **rope,
    )


def random_arrays(spec: AttentionSpec, seed: int, dtype=np.float64, batch: tuple[int, ...] = ()) -> dict[str, np.ndarray]:
    """Random inputs for ``spec``: ``X`` (with optional batch axes), every parameter, and ``G``."""
    rng = np.random.default_rng(seed)
    shapes = spec.shapes
    out = {"X": rng.standard_normal((*batch, *shapes["X"]))}
    for name in spec.parameter_names:
        out[name] = rng.standard_normal(shapes[name]) / np.sqrt(shapes[name][0])
    out["G"] = rng.standard_normal((*batch, *shapes["Y"]))
    return {k: v.astype(dtype) for k, v in out.items()}


@st.composite
def row_stochastic(draw, min_n: int = 1, max_n: int = 6, zeros: bool = True) -> np.ndarray:
    """A random (n, n) attention-like matrix: non-negative rows summing to 1, some exact zeros."""
    n = draw(st.integers(min_n, max_n))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    M = rng.random((n, n))
    if zeros:
        M[rng.random((n, n)) < draw(st.sampled_from([0.0, 0.3, 0.7]))] = 0.0
        M[np.arange(n), rng.integers(0, n, n)] += 0.1  # every row keeps a non-zero weight
    return M / M.sum(axis=1, keepdims=True)


#: strings a graph file must survive (or be refused at export): whitespace, markup, quotes, control
#: characters, lone surrogates, the names the formats (and networkx's readers and writers) use themselves
HOSTILE_TEXT = st.one_of(
    st.sampled_from(["", " ", "a\nb", "\t", "a\r\nb", "<b>&amp;</b>", '"', "'", "\\", "\\n", "\x00", "\x1f", "\ud800",
                     "\ufffe", "id", "source", "target", "key", "label", "viz", "weight", "edges", "nodes", "-1", "01",
                     "type", "mutual", "networkx_key", "parents", "pid", "start", "end", "spells", "slices",
                     "node_default", "edge_default", "links", "directed", "multigraph", "graph", "name",
                     "1e5", "nan", "true", "->", "--", "{", "}", ";", "é", "𝔸", "\u202e"]),
    st.text(max_size=6),
)
#: attribute values: booleans, huge and small integers, floats including non-finite ones, hostile text
HOSTILE_VALUES = st.one_of(
    st.booleans(), st.integers(min_value=-(10**30), max_value=10**30), st.integers(-3, 3),
    st.floats(allow_nan=True, allow_infinity=True), st.sampled_from([0.1, -0.0, 5e-324, 1.7976931348623157e308]),
    HOSTILE_TEXT,
)


@st.composite
def hostile_graphs(draw, max_nodes: int = 5):
    """Small directed graphs with hostile ids, attribute names and values (for export round trips)."""
    import networkx as nx

    G = nx.DiGraph()
    ints = draw(st.booleans())
    ids = draw(st.lists(st.integers(-(10**20), 10**20) if ints else HOSTILE_TEXT, max_size=max_nodes, unique=True))
    for node in ids:
        G.add_node(node, **draw(st.dictionaries(HOSTILE_TEXT, HOSTILE_VALUES, max_size=2)))
    if len(ids) > 1:
        for u, v in draw(st.lists(st.tuples(st.sampled_from(ids), st.sampled_from(ids)), max_size=6)):
            G.add_edge(u, v, **draw(st.dictionaries(HOSTILE_TEXT, HOSTILE_VALUES, max_size=2)))
    G.graph.update(draw(st.dictionaries(HOSTILE_TEXT, HOSTILE_VALUES, max_size=2)))
    return G
