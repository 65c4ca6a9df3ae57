"""``python -m zerolab COMMAND``: train, match, legal-moves, gtp, uci, analysis, bench, lc0.

* ``train --config NAME --workdir DIR [--preset tiny|paper] [key=value ...]`` — trains with the config
  ``experiments/configs/NAME.py``; rerunning on the same DIR resumes.  On several hosts, start it once per process
  with ``--coordinator HOST:PORT --num-processes N --process-id I`` (or ``--distributed`` to let JAX read them from
  Slurm, Open MPI or a TPU pod); DIR must be a directory every host sees.
* ``match --a SPEC --b SPEC --games N [--out DIR] [--game G] [--start-fens FILE]`` — plays the arena (SPEC: a run or
  checkpoint directory with search options, e.g. ``runs/quickstart:num_simulations=32``, or an engine such as
  ``stockfish:elo=1350`` or ``fairy-stockfish:skill=-20``); writes PGN, the games as JSON lines
  (``DIR/games.jsonl``: moves and who moved), the result with each engine's fallback moves (``DIR/matches.jsonl``)
  and the Elo book ``DIR/elo.json``, which later matches extend.
* ``legal-moves --game chess|gardner_chess --fens FILE`` — one line of sorted UCI legal moves per FEN line, computed
  by pgx and the project's action map; an invalid FEN gets an error line naming its line number, the other lines
  still print, and the exit status is 1.
* ``gtp --checkpoint DIR [--simulations N] [--komi K]`` (or ``gtp --random``) — a GTP v2 server on stdin/stdout
  over a Go checkpoint's search, pgx refereeing (see :mod:`zerolab.frontends.gtp`).
* ``uci --checkpoint DIR [--simulations N] [--step S] [search.KEY=VALUE ...]`` — a UCI chess engine on stdin/stdout
  over a checkpoint's network and search (its rules included), searching until a move's time is used, with a
  per-user compilation cache; bad input (no such checkpoint or step, a Go run, a bad override) is refused before
  ``uciok`` with exit status 2 (see :mod:`zerolab.frontends.uci_search`).
* ``analysis --checkpoint DIR [--visits N] [--max-batch B] [search.KEY=VALUE ...]`` — a JSON analysis engine in
  KataGo's shape over any checkpoint (chess, Gardner chess, Go): queries of many positions on stdin, each query's
  positions searched in one batch, per-move visits, values, priors and principal variations out (see
  :mod:`zerolab.frontends.analysis`).
* ``bench`` — self-play and training throughput as JSON lines, with the overhead over a bare pgx + mctx loop and the
  efficiency (the floor's time — evaluations and game steps alone — over self-play's).
* ``lc0 describe|eval|convert|bench`` — lc0-format networks such as maia-1900 (see :mod:`zerolab.frontends.lc0_cli`).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import pathlib
import sys
from collections.abc import Iterable

from zerolab.config import load_factory
from zerolab.frontends.loaded_search import DEFAULT_COMPILATION_CACHE
from zerolab.frontends.match_command import command_match
from zerolab.logs import configure_logging

#: The lookup of named configs (experiments/configs/NAME.py) that ``train --config NAME`` uses.
NAMED_CONFIGS = "experiments.configs:load_config"


def split_overrides(parser: argparse.ArgumentParser, args: argparse.Namespace, extra: list[str]) -> list[str]:
    unexpected = [item for item in extra if item.startswith("-") or "=" not in item]
    if unexpected:
        parser.error(f"unrecognized arguments: {' '.join(unexpected)}")
    return list(getattr(args, "overrides", []) or []) + extra


SEARCH_PREFIX = "search."


def search_overrides(items: Iterable[str], command: str, prefix: str = SEARCH_PREFIX) -> dict[str, str]:
    """``['search.kind=muzero', ...]`` → ``{'kind': 'muzero', ...}``: a command line's search overrides, read once
    (``zerolab uci``, ``alphagateau.uci``; ``bench --search`` without the prefix), typed later by
    :meth:`zerolab.search.SearchConfig.with_overrides`.  Raises ValueError naming ``command`` and an item that is not
    ``PREFIX KEY=VALUE``."""
    overrides = {}
    for item in items:
        key, _, value = item.partition("=")
        if not key.startswith(prefix) or len(key) == len(prefix) or not value:
            raise ValueError(f"{command}: override {item!r} must be {prefix}KEY=VALUE (e.g. {prefix}kind=muzero)")
        overrides[key[len(prefix):]] = value
    return overrides


def add_distributed_arguments(parser: argparse.ArgumentParser) -> None:
    """The flags that make this process one of several (``jax.distributed``); see :func:`start_distributed`."""
    group = parser.add_argument_group(
        "several processes (jax.distributed)",
        "start the same command once per process, each with its own --process-id; without these flags the run is a "
        "single process")
    group.add_argument("--coordinator", default=None, metavar="HOST:PORT",
                       help="address of process 0, which serves the coordination service (the same for every process)")
    group.add_argument("--num-processes", type=int, default=None, metavar="N", help="number of processes in the run")
    group.add_argument("--process-id", type=int, default=None, metavar="I", help="this process's index in [0, N)")
    group.add_argument("--distributed", action="store_true",
                       help="join a multi-process run, letting JAX detect the values not given above from the "
                            "cluster (Slurm, Open MPI, Cloud TPU) or JAX_COORDINATOR_ADDRESS")


def start_distributed(args: argparse.Namespace) -> None:
    """Initialises ``jax.distributed`` when any distributed flag was given; call it before any other JAX use."""
    given = [args.coordinator, args.num_processes, args.process_id]
    if not args.distributed and all(value is None for value in given):
        return
    import logging

    import jax

    from zerolab.devices import start_processes

    start_processes(args.coordinator, args.num_processes, args.process_id)
    if jax.process_index() != 0:  # process 0 logs for the run; the others say only what goes wrong
        logging.getLogger().setLevel(logging.WARNING)


def add_host_devices_argument(parser: argparse.ArgumentParser) -> None:
    """``--host-devices N`` (see :func:`start_host_devices`)."""
    parser.add_argument("--host-devices", type=int, default=None, metavar="N",
                        help="CPU only: run on N devices of XLA's host platform (one a core), which play their share "
                             "of the self-play games side by side, each single-threaded (zerolab/README.md, "
                             "'Search efficiency'); batch sizes must divide by N")


def start_host_devices(args: argparse.Namespace) -> None:
    """Gives this process ``args.host_devices`` CPU devices (:func:`zerolab.devices.request_host_devices`) where the
    flag was given; call it before any other JAX use (after :func:`start_distributed`)."""
    if getattr(args, "host_devices", None) is None:
        return
    from zerolab.devices import request_host_devices

    try:
        got = request_host_devices(args.host_devices)
    except ValueError as error:
        raise ValueError(f"--host-devices: {error}") from None
    if got != args.host_devices:
        raise ValueError(f"--host-devices {args.host_devices}: JAX's CPU backend had already started with {got} "
                         f"device(s)")


def add_allow_config_change_argument(parser: argparse.ArgumentParser) -> None:
    """``--allow-config-change``: a rerun may change the settings its run directory records (see
    :mod:`zerolab.training.run_directory`)."""
    parser.add_argument("--allow-config-change", action="store_true",
                        help="let a rerun on an existing --workdir change settings its config.json records (the old "
                             "one is kept as config.previous-N.json); without it only a larger iterations and "
                             "progress, compilation_cache or selfplay.device_memory_gib may change; game.* and "
                             "model.* never do")


def command_train(args: argparse.Namespace) -> int:
    start_distributed(args)
    start_host_devices(args)
    from zerolab.training import train
    from zerolab.training.file_system import check_run_directory, file_system_error
    from zerolab.training.interrupt import TrainingInterrupted, interrupt_on_sigterm, interruption_report

    interrupt_on_sigterm()

    # The named configs are the launchers' (experiments/configs/): the command line, an entry as they are, looks the
    # name up there through the one plugin loader; the core below it takes the config as a value.
    load_config = load_factory(NAMED_CONFIGS, "--config")
    config = load_config(args.config, args.preset, args.overrides)
    train.check_training_config(config)  # every value, before the run directory is made
    check_run_directory(args.workdir, "--workdir")

    try:
        state = train.run(config, args.workdir, allow_config_change=args.allow_config_change)
    except (TrainingInterrupted, KeyboardInterrupt) as error:  # a signal: one line on how to resume
        line, status = interruption_report(error, str(args.workdir))
        print(line, file=sys.stderr)
        return status
    except Exception as error:  # noqa: BLE001 - a file-system failure mid-run is reported in one line
        message = file_system_error(error, args.workdir)
        if message is None:
            raise
        print(f"error: {message}", file=sys.stderr)
        return 1
    print(json.dumps({"workdir": str(args.workdir), "iteration": state.iteration, "frames": state.frames_seen}))
    return 0


def command_legal_moves(args: argparse.Namespace) -> int:
    from zerolab.games import ChessGame, make_game

    game = make_game(args.game)
    assert isinstance(game, ChessGame)
    failures = 0
    with open(args.fens) as stream:
        for number, line in enumerate(stream, start=1):
            fen = line.strip()
            if not fen:
                print("")
                continue
            try:
                state = game.from_fen(fen)
            except ValueError as error:
                failures += 1
                print(f"error: line {number}: {error}")
                continue
            print(" ".join(game.legal_moves_uci(state)))
    if failures:
        print(f"{failures} invalid FEN line(s) in {args.fens}", file=sys.stderr)
    return 1 if failures else 0


def checked_search_overrides(items: list[str]) -> dict[str, str]:
    """``bench --search KEY=VALUE`` items as ``{KEY: VALUE}`` (:func:`search_overrides`), checked by applying them to
    a default search (:meth:`zerolab.search.config.SearchConfig.with_overrides`: fields and ``rule_options.NAME``)."""
    from zerolab.search.config import SearchConfig

    try:
        overrides = search_overrides(items, "--search", prefix="")
        SearchConfig().with_overrides(overrides)
    except ValueError as error:
        raise SystemExit(str(error)) from None
    return overrides


def command_bench(args: argparse.Namespace) -> int:
    start_host_devices(args)  # before anything asks JAX for a device
    from zerolab.frontends import bench

    cases = bench.DEFAULT_CASES
    if args.game:
        cases = tuple(case for case in cases if case.game == args.game)
    sizes = {"model": args.model, "dtype": args.dtype, "channels": args.width, "num_blocks": args.blocks,
             "num_games": args.games,
             "plies": args.plies, "num_simulations": args.simulations, "train_batch_size": args.batch_size}
    sizes = {field: value for field, value in sizes.items() if value is not None}
    if args.no_reference:
        sizes["reference"] = False
    if args.no_floor:
        sizes["floor"] = False
    cases = tuple(dataclasses.replace(case, **sizes) for case in cases)
    if args.search:
        search = checked_search_overrides(args.search)
        cases = tuple(dataclasses.replace(case, search=tuple(search.items())) for case in cases)
    bench.run_benchmarks(cases, repeats=args.repeats, benches=tuple(args.only or ("selfplay", "train")))
    return 0


def command_gtp(args: argparse.Namespace) -> int:
    """A GTP server on stdin/stdout over a Go checkpoint's search (or random moves with ``--random``)."""
    from zerolab.frontends import gtp
    from zerolab.games import GoGame

    if args.random == bool(args.checkpoint):
        raise ValueError("gtp: give exactly one of --checkpoint DIR and --random")
    if args.random:
        game, chooser, name = GoGame(size=args.size, komi=args.komi if args.komi is not None else 7.5), \
            gtp.random_chooser, "zerolab-random"
    else:
        from zerolab.devices import use_compilation_cache
        from zerolab.play.search_agents import load_search_agent

        if args.compilation_cache:
            use_compilation_cache(args.compilation_cache, min_compile_seconds=0.0)
        options = {} if args.simulations is None else {"num_simulations": args.simulations}
        agent = load_search_agent(args.checkpoint, options)
        if not isinstance(agent.game, GoGame):
            raise ValueError(f"gtp: --checkpoint {args.checkpoint} plays {agent.game.name}, not go")
        game = agent.game if args.komi is None else GoGame(size=agent.game.size, komi=args.komi)
        chooser, name = gtp.warmed_up(gtp.agent_chooser(agent), game, args.seed), f"zerolab {agent.name}"
    gtp.serve(game, chooser, name=name, seed=args.seed)
    return 0


