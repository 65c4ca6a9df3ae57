"""Scheduled matches: a fixed list of pairings played in order, resumable, into one Elo book.

:func:`zerolab.evaluation.rating.rate_contestants` chooses its matches as it goes (Algorithm 2, or a round robin);
:func:`play_pairings` plays the matches a launcher names: each checkpoint against the first one, the last against a
reference engine, every checkpoint against every member of a panel.  In ``workdir`` it writes

* ``matches.json`` — one :class:`PairingRecord` per finished pairing (W/D/L, player A's score moving first and
  second, capped games, engine fallback moves, what the play function measured beside the result, wall time),
  rewritten after each;
* ``elo.json``, ``elo.txt`` and ``figures/elo.png`` — the Elo book of every recorded match, its table (strongest
  first, ±2σ) and its ladder (:func:`~zerolab.evaluation.rating.write_elo_table`);
* ``games/<label>.<pgn|sgf>`` — each match's games in the game's record format.

A launcher whose matches need more than the default play between two of the pool's agents (fresh agents for each
block of a long match, an opponent given odds from other start positions, a measurement beside the result) passes
its own ``play``: it gets
the pairing, its key and the pool, and returns the :class:`~zerolab.play.arena.Match` (with ``extras``).  A pairing
may name its own :class:`~zerolab.games.Game` (Go at another komi) for the default play and its game record.

A rerun on the same directory plays only the pairings ``matches.json`` does not hold, so a crash loses at most the
match in progress; each pairing's key is its own (given, or :func:`~zerolab.evaluation.rating.match_key` of the seed
and the names), so a resumed schedule plays exactly the games a fresh one would (with deterministic agents: Stockfish
and Fairy-Stockfish at a ``Skill Level`` draw their weakened moves from a clock-seeded generator). A record is matched
to its pairing by label, players and number of games only: after changing the agents' settings (simulations, engine
strength), move ``matches.json`` away to play again.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import pathlib
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import jax

from zerolab.evaluation.book import EloBook
from zerolab.evaluation.rating import match_key, write_elo_table
from zerolab.games import Game
from zerolab.games.pgn import record_suffix
from zerolab.play.agents import AgentLoader, AgentPool
from zerolab.play.arena import Match, play_match, write_pgn
from zerolab.play.results import MatchResult

logger = logging.getLogger(__name__)

MATCHES_FILE = "matches.json"


@dataclasses.dataclass(frozen=True)
class Pairing:
    """One scheduled match.

    Attributes:
      player_a: a contestant's name (results are from its side).
      player_b: the other contestant's name.
      games: games to play; an even number when colours alternate.
      key: the match's PRNG key (None: ``match_key(seed, player_a, player_b)``).
      alternate_colours: True: half the games with each player moving first; False: ``player_a`` moves first in
        every game (one batch).
      label: the match's name in ``matches.json`` and its games file (default ``"<player_a>-vs-<player_b>"``).
      game: the game this pairing is played and recorded in (None: the schedule's; e.g. Go at another komi).
    """

    player_a: str
    player_b: str
    games: int
    key: jax.Array | None = None
    alternate_colours: bool = True
    label: str = ""
    game: Game | None = None

    def __post_init__(self):
        if self.player_a == self.player_b:
            raise ValueError(f"a pairing needs two different players, got {self.player_a!r} twice")
        if self.games < 1 or (self.alternate_colours and self.games % 2):
            raise ValueError(f"pairing {self.name}: games must be " + ("an even number of at least 2"
                             if self.alternate_colours else "at least 1") + f", got {self.games}")

    @property
    def name(self) -> str:
        return self.label or f"{self.player_a}-vs-{self.player_b}"


@dataclasses.dataclass(frozen=True)
class PairingRecord:
    """What ``matches.json`` keeps of a played pairing.

    Attributes:
      label: the pairing's name.
      result: W/D/L from ``player_a``'s side.
      first_mover_score: ``player_a``'s mean score in the games it moved first (None: it never did).
      second_mover_score: the same in the games it moved second.
      capped: games that reached the ply cap (scored as draws).
      fallback_moves: per engine agent, moves it did not choose itself (a random legal move was played).
      wall_s: the match's wall-clock seconds.
      extras: what the play function measured beside the result (:attr:`zerolab.play.arena.Match.extras`).
    """

    label: str
    result: MatchResult
    first_mover_score: float | None
    second_mover_score: float | None
    capped: int
    fallback_moves: dict[str, int]
    wall_s: float
    extras: dict[str, Any] = dataclasses.field(default_factory=dict)

    @property
    def score(self) -> float:
        """``player_a``'s score: (wins + draws / 2) / games."""
        return (self.result.wins + 0.5 * self.result.draws) / self.result.games

    def summary(self) -> dict[str, Any]:
        """The result as :meth:`zerolab.play.arena.Match.summary` gives it (players, W/D/L, games, score)."""
        return {**self.result.to_dict(), "games": self.result.games, "score": self.score}

    def to_dict(self) -> dict[str, Any]:
        return {"label": self.label, "result": self.result.to_dict(), "first_mover_score": self.first_mover_score,
                "second_mover_score": self.second_mover_score, "capped": self.capped,
                "fallback_moves": dict(self.fallback_moves), "wall_s": self.wall_s, "extras": dict(self.extras)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> PairingRecord:
        return cls(label=data["label"], result=MatchResult.from_dict(data["result"]),
                   first_mover_score=data["first_mover_score"], second_mover_score=data["second_mover_score"],
                   capped=int(data["capped"]), fallback_moves=dict(data["fallback_moves"]),
                   wall_s=float(data["wall_s"]), extras=dict(data.get("extras", {})))

    @classmethod
    def from_match(cls, label: str, match: Match, wall_seconds: float) -> PairingRecord:
        player_a = match.result.player_a
        by_order: dict[bool, list[float]] = {True: [], False: []}
        for record in match.games:
            moved_first = record.first_player == player_a
            by_order[moved_first].append(record.first_player_score if moved_first else 1 - record.first_player_score)
        mean = lambda scores: sum(scores) / len(scores) if scores else None  # noqa: E731
        return cls(label, match.result, mean(by_order[True]), mean(by_order[False]),
                   sum(record.capped for record in match.games), dict(match.fallback_moves), wall_seconds,
                   dict(match.extras))


#: ``(pairing, key, pool) -> Match``: plays one pairing under its key; ``pool`` holds the schedule's agents (built on
#: first use), which the function may use or not.
PlayPairingFn = Callable[[Pairing, jax.Array, AgentPool], Match]


def read_pairing_records(path: str | pathlib.Path) -> dict[str, PairingRecord]:
    """The records of a ``matches.json`` (empty when there is none); a file that is not one is an error naming it."""
    path = pathlib.Path(path)
    if not path.exists():
        return {}
    try:
        return {label: PairingRecord.from_dict(data) for label, data in json.loads(path.read_text())["matches"].items()}
    except (ValueError, KeyError, TypeError) as error:
        raise ValueError(f"{path} is not a matches file written by play_pairings ({error!r}); move it away to "
                         f"play the schedule again") from None


def play_pairings(
    pairings: Sequence[Pairing],
    agents: Mapping[str, AgentLoader],
    game: Game,
    workdir: str | pathlib.Path,
    *,
    max_game_plies: int,
    seed: int = 0,
    show_progress: bool = False,
    play: PlayPairingFn | None = None,
    event: str = "zerolab match",
) -> tuple[EloBook, dict[str, PairingRecord]]:
    """Plays ``pairings`` in order (see the module docstring) and returns the Elo book of every recorded match and
    the records by label.

    ``agents`` builds each contestant (:class:`zerolab.play.agents.AgentPool`: on first use, closed after the last
    scheduled pairing that names it, so engines' processes do not outlive their matches).
    ``play`` (default: :func:`zerolab.play.arena.play_match` between the pool's agents in the pairing's game) plays
    one pairing; ``event`` names the schedule in its game records.  A recorded pairing whose players or number of games differ from the scheduled one is an error
    naming it (the schedule changed: move ``matches.json`` away to play it again).
    """
    workdir = pathlib.Path(workdir)
    labels = [pairing.name for pairing in pairings]
    duplicates = sorted({label for label in labels if labels.count(label) > 1})
    if duplicates:
        raise ValueError(f"pairing labels must be unique, got {duplicates} more than once")
    unknown = sorted({name for pairing in pairings for name in (pairing.player_a, pairing.player_b)} - set(agents))
    if unknown and play is None:
        raise ValueError(f"pairings name players with no agent: {unknown}; the agents are {sorted(agents)}")
    matches_path = workdir / MATCHES_FILE
    records = read_pairing_records(matches_path)
    for pairing in pairings:
        recorded = records.get(pairing.name)
        if recorded is not None and (recorded.result.players, recorded.result.games) != (
                (pairing.player_a, pairing.player_b), pairing.games):
            raise ValueError(f"{matches_path}: {pairing.name} was played as {recorded.result.players} over "
                             f"{recorded.result.games} games, the schedule now asks for "
                             f"{(pairing.player_a, pairing.player_b)} over {pairing.games}; move the file away to "
                             f"play the schedule again")
    with AgentPool(agents) as pool:
        if play is None:
            def play(pairing: Pairing, key: jax.Array, pool: AgentPool) -> Match:
                return play_match(pairing.game or game, pool[pairing.player_a], pool[pairing.player_b],
                                  pairing.games, key, max_game_plies=max_game_plies, show_progress=show_progress,
                                  alternate_colours=pairing.alternate_colours)
        last_use = {name: index for index, pairing in enumerate(pairings)
                    for name in (pairing.player_a, pairing.player_b)}
        for index, pairing in enumerate(pairings):
            if pairing.name in records:
                continue
            started = time.perf_counter()
            key = pairing.key if pairing.key is not None else match_key(seed, pairing.player_a, pairing.player_b)
            match = play(pairing, key, pool)
            if match.result.players != (pairing.player_a, pairing.player_b) or match.result.games != pairing.games:
                raise ValueError(f"playing {pairing.name} gave {match.result} instead of {pairing.games} games "
                                 f"between {pairing.player_a} and {pairing.player_b}")
            recorded_game = pairing.game or game
            suffix = record_suffix(recorded_game)
            if suffix is not None:
                write_pgn(recorded_game, match, workdir / "games" / f"{pairing.name}{suffix}", event)
            records[pairing.name] = PairingRecord.from_match(pairing.name, match, time.perf_counter() - started)
            workdir.mkdir(parents=True, exist_ok=True)
            matches_path.write_text(json.dumps({"matches": {label: record.to_dict()
                                                            for label, record in records.items()}}, indent=2))
            logger.info("%s: %s", pairing.name, match.summary())
            for name in (pairing.player_a, pairing.player_b):
                if last_use[name] == index:
                    pool.release(name)
    book = EloBook()
    for pairing in pairings:
        book.add_result(records[pairing.name].result)
    if pairings:
        write_elo_table(book, workdir / "elo.json")
    return book, {pairing.name: records[pairing.name] for pairing in pairings}
