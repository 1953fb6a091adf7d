"""``attnsym derive``: the forward (and backward) pass of attention, step by step."""

from __future__ import annotations

import argparse

from .._limits import DEFAULT_MAX_TERMS
from ..errors import SpecError
from ._common import add_output_arguments, add_spec_arguments, emit, spec_from_args

_DESCRIPTION = """\
Write the derivation of a self-attention layer as ordered, titled equations:
Q = X W_Q, K = X W_K, V = X W_V, S = Q K^T / sqrt(d_k), A = row-softmax(S), Y = A V,
the elementwise form y_i = sum_j alpha_ij(x_1, ..., x_n) v_j, and the MLP (y = W x)
against attention (y = W(x) x) views. Markdown uses $$ math; tex is a standalone document.
Symbolic work is meant for small sizes (n, d <= 4-6); larger layers are refused with the
estimated size (raise the limit with --max-terms).
"""

_EPILOG = """\
examples:
  attnsym derive --n 2 --d 2 --format md
  attnsym derive --n 3 --d 4 --heads 2 --causal --format tex -o attention.tex
  attnsym derive --n 2 --d 2 --grad                 # forward, then gradients
  attnsym derive --n 2 --d 2 --causal --sink --output-gate   # gpt-oss's sink, Qwen3-Next's gate
"""


def add_parser(subparsers) -> argparse.ArgumentParser:
    """Register ``derive`` on the sub-command parsers."""
    parser = subparsers.add_parser(
        "derive", help="derive attention step by step (Markdown or LaTeX)", description=_DESCRIPTION, epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_spec_arguments(parser)
    parser.add_argument("--format", choices=["md", "tex"], default=None,
                        help="md: Markdown with $$ math; tex: a standalone LaTeX document "
                             "(default: tex when -o ends in .tex, otherwise md)")
    parser.add_argument("--sink", action="store_true",
                        help="a learned sink logit per head in every softmax denominator (gpt-oss): rows sum to 1 - pi")
    parser.add_argument("--output-gate", action="store_true",
                        help="gate the heads' outputs by sigma(X W_G) before W_O (Qwen3-Next)")
    parser.add_argument("--grad", action="store_true", help="append the gradient (backward pass) derivation")
    parser.add_argument("--max-terms", type=float, default=None,
                        help="size guard: the largest estimated number of expression terms to build "
                             f"(default {DEFAULT_MAX_TERMS:,.0f})")
    add_output_arguments(parser)
    parser.set_defaults(run=run)
    return parser


def run(args: argparse.Namespace) -> int:
    """Build the derivation the flags describe and print or write it; returns 0."""
    from ..derivation import concatenate, derive  # lazy: attnsym.derivation (SymPy) +0.36 s CPU over `attnsym --help`

    suffix = args.output.suffix.lower() if args.output is not None else ""
    fmt = args.format or ("tex" if suffix == ".tex" else "md")
    if (fmt, suffix) in {("md", ".tex"), ("tex", ".md")}:  # -o y.tex used to get Markdown
        raise SpecError(f"--format {fmt} does not match the output file {str(args.output)!r}; "
                        f"drop --format or change the suffix")
    spec = spec_from_args(args).replace(sink=args.sink, output_gate=args.output_gate)
    derivation = derive(spec, max_terms=args.max_terms)
    if args.grad:
        backward = derive(spec, what="gradients", max_terms=args.max_terms)
        derivation = concatenate("Self-attention forward and backward, step by step", [derivation, backward])
    text = derivation.to_markdown() if fmt == "md" else derivation.to_latex()
    emit(text, args.output, force=args.force)
    return 0

