"""GPU check: the numeric backend on CuPy arrays against NumPy — correctness first, then timing.

Run::

    python benchmarks/gpu_check.py            # prints a report; exit status 0 when all agree
    python benchmarks/gpu_check.py --sizes 1024 4096

Without CuPy, or with CuPy but no usable CUDA device, it says so and exits with status 0
(nothing to check here — CI has no GPU). When PyTorch sees a CUDA device, PyTorch CUDA tensors
are checked through the same code as well. The same attnsym code runs on every library;
only the arrays differ.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from attnsym import numeric as nm
from attnsym.testing import TOLERANCES


def _time(fn, sync, repeat: int = 5) -> float:
    fn()
    sync()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        sync()
        times.append(time.perf_counter() - start)
    return float(np.median(times))


def _inputs(n: int, d: int, dtype: str, seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    return {
        "X": rng.standard_normal((n, d)).astype(dtype),
        "W_Q": (rng.standard_normal((d, d)) / np.sqrt(d)).astype(dtype),
        "W_K": (rng.standard_normal((d, d)) / np.sqrt(d)).astype(dtype),
        "W_V": (rng.standard_normal((d, d)) / np.sqrt(d)).astype(dtype),
        "W_O": (rng.standard_normal((d, d)) / np.sqrt(d)).astype(dtype),
        "G": rng.standard_normal((n, d)).astype(dtype),
    }


_KW = {"heads": 4, "causal": True}
_WEIGHTS = ("W_Q", "W_K", "W_V")


def _forward(a: dict):
    return nm.attention(a["X"], *(a[k] for k in _WEIGHTS), a["W_O"], return_weights=False, **_KW)


def _backward(a: dict):
    return nm.attention_vjp(a["X"], *(a[k] for k in _WEIGHTS), a["G"], a["W_O"], **_KW)


def check_library(name: str, to_device, to_host, sync, sizes, d: int = 64) -> list[str]:
    """Compare one device library with NumPy; returns report lines (raises AssertionError on disagreement)."""
    lines = []
    for dtype in ("float64", "float32"):
        tol = TOLERANCES[dtype]
        for n in sizes:
            a = _inputs(n, d, dtype)
            dev = {k: to_device(v) for k, v in a.items()}
            Y_np, Y_dev = _forward(a), _forward(dev)
            g_np, g_dev = _backward(a), _backward(dev)
            # float32 sums over n terms: allow the tolerance to grow like sqrt(n / 64)
            grow = max(1.0, np.sqrt(n / 64)) if dtype == "float32" else 1.0
            errors = {"Y": float(np.abs(to_host(Y_dev) - Y_np).max())}
            for k in g_np:
                scale_k = max(1.0, float(np.abs(g_np[k]).max()))
                errors["d" + k] = float(np.abs(to_host(g_dev[k]) - g_np[k]).max()) / scale_k
            worst = max(errors, key=errors.get)
            ok = errors[worst] <= grow * (tol.atol + tol.rtol)
            t_np = _time(lambda a=a: _forward(a), lambda: None, repeat=3)
            t_dev = _time(lambda dev=dev: _forward(dev), sync)
            lines.append(f"| {name} | {dtype} | {n} | {errors[worst]:.1e} ({worst}) | {'yes' if ok else 'NO'} | "
                         f"{t_np * 1e3:.1f} ms | {t_dev * 1e3:.2f} ms | {t_np / t_dev:.1f}× |")
            if not ok:
                raise AssertionError("\n".join(lines))
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[512, 2048])
    args = parser.parse_args(argv)
    header = ["| library | dtype | n | max error (worst quantity) | agrees | NumPy fwd | device fwd | speed-up |",
              "|---|---|---|---|---|---|---|---|"]
    rows: list[str] = []
    ok, why = nm.cupy_usable()
    if ok:
        import cupy

        rows += check_library("CuPy", cupy.asarray, cupy.asnumpy, cupy.cuda.Device().synchronize, args.sizes)
    else:
        print(f"CuPy: not checked — no usable CuPy/CUDA device here ({why}).")
    try:
        import torch

        cuda = torch.cuda.is_available()
    except ImportError:
        cuda = False
    if cuda:
        rows += check_library("PyTorch CUDA", lambda a: torch.asarray(a, device="cuda"), lambda t: t.cpu().numpy(),
                              torch.cuda.synchronize, args.sizes)
    else:
        print("PyTorch CUDA: not checked — PyTorch is not installed or sees no CUDA device.")
    if rows:
        print("\n".join(header + rows))
    else:
        print("No GPU available: nothing to check (this is expected on CPU-only machines and in CI).")
    return 0


if __name__ == "__main__":
    try:
        raise SystemExit(main())
    except AssertionError as exc:
        print("GPU results disagree with NumPy:\n" + str(exc), file=sys.stderr)
        raise SystemExit(1) from None
