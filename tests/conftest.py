"""Shared pytest set-up; each concern has its own section."""

import os
import pathlib

import pytest

# --- one persistent JAX compilation cache ---------------------------------------------------------------------------
# Set before anything imports JAX (conftest.py is imported first): the whole session and every subprocess it starts
# (they inherit the environment) read and write the same cache, which lives on between sessions under an ignored
# folder.  A run that sets its own cache directory keeps it (``setdefault``).

REPOSITORY = pathlib.Path(__file__).resolve().parents[1]
COMPILATION_CACHE = REPOSITORY / ".cache" / "jax-compilation"
os.environ.setdefault("JAX_COMPILATION_CACHE_DIR", str(COMPILATION_CACHE))
os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0")
os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES", "0")
pathlib.Path(os.environ["JAX_COMPILATION_CACHE_DIR"]).mkdir(parents=True, exist_ok=True)

# --- XLA's faster CPU compilation -------------------------------------------------------------------------------------
# Also before JAX starts: the session and its children compile at optimisation level 0 with XLA's older CPU code
# generator (tests/fast_compile.py: 2-3× less compile time, most of the suite's).  ZEROLAB_TEST_XLA=default keeps
# XLA's defaults for a whole run.

from tests.fast_compile import fast_xla_flags  # noqa: E402 (no JAX import)

if os.environ.get("ZEROLAB_TEST_XLA", "fast") != "default":
    os.environ["XLA_FLAGS"] = fast_xla_flags(os.environ.get("XLA_FLAGS", ""))

# --- markers --------------------------------------------------------------------------------------------------------
# ``slow`` (20 s or more) is set on the tests themselves; ``engine`` is set here on every test that uses an engine
# fixture, directly or through another fixture, so ``pytest -m "not slow and not engine"`` is a quick inner loop.

ENGINE_FIXTURES = ("stockfish_path", "fairy_stockfish_path", "gnugo_path")


def pytest_collection_modifyitems(config, items):
    for item in items:
        if any(name in getattr(item, "fixturenames", ()) for name in ENGINE_FIXTURES):
            item.add_marker(pytest.mark.engine)
    items[:] = slow_files_first(items)


# --- order of the test files ----------------------------------------------------------------------------------------
# ``make test`` gives whole files to its workers (three) (``--dist loadfile --no-loadscope-reorder``) in this order, each
# worker taking the next file as it runs out.  The files with the most slow tests go first and the many small files
# last, so that the workers finish together instead of one running a long end-to-end file while the other waits
# (xdist's own order, by number of tests, put the one-test end-to-end files last).


def slow_files_first(items: list) -> list:
    """``items`` grouped by file: most ``slow`` tests first, then most tests; files that tie keep their order, and
    each file's tests keep theirs."""
    files: dict[str, list] = {}
    for item in items:
        files.setdefault(item.nodeid.split("::")[0], []).append(item)

    def cost(tests: list) -> tuple[int, int]:
        return -sum(test.get_closest_marker("slow") is not None for test in tests), -len(tests)

    return [item for tests in sorted(files.values(), key=cost) for item in tests]


# --- external engines and test dependencies -------------------------------------------------------------------------
# Engine tests never skip silently: a missing engine fails the run under CI (the CI environment variable is set)
# and is reported as a skip with the reason everywhere else.  A missing test dependency (``pip install -e '.[test]'``)
# is always a failure.


def engine_path(name: str) -> str:
    """Path of the engine ``name`` (``stockfish``, ``fairy-stockfish``, ``gnugo``), or fail/skip saying why."""
    from zerolab.engines.executables import EngineNotFoundError, find_engine

    try:
        return find_engine(name)
    except EngineNotFoundError as error:
        if os.environ.get("CI"):
            pytest.fail(f"{error} (CI is set, so missing engines are failures)", pytrace=False)
        pytest.skip(str(error))


def require_test_dependency(module_name: str):
    """The module ``module_name`` of the ``test`` extra, or a failure that says how to install it (never a skip)."""
    import importlib

    try:
        return importlib.import_module(module_name)
    except ImportError as error:
        pytest.fail(f"{module_name} is a test dependency and cannot be imported ({error}); "
                    f"install it with: pip install -e '.[test]'", pytrace=False)


@pytest.fixture(scope="session")
def pyffish():
    """The pyffish module (Fairy-Stockfish's move generator), which cross-checks Gardner chess; never skipped."""
    return require_test_dependency("pyffish")


@pytest.fixture(scope="session")
def stockfish_path() -> str:
    return engine_path("stockfish")


@pytest.fixture(scope="session")
def fairy_stockfish_path() -> str:
    return engine_path("fairy-stockfish")


@pytest.fixture(scope="session")
def gnugo_path() -> str:
    return engine_path("gnugo")


# --- games ------------------------------------------------------------------------------------------------------------
# The two chess games, built once a session (pgx is imported on first use).


@pytest.fixture(scope="session")
def chess_game():
    from zerolab.games import make_game

    return make_game("chess")


@pytest.fixture(scope="session")
def gardner_game():
    from zerolab.games import make_game

    return make_game("gardner_chess")
