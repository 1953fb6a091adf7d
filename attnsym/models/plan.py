"""A model as a stack of described blocks: what runs, built once from ``config.json``.

A :class:`ModelPlan` is the embedding, one :class:`Block` per layer and the final norm, for
every family (BERT's post-LayerNorm encoder as much as LLaMA's pre-RMSNorm decoder). Each
block names its norm (:class:`Norm`: kind, epsilon, placement), the layer's
:class:`~attnsym.AttentionSpec` (heads, grouped-query ``kv_heads``, RoPE and its scaling,
sliding window, QK-norm, biases), its MLP (kind and activation) and its residual wiring. The
plans are made by the family table of :mod:`attnsym.models.families` (which also attaches the
checkpoint's :class:`Layout`: tensor names and storage) and run by the one forward pass
:func:`attnsym.models.forward.forward`, whose attention step is the numeric layer's primitives
(those of :func:`attnsym.numeric.head_attention`) driven by the block's spec.

The plan also answers what :class:`~attnsym.models.Model` asks of a configuration
(``model_type``, ``layers``, ``heads``, ``width``, ``max_positions``, ``causal``,
``pad_token_id``, ``d_k``, :meth:`ModelPlan.describe`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..spec import AttentionSpec

__all__ = ["Block", "Experts", "Layout", "ModelPlan", "Norm"]


@dataclass(frozen=True)
class Layout:
    """How a family's checkpoint stores the plan's tensors (read by :func:`attnsym.models.weights.read_weights`).

    Attributes
    ----------
    prefixes : tuple of str
        Tensor-name prefixes tried in order (``"bert."``, ``"transformer."``, ``"model."``); none
        when no tensor starts with one.
    names : dict of str to str
        Role -> tensor name, ``{i}`` the layer (roles: ``embed``, ``position``, ``token_type``,
        ``embed_norm``, ``final_norm``, ``attn_norm``, ``mlp_norm``, ``W_Q`` … ``b_O``, ``W_QKV``,
        ``b_QKV``, ``g_Q``, ``g_K``, ``W_gate``, ``W_up``, ``b_up``, ``W_down``, ``b_down``,
        ``post_attn_norm``, ``post_mlp_norm``, ``lm_head`` (the untied output matrix, read without a
        prefix; ``lm_head.weight`` when the map does not name it); a norm's bias is its name with
        ``weight`` → ``bias``).
    transposed : bool
        Matrices stored ``(d_out, d_in)`` (PyTorch's ``nn.Linear``); GPT-2's ``Conv1D`` stores
        ``(d_in, d_out)``, the layout attnsym applies.
    qkv : {"separate", "columns", "per_head"}
        ``"columns"``: one ``W_QKV`` whose columns are ``[Q | K | V]`` (GPT-2's ``c_attn``);
        ``"per_head"``: per head its q, k and v side by side (GPT-NeoX, BLOOM).
    """

    prefixes: tuple[str, ...]
    names: dict[str, str]
    transposed: bool = True
    qkv: str = "separate"


@dataclass(frozen=True)
class Norm:
    """A normalisation over the model width.

    Attributes
    ----------
    kind : {"rms", "layer"}
        ``"rms"``: ``x / sqrt(mean(x²) + eps) ⊙ (offset + w)`` (LLaMA's RMSNorm; Gemma's has offset 1).
    eps : float
    offset : float, default 0.0
    """

    kind: str
    eps: float
    offset: float = 0.0

    def describe(self) -> str:
        """``'RMSNorm(eps=1e-06)'``, or ``'RMSNorm(1+w, eps=1e-06)'`` with Gemma's offset."""
        if self.kind == "layer":
            return f"LayerNorm(eps={self.eps:g})"
        return f"RMSNorm({'1+w, ' if self.offset else ''}eps={self.eps:g})"


@dataclass(frozen=True)
class Experts:
    """A mixture-of-experts MLP: a router picks ``top_k`` of ``count`` experts per token (``x W_r + b_r``).

    Three rules, by ``routing``:

    * ``"softmax_output"`` (gpt-oss): the ``top_k`` largest logits are softmaxed over those and
      weight the chosen experts' outputs; each expert is the clamped GLU
      ``g = min(x W_g + b_g, limit)``, ``u = clip(x W_u + b_u, −limit, limit)``,
      ``(u + 1) ⊙ g σ(alpha g) W_d + b_d``.
    * ``"sigmoid_input"`` (Llama 4): ``σ(logit)`` of each chosen expert scales that expert's
      *input*, each expert is SwiGLU ``(silu(x W_g) ⊙ x W_u) W_d``, and a dense SwiGLU shared
      expert (``shared``) is added for every token.
    * ``"softmax"`` (Qwen3-Next): the softmax over *all* ``count`` logits; the ``top_k`` largest
      probabilities weight the chosen SwiGLU experts' outputs (divided by their sum when
      ``normalize``, ``norm_topk_prob``); the SwiGLU shared expert of width ``shared_width`` is
      scaled by ``σ(x w_s)`` (``shared_gate``) and added.
    * ``"sigmoid_group"`` (DeepSeek V3): scores ``σ(logit)``; the choice adds a correction bias
      ``b_c`` to them and is limited to the ``top_groups`` of ``groups`` equal groups of experts whose
      two best corrected scores sum highest; the chosen experts' *uncorrected* scores, divided by
      their sum (+ 1e-20) when ``normalize``, times ``scaling``, weight their SwiGLU outputs; a
      shared SwiGLU expert of width ``shared_width`` sees every token.

    Attributes
    ----------
    count, top_k : int
    routing : {"softmax_output", "sigmoid_input", "softmax", "sigmoid_group"}
    alpha, limit : float or None
        gpt-oss's ``swiglu_alpha`` (1.702) and ``swiglu_limit`` (7.0).
    shared : bool
        A shared expert (Llama 4, Qwen3-Next, DeepSeek V3), of width ``shared_width`` or else the
        block's ``ffn_width``.
    normalize : bool, default False
        ``norm_topk_prob``: the chosen weights divided by their sum (Qwen3-Next, DeepSeek V3).
    shared_width : int or None
        The shared expert's width when it differs from the block's (Qwen3-Next; DeepSeek:
        ``moe_intermediate_size · n_shared_experts``).
    shared_gate : bool, default False
        The shared expert's output scaled by ``σ(x w_s)``, one learned ``(d, 1)`` column (Qwen3-Next).
    groups, top_groups : int, default 1
        DeepSeek's ``n_group`` and ``topk_group``.
    scaling : float, default 1.0
        DeepSeek's ``routed_scaling_factor``.
    """

    count: int
    top_k: int
    routing: str = "softmax_output"
    alpha: float | None = None
    limit: float | None = None
    shared: bool = False
    normalize: bool = False
    shared_width: int | None = None
    shared_gate: bool = False
    groups: int = 1
    top_groups: int = 1
    scaling: float = 1.0

    def describe(self) -> str:
        """``'mixture of 4 experts (top 2, softmax_output, clamped GLU alpha 1.702, limit 7)'``."""
        glu = f"clamped GLU alpha {self.alpha:g}, limit {self.limit:g}" if self.alpha is not None else "SwiGLU"
        shared = (", a gated shared expert" if self.shared_gate else ", a shared expert") if self.shared else ""
        if self.routing == "sigmoid_group":
            glu += f", top {self.top_groups} of {self.groups} groups, scaled {self.scaling:g}"
        return f"mixture of {self.count} experts (top {self.top_k}, {self.routing}, {glu}{shared})"


@dataclass(frozen=True)
class Block:
    """One transformer block: norm, attention, norm, MLP, with residuals.

    Attributes
    ----------
    attention : AttentionSpec
        The layer's attention (its ``n`` is the model's ``max_positions``; the forward pass
        uses the text's length).
    norm : Norm
        The kind of both norms of the block.
    placement : {"pre", "post", "output"}
        ``"pre"``: ``x + Attn(Norm(x))``, then ``x + MLP(Norm(x))`` (LLaMA, GPT-2); ``"post"``:
        ``x' = Norm(x + Attn(x))``, then ``Norm(x' + MLP(x'))`` (BERT); ``"output"`` (OLMo 2): no norm
        before a sublayer, only the norms of its output (``post_norms``), ``x + Norm(Attn(x))``.
    mlp : {"gated", "plain"}
        ``"gated"``: ``(act(x W_gate) ⊙ x W_up) W_down`` (SwiGLU with ``act = silu``); ``"plain"``:
        ``act(x W_up + b_up) W_down + b_down`` (GPT-NeoX, BERT, GPT-2).
    activation : {"silu", "gelu_tanh", "gelu_tanh_bloom", "gelu", "relu"}
        ``"gelu"`` the exact ``x Φ(x)`` (erf), ``"gelu_tanh"`` its tanh approximation (GPT-2's ``gelu_new``),
        ``"gelu_tanh_bloom"`` the same with √(2/π) written ``0.79788456`` (BLOOM's ``bloom_gelu_forward``).
    ffn_width : int
        Width of the MLP's hidden layer (``intermediate_size``).
    residual : {"sequential", "parallel"}
        ``"sequential"``: the attention's residual sum feeds the MLP; ``"parallel"`` (GPT-NeoX):
        ``x + Attn(Norm₁(x)) + MLP(Norm₂(x))``.
    post_norms : bool, default False
        Gemma 2: the attention's and the MLP's outputs are normed too before their residual sums.
    experts : Experts or None
        A mixture-of-experts MLP (gpt-oss) in place of the dense one; ``ffn_width`` is then each
        expert's width.
    latent_norm : Norm or None
        The RMSNorm of multi-head latent attention's latents (DeepSeek's ``q_a_layernorm``,
        ``kv_a_layernorm``); set with the spec's ``kv_latent_rank``.
    """

    attention: AttentionSpec
    norm: Norm
    ffn_width: int
    placement: str = "pre"
    mlp: str = "gated"
    activation: str = "silu"
    residual: str = "sequential"
    post_norms: bool = False
    experts: Experts | None = None
    latent_norm: Norm | None = None

    def describe(self) -> str:
        """One line: norm placement, the attention spec, the MLP."""
        placement = "pre+post" if self.post_norms and self.placement == "pre" else self.placement
        if self.experts is not None:
            return (f"{placement}-{self.norm.describe()} · attention {self.attention.describe()} · "
                    f"{self.experts.describe()} of width {self.ffn_width} · {self.residual} residual")
        return (f"{placement}-{self.norm.describe()} · attention {self.attention.describe()} · "
                f"{self.mlp} MLP {self.activation} {self.ffn_width} · {self.residual} residual")


@dataclass(frozen=True)
class ModelPlan:
    """A model: token embedding (with learned positions and token types where the family has them), blocks, final norm.

    Attributes
    ----------
    model_type : str
        The family (a key of :data:`attnsym.models.families.FAMILIES`).
    width, vocab_size, max_positions : int
    blocks : tuple of Block
    final_norm : Norm or None
        After the last block (None: BERT's post-norm blocks end normed).
    tie_word_embeddings : bool
        The LM head reuses the token embedding (logits ``h E_wordᵀ``); otherwise the checkpoint's
        own output matrix (role ``lm_head`` of the :class:`Layout`) is read when present.
    pad_token_id : int or None
    embed_scale : float or None
        The token embedding is multiplied by it (Gemma 2: ``sqrt(width)``).
    embed_norm : Norm or None
        A norm of the embedding before block 0 (BLOOM's ``word_embeddings_layernorm``, BERT's
        ``embeddings.LayerNorm``).
    causal : bool, default True
        Decoder (each token attends to itself and earlier tokens) or encoder (BERT).
    learned_positions : bool, default False
        A learned absolute position table is added to the token embedding (BERT, GPT-2); the
        blocks' specs then have ``positions=None``.
    type_vocab_size : int, default 0
        Token types (BERT's segment embedding, added to the embedding; 0 = none).
    layout : Layout or None
        How the checkpoint stores the tensors (not part of the architecture: not compared).
    final_softcap : float or None, default None
        The logits are soft-capped, ``c·tanh(z / c)`` (Gemma 2's ``final_logit_softcapping``).
    notes : tuple of str
        Warnings of the family's reading of ``config.json``: facts that disagree (a window set while
        ``use_sliding_window`` is off, ...), each naming its key (not compared).
    """

    model_type: str
    width: int
    vocab_size: int
    max_positions: int
    blocks: tuple[Block, ...]
    final_norm: Norm | None
    tie_word_embeddings: bool = False
    pad_token_id: int | None = None
    embed_scale: float | None = None
    embed_norm: Norm | None = None
    causal: bool = True
    learned_positions: bool = False
    type_vocab_size: int = 0
    layout: Layout | None = field(default=None, compare=False, repr=False)
    final_softcap: float | None = None
    notes: tuple[str, ...] = field(default=(), compare=False, repr=False)

    @property
    def layers(self) -> int:
        """Number of blocks."""
        return len(self.blocks)

    @property
    def heads(self) -> int:
        """Query heads per layer (the first block's; equal in every family of the table)."""
        return self.blocks[0].attention.heads

    @property
    def d_k(self) -> int:
        """Width of one head's queries and keys."""
        return self.blocks[0].attention.d_k

    def describe(self) -> str:
        """One line: family, layers, heads (and key/value heads when grouped), width.

        >>> spec = AttentionSpec(n=512, d_model=384, heads=12, bias=True, output_projection=True)
        >>> ModelPlan("bert", 384, 30522, 512, (Block(spec, Norm("layer", 1e-12), 1536, placement="post"),) * 6,
        ...           None, causal=False).describe()
        'bert: 6 layers, 12 heads of width 32, d_model 384, feed-forward 1536, up to 512 tokens'
        """
        a = self.blocks[0].attention
        kv = f" ({a.kv_heads} key/value heads)" if a.kv_heads != a.heads else ""
        return (f"{self.model_type}: {self.layers} layers, {a.heads} heads of width {a.d_k}{kv}, d_model {self.width}, "
                f"feed-forward {self.blocks[0].ffn_width}, up to {self.max_positions} tokens")

    def lines(self) -> list[str]:
        """The embedding, one line per block, the final norm."""
        out = [f"embedding: {self.vocab_size} tokens × {self.width}"
               + (f" × {self.embed_scale:g}" if self.embed_scale else "")
               + (f" + learned positions ({self.max_positions})" if self.learned_positions else "")
               + (f" + token types ({self.type_vocab_size})" if self.type_vocab_size else "")
               + (f", then {self.embed_norm.describe()}" if self.embed_norm else "")
               + (" (tied to the LM head)" if self.tie_word_embeddings else "")]
        out += [f"block {i}: {b.describe()}" for i, b in enumerate(self.blocks)]
        if self.final_norm is not None:
            out.append(f"final norm: {self.final_norm.describe()}")
        return out
