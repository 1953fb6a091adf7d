r"""The layer schedule of a plan as data: one row of facts per layer, grouped, with the equation of each group.

:func:`layer_schedule` reads every block's :class:`~attnsym.AttentionSpec` (nothing else: the
schedule is the specs) into rows whose keys are :data:`LAYER_KEYS` — ``layer`` is an index (from
0), ``mask`` ``"causal"`` or ``"bidirectional"``, ``window`` / ``chunk`` an int or None,
``positions`` ``"rope"``, ``"alibi"``, ``"learned"`` (a table added to the embedding),
``"sinusoidal"`` or ``"none"``, ``rope_base``, ``rope_scaling`` (``{"type": ..., "factor": ...}``
and the rule's parameters, :meth:`~attnsym.spec.RopeScaling.as_dict`, or None), ``rotary_dims``,
``qk_norm`` (``"none"``, ``"per_head"``, ``"whole_projection"``),
``sink``, ``output_gate``, ``softcap``, ``scale``, ``heads``, ``kv_heads``, ``head_dim`` (and
``value_dim`` where it differs; a multi-head latent attention layer adds ``kv_latent_rank``,
``q_latent_rank`` and ``shared_rotary_key``: its rotary dims are the first ``rotary_dims`` of
``head_dim``, one key shared by every head). Layers with equal facts form one group; each group's equation
is written once, as text, Markdown and LaTeX (layers counted from 1 there, as everything a person
reads). The plan's :attr:`~attnsym.models.plan.ModelPlan.notes` (keys that disagree) come along.

A group's equation, in the order the layer computes it:

.. math::

    \hat q = \mathrm{RMSNorm}(q) \odot (o + g_Q),\quad \tilde q_p = R(p\,\theta)\,\hat q_p,\quad
    s_{ij} = c\,\tilde q_i \cdot \tilde k_j \;(\to t \tanh(s_{ij}/t)),\quad
    a_{ij} = \frac{e^{s_{ij}}}{[e^{\sigma_h} +] \sum_{k \in M(i)} e^{s_{ik}}}
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ..spec import AttentionSpec
from .plan import ModelPlan

__all__ = ["LAYER_KEYS", "LayerSchedule", "layer_facts", "layer_schedule"]

#: the keys of one layer's row, in order (``value_dim`` is added where it differs from ``head_dim``)
LAYER_KEYS = ("layer", "mask", "window", "chunk", "positions", "rope_base", "rope_scaling", "rotary_dims", "qk_norm",
              "qk_norm_gain", "sink", "output_gate", "softcap", "scale", "heads", "kv_heads", "head_dim")


def _scaling(spec: AttentionSpec) -> dict[str, Any] | None:
    return None if spec.rope_scaling is None else spec.rope_scaling.as_dict()


def layer_facts(spec: AttentionSpec, layer: int, learned_positions: bool = False) -> dict[str, Any]:
    """The row of one layer (module docstring), from its spec.

    >>> row = layer_facts(AttentionSpec(n=8, d_model=8, heads=2, causal=True, window=4, positions="rope"), 0)
    >>> row["mask"], row["window"], row["positions"], row["rope_base"], row["qk_norm"], row["scale"]
    ('causal', 4, 'rope', 10000, 'none', 0.5)
    """
    rope = spec.positions == "rope"
    positions = "learned" if learned_positions else (spec.positions or "none")
    row = {"layer": int(layer), "mask": "causal" if spec.causal else "bidirectional", "window": spec.window,
           "chunk": spec.chunk, "positions": positions, "rope_base": spec.position_base if rope else None,
           "rope_scaling": _scaling(spec) if rope else None, "rotary_dims": spec.rotary_dims if rope else None,
           "qk_norm": spec.qk_norm_kind, "qk_norm_gain": (f"{spec.qk_norm_offset:g}+w" if spec.qk_norm_offset else "w")
           if spec.qk_norm else None, "sink": spec.sink, "output_gate": spec.output_gate, "softcap": spec.softcap,
           "scale": spec.scale_float, "heads": spec.heads, "kv_heads": spec.kv_heads, "head_dim": spec.d_k}
    if spec.d_v != spec.d_k:
        row["value_dim"] = spec.d_v
    if spec.kv_latent_rank is not None:  # multi-head latent attention: its latents, one rotary key for every head
        row.update(kv_latent_rank=spec.kv_latent_rank, q_latent_rank=spec.q_latent_rank, shared_rotary_key=True)
    return row


def _ranges(layers: list[int]) -> str:
    """``[0, 1, 2, 4]`` -> ``'1-3, 5'`` (counted from 1)."""
    out: list[str] = []
    start = layers[0]
    for a, b in zip(layers, [*layers[1:], None], strict=True):
        if b != a + 1:
            out.append(f"{start + 1}" if start == a else f"{start + 1}-{a + 1}")
            if b is not None:
                start = b
    return ", ".join(out)


def _num(x: float) -> str:
    """``1000000.0`` -> ``'1000000'``, ``0.5`` -> ``'0.5'``."""
    return str(int(x)) if float(x).is_integer() else f"{x:g}"


def _words(row: dict[str, Any]) -> str:
    parts = [row["mask"], f"window {row['window']}" if row["window"] else "full"]
    if row["chunk"]:
        parts.append(f"chunk {row['chunk']}")
    if row["positions"] == "rope":
        rope = f"RoPE base {_num(row['rope_base'])}"
        if row["rope_scaling"]:
            rope += f" × {row['rope_scaling']['type']} {row['rope_scaling']['factor']:g}"
        if row["rotary_dims"] != row["head_dim"]:
            rope += f" on {row['rotary_dims']} of {row['head_dim']} dims"
        parts.append(rope)
    else:
        parts.append("no positions (NoPE)" if row["positions"] == "none" else f"{row['positions']} positions")
    if row["qk_norm"] != "none":
        parts.append(f"QK-RMSNorm {row['qk_norm'].replace('_', ' ')} ({row['qk_norm_gain']})")
    parts.append(f"scale {row['scale']:.6g}")
    if row["softcap"]:
        parts.append(f"soft-cap {row['softcap']:g}")
    if row["sink"]:
        parts.append("sink logit per head (rows sum to 1 − π)")
    if row["output_gate"]:
        parts.append("sigmoid output gate")
    if row.get("kv_latent_rank"):
        q = f", query latent {row['q_latent_rank']}" if row["q_latent_rank"] else ""
        parts.append(f"latent K/V {row['kv_latent_rank']}{q}, one rotary key shared by all heads")
    kv = f"/{row['kv_heads']} kv" if row["kv_heads"] != row["heads"] else ""
    values = f" (values {row['value_dim']})" if "value_dim" in row else ""
    parts.append(f"{row['heads']}{kv} heads × {row['head_dim']}{values}")
    return ", ".join(parts)


def _equation(row: dict[str, Any], tex: bool) -> str:
    """The equation of a layer with these facts (text or LaTeX)."""
    c = f"{row['scale']:.6g}"
    q = "q" if row["qk_norm"] == "none" else (r"\hat q" if tex else "q̂")
    k = "k" if row["qk_norm"] == "none" else (r"\hat k" if tex else "k̂")
    pieces = []
    if row.get("kv_latent_rank"):  # the keys and values every head expands from the normed latent c_j
        pieces.append(r"k_{j,h} = [k^{\rho}_j \mid N(c_j) W^{UK}_h],\ v_{j,h} = N(c_j) W^{UV}_h" if tex
                      else "k_j,h = [k^ρ_j, N(c_j) W^UK_h], v_j,h = N(c_j) W^UV_h")
    if row["qk_norm"] != "none":
        what = "each head's row" if row["qk_norm"] == "per_head" else "the whole projection row"
        gain = row["qk_norm_gain"].replace("w", "g")
        pieces.append(rf"\hat q = \mathrm{{RMSNorm}}(q) \odot ({gain}_Q)" if tex
                      else f"q̂ = RMSNorm(q) ⊙ ({gain}_Q) over {what} (k̂ alike)")
    if row["positions"] == "rope":
        r = row["rotary_dims"]
        base = _num(row["rope_base"])
        theta = rf"\theta_i = {base}^{{-2i/{r}}}" if tex else f"θ_i = {base}^(-2i/{r})"
        if row["rope_scaling"]:
            theta += f" ({row['rope_scaling']['type']} {row['rope_scaling']['factor']:g})"
        pieces.append(rf"\tilde q_p = R(p\theta)\,{q}_p,\ {theta}" if tex else f"q̃_p = R(pθ) {q}_p, {theta}")
        q, k = (r"\tilde q", r"\tilde k") if tex else ("q̃", "k̃")
    score = rf"s_{{ij}} = {c}\, {q}_i \cdot {k}_j" if tex else f"s_ij = {c} {q}_i·{k}_j"
    if row.get("kv_latent_rank"):  # the split score: the rotary part and the non-rotary part (mla-absorbed)
        r = row["rotary_dims"]
        score = (rf"s_{{ij}} = {c}\,({q}^{{\rho}}_i \cdot {k}^{{\rho}}_j + q^{{\text{{nope}}}}_i \cdot "
                 rf"k^{{\text{{nope}}}}_{{j,h}}),\ \rho = 1..{r}" if tex
                 else f"s_ij = {c} ({q}^ρ_i·{k}^ρ_j + q^nope_i·k^nope_j,h), ρ the first {r} dims")
    if row["softcap"]:
        t = f"{row['softcap']:g}"
        score += rf" \to {t}\tanh(s_{{ij}}/{t})" if tex else f" → {t} tanh(s_ij/{t})"
    pieces.append(score)
    allowed = ["j ≤ i" if not tex else r"j \le i"] if row["mask"] == "causal" else []
    if row["window"]:
        allowed.append(f"|i − j| < {row['window']}" if not tex else rf"|i-j| < {row['window']}")
    if row["chunk"]:
        allowed.append(f"⌊i/{row['chunk']}⌋ = ⌊j/{row['chunk']}⌋" if not tex
                       else rf"\lfloor i/{row['chunk']}\rfloor = \lfloor j/{row['chunk']}\rfloor")
    where = (" for " + ", ".join(allowed)) if allowed else ""
    if tex:
        sink = r"e^{\sigma_h} + " if row["sink"] else ""
        pieces.append(rf"a_{{ij}} = e^{{s_{{ij}}}} / ({sink}\sum_k e^{{s_{{ik}}}})" + (rf"\ \text{{{where}}}" if where
                                                                                    else ""))
    else:
        sink = "e^σ_h + " if row["sink"] else ""
        pieces.append(f"a_ij = e^s_ij / ({sink}Σ_k e^s_ik){where}")
    if row["output_gate"]:
        pieces.append(r"z_i = \big(\sum_j a_{ij} v_j\big) \odot \sigma(W_G^\top x_i)" if tex
                      else "z_i = (Σ_j a_ij v_j) ⊙ σ(W_Gᵀ x_i)")
    return (r",\quad " if tex else "; ").join(pieces)


@dataclass(frozen=True)
class LayerSchedule:
    """Every layer's facts (:data:`LAYER_KEYS`), grouped, and the warnings of the config's reading.

    Attributes
    ----------
    model_type : str
    rows : tuple of dict
        One per layer, in order.
    notes : tuple of str
        Facts of ``config.json`` that disagree, each naming its key.
    """

    model_type: str
    rows: tuple[dict[str, Any], ...]
    notes: tuple[str, ...] = ()

    def groups(self) -> list[tuple[list[int], dict[str, Any]]]:
        """``(layer indices, facts)`` per distinct set of facts, in order of first appearance."""
        out: dict[str, tuple[list[int], dict[str, Any]]] = {}
        for row in self.rows:
            facts = {k: v for k, v in row.items() if k != "layer"}
            key = json.dumps(facts, sort_keys=True)
            out.setdefault(key, ([], facts))[0].append(row["layer"])
        return list(out.values())

    def text(self) -> str:
        """The groups as plain text (layers counted from 1), then the warnings."""
        lines = [f"{self.model_type}: {len(self.rows)} layers (counted from 1)"]
        for layers, facts in self.groups():
            lines.append(f"layers {_ranges(layers)}: {_words(facts)}")
            lines.append(f"    {_equation(facts, tex=False)}")
        lines += [f"warning: {n}" for n in self.notes]
        return "\n".join(lines)

    def markdown(self) -> str:
        """A Markdown table: one row per group."""
        lines = [f"**{self.model_type}**: {len(self.rows)} layers (counted from 1)", "",
                 "| layers | schedule | equation |", "|---|---|---|"]
        lines += [f"| {_ranges(layers)} | {_words(f)} | {_equation(f, tex=False)} |" for layers, f in self.groups()]
        lines += [""] + [f"- warning: {n}" for n in self.notes] if self.notes else []
        return "\n".join(lines)

    def latex(self) -> str:
        """One ``align*`` line per group."""
        body = " \\\\\n".join(rf"&\text{{layers {_ranges(layers)}}}: && {_equation(f, tex=True)}"
                              for layers, f in self.groups())
        notes = "".join(f"\n% warning: {n}" for n in self.notes)
        return "\\begin{align*}\n" + body + "\n\\end{align*}" + notes

    def to_dict(self) -> dict[str, Any]:
        """``{"model_type", "layers": [row, ...], "warnings": [...]}`` (JSON-ready)."""
        return {"model_type": self.model_type, "layers": [dict(r) for r in self.rows], "warnings": list(self.notes)}

    def to_json(self) -> str:
        """:meth:`to_dict` as JSON text."""
        return json.dumps(self.to_dict(), indent=1, allow_nan=False)

    def __str__(self) -> str:
        return self.text()


def layer_schedule(plan: ModelPlan) -> LayerSchedule:
    """The :class:`LayerSchedule` of a plan: its blocks' specs, row by row.

    >>> spec = AttentionSpec(n=8, d_model=8, heads=2, causal=True, positions="rope")
    >>> from attnsym.models.plan import Block, Norm
    >>> plan = ModelPlan("llama", 8, 10, 8, (Block(spec.with_(window=4), Norm("rms", 1e-6), 16),
    ...                                      Block(spec, Norm("rms", 1e-6), 16)), Norm("rms", 1e-6))
    >>> print(layer_schedule(plan).text())  # doctest: +NORMALIZE_WHITESPACE
    llama: 2 layers (counted from 1)
    layers 1: causal, window 4, RoPE base 10000, scale 0.5, 2 heads × 4
        q̃_p = R(pθ) q_p, θ_i = 10000^(-2i/4); s_ij = 0.5 q̃_i·k̃_j; a_ij = e^s_ij / (Σ_k e^s_ik) for j ≤ i, |i − j| < 4
    layers 2: causal, full, RoPE base 10000, scale 0.5, 2 heads × 4
        q̃_p = R(pθ) q_p, θ_i = 10000^(-2i/4); s_ij = 0.5 q̃_i·k̃_j; a_ij = e^s_ij / (Σ_k e^s_ik) for j ≤ i
    """
    rows = tuple(layer_facts(b.attention, i, plan.learned_positions) for i, b in enumerate(plan.blocks))
    return LayerSchedule(model_type=plan.model_type, rows=rows, notes=plan.notes)
