"""Hostile config.json values and files for every family of the table (issue 37, items 2, 3, 5, 6, 7, 9, 10, 11).

Each family's tiny random model (``models_support.family_model``, built once per session) is
copied as links into a temporary folder whose ``config.json`` carries one hostile value. Every
value must be refused by :func:`attnsym.models.load` with one :class:`~attnsym.AttnsymError`
naming the key (no ``TypeError``, ``OverflowError``, ``ZeroDivisionError``, ``IndexError``
...), and ``attnsym route`` must exit 2 after one line. Files in the folder that are not regular
files (a FIFO named as a shard, as ``config.json``, ``tokenizer.json`` or ``model.safetensors``)
are refused before they are opened, within a timeout; a config claiming 2^24 layers over a file
of two is refused before any block is built.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json
import os
import threading
from pathlib import Path

import numpy as np
import pytest
from models_support import FAMILY_NAMES, family_model

from attnsym.cli import main
from attnsym.errors import AttnsymError, ShapeError
from attnsym.models import CorruptWeightsError, ModelError, load
from attnsym.models import families as families_module
from attnsym.models.forward import forward
from attnsym.models.plan import Norm

pytest.importorskip("torch")
pytest.importorskip("transformers")

NAN, INF = float("nan"), float("inf")
EPS = [-1e-6, 0, 1, 2.0, 1e308, 10**400, NAN, INF, -INF, "1e-6", [1e-6], True]
BOOL = ["false", "true", 0, 1, [True], {"value": False}]
IDS = [10**9, -1, 100, 1.5, "1", True]
LAYERS = [2**24, 2**40, 0, -1, 2.5, "2", 10**400]
SIZES = [0, -1, 2.5, "8", 2**40, 10**400, [8]]
THETA = [0, -1, 1, 0.5, 10**400, NAN, INF, "10000", [10000.0]]
ROPE = [{"rope_type": "linear"}, {"rope_type": "linear", "factor": 0}, {"rope_type": "linear", "factor": "2"},
        {"rope_type": "linear", "factor": 10**400}, {"rope_type": "linear", "factor": NAN},
        {"rope_type": "proportional", "factor": 2.0}, {"rope_type": "yarn", "factor": 2.0, "beta_fast": "32"},
        {"rope_type": "longrope", "short_factor": [1.0], "long_factor": [1.0]}, {"rope_type": ["linear"], "factor": 2.0},
        {"rope_type": "llama3", "factor": 8.0}, "linear", [2.0]]
POSITIVE = [0, -1, 10**400, NAN, INF, "16", [16]]

ROPE_PARAMETERS = [{"rope_theta": 0, "rope_type": "default"}, {"rope_theta": 10000.0, "rope_type": "linear"},
                   {"rope_theta": "1e4"}, {"rope_theta": 10**400}, {"rope_theta": NAN}, "default", [10000.0]]

#: per family, the keys its reader reads that a hostile value can reach, and the values tried
DECODER = {"rope_parameters": ROPE_PARAMETERS, "rms_norm_eps": EPS, "attention_bias": BOOL, "tie_word_embeddings": BOOL,
           "mlp_bias": BOOL, "pad_token_id": IDS, "num_hidden_layers": LAYERS, "rope_theta": THETA, "rope_scaling": ROPE,
           "head_dim": SIZES, "vocab_size": SIZES, "max_position_embeddings": SIZES}
KEYS: dict[str, dict[str, list]] = {
    "llama": DECODER,
    "mistral": {**DECODER, "sliding_window": SIZES},
    # qwen2 has biases on q, k, v whatever attention_bias says (transformers does not read it either)
    "qwen2": {**{k: v for k, v in DECODER.items() if k != "attention_bias"}, "use_sliding_window": BOOL},
    "qwen3": {**DECODER, "use_sliding_window": BOOL},
    "gemma2": {**DECODER, "query_pre_attn_scalar": POSITIVE, "attn_logit_softcapping": POSITIVE,
               "sliding_window": SIZES,
               "layer_types": [["full_attention"], "full", [1, 2], ["x", "y"]]},
    "gpt_neox": {"layer_norm_eps": EPS, "rotary_pct": [[0.5], 0, -0.5, 1.5, 10**400, NAN, "0.5"],
                 "use_parallel_residual": BOOL, "tie_word_embeddings": BOOL, "attention_bias": BOOL,
                 "rotary_emb_base": THETA, "rope_scaling": ROPE, "pad_token_id": IDS, "num_hidden_layers": LAYERS,
                 "rope_parameters": [*ROPE_PARAMETERS, {"partial_rotary_factor": [0.5], "rope_theta": 10000.0},
                                     {"partial_rotary_factor": 0, "rope_theta": 10000.0}]},
    "bloom": {"layer_norm_epsilon": EPS, "n_embed": ["30", [30], 0, 2**40, 10**400], "n_head": SIZES,
              "n_layer": LAYERS, "apply_residual_connection_post_layernorm": BOOL, "tie_word_embeddings": BOOL,
              "pad_token_id": IDS},
    "gpt2": {"layer_norm_epsilon": EPS, "n_layer": LAYERS, "n_inner": SIZES, "scale_attn_weights": BOOL,
             "scale_attn_by_inverse_layer_idx": BOOL, "pad_token_id": IDS, "activation_function": [["gelu"], "swish"]},
    "bert": {"layer_norm_eps": EPS, "num_hidden_layers": LAYERS, "is_decoder": BOOL, "pad_token_id": IDS,
             "type_vocab_size": SIZES, "hidden_act": [["gelu"], "swish"]},
}


def _folder(tmp_path: Path, name: str, **changes) -> Path:
    """A copy (links) of family ``name``'s model folder whose config.json has ``changes`` applied."""
    source, _ = family_model(name)
    folder = tmp_path / "model"
    folder.mkdir(exist_ok=True)
    for file in source.iterdir():
        if file.name != "config.json" and not (folder / file.name).exists():
            (folder / file.name).symlink_to(file)
    raw = json.loads((source / "config.json").read_text())
    if name == "bloom":  # transformers writes hidden_size; the BLOOM checkpoints on the hub write n_embed
        raw["n_embed"] = raw.pop("hidden_size")
    if set(changes) & {"rope_theta", "rope_scaling", "rotary_pct", "rotary_emb_base"}:
        raw.pop("rope_parameters", None)  # the transformers 4 spelling, read when rope_parameters is absent
    raw.update(changes)
    (folder / "config.json").write_text(json.dumps(raw))  # NaN and Infinity as the JSON module writes them
    return folder