def command_uci(args: argparse.Namespace) -> int:
    """A UCI chess engine on stdin/stdout over a checkpoint's network and search (see :mod:`zerolab.frontends.uci_search`).

    What can be checked without loading the network is checked before the server starts (an error is one line,
    exit status 2): the checkpoint and ``--step``, the run's game, ``--simulations``, the search overrides."""
    from zerolab.frontends import loaded_search, uci_protocol, uci_search

    overrides = search_overrides(args.overrides, "uci")
    if args.simulations is not None and not 1 <= args.simulations <= uci_protocol.MAXIMUM_SIMULATIONS:
        raise ValueError(f"uci: --simulations must be from 1 to {uci_protocol.MAXIMUM_SIMULATIONS}, "
                         f"got {args.simulations}")
    config = loaded_search.check_checkpoint(args.checkpoint, args.step, overrides)
    simulations = args.simulations or config.get("search", {}).get("num_simulations", 32)  # the run's, as recorded

    def load() -> loaded_search.LoadedSearch:
        return loaded_search.checkpoint_search(args.checkpoint, args.step, simulations, overrides)

    name = f"zerolab {pathlib.Path(args.checkpoint).resolve().name}"
    return uci_search.serve_search_engine(load, name, simulations, seed=args.seed,
                                          compilation_cache=args.compilation_cache)


