"""Generate the documentation page "Numeric backend" (numeric.md) at build time.

Every table and number on the page is computed here by attnsym when the docs are built:
the tolerance table from ``attnsym.tolerances.TOLERANCES``, the fully-masked-row example, the
memory of the blockwise path (tracemalloc) and a validation report.
"""

from __future__ import annotations

import tracemalloc

import numpy as np

import attnsym as at
from attnsym import numeric as nm
from attnsym.numeric import _fast, _kernels
from attnsym.tolerances import TOLERANCES


def _peak_mib(fn) -> float:
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        fn()
        return (tracemalloc.get_traced_memory()[1] - base) / 2**20
    finally:
        tracemalloc.stop()


def _matrix(M) -> str:
    rows = ["| " + " | ".join(f"{v:.3f}" for v in row) + " |" for row in np.asarray(M)]
    head = "| " + " | ".join(f"key {j}" for j in range(np.asarray(M).shape[1])) + " |"
    return "\n".join([head, "|" + "---|" * np.asarray(M).shape[1], *rows])


def tolerance_table() -> str:
    lines = ["| dtype | rtol | atol |", "|---|---|---|"]
    lines += [f"| `{name}` | {tol.rtol:g} | {tol.atol:g} |" for name, tol in TOLERANCES.items()]
    return "\n".join(lines)


def masked_row_example() -> str:
    mask = np.array([[True, False, False], [False, False, False], [True, True, True]])
    rng = np.random.default_rng(0)
    X = rng.standard_normal((3, 2))
    W = np.eye(2)
    Y, A = nm.attention(X, W, W, W, mask=mask)
    G = np.ones_like(Y)
    grads = nm.attention_vjp(X, W, W, W, G, mask=mask)
    finite = all(bool(np.isfinite(g).all()) for g in grads.values())
    return "\n".join([
        "With `mask = [[1, 0, 0], [0, 0, 0], [1, 1, 1]]` (query 1 may attend to nothing), "
        "`attnsym.numeric.attention` gives the weights",
        "",
        _matrix(A),
        "",
        f"and output row 1 = `{np.round(Y[1], 12).tolist()}`; all gradients of `attention_vjp` are finite: **{finite}**.",
    ])


def memory_example() -> str:
    n, d, block = 2048, 16, 256
    rng = np.random.default_rng(0)
    X = rng.standard_normal((n, d))
    W = np.eye(d)
    plain = _peak_mib(lambda: nm.attention(X, W, W, W))
    lean = _peak_mib(lambda: nm.attention(X, W, W, W, return_weights=False, block_size=block))
    Y_plain, _ = nm.attention(X, W, W, W)
    Y_lean = nm.attention(X, W, W, W, return_weights=False, block_size=block)
    diff = float(np.abs(Y_plain - Y_lean).max())
    return (f"Measured while building this page (n = {n}, d = {d}, float64, tracemalloc peak of the call): "
            f"plain path with weights **{plain:.1f} MiB** (one n × n float64 array is {n * n * 8 / 2**20:.0f} MiB), "
            f"blockwise path with `block_size={block}` **{lean:.1f} MiB**; largest difference between the two "
            f"outputs {diff:.1e}.")


def validation_example() -> str:
    spec = at.AttentionSpec(n=3, d_model=4, heads=2, causal=True, bias=True)
    return at.validate(spec, seed=0).to_markdown()


