"""Generate the documentation page "Attention as routing" (routing.md) at build time.

Every figure, table and number on the page is computed here by ``attnsym.graphs`` while the
docs are built: the routing and contrast figures, the metrics, Table 1 of Vaswani et al.
(2017) measured on real computation graphs, rollout and flow, and their cost.
"""

from __future__ import annotations

import io
import time

import mkdocs_gen_files
import numpy as np

import attnsym as at
from attnsym import graphs as gr
from attnsym import plots


def _png(name: str, fig) -> str:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=100, bbox_inches="tight")
    with mkdocs_gen_files.open(f"figures/{name}.png", "wb") as handle:
        handle.write(buffer.getvalue())
    return f"figures/{name}.png"


def _matrix(M, rows, cols, digits=3) -> str:
    M = np.asarray(M)
    lines = ["| | " + " | ".join(cols) + " |", "|---|" + "---|" * len(cols)]
    lines += [f"| **{r}** | " + " | ".join(f"{v:.{digits}f}" for v in row) + " |" for r, row in zip(rows, M, strict=True)]
    return "\n".join(lines)


TOKENS = ["the", "cat", "sat", "on", "the", "mat"]
spec = at.AttentionSpec(n=6, d_model=8, heads=2)
rng = np.random.default_rng(0)
weights = {name: rng.standard_normal(spec.shapes[name]) / np.sqrt(spec.shapes[name][0]) for name in spec.parameter_names}
X1, X2 = rng.standard_normal((2, 6, 8))
c = gr.contrast(spec, X1, X2, weights, tokens=TOKENS)
A = c.A1[0]
G = gr.routing_graph(A, tokens=TOKENS)

# ---------------------------------------------------------------------------------------------- figures
fig_columns = _png("routing-columns", plots.draw_routing(G, title="Head 0: keys (left) -> queries (right)"))
fig_circle = _png("routing-circle", plots.draw_routing(G, layout="circle", title="The same graph on a circle"))
fig_topk = _png("routing-top2", plots.draw_routing(gr.routing_graph(A, tokens=TOKENS, top_k=2), title="top_k=2 per query"))
fig_contrast = _png("routing-contrast", plots.draw_contrast(c, tokens=TOKENS))

edges = sorted(G.in_edges(2, data="weight"), key=lambda e: -e[2])
edge_table = "\n".join(
    ["| edge (key → query) | weight `A[2, j]` |", "|---|---|"]
    + [f"| {u} `{TOKENS[u]}` → 2 `sat` | {w:.4f} |" for u, _, w in edges]
)
entropy = gr.row_entropy(A)
effective = gr.effective_attended(A)
ins, outs = gr.in_strength(G), gr.out_strength(G)
metric_table = "\n".join(
    ["| position | token | row entropy (nats) | effective attended | in-strength | out-strength (attention received) |",
     "|---|---|---|---|---|---|"]
    + [f"| {i} | `{TOKENS[i]}` | {entropy[i]:.3f} | {effective[i]:.2f} | {ins[i]:.3f} | {outs[i]:.3f} |" for i in range(6)]
)
changes = c.changes[0]
change_table = "\n".join(
    ["| query | token | row TV distance | top key changed | entropy change |", "|---|---|---|---|---|"]
    + [f"| {i} | `{TOKENS[i]}` | {changes.row_tv[i]:.3f} | {bool(changes.top_key_changed[i])} | "
       f"{changes.entropy_change[i]:+.3f} |" for i in range(6)]
)
same = gr.contrast(spec, X1, X1.copy(), weights)

