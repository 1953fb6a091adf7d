"""``attnsym graph``: write attention routing graphs (one per head and input) and the MLP graph."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from .._io import read_array, refuse_existing, staged_directory
from ..errors import ShapeError, SizeLimitError, SpecError
from ..numeric import attention, random_inputs
from ..spec import AttentionSpec
from ._common import add_spec_arguments, rope_arguments

_DESCRIPTION = """\
Run one attention layer on one or more inputs with the same weights and write its routing
graphs: one graph per head and input (edge key j -> query i, weight A[i, j]) and the graph
of the dense layer X W_V (W_O) made of the same weights, which is the same for every input.

Inputs and weights are random (seeded) unless given as .npy files. With two or more inputs
it also prints the routing distance between input 1 and each other input (mean
total-variation distance between corresponding rows of A), per head.

Files written to the -o folder (inputs and heads counted from 1, as in every label of attnsym):
  attention_input{k}_head{h}.{ext}   routing graph of input k, head h
  mlp.{ext}                          the dense layer's bipartite graph
Nodes are token positions: node id i is token i + 1; its "label" (and "token") attribute is the
token's word from --tokens (default: its number, 1, 2, ...), which Graphviz and Gephi display.
"""

_EPILOG = """\
examples:
  attnsym graph --n 6 --seed 0 --heads 2 --format graphml -o out/
  attnsym graph --x a.npy --x b.npy --wq wq.npy --wk wk.npy --wv wv.npy -o out/ --format json
  attnsym graph --n 12 --top-k 3 --tokens "the,cat,sat,on,the,mat,and,then,it,slept,all,day" -o out/