def page() -> str:
    return f"""# Numeric backend

`attnsym.numeric` computes self-attention — forward pass, analytic backward pass, and a
memory-lean blockwise path — on NumPy arrays, CuPy arrays or PyTorch tensors. It shares no code
with the SymPy layer on purpose: it is the independent reference the symbolic results are
validated against.

```python
import attnsym as at
Y, A = at.numeric.attention(X, W_Q, W_K, W_V, W_O, heads=2, causal=True)   # NumPy in, NumPy out
grads = at.numeric.attention_vjp(X, W_Q, W_K, W_V, G, W_O, heads=2, causal=True)
Y = at.numeric.attention(X, W_Q, W_K, W_V, return_weights=False, block_size=1024)  # never stores n × n
report = at.validate(spec)            # symbolic (lambdified SymPy) vs numeric, per quantity
```

## Backends

Every function opens with `xp = array_namespace(X, W_Q, ...)` (through
[array-api-compat](https://data-apis.org/array-api-compat/)) and then uses only `xp.*`, so the
same code runs on every library and returns the caller's array type and dtype.

- **NumPy** is the default; lists and scalars run on NumPy.
- **PyTorch** tensors (CPU or CUDA) run through the same code and come back as tensors.
- **CuPy** is imported only when you pass CuPy arrays or ask for `backend="cupy"`. If CuPy imports
  but cannot run a kernel (no driver or device), `backend="cupy"` falls back to NumPy with a
  `RuntimeWarning`. `benchmarks/gpu_check.py` compares CuPy (and PyTorch CUDA) against NumPy and
  times them; it exits cleanly, saying so, on machines without a GPU (as in CI).
- Arrays from two libraries in one call raise `BackendError` naming both types. A boolean
  `mask` is a fixed pattern and may come from any library.
- Only float32 and float64 are accepted (an integer array raises `ShapeError` with the
  conversion to use); all arrays of a call share one dtype; non-finite inputs raise `ShapeError`.

## Bad numbers: one checking path

`attention`, `attention_vjp`, `causal_decode`, `scores`, `softmax`, `softmax_jacobian`, `gelu` and
`gelu_tanh` check their arrays through one module (`attnsym/numeric/_inputs.py`), with one message
per kind of mistake naming the argument: integer, boolean, float16 or complex dtypes (a complex
array is never truncated to its real part), NaN and ±inf (`softmax` lets `-inf` through: it means
*masked*), masks that are not boolean (`0/1` integers, additive `0/-inf` floats: the message gives
the conversion), and flags that are not booleans (`cache="no"` is refused, not read as true).

Finite inputs can still produce numbers the dtype cannot hold — `X = [[1e155, 0], [0, 1]]` in
float64 gives scores near 1e310, `1e20` in float32 scores near 1e40. attnsym never returns the
silent NaN rows that softmax would make of them: the scores are bounded first by
`c·d_k·max|Q|·max|K|` (one pass over `Q` and `K`), and only when the bound exceeds the dtype's range
are they formed block by block; if an allowed score really overflows, a `ShapeError` says so and
names the magnitudes of `X`, `Q` and `K`. Outputs (`Y = Z W_O`) and every gradient are checked the
same way. A scale of `sympy.nan`, a complex scale or `10**400` is a `SpecError`.

The standard lacks two operations, dispatched once in `attnsym/numeric/backend.py`: `erf`
(SciPy, CuPy's `cupyx.scipy.special`, `torch.erf`) for `gelu`, and an in-place `exp` that saves
one n × n buffer.

## Fully masked rows: zeros

A query whose mask row is all `False` may attend to nothing. Libraries disagree: PyTorch's current
`scaled_dot_product_attention` returns zeros, older versions NaN, JAX a uniform row. attnsym
(`AttentionSpec`, symbolic and numeric alike) gives **zero weights and a zero output row**, because

- NaN poisons every gradient it touches — one padded query would destroy a whole batch;
- a uniform row silently attends to keys the mask forbids, breaking the mask's promise;
- zeros keep the mask exact and every value and gradient finite: `dS = A ⊙ (…)` is 0 on that
  row, so nothing flows back through the query, and the row's output is just the output bias.

Numerically, the row maximum of an all-`-inf` row is replaced by 0, the exponentials are then
exactly 0, and a zero row sum divides as 1.

{masked_row_example()}

## Backward pass

`attention_vjp` returns the gradient of `⟨G, Y⟩` for `X` and every weight and bias, from the same
identities the symbolic closed form uses, each written once:
`dV = Aᵀ dZ`, `dA = dZ Vᵀ`, `dS = A ⊙ (dA − rowsum(dA ⊙ A))`, `dQ = c·dS K`, `dK = c·dSᵀ Q`,
`dW = X_inᵀ d•`, `dX = dQ W_Qᵀ + dK W_Kᵀ + dV W_Vᵀ`. Parameter gradients are summed over batch
dimensions. Tests check it against central finite differences, PyTorch autograd
(`scaled_dot_product_attention` and `nn.MultiheadAttention`) and the symbolic gradients.

## Blockwise path (memory-lean)

Queries and keys are processed in blocks of `block_size` rows. Each query row's softmax is
accumulated over key blocks with a running maximum `m`, running sum `ℓ` and running output
(the online softmax of Milakov & Gimelshein, the idea behind FlashAttention):
`m' = max(m, max_j S_ij)`, `ℓ' = e^(m−m')ℓ + Σ_j e^(S_ij−m')`, `acc' = e^(m−m')acc + e^(S−m') V_j`,
finally `Z = acc / ℓ`. The identity is proved symbolically in `attnsym.symbolic.online_softmax`.
The backward pass keeps only the row log-sum-exp from the forward and recomputes each block's
weights. Extra memory is O(block² + n·d) per head, never O(n²); with a causal mask the blocks
above the diagonal are skipped.

- `attention` chooses it automatically when `return_weights=False` and `n >= {nm.AUTO_BLOCKWISE_N}`
  (`attnsym.numeric.AUTO_BLOCKWISE_N`) or `n` exceeds one default block; `block_size=` forces it
  and tunes it. The default block
  is {nm.DEFAULT_BLOCK_SIZE} rows for one head without batch dimensions, halved until
  batch·heads·block² ≤ {nm.BLOCK_ELEMENTS:,} scores (`BLOCK_ELEMENTS`, 16 MiB in float32): few, large
  matrix products, with the memory bounded whatever the batch and head counts.
- `attention_vjp` uses the blockwise backward when `block_size=` is given, when `n` exceeds one
  default block, or — for NumPy arrays — from `n >= {nm.AUTO_BLOCKWISE_N}`; below that the plain
  backward, which keeps the forward's weights, is faster at the same order of memory.
- It equals the plain path within float rounding, forward and backward (tested with hypothesis
  over sizes, block sizes, masks, heads and batch dimensions).

{memory_example()}

## Speed on NumPy: the fast path

For NumPy arrays the blockwise forward and backward run in `attnsym/numeric/_fast.py`, which
computes the same result with fewer passes over each block of scores and uses every core:

- **one shift per row, taken once.** Each row is shifted by `t_i`, the maximum of its scores in
  the first key block (one extra pass over that block alone). Its sum is then at least 1 (the
  maximum gives `e^0`) however large the scores, and later blocks need no running maximum and no
  rescaling; NumPy's blocks fold the shift into the product, `[c·Q, −t] [K, 1]ᵀ = S − t`;
- **the row sums come out of the product** `P [V, 1] = [P V, ℓ]` (NumPy), or out of the `exp`
  loop (Numba);
- **the plain float32 forward is one compiled loop per task** (with the `fast` extra): for a
  forward with no mask and no ALiBi bias (`attention_vjp`'s too, which writes each block's
  exponentials to the tile its backward reads), each worker's query rows are one Numba
  call (`attnsym.numeric._kernels.attend_rows`) that calls BLAS itself (SciPy's `sgemm`: `c` is
  the product's `α`, and `P V` is added into the running sum with `β = 1`) and subtracts the
  shift inside the `exp` — no padded operand, scaled copy, partial sum or Python call per block;
  a row whose scores provably stay within {_kernels.CLAMP_REACH:g} of its shift
  (`c·‖q_i‖·max_j ‖k_j‖ + |t_i|`, Cauchy–Schwarz) takes the `exp` without its range clamps, which
  there change no bit (a quarter of the `exp`'s time);
- **the backward folds its shifts too**: `[c·Q, −L] [K, 1]ᵀ = S − L` gives the weights in one `exp`
  pass, and `[dZ, −D] [V, 1]ᵀ = dA − D` makes `dS = A ⊙ (dA − D)` one in-place product; where
  `attention_vjp` keeps the forward's exponentials (within 64 MiB) it reads them instead;
- blocks of at most {_fast.FAST_BLOCK[0]} queries × {_fast.FAST_BLOCK[1]} keys in the forward (an
  unmasked forward takes one task of `n / threads` queries per worker: BLAS then packs each key block
  once per worker; causal forwards and those that keep their exponentials at most
  {_fast.TASK_ROWS} queries, 512 KiB of float32 scores, the L2 cache of one core of the machines
  the benchmarks ran on) and {_fast.BACKWARD_BLOCK[0]} keys × {_fast.BACKWARD_BLOCK[1]} queries in
  the backward run on a pool of as many worker threads as the process may use cores
  (`attnsym/numeric/_pool.py`);
- **BLAS at one thread for the whole call.** NumPy's BLAS (OpenBLAS) has threads of its own that
  keep spinning after each multi-threaded product (here about 40 ms of CPU after one 4096 × 64
  product), and a multi-threaded product waits for them, spinning; beside the pool that made more
  busy threads than cores. So every product of a lean NumPy call — the projections and the weight
  gradients too — runs with BLAS at one thread (threadpoolctl), and the long `n`-row products are
  split by rows over the pool instead. NumPy releases the GIL in its matrix products and `exp` loops.

So the forward makes one element-wise pass over each block (`exp`) and the backward two (`exp`, a
product), where the generic code makes four in each (forward: `max`, subtract, `exp`, `sum`;
backward: subtract, `exp`, subtract, multiply — counted in `tests/test_fast.py`). A later score far
above a row's first-block maximum (its shifted sum past `e^60` in float32), or a row masked in its
whole first key block (shifted by the Cauchy–Schwarz bound, its sum below {_fast.MIN_ROW_SUM:g}),
has its query block recomputed with the exact running maximum, so the precision never depends on
the shift. The results equal the generic
array-API code within the dtype's tolerance (`tests/test_fast.py`, and every blockwise test runs
both); CuPy and PyTorch arrays take the generic code.

Timings and memory at n up to 65536 against PyTorch's flash kernel are on the
[benchmarks](benchmarks.md) page.

## Tolerances

One table, `attnsym.tolerances.TOLERANCES` (re-exported as `attnsym.testing.TOLERANCES`), used by
`attnsym.validate`, `assert_views_agree`, the claims and the tests: a numeric value `a` agrees
with a reference `b` when `|a − b| ≤ atol + rtol·|b|`.

{tolerance_table()}

## Validation

`attnsym.validate(spec, seed=0, dtype="float64")` draws random inputs, evaluates the exact SymPy
layer and its gradients (lambdified with common-subexpression elimination) and the numeric backend,
and reports every quantity's largest absolute and relative error against the tolerance. For
example:

{validation_example()}
"""


if __name__ == "__main__":
    import mkdocs_gen_files

    with mkdocs_gen_files.open("numeric.md", "w") as handle:
        handle.write(page())