# ---------------------------------------------------------------------------------------------- Table 1
ns = list(range(2, 65))
K, R = 3, 4
rows = gr.table1(ns, k=K, r=R)
names = {
    "self_attention": "Self-attention",
    "recurrent": "Recurrent",
    "convolution": f"Convolutional, contiguous (k = {K})",
    "dilated_convolution": f"Convolutional, dilated (k = {K})",
    "restricted_self_attention": f"Self-attention (restricted, r = {R})",
}
show = [2, 4, 8, 16, 32, 64]
table1 = [
    "| layer type | sequential ops at n = " + ", ".join(map(str, show)) + " | decided | paper "
    "| max path length at n = " + ", ".join(map(str, show)) + " | decided (explained by) | paper |",
    "|---|---|---|---|---|---|---|",
]
for row in rows:
    pick = [ns.index(n) for n in show]
    seq = ", ".join(str(row["sequential_values"][p]) for p in pick)
    path = ", ".join(str(row["path_values"][p]) for p in pick)
    by = ", ".join(row["path"].explained_by) or "no candidate"
    table1.append(
        f"| {names[row['arch']]} | {seq} | {row['sequential'].growth} | {row['paper_sequential']} "
        f"| {path} | {row['path'].growth} ({by}) | {row['paper_path']} |"
    )


def _paths_figure():
    from matplotlib.figure import Figure

    fig = Figure(figsize=(9, 3.6), layout="constrained")
    left, right = fig.subplots(1, 2)
    for row in rows:
        left.plot(ns, row["sequential_values"], label=names[row["arch"]])
        right.plot(ns, row["path_values"], label=names[row["arch"]])
    left.set(title="sequential operations (depth of one layer's DAG)", xlabel="n", ylabel="edges")
    right.set(title="maximum path length (longest shortest path)", xlabel="n")
    right.legend(fontsize="small")
    return fig


fig_paths = _png("routing-table1", _paths_figure())

# ---------------------------------------------------------------------------------------------- rollout and flow
stack = [a for a in rng.dirichlet(np.full(6, 0.4), size=(3, 6))]  # 3 layers of 6 x 6 attention
rollout = gr.attention_rollout(stack)
flow = gr.attention_flow(stack)


def _rollout_flow_figure():
    from matplotlib.figure import Figure

    fig = Figure(figsize=(8, 3.6), layout="constrained")
    axes = fig.subplots(1, 2)
    for ax, M, title in zip(axes, (rollout, flow), ("attention rollout", "attention flow"), strict=True):
        image = ax.imshow(M, vmin=0, vmax=max(rollout.max(), flow.max()), cmap="viridis")
        ax.set(title=title, xlabel="input token j", ylabel="output position i", xticks=range(6), yticks=range(6))
    fig.colorbar(image, ax=axes, shrink=0.8)
    return fig


fig_flow = _png("routing-rollout-flow", _rollout_flow_figure())
timings = []
for n in (4, 8, 12):
    layers = [a for a in rng.dirichlet(np.ones(n), size=(4, n))]
    start = time.perf_counter()
    gr.attention_flow(layers)
    t_flow = time.perf_counter() - start
    start = time.perf_counter()
    gr.attention_rollout(layers)
    timings.append((n, t_flow, time.perf_counter() - start))
cost_table = "\n".join(
    ["| n (4 layers) | max-flows | flow | rollout |", "|---|---|---|---|"]
    + [f"| {n} | {n * n} | {tf:.3f} s | {tr * 1e3:.2f} ms |" for n, tf, tr in timings]
)

