"""Shared pytest fixtures; each concern has its own section."""

import os

import pytest

# --- external engines ----------------------------------------------------------------------------------------------
# Engine tests never skip silently: a missing engine fails the run under CI (the CI environment variable is set)
# and is reported as a skip with the reason everywhere else.


def engine_path(name: str) -> str:
    """Path of the engine ``name`` (``stockfish``, ``fairy-stockfish``, ``gnugo``), or fail/skip saying why."""
    from zerolab.engines import EngineNotFoundError, find_engine

    try:
        return find_engine(name)
    except EngineNotFoundError as error:
        if os.environ.get("CI"):
            pytest.fail(f"{error} (CI is set, so missing engines are failures)", pytrace=False)
        pytest.skip(str(error))


@pytest.fixture(scope="session")
def stockfish_path() -> str:
    return engine_path("stockfish")


@pytest.fixture(scope="session")
def fairy_stockfish_path() -> str:
    return engine_path("fairy-stockfish")


@pytest.fixture(scope="session")
def gnugo_path() -> str:
    return engine_path("gnugo")
