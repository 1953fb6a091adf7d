"""Flags and output handling shared by the sub-commands."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .._io import atomic_write
from ..spec import AttentionSpec

#: where a help text names the model families that load; filled from the family table when the help is shown
FAMILIES_SLOT = "{model families}"
#: the sentence of every ``--model`` command's description that says what loads
MODEL_FOLDERS = ("--model takes a packaged model's name (all-MiniLM-L6-v2) or a Hugging Face folder: config.json,\n"
                 "model.safetensors (or a sharded index), tokenizer.json (or vocab files); its model_type one of\n"
                 f"{FAMILIES_SLOT}.\nNothing is downloaded; the how-to 'Open a model folder' says what loads and "
                 "what is refused.")


def fill_families(text: str) -> str:
    """``text`` with :data:`FAMILIES_SLOT` replaced by the family table's names.

    The names are :func:`attnsym.models.families.family_names`, read when a help text is shown.
    """
    if FAMILIES_SLOT not in text:
        return text
    # lazy: attnsym.models costs ~0.6 s to import; only the help of a --model command pays it
    from ..models.families import family_names

    return text.replace(FAMILIES_SLOT, family_names())


def add_spec_arguments(parser: argparse.ArgumentParser, *, n: int = 2, d: int = 2) -> None:
    """The flags that describe an attention layer, the same for every sub-command."""
    group = parser.add_argument_group("attention layer")
    group.add_argument("--n", type=int, default=n, help=f"sequence length, number of tokens (default {n})")
    group.add_argument("--d", "--d-model", dest="d_model", type=int, default=d,
                       help=f"model width d_model (default {d})")
    group.add_argument("--heads", type=int, default=1, help="number of heads; must divide d (default 1)")
    group.add_argument("--causal", action="store_true", help="query i may attend only to keys j <= i")
    group.add_argument("--no-scale", action="store_true", help="do not divide scores by sqrt(d_k)")
    group.add_argument("--bias", action="store_true", help="add bias rows b_Q, b_K, b_V (and b_O)")
    group.add_argument("--positions", choices=["none", "sinusoidal", "rope", "alibi"], default="none",
                       help="sinusoidal: encodings added to X; rope: rotary embeddings of queries and keys; "
                            "alibi: linear distance biases on the scores (default none)")
    group.add_argument("--rope-pairing", choices=["rotate_half", "interleaved"], default="rotate_half",
                       help="with --positions rope: pair coordinate i with i + d_k/2 (Hugging Face LLaMA, default) "
                            "or 2i with 2i + 1 (GPT-J, RoFormer)")


def spec_from_args(args: argparse.Namespace):
    """Build the :class:`~attnsym.AttentionSpec` the flags of :func:`add_spec_arguments` describe."""
    return AttentionSpec(
        n=args.n,
        d_model=args.d_model,
        heads=args.heads,
        causal=args.causal,
        scale="none" if args.no_scale else "sqrt",
        bias=args.bias,
        positions=None if args.positions == "none" else args.positions,
        **rope_arguments(args),
    )


def rope_arguments(args: argparse.Namespace) -> dict:
    """``rope_pairing`` for the spec when ``--positions rope`` (the flag is ignored otherwise)."""
    return {"rope_pairing": args.rope_pairing} if args.positions == "rope" else {}


def add_output_arguments(parser: argparse.ArgumentParser, *, what: str = "file") -> None:
    """``-o/--output`` and ``--force``."""
    parser.add_argument("-o", "--output", type=Path, default=None,
                        help=f"write to this {what} instead of standard output")
    parser.add_argument("--force", action="store_true", help="replace existing files (never done silently)")


def emit(text: str, output: Path | None, *, force: bool) -> None:
    """Print ``text`` or write it atomically to ``output`` (refusing to overwrite without ``force``)."""
    if output is None:
        sys.stdout.write(text if text.endswith("\n") else text + "\n")
    else:
        path = atomic_write(output, text, overwrite=force)
        print(f"wrote {path}", file=sys.stderr)