PAGE = f"""# Attention as routing

*Every figure, table and number on this page was computed by `attnsym.graphs` when these docs
were built (script `docs/gen/routing.py`).*

An attention matrix $A(X)$ is a weighted directed graph whose weights are computed from the
input. `attnsym.graphs` builds it as a `networkx.DiGraph`, measures it, contrasts it with the
fixed graph of a dense layer, combines layers (rollout and flow), and reads and writes it in
four formats.

## Edge direction

In $Y = A V$ output row $i$ is $y_i = \\sum_j A_{{ij}} v_j$: value flows **from key position
$j$ to query position $i$** with weight $A_{{ij}}$. So `routing_graph(A)` has one edge
`j -> i` with attribute `weight = A[i, j]` (a plain Python `float`) for every non-zero weight,
self-loops included. A node's in-edges are its query row (in-strength 1); its out-edges are its
key column (out-strength = the total attention the position receives). Nodes carry `index`,
`token` and `layer`.

```python
G = at.graphs.routing_graph(A, tokens=["the", "cat", "sat", "on", "the", "mat"])
```

Head 0 of a two-head layer (random weights, seed 0), edges into query 2 (`sat`):

{edge_table}

![routing graph, two columns]({fig_columns})
![routing graph, circle]({fig_circle})

Line width is proportional to the weight. For display, `threshold=` keeps weights above a
value and `top_k=` the largest `k` of each query row:

![top-2 routing graph]({fig_topk})

Inputs can be NumPy or CuPy arrays, PyTorch tensors, stacks `(heads, n, n)` /
`(layers, heads, n, n)`, or the tuple of `(batch, heads, n, n)` tensors that Hugging Face
models return with `output_attentions=True` (pick one with `layer=`, `head=`, `batch=`;
`head="mean"` averages heads). `layered_graph` chains the layers of a stack.

**Validation.** Non-square matrices, negative weights and NaN/inf are errors
(`ShapeError`, naming the argument, the offending value and its index). Rows that do not sum to
1 within `ROW_SUM_ATOL` = {gr.ROW_SUM_ATOL:g} only *warn* (`RowSumWarning`): matrices from
other sources — averaged, pruned, exported in float16 — legitimately break the rule, and an
all-zero row (a fully masked query) is accepted silently. Token lists of the wrong length and
bad `threshold` / `top_k` / `layer` / `head` values are errors.

## Metrics

Row entropy $H_i = -\\sum_j A_{{ij}} \\ln A_{{ij}}$ (nats, $0 \\ln 0 = 0$); the effective number of
attended positions $e^{{H_i}}$ (1 for a one-hot row, $n$ for a uniform one); in- and
out-strength:

{metric_table}

## Same weights, two inputs: the MLP graph stays, the attention graph moves

`contrast(spec, X1, X2, weights)` runs the layer on two inputs with the same parameters. The
dense, position-wise layer made of the same weights ($x \\mapsto x W_V W_O$, `mlp_graph`) has
one graph whatever the input; the attention graphs are recomputed from each input.

The **routing distance** between two attention matrices of the same shape is the *mean
total-variation distance between corresponding rows*:

$$ D(A, B) = \\frac1n \\sum_i \\tfrac12 \\sum_j |A_{{ij}} - B_{{ij}}| \\in [0, 1], $$

0 exactly when the matrices are equal, 1 when every query attends to disjoint keys; it is a
metric (symmetric, triangle inequality), averaged over heads for multi-head layers.

- MLP graph identical for the two inputs: **{c.mlp_identical}**
- attention graphs identical: **{c.attention_identical}**; routing distance per head:
  **{", ".join(f"{d:.3f}" for d in c.head_distances)}**
- the same input twice: distance **{same.attention_distance}**, graphs identical **{same.attention_identical}**

![MLP vs attention for two inputs]({fig_contrast})

Per-node changes of head 0 (`Contrast.changes`):

{change_table}

## Table 1 of *Attention Is All You Need*, measured on graphs

`sequential_depth(arch, n)` is the depth (longest path, in edges) of the computation DAG of
one layer — Table 1's *sequential operations*. `max_path_length(arch, n)` builds the smallest
stack of such layers in which every output depends on every input it may depend on (causal
architectures: inputs $j \\le i$) and takes the longest shortest path from an input to an output
— the *maximum path length*. Both run networkx on real graphs for n = 2 … 64.
`decide_growth` then compares every candidate of Table 1 *with its constant* —
$0$, $\\log n/\\log k$, $n/(k-1)$, $n/r$, $n$ — against the measured integers: a candidate
explains them when one offset $c$ gives $y = \\lceil f(n) + c \\rceil$ for every $n$ (the spread
$\\max(y - f) - \\min(y - f)$ is below 1), and the decision is the growth class shared by all
explaining candidates ("undecided" when there is none, or they disagree):

{chr(10).join(table1)}

The decided classes agree with the paper, each with the paper's constant: the contiguous kernel
is explained by $O(n/k)$ — $n/(k-1)$, a causal kernel of width $k$ reaching $k-1$ positions
further back per layer — the dilated one by $O(\\log_k n)$, the restricted window by $O(n/r)$.
The recurrent chain $x_0 \\to h_0 \\to \\dots \\to h_{{n-1}}$ has $n$ edges.

![Table 1 curves]({fig_paths})

## Across layers: rollout and flow

Abnar & Zuidema (2020) combine the layers of a stack after mixing in the residual connection,
$\\hat A = \\tfrac12 A + \\tfrac12 I$ (rows re-normalised), heads averaged:

- **attention rollout** multiplies the layers, $\\tilde A = \\hat A^{{(L)}} \\cdots \\hat A^{{(1)}}$
  (`attention_rollout`): how much of input token $j$ reaches output $i$ if attention mixed linearly;
- **attention flow** treats the layered graph as a flow network with capacities
  $\\hat A^{{(l)}}_{{ij}}$ and takes the **maximum flow** from input $j$ to output $i$ for every
  pair, each output's row normalised to sum to 1 as in the authors' code (`attention_flow`;
  `normalize=False` gives the raw values). With two layers the paths $j \\to m \\to i$ share no
  edges and the flow is $\\sum_m \\min(\\hat A^{{(1)}}_{{mj}}, \\hat A^{{(2)}}_{{im}})$ — the tests
  check both functions against hand-computed values, and flow against an independent integer
  max-flow (SciPy) on random stacks.

Rollout sums, over all paths from $j$ to $i$, the product of the weights along each path;
flow is bounded by the narrowest cut between the two positions, so no path carries more than its
weakest edge. On three random layers of six tokens the mean row entropy is
{float(np.mean(gr.row_entropy(rollout))):.3f} nats for rollout and {float(np.mean(gr.row_entropy(flow))):.3f} for flow
(the maximum is $\\ln 6$ = {np.log(6):.3f}):

![rollout vs flow]({fig_flow})

**Cost.** Rollout is $L$ matrix products, $O(L n^3)$. Flow needs one max-flow per
(output, input) pair: $n^2$ max-flows on a graph of $(L+1)n$ nodes and $L n^2$ edges, so the
cost grows roughly like $n^4 L$. attnsym runs Dinic's algorithm on flat lists built from the
networkx flow graph (one network per output, the other outputs' dead-end edges removed),
several times faster than networkx's fastest solver (`method="networkx"`, kept as the
reference) and far faster than the authors' recipe (Edmonds–Karp, residual network rebuilt per
pair); `outputs=[0]` computes a single row (e.g. `[CLS]`) at $1/n$ of the cost. Measured while
building this page:

{cost_table}

The 6-layer × 32-token timings are in [Benchmarks](benchmarks.md).

## Export and import

`export(G, path)` writes GraphML, GEXF, node-link JSON or DOT by suffix; writes are atomic
(temporary file, then rename) and refuse to replace a file unless `overwrite=True`
(`--force` on the command line). Node ids, weights and every attribute survive the round trip
exactly — floats as floats (`repr`, bit for bit), ints as ints, NumPy scalars converted first —
and `read(path)` reads all four back. From the shell:

```bash
attnsym graph --n 6 --seed 0 --heads 2 --format graphml -o out/
```

writes one graph per head and input plus the MLP graph, and prints the routing distances.
"""

with mkdocs_gen_files.open("routing.md", "w") as page:
    page.write(PAGE)
