"""The two skill-compatibility frameworks' rules, as small pure functions.

**Stochastic tag team (STT).**  One bitstring per game, read by both teams: bit ``b_t = 1`` gives ply ``t`` (counted
from the game's start) to the senior of the side to move, ``0`` to its junior.  A matchup plays a fixed set of
bitstrings drawn from one seed (:func:`draw_bitstrings`, saved in the run directory by :func:`save_bitstrings`), each
twice with colours swapped (:func:`game_pairing`), so each team plays both sides of every bitstring.

**Hand and brain (HB).**  Each ply the brain names a piece type (:data:`PIECE_TYPES`; castling is a king move,
promotion a pawn move) and the hand moves a piece of that type with the two-stage draw of :func:`two_stage_hand`:
``h0`` from its policy over the legal moves; ``h0`` is played when it has the named type, else the move is redrawn
among the type's moves.  The played move then follows the policy restricted to the type, exactly.
:func:`classify_interactions` sorts each move by how ``h0`` and the played move relate to the brain's own move.

**Win-share** of the focal team and its standard error: :func:`win_share`.
"""

from __future__ import annotations

import dataclasses
import json
import pathlib
from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np

from zerolab.evaluation import score_standard_error

SENIOR, JUNIOR = 1, 0
#: piece types a brain may name, in pgx's piece codes 1..6 (index + 1).
PIECE_TYPES = ("P", "N", "B", "R", "Q", "K")
INTERACTIONS = ("agreement", "blindsiding", "correction", "disagreement")
BITSTRINGS_FILE = "bitstrings.json"


# --- STT ----------------------------------------------------------------------------------------------------------


def draw_bitstrings(seed: int, count: int, length: int, senior_probability: float = 0.5) -> np.ndarray:
    """``[count, length]`` uint8 bits, each 1 with ``senior_probability``, fixed by ``seed``."""
    if count < 1 or length < 1:
        raise ValueError(f"bitstrings: count and length must be positive, got count={count}, length={length}")
    if not 0.0 <= senior_probability <= 1.0:
        raise ValueError(f"bitstrings: senior_probability must lie in [0, 1], got {senior_probability}")
    generator = np.random.default_rng(seed)
    return (generator.random((count, length)) < senior_probability).astype(np.uint8)


def parse_bitstring(text: str, length: int | None = None) -> np.ndarray:
    """A bitstring written as ``'0110…'`` → uint8 bits; raises ``ValueError`` naming the bad input."""
    if not isinstance(text, str) or not text or set(text) - {"0", "1"}:
        raise ValueError(f"bitstring must be a non-empty string of 0 and 1, got {text!r}")
    if length is not None and len(text) < length:
        raise ValueError(f"bitstring {text[:16]!r}… has {len(text)} bits; games of up to {length} plies need {length}")
    return np.frombuffer(text.encode(), np.uint8) - ord("0")


def format_bitstring(bits: np.ndarray) -> str:
    return "".join("1" if bit else "0" for bit in np.asarray(bits).reshape(-1))


def save_bitstrings(path: str | pathlib.Path, bitstrings: np.ndarray, seed: int) -> pathlib.Path:
    """Writes the bitstrings as JSON (``{"seed", "bitstrings": ["0110…", …]}``)."""
    path = pathlib.Path(path)
    path.write_text(json.dumps({"seed": int(seed), "bitstrings": [format_bitstring(bits) for bits in bitstrings]}))
    return path


def load_bitstrings(path: str | pathlib.Path, length: int | None = None) -> np.ndarray:
    path = pathlib.Path(path)
    data = json.loads(path.read_text())
    texts = data.get("bitstrings") if isinstance(data, dict) else None
    if not texts:
        raise ValueError(f"{path}: expected {{'seed': N, 'bitstrings': ['0110…', …]}}")
    return np.stack([parse_bitstring(text, length) for text in texts])


def bitstrings_for_run(workdir: str | pathlib.Path, seed: int, count: int, length: int) -> np.ndarray:
    """The run's bitstrings: read from ``workdir/bitstrings.json`` when present (they must match ``seed`` and cover
    ``count`` × ``length``), else drawn from ``seed`` and written there, so every matchup shares them."""
    path = pathlib.Path(workdir) / BITSTRINGS_FILE
    if path.exists():
        stored_seed = json.loads(path.read_text()).get("seed")
        if stored_seed != seed:
            raise ValueError(f"{path} was drawn from framework.seed={stored_seed}, the config asks for {seed}; "
                             f"use another work directory or the same seed")
        bits = load_bitstrings(path, length)
        if len(bits) >= count:
            return bits[:count, :length]
    bits = draw_bitstrings(seed, count, length)
    save_bitstrings(path, bits, seed)
    return bits


@dataclasses.dataclass(frozen=True)
class GameSlot:
    """Game ``index`` of a matchup: bitstring (STT) or seed (HB) number ``pairing`` with the focal team white or
    black.  Games ``2k`` and ``2k + 1`` share pairing ``k`` with colours swapped."""

    index: int

    @property
    def pairing(self) -> int:
        return self.index // 2

    @property
    def focal_is_white(self) -> bool:
        return self.index % 2 == 0


def game_pairing(num_games: int) -> list[GameSlot]:
    if num_games < 2 or num_games % 2:
        raise ValueError(f"a framework matchup plays each bitstring/seed twice: num_games must be even, got {num_games}")
    return [GameSlot(index) for index in range(num_games)]


def stt_role(bits: np.ndarray, ply: int) -> int:
    """:data:`SENIOR` or :data:`JUNIOR`: who of the side to move plays ply ``ply`` (from the game's start)."""
    if not 0 <= ply < len(bits):
        raise ValueError(f"ply {ply} is outside the bitstring of {len(bits)} bits")
    return SENIOR if bits[ply] else JUNIOR