def _cases():
    for name in FAMILY_NAMES:
        for key, values in KEYS[name].items():
            for value in values:
                yield pytest.param(name, key, value, id=f"{name}-{key}-{str(value)[:20]}")


@pytest.mark.parametrize("name", FAMILY_NAMES)
def test_the_unchanged_folder_loads(name, tmp_path):
    assert load(_folder(tmp_path, name)).config.model_type == name


@pytest.mark.parametrize(("name", "key", "value"), list(_cases()))
def test_a_hostile_value_is_one_error_naming_the_key(name, key, value, tmp_path):
    with pytest.raises(AttnsymError) as info:  # any other exception escaping load() fails the test
        model = load(_folder(tmp_path, name, **{key: value}))
        model.route("the apple")  # a value load() accepted must not break the forward pass either
    text = str(info.value)
    names = {"rope_parameters": ("rope_parameters", "rope_theta", "rope_scaling", "partial_rotary_factor")}
    assert any(name in text for name in names.get(key, (key,))), text
    assert "float64" not in text and "please report" not in text
    assert "llama config.json" not in text or name == "llama", text  # each family is called by its own name


@pytest.mark.parametrize("name", FAMILY_NAMES)
def test_the_cli_prints_one_line_and_exits_2(name, tmp_path):
    eps_key = next(k for k in KEYS[name] if "eps" in k)
    folder = _folder(tmp_path, name, **{eps_key: 10**400})
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        status = main(["route", "--model", str(folder), "-o", str(tmp_path / "out"), "a text"])
    lines = err.getvalue().strip().splitlines()
    assert status == 2 and len(lines) == 1, lines
    assert eps_key in lines[0] and f"a {name} config.json" in lines[0] and "internal error" not in lines[0]
    assert not (tmp_path / "out").exists()


