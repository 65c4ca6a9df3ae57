"""The paper's decoder-only transformer in Flax: no causal mask, learned positions, SwiGLU, post-LayerNorm.

Tokens ``[B, T]`` are embedded and added to learned position embeddings; ``num_layers`` blocks each mix the
positions with bidirectional self-attention, then a SwiGLU, each with a residual and a LayerNorm, and a linear head
reads the last position and gives ``[B, output_size]`` logits.  ``normalization`` places the LayerNorms:

* ``'post'`` (the paper's, appendix A.2: "post-normalization"): ``x ← LN(x + attention(x))``,
  ``x ← LN(x + SwiGLU(x))``; the head reads the last block's (normalised) output;
* ``'pre'`` (the released searchless_chess code's, and every checkpoint written before the option existed):
  ``x ← x + attention(LN(x))``, ``x ← x + SwiGLU(LN(x))``, then a final LayerNorm before the head.

Linear layers
have no biases.  ``dtype='bfloat16'`` runs the matrix multiplications in bfloat16 while the parameters, the
LayerNorms' statistics and the logits stay in float32.

Action tokens (the action-value predictor's last token) are embedded from a table of 1968 rows, as in the paper
(``action_embedding='table'``).  Two options for small datasets, not the paper's, share what is learnt about a
square across the ~30 actions that start or end there: ``'factored'`` sums an origin-square, a destination-square
and a promotion embedding; ``'square-tied'`` builds the action from the position embeddings of the board tokens of
its two squares (each through a learnt linear map initialised to the identity) plus a promotion embedding, so an
action token starts out aligned with the squares it names.

``mark_action_squares=True`` (also not the paper's) adds a learnt origin marker and a learnt destination marker to
the embeddings of the two board tokens the action's squares name, so every token can find the move's squares
through two vectors shared by all 1968 actions instead of a lookup each action embedding must learn on its own.
With the table alone the tiny preset's model never learnt what stands on its move's destination and could not
value a capture; with the markers it could (distill/README.md, ``scripts/distill_diagnostics.py``).

Sizes (``MODEL_SIZES``) follow the paper — ``9M``: 8 layers of width 256, ``136M``: 8 × 1024, ``270M``: 16 × 1024,
all with 8 heads and an MLP 4 × wider — plus small ones for CPU runs and tests.
"""

from __future__ import annotations

import dataclasses
import functools

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np

from zerolab.networks import compute_dtype

from distill.tokenizer import ACTION_FROM_SQUARE, ACTION_PROMOTION, ACTION_TO_SQUARE, NUM_ACTIONS, NUM_CHARACTERS

ACTION_EMBEDDINGS = ("table", "factored", "square-tied")
MODEL_SIZES: dict[str, dict[str, int]] = {
    "test": dict(num_layers=1, embedding_dim=32, num_heads=2),
    "cpu-tiny": dict(num_layers=2, embedding_dim=32, num_heads=2),
    "cpu-small": dict(num_layers=2, embedding_dim=64, num_heads=4),
    "cpu-medium": dict(num_layers=4, embedding_dim=128, num_heads=4),
    "9M": dict(num_layers=8, embedding_dim=256, num_heads=8),
    "136M": dict(num_layers=8, embedding_dim=1024, num_heads=8),
    "270M": dict(num_layers=16, embedding_dim=1024, num_heads=8),
}


NORMALIZATIONS = ("post", "pre")


