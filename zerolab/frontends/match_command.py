"""``python -m zerolab match``: two agents (runs, checkpoints or engines) play the arena from the command line.

The game comes first (a run's ``config.json`` says it without loading the network: :func:`spec_game`), then the
engines, started at once so that one that cannot play the game is refused before any network loads or any game is
played; ``--start-fens`` positions are checked by the game (:func:`read_start_fens`).  :func:`command_match` writes
the PGN, the games as JSON lines, the result with each engine's fallback moves and the Elo book that later matches
extend (:mod:`zerolab.frontends.cli` lists the options).
"""

from __future__ import annotations

import argparse
import json
import pathlib
import sys


def read_start_fens(path: str, game) -> list[str]:
    """The FENs of a file, one a line (blank lines and ``#`` comments skipped), each checked by ``game``."""
    validate = getattr(game, "validate_fen", None)
    if validate is None:
        raise ValueError(f"--start-fens: {game.name} has no FEN positions")
    fens = []
    for number, line in enumerate(pathlib.Path(path).read_text().splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        try:
            fens.append(validate(line))
        except ValueError as error:
            raise ValueError(f"--start-fens {path}:{number}: {error}") from None
    if not fens:
        raise ValueError(f"--start-fens {path}: no FEN in the file")
    return fens


def spec_game(spec: str):
    """The game of an agent spec that names a run or checkpoint directory (from its ``config.json``, no network
    loaded); None for an engine."""
    from zerolab.config import split_spec
    from zerolab.games import make_game
    from zerolab.training.checkpoint_paths import resolve_checkpoint

    head, _ = split_spec(spec)
    if not pathlib.Path(head).is_dir():
        return None
    directory, _ = resolve_checkpoint(head)
    try:
        config = json.loads((directory.parent / "config.json").read_text())
    except (OSError, ValueError) as error:
        raise FileNotFoundError(f"{head}: the run's config.json cannot be read ({error})") from None
    return make_game(config.get("game", {}).get("name", "chess"))


def command_match(args: argparse.Namespace) -> int:
    import jax

    from zerolab.engines.uci_client import EngineError
    from zerolab.evaluation.book import EloBook
    from zerolab.games import make_game
    from zerolab.games.pgn import write_game_records
    from zerolab.play.agent_specs import make_agent
    from zerolab.play.arena import play_match, write_pgn
    from zerolab.play.engine_agents import EngineAgent

    # The game first (a run's config.json says it without loading the network), then the engines, started at once so
    # that one that cannot play the game is refused before any network loads or any game is played.
    specs = {"a": args.a, "b": args.b}
    run_games = {side: spec_game(spec) for side, spec in specs.items()}  # each run's config.json read once
    game = make_game(args.game) if args.game else None
    game = game or next(filter(None, run_games.values()), None)
    if game is None:
        raise ValueError("two engines need --game chess|gardner_chess")
    engines = {side: spec for side, spec in specs.items() if run_games[side] is None}
    agents = {}
    try:
        for side, spec in engines.items():
            agents[side] = make_agent(spec, game)
            if isinstance(agents[side], EngineAgent):
                agents[side].engine.open()
        for side, spec in specs.items():
            if side not in agents:
                agents[side] = make_agent(spec, None)  # a run or checkpoint: the agent reads its own game
    except EngineError as error:
        for agent in agents.values():
            agent.close()
        raise ValueError(f"match: {error}") from None
    agent_a, agent_b = agents["a"], agents["b"]
    if not args.game:  # the run's own game (its Go board size and komi included), which its agent was built with
        game = next((agents[side].game for side in specs if side not in engines), game)
    for agent in (agent_a, agent_b):
        if getattr(agent, "game", game) != game:
            for opened in agents.values():
                opened.close()
            raise ValueError(f"{agent.name} plays {agent.game.name}, the match is {game.name}")
    start_fens = read_start_fens(args.start_fens, game) if args.start_fens else None
    num_games = args.games if args.games is not None else (2 * len(start_fens) if start_fens else 10)
    try:
        match = play_match(game, agent_a, agent_b, num_games, jax.random.key(args.seed), args.max_game_plies,
                           start_fens=start_fens)
    finally:
        for agent in (agent_a, agent_b):
            agent.close()
    out = pathlib.Path(args.out)
    safe = lambda name: "".join(c if c.isalnum() or c in "-_.@=" else "_" for c in name)  # noqa: E731
    pgn = write_pgn(game, match, out / f"{safe(agent_a.name)}-vs-{safe(agent_b.name)}.pgn")
    write_game_records(match.games, out / "games.jsonl", pgn=str(pgn))
    book = EloBook.load_or_create(out / "elo.json")
    book.add_result(match.result)
    book.save(out / "elo.json")
    # Moves an engine did not choose itself (illegal under pgx's rules, or lost to a crash): a random legal move.
    summary = {**match.summary(), "engine_fallback_moves": match.fallback_moves}
    with open(out / "matches.jsonl", "a") as stream:
        stream.write(json.dumps(summary) + "\n")
    print(json.dumps({**summary, "pgn": str(pgn)}))
    try:
        print(book.format_table())
    except ValueError as error:  # players not yet connected
        print(error, file=sys.stderr)
    return 0


__all__ = ["command_match", "read_start_fens", "spec_game"]