def test_messages_name_the_real_family_and_cause(tmp_path):
    folder = _folder(tmp_path, "gemma2", sliding_window=None)
    with pytest.raises(ModelError, match=r"has no 'sliding_window'; a gemma2 config\.json must give it"):
        load(folder)
    (folder / "config.json").unlink()
    folder = _folder(tmp_path, "gemma2", rms_norm_eps=NAN)
    with pytest.raises(ModelError, match=r"'rms_norm_eps' must be a finite number between 0 and 1.*got nan in a gemma2"):
        load(folder)


@pytest.mark.parametrize("name", FAMILY_NAMES)
def test_a_layer_count_the_weights_lack_is_refused_before_any_block_is_built(name, tmp_path, monkeypatch):
    key = "n_layer" if name in ("gpt2", "bloom") else "num_hidden_layers"
    folder = _folder(tmp_path, name, **{key: 2**24})

    def never(raw, path):
        raise AssertionError("a plan was built for a layer count the weights do not hold")

    monkeypatch.setitem(families_module.FAMILIES, name, never)
    with pytest.raises(CorruptWeightsError, match=f"{key}=16777216, but the weights hold tensors of 2 layer"):
        load(folder)


def _load_within(folder: Path, fifo: Path, seconds: float = 60.0) -> BaseException | None:
    """Load ``folder`` in a thread; fail if it is still blocked after ``seconds`` (then unblock it)."""
    outcome: list[BaseException | None] = []

    def run() -> None:
        try:
            load(folder)
            outcome.append(None)
        except BaseException as error:  # handed to the test thread
            outcome.append(error)

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(seconds)
    if worker.is_alive():  # blocked opening the FIFO: give it a writer so the thread ends, then fail
        with contextlib.suppress(OSError):
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        worker.join(10)
        pytest.fail(f"load() blocked on the FIFO {fifo.name}")
    return outcome[0]


@pytest.mark.parametrize("file", ["config.json", "tokenizer.json", "model.safetensors", "shard", "index"])
def test_a_fifo_in_place_of_a_file_is_refused_without_blocking(file, tmp_path):
    folder = _folder(tmp_path, "llama")
    source, _ = family_model("llama")
    if file in ("shard", "index"):  # a sharded folder: the index names one shard, which is (or the index is) a FIFO
        (folder / "model.safetensors").unlink()
        names = json.loads((source / "model.safetensors").read_bytes()[8:8 + int.from_bytes(
            (source / "model.safetensors").read_bytes()[:8], "little")])
        names.pop("__metadata__", None)
        index = {"metadata": {}, "weight_map": {n: "model-00001-of-00001.safetensors" for n in names}}
        (folder / "model.safetensors.index.json").write_text(json.dumps(index))
        target = folder / ("model-00001-of-00001.safetensors" if file == "shard" else "model.safetensors.index.json")
        if file == "index":
            (folder / "model-00001-of-00001.safetensors").symlink_to(source / "model.safetensors")
    else:
        target = folder / file
    target.unlink(missing_ok=True)
    os.mkfifo(target)
    error = _load_within(folder, target)
    assert isinstance(error, ModelError), error
    assert "FIFO" in str(error) and target.name in str(error)


def test_a_huge_tokenizer_or_vocabulary_is_refused_before_it_is_read(tmp_path):
    folder = _folder(tmp_path, "bert")
    for name in ("tokenizer.json", "vocab.txt"):
        path = folder / name
        path.unlink(missing_ok=True)
        with path.open("wb") as handle:  # sparse: 600 MB on paper, nothing to hold
            handle.truncate(600 << 20)
        with pytest.raises(ModelError, match=rf"{name} is 629,145,600 bytes, larger than the 104,857,600 bytes"):
            load(folder)
        path.unlink()


def test_a_nan_epsilon_set_through_the_api_is_not_answered_with_load_in_float64(tmp_path):
    m = load(_folder(tmp_path, "llama"), dtype="float64")
    blocks = tuple(dataclasses.replace(b, norm=Norm("rms", NAN)) for b in m.config.blocks)
    plan = dataclasses.replace(m.config, blocks=blocks)
    with pytest.raises(ShapeError, match=r"overflows float64 .* no wider dtype helps") as info:
        forward(plan, m.weights, np.array([[2, 3, 4]]))
    assert "dtype='float64'" not in str(info.value)


def test_identical_layers_share_one_block(tmp_path):
    plan = load(_folder(tmp_path, "llama")).config
    assert plan.layers == 2 and plan.blocks[0] is plan.blocks[1]  # built once, not once per layer