@dataclasses.dataclass(frozen=True)
class TransformerConfig:
    """Everything that fixes the network's parameters and computation.

    Attributes:
      vocabulary_size: number of distinct input tokens.
      sequence_length: T, the number of input tokens.
      output_size: O, the number of logits read at the last position.
      num_layers, embedding_dim, num_heads: depth, width and attention heads.
      widening_factor: SwiGLU hidden width = ``widening_factor * embedding_dim``.
      dtype: ``float32`` or ``bfloat16`` (the computation dtype of the matrix multiplications).
      action_embedding: ``table`` (one learnt vector per action token, the paper's), ``factored`` or
        ``square-tied`` (see the module docstring; they need the action-value vocabulary: the 31 symbols then the
        1968 actions).
      mark_action_squares: add learnt origin / destination markers to the board tokens of the last token's action
        (needs the action-value vocabulary; see the module docstring).
      normalization: ``post`` (the paper's) or ``pre`` LayerNorms (see the module docstring).
    """

    vocabulary_size: int
    sequence_length: int
    output_size: int
    num_layers: int = 8
    embedding_dim: int = 256
    num_heads: int = 8
    widening_factor: int = 4
    dtype: str = "float32"
    action_embedding: str = "table"
    mark_action_squares: bool = False
    normalization: str = "post"

    def __post_init__(self):
        if self.normalization not in NORMALIZATIONS:
            raise ValueError(f"normalization must be one of {NORMALIZATIONS}, got {self.normalization!r}")
        if self.embedding_dim % self.num_heads:
            raise ValueError(f"embedding_dim {self.embedding_dim} is not divisible by num_heads {self.num_heads}")
        compute_dtype(self.dtype, "model.dtype")  # the core's rule: one of zerolab.networks.NETWORK_DTYPES
        if self.action_embedding not in ACTION_EMBEDDINGS:
            raise ValueError(f"action_embedding must be one of {ACTION_EMBEDDINGS}, got {self.action_embedding!r}")
        needs_actions = self.action_embedding != "table" or self.mark_action_squares
        if needs_actions and self.vocabulary_size != NUM_CHARACTERS + NUM_ACTIONS:
            raise ValueError(f"action_embedding={self.action_embedding!r}, mark_action_squares="
                             f"{self.mark_action_squares} need the action-value vocabulary of "
                             f"{NUM_CHARACTERS + NUM_ACTIONS} tokens, got vocabulary_size={self.vocabulary_size}")

    @classmethod
    def from_size(cls, size: str, **fields) -> TransformerConfig:
        """The config of a named size (``MODEL_SIZES``) with the other fields given."""
        if size not in MODEL_SIZES:
            raise ValueError(f"unknown model size {size!r}; expected one of {', '.join(MODEL_SIZES)}")
        return cls(**MODEL_SIZES[size], **fields)

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_saved(cls, fields: dict) -> TransformerConfig:
        """The config a checkpoint's metadata describes; one written before ``normalization`` existed had ``pre``."""
        return cls(**{"normalization": "pre", **fields})


class TokenEmbedding(nn.Module):
    """Token ids [B, T] and position embeddings [T, D] → token embeddings [B, T, D] (see ``action_embedding``)."""

    config: TransformerConfig

    @nn.compact
    def __call__(self, tokens: jax.Array, positions: jax.Array) -> jax.Array:
        config = self.config
        initializer = nn.initializers.truncated_normal(stddev=1.0)
        if config.action_embedding == "table":
            return nn.Embed(config.vocabulary_size, config.embedding_dim, embedding_init=initializer,
                            name="token_embedding")(tokens)
        symbols = nn.Embed(NUM_CHARACTERS, config.embedding_dim, embedding_init=initializer,
                           name="symbol_embedding")(jnp.minimum(tokens, NUM_CHARACTERS - 1))
        action = jnp.clip(tokens - NUM_CHARACTERS, 0, NUM_ACTIONS - 1)
        promotion = nn.Embed(5, config.embedding_dim, embedding_init=initializer, name="promotion_embedding")(
            jnp.asarray(ACTION_PROMOTION)[action])
        if config.action_embedding == "factored":
            squares = [nn.Embed(64, config.embedding_dim, embedding_init=initializer, name=name)(
                jnp.asarray(table)[action]) for name, table in (("origin_embedding", ACTION_FROM_SQUARE),
                                                               ("destination_embedding", ACTION_TO_SQUARE))]
        else:  # square-tied: the position embeddings of the action's two board tokens
            squares = [nn.Dense(config.embedding_dim, use_bias=False, kernel_init=_identity,
                                name=name)(positions[jnp.asarray(table)[action]])
                       for name, table in (("origin_map", ACTION_ORIGIN_TOKEN),
                                           ("destination_map", ACTION_DESTINATION_TOKEN))]
        actions = (squares[0] + squares[1] + promotion) / jnp.sqrt(3.0)
        return jnp.where((tokens >= NUM_CHARACTERS)[..., None], actions, symbols)