"""

_EXTENSIONS = {"graphml": "graphml", "gexf": "gexf", "json": "json", "dot": "dot"}
_MAX_EDGES = 10_000_000  # graph edges held in memory at once (networkx: about 300 bytes each)


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(
        "graph",
        help="write attention routing graphs (GraphML, GEXF, JSON, DOT)",
        description=_DESCRIPTION,
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_spec_arguments(parser, n=6, d=8)
    parser.set_defaults(n=None, d_model=None)  # taken from --x files when given
    files = parser.add_argument_group("inputs and weights from .npy files (random when absent)")
    files.add_argument("--x", action="append", type=Path, default=None, metavar="FILE",
                       help="an (n, d_model) input; repeat for several inputs")
    for name in ("wq", "wk", "wv", "wo"):
        files.add_argument(f"--{name}", type=Path, default=None, metavar="FILE",
                           help=f"the weight W_{name[1].upper()} (see AttentionSpec for its shape)")
    parser.add_argument("--inputs", type=int, default=2, help="number of random inputs when no --x is given (default 2)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random inputs and weights (default 0)")
    parser.add_argument("--tokens", default=None, help="comma-separated token labels, one per position")
    parser.add_argument("--top-k", type=int, default=None, help="keep the k largest weights of each query row")
    parser.add_argument("--threshold", type=float, default=None, help="keep only weights >= this value")
    parser.add_argument("--format", choices=list(_EXTENSIONS), default="graphml", help="file format (default graphml)")
    parser.add_argument("-o", "--output", type=Path, required=True, help="folder to write the graphs into")
    parser.add_argument("--force", action="store_true", help="replace existing files (never done silently)")
    parser.set_defaults(run=run)
    return parser


def _load(path: Path, name: str):
    return read_array(path, name).astype(np.float64)


def run(args: argparse.Namespace) -> int:
    # lazy: attnsym.graphs (networkx) costs +0.2 s CPU over `attnsym --help`
    from ..graphs import contrast, export, mlp_graph, routing_graph
    from ..graphs.contrast import dense_weight

    inputs = [_load(p, "--x") for p in args.x] if args.x else None
    if inputs is not None:
        shapes = {x.shape for x in inputs}
        if len(shapes) != 1 or len(next(iter(shapes))) != 2:
            raise ShapeError(f"every --x must be one (n, d_model) matrix of the same shape (got {sorted(shapes)})")
        n_file, d_file = next(iter(shapes))
    else:
        n_file, d_file = 6, 8
    spec = AttentionSpec(
        n=args.n if args.n is not None else n_file,
        d_model=args.d_model if args.d_model is not None else d_file,
        heads=args.heads, causal=args.causal, scale="none" if args.no_scale else "sqrt", bias=args.bias,
        positions=None if args.positions == "none" else args.positions, **rope_arguments(args),
    )
    if inputs is None and args.inputs < 1:
        raise SpecError(f"--inputs must be >= 1 (got {args.inputs})")
    drawn = random_inputs(spec, args.seed, batch=(args.inputs,) if inputs is None else ())
    if inputs is None:
        inputs = list(drawn["X"])
    # networkx holds every graph in memory (about 300 bytes an edge): every input's graphs, plus
    # the full graphs the routing-distance comparison builds. Refuse before the machine runs out.
    held = spec.heads * spec.n * spec.n * (len(inputs) + (4 if len(inputs) > 1 else 0))
    if held > _MAX_EDGES:
        raise SizeLimitError(
            f"n={spec.n} with {spec.heads} head(s) and {len(inputs)} input(s) would hold about {held:.1e} graph edges "
            f"in memory (limit {_MAX_EDGES:.0e}, about 3 GB); use a smaller --n, fewer heads or inputs, or "
            f"attnsym.numeric.attention and attnsym.graphs.routing_distance on the matrices for larger layers"
        )
    given = {"W_Q": args.wq, "W_K": args.wk, "W_V": args.wv, "W_O": args.wo}
    if args.wo is not None and not spec.output_projection:
        raise SpecError("--wo given but this layer has no output projection (it has one when --heads > 1)")
    weights = {}
    for name in spec.parameter_names:
        shape = spec.shapes[name]
        if given.get(name) is not None:
            weights[name] = _load(given[name], f"--{name.replace('_', '').lower()}")
            if weights[name].shape != shape:
                raise ShapeError(f"{name} from {str(given[name])!r} must have shape {shape} (got {weights[name].shape})")
        else:
            weights[name] = drawn[name]
    tokens = None if args.tokens is None else [t.strip() for t in args.tokens.split(",")]

    ext = _EXTENSIONS[args.format]
    plan = []  # (path, graph) — built completely before anything is written
    for k, X in enumerate(inputs):
        _, A = attention(X, **weights, spec=spec)
        heads = np.asarray(A)[None] if spec.heads == 1 else np.asarray(A)
        for h, M in enumerate(heads):
            G = routing_graph(M, tokens, threshold=args.threshold, top_k=args.top_k)
            G.graph.update(head=h, input=k)  # indices (from 0); the file name counts from 1
            plan.append((args.output / f"attention_input{k + 1}_head{h + 1}.{ext}", G))
    plan.append((args.output / f"mlp.{ext}", mlp_graph(dense_weight(weights, spec))))
    refuse_existing([args.output], overwrite=True, folders=True)  # a link, a file or a FIFO as -o: never written into
    refuse_existing([path for path, _ in plan], overwrite=args.force)
    # the set is staged and moved into place complete: an interrupted run leaves no partial set
    with staged_directory(args.output, overwrite=args.force, merge=True) as stage:  # other files in -o are kept
        for path, G in plan:
            export(G, stage / path.name, overwrite=args.force)
    print(f"{spec.describe()}; {len(inputs)} input(s); wrote {len(plan)} {args.format} file(s) to {args.output}/")
    for path, G in plan:
        print(f"  {path.name}: {G.number_of_nodes()} nodes, {G.number_of_edges()} edges")
    for k in range(1, len(inputs)):
        c = contrast(spec, inputs[0], inputs[k], weights)
        per_head = ", ".join(f"head {h + 1}: {d:.4f}" for h, d in enumerate(c.head_distances))
        print(f"input 1 vs input {k + 1}: MLP graph identical = {c.mlp_identical}; routing distance {per_head}")
    sys.stdout.flush()
    return 0