def focal_to_move(ply: int, focal_is_white: bool) -> bool:
    """Whether the focal team moves at ply ``ply`` of a game from the standard start (White moves at even plies)."""
    return (ply % 2 == 0) == focal_is_white


# --- HB -----------------------------------------------------------------------------------------------------------


def piece_type_index(letter: str) -> int:
    """``'N'`` → 2 (pgx's piece code); raises ``ValueError`` naming the letters."""
    if letter not in PIECE_TYPES:
        raise ValueError(f"piece type must be one of {PIECE_TYPES}, got {letter!r}")
    return PIECE_TYPES.index(letter) + 1


def action_piece_types(game, states) -> jax.Array:
    """``[B, A]`` piece code (1 pawn … 6 king) of the piece each legal action moves, 0 for illegal actions
    (jittable).  Castling is a king move, promotion a pawn move."""
    from_square = jnp.asarray(game.moves.from_square)
    board = game.mover_board_batch(states)  # [B, squares], own pieces positive
    types = jnp.abs(board[:, from_square])
    return jnp.where(states.legal_action_mask, types, 0).astype(jnp.int32)


def two_stage_hand(key: jax.Array, probabilities: jax.Array, action_types: jax.Array,
                   named_type: jax.Array) -> tuple[jax.Array, jax.Array]:
    """``(h0 [B], played [B])``: the hand's free draw and the move it plays for the brain's ``named_type`` [B].

    ``probabilities`` [B, A] is the hand's policy over legal moves, ``action_types`` [B, A] from
    :func:`action_piece_types`.  ``h0`` ~ policy; played = ``h0`` when its type is the named one, else a redraw from
    the policy restricted to that type.  The played move is distributed as the restricted policy:
    P(m) = p(m) + (1 − P_T)·p(m)/P_T = p(m)/P_T for m of type T.  A named type with no legal move is refused by
    the caller (see :func:`check_named_types`); here it falls back to ``h0``.
    """
    free_key, redraw_key = jax.random.split(key)
    logits = jnp.log(jnp.maximum(probabilities, 0.0))
    h0 = jax.random.categorical(free_key, logits, axis=-1).astype(jnp.int32)
    of_type = action_types == named_type[:, None]
    restricted = jnp.where(of_type & (probabilities > 0), logits, -jnp.inf)
    redraw = jax.random.categorical(redraw_key, restricted, axis=-1).astype(jnp.int32)
    h0_type = jnp.take_along_axis(action_types, h0[:, None], axis=-1)[:, 0]
    possible = of_type.any(axis=-1)
    played = jnp.where((h0_type == named_type) | ~possible, h0, redraw)
    return h0, played


def check_named_types(action_types: np.ndarray, named_type: np.ndarray, active: np.ndarray) -> None:
    """Raises ``ValueError`` when a brain named a piece type with no legal move in an active position."""
    action_types, named_type = np.asarray(action_types), np.asarray(named_type)
    possible = (action_types == named_type[:, None]).any(axis=-1)
    bad = np.flatnonzero(np.asarray(active) & ~possible)
    if len(bad):
        raise ValueError(f"brain named piece types {named_type[bad].tolist()} with no legal move in lanes {bad.tolist()}")


def classify_interactions(h0: np.ndarray, played: np.ndarray, brain_move: np.ndarray,
                          action_types: np.ndarray) -> np.ndarray:
    """``[B]`` interaction names (:data:`INTERACTIONS`) of hand moves against the brain's own move ``brain_move``:
    agreement (h0 = brain move), blindsiding (h0 ≠ brain move, same type: h0 is played), correction (h0 had
    another type and the redraw gave the brain's move), disagreement (it gave another move)."""
    h0, played, brain_move = (np.asarray(x, np.int64) for x in (h0, played, brain_move))
    rows = np.arange(len(h0))
    types = np.asarray(action_types)
    same_type = types[rows, h0] == types[rows, brain_move]
    names = np.where(h0 == brain_move, "agreement",
                     np.where(same_type, "blindsiding",
                              np.where(played == brain_move, "correction", "disagreement")))
    return names.astype(object)


# --- results ------------------------------------------------------------------------------------------------------


def win_share(wins: int, draws: int, losses: int) -> tuple[float, float]:
    """``(share, se)`` of the focal team: share = (W + D/2)/n and the se of that mean game score (scores 1, ½, 0;
    :func:`zerolab.evaluation.score_standard_error`: the sample standard deviation over √n, nan for one game)."""
    for name, value in (("wins", wins), ("draws", draws), ("losses", losses)):
        if value < 0:
            raise ValueError(f"win_share: {name} must be >= 0, got {value}")
    games = wins + draws + losses
    if games == 0:
        raise ValueError("win_share: no games")
    return (wins + 0.5 * draws) / games, score_standard_error(wins, draws, losses)


def result_counts(focal_scores: Sequence[float]) -> tuple[int, int, int]:
    """(W, D, L) from the focal team's game scores (1, 0.5, 0)."""
    scores = np.asarray(focal_scores, float)
    return int((scores == 1).sum()), int((scores == 0.5).sum()), int((scores == 0).sum())


__all__ = [
    "BITSTRINGS_FILE", "GameSlot", "INTERACTIONS", "JUNIOR", "PIECE_TYPES", "SENIOR", "action_piece_types",
    "bitstrings_for_run", "check_named_types", "classify_interactions", "draw_bitstrings", "focal_to_move",
    "format_bitstring", "game_pairing", "load_bitstrings", "parse_bitstring", "piece_type_index", "result_counts",
    "save_bitstrings", "stt_role", "two_stage_hand", "win_share",
]