def _identity(key: jax.Array, shape: tuple[int, ...], dtype=jnp.float32) -> jax.Array:
    return jnp.eye(*shape, dtype=dtype)


def board_token_of_square(squares: np.ndarray) -> np.ndarray:
    """Index among the 77 position tokens of python-chess squares (a1 = 0): the board runs a8..h8, ..., a1..h1."""
    return 1 + (7 - squares // 8) * 8 + squares % 8


# For each of the 1968 actions, the index of the board token of its origin and of its destination square.
ACTION_ORIGIN_TOKEN = board_token_of_square(ACTION_FROM_SQUARE)
ACTION_DESTINATION_TOKEN = board_token_of_square(ACTION_TO_SQUARE)


class ActionSquareMarkers(nn.Module):
    """Tokens [B, T] whose last is an action → [B, T, D]: a learnt origin marker at the board token of the action's
    origin square, a learnt destination marker at its destination's, zero elsewhere."""

    embedding_dim: int

    @nn.compact
    def __call__(self, tokens: jax.Array) -> jax.Array:
        initializer = nn.initializers.truncated_normal(stddev=1.0)
        markers = self.param("markers", initializer, (2, self.embedding_dim))  # origin, destination
        action = jnp.clip(tokens[:, -1] - NUM_CHARACTERS, 0, NUM_ACTIONS - 1)
        is_action = (tokens[:, -1] >= NUM_CHARACTERS)[:, None, None]
        length = tokens.shape[-1]
        marked = [jax.nn.one_hot(jnp.asarray(table)[action], length)
                  for table in (ACTION_ORIGIN_TOKEN, ACTION_DESTINATION_TOKEN)]  # 2 × [B, T]
        return jnp.where(is_action, marked[0][..., None] * markers[0] + marked[1][..., None] * markers[1], 0.0)


class SwiGLU(nn.Module):
    """``W_out (silu(W_gate x) * (W_up x))`` with hidden width ``hidden_dim``; [B, T, D] → [B, T, D]."""

    hidden_dim: int
    dtype: jnp.dtype

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        gate = nn.Dense(self.hidden_dim, use_bias=False, dtype=self.dtype, name="gate")(x)
        up = nn.Dense(self.hidden_dim, use_bias=False, dtype=self.dtype, name="up")(x)
        return nn.Dense(x.shape[-1], use_bias=False, dtype=self.dtype, name="down")(nn.silu(gate) * up)


class SelfAttention(nn.Module):
    """Multi-head self-attention with no mask (every position sees every other); [B, T, D] → [B, T, D].

    Heads are folded into the batch before the two attention products ([B·H, T, T]): XLA on CPU ran this layout
    three times faster than ``nn.MultiHeadDotProductAttention``'s four-dimensional einsums.  The weights [B, H, T, T]
    are sown into the ``intermediates`` collection (kept only when the caller makes it mutable; otherwise no cost).
    """

    num_heads: int
    dtype: jnp.dtype

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        batch, length, width = x.shape
        head_dim = width // self.num_heads
        query, key, value = jnp.split(nn.Dense(3 * width, use_bias=False, dtype=self.dtype, name="qkv")(x), 3, -1)

        def heads(t: jax.Array) -> jax.Array:  # [B, T, D] -> [B*H, T, D/H]
            t = t.reshape(batch, length, self.num_heads, head_dim).transpose(0, 2, 1, 3)
            return t.reshape(batch * self.num_heads, length, head_dim)

        scores = jnp.matmul(heads(query), heads(key).transpose(0, 2, 1)) / jnp.sqrt(head_dim).astype(self.dtype)
        weights = jax.nn.softmax(scores.astype(jnp.float32), axis=-1).astype(self.dtype)
        self.sow("intermediates", "attention_weights", weights.reshape(batch, self.num_heads, length, length))
        mixed = jnp.matmul(weights, heads(value)).reshape(batch, self.num_heads, length, head_dim)
        mixed = mixed.transpose(0, 2, 1, 3).reshape(batch, length, width)
        return nn.Dense(width, use_bias=False, dtype=self.dtype, name="output")(mixed)


class TransformerBlock(nn.Module):
    """Bidirectional self-attention then SwiGLU, each with a residual and a LayerNorm placed by
    ``config.normalization`` (post: after the residual sum; pre: on the branch's input); [B, T, D] → [B, T, D]."""

    config: TransformerConfig

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        config = self.config
        dtype = jnp.dtype(config.dtype)
        attention = SelfAttention(config.num_heads, dtype=dtype, name="attention")
        mlp = SwiGLU(config.widening_factor * config.embedding_dim, dtype=dtype, name="mlp")
        attention_norm, mlp_norm = nn.LayerNorm(name="attention_norm"), nn.LayerNorm(name="mlp_norm")
        if config.normalization == "post":
            x = attention_norm(x + attention(x).astype(x.dtype))
            return mlp_norm(x + mlp(x).astype(x.dtype))
        x = x + attention(attention_norm(x)).astype(x.dtype)
        return x + mlp(mlp_norm(x)).astype(x.dtype)


class Transformer(nn.Module):
    """Tokens [B, T] int → logits [B, O] float32 read at the last position."""

    config: TransformerConfig

    @nn.compact
    def __call__(self, tokens: jax.Array) -> jax.Array:
        config = self.config
        if tokens.shape[-1] != config.sequence_length:
            raise ValueError(f"expected tokens [B, {config.sequence_length}], got {tokens.shape}")
        initializer = nn.initializers.truncated_normal(stddev=1.0)
        positions = self.param("position_embedding", initializer, (config.sequence_length, config.embedding_dim))
        x = TokenEmbedding(config, name="embedding")(tokens, positions) + positions[None]
        if config.mark_action_squares:
            x = x + ActionSquareMarkers(config.embedding_dim, name="action_square_markers")(tokens)
        for index in range(config.num_layers):
            x = TransformerBlock(config, name=f"block_{index}")(x)
        x = x[:, -1]
        if config.normalization == "pre":  # post-LN blocks already end with a LayerNorm
            x = nn.LayerNorm(name="final_norm")(x)
        logits = nn.Dense(config.output_size, use_bias=False, dtype=jnp.dtype(config.dtype), name="head")(x)
        return logits.astype(jnp.float32)


def init_params(config: TransformerConfig, key: jax.Array) -> dict:
    """Fresh parameters of :class:`Transformer` (float32), initialised in one jitted call."""
    return _jitted_init(config)(key)


@functools.lru_cache(maxsize=32)
def _jitted_init(config: TransformerConfig):
    tokens = np.zeros((1, config.sequence_length), dtype=np.int32)  # numpy: this cached closure may be built under a trace
    return jax.jit(lambda key: Transformer(config).init(key, tokens)["params"])


@functools.lru_cache(maxsize=32)
def jitted_apply(config: TransformerConfig):
    """``(params, tokens [B, T]) -> logits [B, O]``, jitted once per config (and per input shape)."""
    model = Transformer(config)
    return jax.jit(lambda params, tokens: model.apply({"params": params}, tokens))


def count_parameters(params) -> int:
    return int(sum(np.prod(leaf.shape) for leaf in jax.tree_util.tree_leaves(params)))


def parameter_count(config: TransformerConfig) -> int:
    """Number of parameters of ``config`` without allocating them."""
    shapes = jax.eval_shape(lambda key: init_params(config, key), jax.random.key(0))
    return count_parameters(shapes)


__all__ = ["MODEL_SIZES", "Transformer", "TransformerConfig", "count_parameters", "init_params", "jitted_apply",
           "parameter_count"]
