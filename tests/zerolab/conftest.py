"""Fixtures shared by the core's tests: the two chess games, built once a session (pgx is imported on first use)."""

import pytest


@pytest.fixture(scope="session")
def chess_game():
    from zerolab.games import make_game

    return make_game("chess")


@pytest.fixture(scope="session")
def gardner_game():
    from zerolab.games import make_game

    return make_game("gardner_chess")