def command_analysis(args: argparse.Namespace) -> int:
    """The JSON analysis engine on stdin/stdout (see :mod:`zerolab.frontends.analysis`)."""
    from zerolab.frontends import analysis

    args.overrides = search_overrides(args.overrides, "analysis")
    return analysis.main(args)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m zerolab", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)

    train = commands.add_parser("train", help="train (resumes on the same --workdir)")
    train.add_argument("--config", required=True, help="config name under experiments/configs/")
    train.add_argument("--workdir", required=True, type=pathlib.Path)
    train.add_argument("--preset", default="tiny")
    train.add_argument("overrides", nargs="*", help="key=value config overrides")
    add_allow_config_change_argument(train)
    add_distributed_arguments(train)
    add_host_devices_argument(train)
    train.set_defaults(handler=command_train)

    match = commands.add_parser("match", help="play games between two agents")
    match.add_argument("--a", required=True, help="agent spec: run dir[:options] or engine[:options]")
    match.add_argument("--b", required=True, help="agent spec")
    match.add_argument("--games", type=int, default=None,
                       help="number of games (even: colours alternate; default 10, or twice the start FENs)")
    match.add_argument("--out", default="runs/matches", help="directory for PGN, results and the Elo book")
    match.add_argument("--game", default=None, help="chess or gardner_chess (inferred from a checkpoint agent)")
    match.add_argument("--max-game-plies", type=int, default=512, help="a game this long is a draw")
    match.add_argument("--seed", type=int, default=0)
    match.add_argument("--start-fens", default=None,
                       help="file of start positions, one FEN a line: each is played twice, colours swapped")
    match.set_defaults(handler=command_match)

    legal = commands.add_parser("legal-moves", help="legal UCI moves of each FEN in a file")
    legal.add_argument("--game", required=True, choices=["chess", "gardner_chess"])
    legal.add_argument("--fens", required=True, help="file with one FEN per line")
    legal.set_defaults(handler=command_legal_moves)

    # lc0 is dispatched in main before parsing (its own parser); listed here for --help
    commands.add_parser("lc0", help="lc0-format networks: describe, eval, convert, bench (python -m zerolab lc0 -h)")
    bench = commands.add_parser("bench", help="throughput benchmarks (JSON lines)")
    bench.add_argument("--game", default=None, choices=["chess", "gardner_chess"])
    bench.add_argument("--repeats", type=int, default=3)
    bench.add_argument("--only", nargs="+", choices=["selfplay", "train"], default=None, help="which benchmarks")
    bench.add_argument("--model", default=None, help="network name, as config.model.name (default resnet)")
    bench.add_argument("--dtype", default=None, choices=["float32", "bfloat16"],
                       help="what the network computes in, as config.model.dtype (default float32)")
    bench.add_argument("--width", type=int, default=None, help="the network's width: model.channels")
    bench.add_argument("--blocks", type=int, default=None, help="residual or GATEAU blocks")
    bench.add_argument("--games", type=int, default=None, help="games per self-play batch")
    bench.add_argument("--plies", type=int, default=None, help="plies per timed self-play scan")
    bench.add_argument("--simulations", type=int, default=None, help="search simulations per move")
    bench.add_argument("--batch-size", type=int, default=None, help="training batch size")
    bench.add_argument("--no-reference", action="store_true", help="skip the bare pgx + mctx loop")
    bench.add_argument("--no-floor", action="store_true",
                       help="skip the floor (the evaluations and game steps alone, no tree) and its efficiency")
    add_host_devices_argument(bench)  # the floor is split over them as self-play is
    bench.add_argument("--search", nargs="+", default=[], metavar="KEY=VALUE",
                       help="search settings of the self-play cases, e.g. kind=muzero "
                            "rules=package.module:factory rule_options.sc_limit=5")
    bench.set_defaults(handler=command_bench)

    gtp = commands.add_parser("gtp", help="GTP server (stdin/stdout) over a Go checkpoint")
    gtp.add_argument("--checkpoint", default=None, help="Go run directory (newest readable step) or step directory")
    gtp.add_argument("--simulations", type=int, default=None, help="search simulations per move (default: the run's)")
    gtp.add_argument("--random", action="store_true", help="play uniformly random legal moves (protocol tests)")
    gtp.add_argument("--size", type=int, default=7, help="board size with --random")
    gtp.add_argument("--komi", type=float, default=None, help="komi (default: the run's; GTP 'komi' changes it)")
    gtp.add_argument("--seed", type=int, default=0)
    gtp.add_argument("--compilation-cache", default=DEFAULT_COMPILATION_CACHE,
                     help="JAX's persistent compilation cache ('' for none): a second start reads the search back")
    gtp.set_defaults(handler=command_gtp)

    uci = commands.add_parser("uci", help="UCI chess engine (stdin/stdout) over a checkpoint's network and search")
    uci.add_argument("--checkpoint", required=True, help="run directory (newest readable step) or step directory")
    uci.add_argument("--step", type=int, default=None, help="checkpoint step of a run directory (default: newest)")
    uci.add_argument("--simulations", type=int, default=None,
                     help="start of the Simulations option (default: the run's search.num_simulations)")
    uci.add_argument("--seed", type=int, default=0, help="seed of the search keys")
    uci.add_argument("--compilation-cache", default=DEFAULT_COMPILATION_CACHE,
                     help="directory of JAX's persistent compilation cache, so a second start reads the compiled "
                          "searches back (default: %(default)s; '' for none)")
    uci.add_argument("overrides", nargs="*", help="search.KEY=VALUE overrides, e.g. search.kind=muzero")
    uci.set_defaults(handler=command_uci)
    analysis = commands.add_parser("analysis", help="JSON analysis engine (KataGo's shape) over a checkpoint: many "
                                                    "positions a query, searched in one batch")
    analysis.add_argument("--checkpoint", required=True, help="run directory (newest readable step) or step directory")
    analysis.add_argument("--step", type=int, default=None, help="checkpoint step of a run directory")
    analysis.add_argument("--visits", type=int, default=None,
                          help="simulations a position when a query gives no maxVisits (default: the run's)")
    analysis.add_argument("--max-batch", type=int, default=64, help="most positions searched at once (default 64)")
    analysis.add_argument("--seed", type=int, default=0, help="seed of the search keys")
    analysis.add_argument("--compilation-cache", default=DEFAULT_COMPILATION_CACHE,
                          help="JAX's persistent compilation cache ('' for none)")
    analysis.add_argument("overrides", nargs="*", help="search.KEY=VALUE overrides, e.g. search.kind=muzero")
    analysis.set_defaults(handler=command_analysis)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["lc0"]:  # lc0 networks' own command line (describe, eval, convert, bench)
        from zerolab.frontends.lc0_cli import main as lc0_main

        return lc0_main(argv[1:])
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if args.command in ("train", "uci", "analysis"):
        args.overrides = split_overrides(parser, args, extra)
    elif extra:
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    configure_logging()
    try:
        return args.handler(args)
    except (ValueError, FileNotFoundError, RuntimeError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
