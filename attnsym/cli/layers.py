"""``attnsym layers``: the layer schedule of a model (which layer slides, rotates, normalises, sinks), grouped."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ._common import MODEL_FOLDERS, add_output_arguments, emit

__all__ = ["add_parser", "run"]

_DESCRIPTION = """\
Print the layer schedule of a model read from its config.json alone (no weights are read; a
GGUF file is loaded, its metadata giving the plan):
for every group of layers with the same facts, the mask (causal or bidirectional, window,
chunk), the positions (RoPE with its base, scaling and rotary dims, or none: NoPE), the
QK-norm (per head or over the whole projection, and its gain), a learned sink, the soft-cap,
the score scale and the heads, then the exact equation of that group. Layers count from 1 in
text, Markdown and LaTeX; the JSON's "layer" is an index from 0, one object per layer.

Facts of config.json that disagree (a window set while use_sliding_window is false, a window
longer than the context) are printed as warnings naming the key, to stderr.

{MODEL_FOLDERS} A GGUF file (*.gguf) is read too.
""".replace("{MODEL_FOLDERS}", MODEL_FOLDERS)

_EPILOG = """\
examples:
  attnsym layers --model path/to/gemma3-folder
  attnsym layers --model path/to/gpt-oss-folder --format json -o schedule.json

exit status: 0 done, 2 an error (no such folder, an unsupported or inconsistent config.json)
"""


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(
        "layers", help="the layer schedule of a model: per-layer masks, positions, QK-norm, sinks and equations",
        description=_DESCRIPTION, epilog=_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--model", default="all-MiniLM-L6-v2", metavar="NAME_OR_DIR",
                        help="a packaged model's name or a Hugging Face folder (default all-MiniLM-L6-v2)")
    parser.add_argument("--format", choices=("text", "md", "tex", "json"), default="text",
                        help="text (default), Markdown, LaTeX or JSON (one object per layer)")
    add_output_arguments(parser)
    parser.set_defaults(run=run)
    return parser


def run(args: argparse.Namespace) -> int:
    from ..models.config import read_config  # lazy: attnsym.models +0.2 s over `attnsym --help`
    from ..models.layer_table import layer_schedule
    from ..models.model import load, model_folder

    given = Path(args.model)
    if given.is_file() or (given.is_dir() and not (given / "config.json").is_file()):
        plan = load(args.model).config  # a GGUF file (or a folder holding one): its metadata is read with it
    else:
        plan = read_config(model_folder(args.model) / "config.json")  # config.json alone: no weights read
    schedule = layer_schedule(plan)
    render = {"text": schedule.text, "md": schedule.markdown, "tex": schedule.latex, "json": schedule.to_json}
    emit(render[args.format](), args.output, force=args.force)
    for note in schedule.notes:
        print(f"warning: {note}", file=sys.stderr)
    return 0
