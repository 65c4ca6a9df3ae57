"""Game records: finished games and their text (PGN for chess and Gardner chess, SGF for Go).

A :class:`GameRecord` holds the moves of one game as the game's own move text (UCI for chess, GTP vertices for Go;
see :meth:`zerolab.games.Game.action_to_text`), its result from the first player's side, who chose each move and
the movers' annotations on them.  ``write_games`` writes records in the format the game names
(``Game.move_record_format``): standard SAN PGN for 8×8 chess through python-chess, long-algebraic PGN with a
``Variant`` header for Gardner chess (which python-chess cannot represent), SGF for Go.  In PGN each annotated move
gets its annotation as a comment (:func:`annotation_comment`: ``key=value`` pairs) and a record's ``headers`` are
added to the game's tag pairs (e.g. a skill-compatibility game's bitstring).
"""

from __future__ import annotations

import dataclasses
import datetime
import json
import pathlib

import chess
import chess.pgn
import jax
import jax.numpy as jnp
import numpy as np

from zerolab.games import Game


@dataclasses.dataclass
class GameRecord:
    """One finished game: who had the first move, the moves, and the result from the first player's side.

    Attributes:
      first_player: the agent that moved first (White from the standard start; the side to move of ``start_fen``).
      second_player: the other agent.
      moves: the moves in the game's move text (UCI, GTP vertices).
      first_player_score: 1, 0.5 or 0.
      plies: moves played.
      capped: True when the game reached the arena's ply cap (scored as a draw).
      start_fen: the start position when it is not the game's standard one.
      movers: who chose each move: the agent's name, or a team member's name (``team/member``).
      annotations: one dict of notes (JSON values) per move when the movers annotated them (a team's rule: the
        member's role, what a brain named), else empty.
      headers: extra PGN tag pairs of the game (name → text).
    """

    first_player: str
    second_player: str
    moves: list[str]
    first_player_score: float  # 1, 0.5 or 0
    plies: int
    capped: bool
    start_fen: str | None = None
    movers: list[str] = dataclasses.field(default_factory=list)
    annotations: list[dict] = dataclasses.field(default_factory=list)
    headers: dict[str, str] = dataclasses.field(default_factory=dict)

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


def pgn_result(score: float) -> str:
    return {1.0: "1-0", 0.0: "0-1"}.get(score, "1/2-1/2")


def annotation_comment(annotation: dict) -> str:
    """A move's annotation as PGN comment text: ``key=value`` pairs in order, None values left out, no braces (a
    PGN comment ends at the first ``}``); empty when there is nothing to say."""
    pairs = (f"{key}={value}" for key, value in annotation.items() if value is not None)
    return " ".join(pairs).replace("{", "(").replace("}", ")")


def to_pgn(game: Game, record: GameRecord, round_number: int, event: str) -> str:
    """One chess or Gardner-chess game as PGN text (SAN on 8×8, long algebraic with a ``Variant`` header on 5×5).

    A game from ``record.start_fen`` gets ``SetUp``/``FEN`` headers; when Black moves first there, the first player
    is Black and the result is written from White's side as PGN requires.  ``record.headers`` are added after the
    standard ones and each annotated move gets its :func:`annotation_comment`.
    """
    fen_fields = (record.start_fen or game.start_fen).split()
    black_first = len(fen_fields) > 1 and fen_fields[1] == "b"
    white, black = (record.second_player, record.first_player) if black_first else (record.first_player,
                                                                                    record.second_player)
    headers = {
        "Event": event,
        "Site": "zerolab arena",
        "Date": datetime.date.today().strftime("%Y.%m.%d"),
        "Round": str(round_number),
        "White": white,
        "Black": black,
        "Result": pgn_result(1 - record.first_player_score if black_first else record.first_player_score),
        "PlyCount": str(len(record.moves)),
    }
    if record.capped:
        headers["Termination"] = "ply limit (adjudicated draw)"
    headers.update(record.headers)
    comments = [annotation_comment(annotation) for annotation in record.annotations] or [""] * len(record.moves)
    if game.move_record_format == "pgn":
        board = chess.Board(record.start_fen) if record.start_fen else chess.Board()
        pgn_game = chess.pgn.Game()
        pgn_game.headers.update(headers)
        if record.start_fen:
            pgn_game.setup(board)
        node = pgn_game
        for uci, comment in zip(record.moves, comments):
            move = chess.Move.from_uci(uci)
            node = node.add_variation(move, comment=comment)
            board.push(move)
        return str(pgn_game) + "\n\n"  # a blank line between games, or readers lose the next headers
    headers.update({"Variant": "Gardner", "SetUp": "1", "FEN": record.start_fen or game.start_fen})
    header_text = "".join(f'[{k} "{v}"]\n' for k, v in headers.items())
    first_move_number = int(fen_fields[5]) if len(fen_fields) > 5 else 1
    tokens = [f"{first_move_number}..."] if black_first and record.moves else []
    for ply, (move, comment) in enumerate(zip(record.moves, comments)):
        colour_ply = ply + int(black_first)
        if colour_ply % 2 == 0:
            tokens.append(f"{first_move_number + colour_ply // 2}.")
        elif ply > 0 and comments[ply - 1]:  # after a comment, Black's move needs its number again
            tokens.append(f"{first_move_number + colour_ply // 2}...")
        tokens.append(move)
        if comment:
            tokens.append(f"{{{comment}}}")
    tokens.append(headers["Result"])
    return header_text + "\n" + " ".join(tokens) + "\n\n"


SGF_COLUMNS = "abcdefghijklmnopqrs"


def to_sgf(game: Game, record: GameRecord, round_number: int, event: str) -> str:
    """One Go game as SGF (FF[4]).  Moves are GTP vertices (``C4``, ``pass``).  A game from a start position
    (``record.start_fen``: the moves from the empty board, :meth:`zerolab.games.go.GoGame.from_fen`) begins with
    those moves, named in a comment; its first player is the side to move there (White after a handicap)."""
    size = game.size
    start = record.start_fen.split() if record.start_fen else []
    black_first = len(start) % 2 == 0
    black, white = (record.first_player, record.second_player) if black_first else (record.second_player,
                                                                                     record.first_player)
    first_colour, second_colour = ("B", "W") if black_first else ("W", "B")
    result = {1.0: f"{first_colour}+", 0.0: f"{second_colour}+"}.get(record.first_player_score, "0")
    properties = [
        "FF[4]", "GM[1]", f"SZ[{size}]", f"KM[{game.komi:g}]", "RU[Tromp-Taylor]",
        f"PB[{black}]", f"PW[{white}]", f"RE[{result}]",
        f"DT[{datetime.date.today().isoformat()}]", f"EV[{event}]", f"RO[{round_number}]",
    ]
    comments = [f"start position: {' '.join(start)}"] if start else []
    if record.capped:
        comments.append("ply limit (adjudicated draw)")
    if comments:
        properties.append(f"C[{'; '.join(comments)}]")
    nodes = []
    for ply, vertex in enumerate(start + list(record.moves)):
        colour = "B" if ply % 2 == 0 else "W"
        if vertex.lower() == "pass":
            point = ""
        else:
            column = game.gtp_columns.index(vertex[0].upper())
            row = size - int(vertex[1:])
            point = SGF_COLUMNS[column] + SGF_COLUMNS[row]
        nodes.append(f";{colour}[{point}]")
    return "(;" + "".join(properties) + "".join(nodes) + ")\n"


RECORD_WRITERS = {"pgn": to_pgn, "pgn-gardner": to_pgn, "sgf": to_sgf}
#: The file suffix of each record format.
RECORD_SUFFIXES = {"pgn": ".pgn", "pgn-gardner": ".pgn", "sgf": ".sgf"}


def record_suffix(game: Game) -> str | None:
    """The file suffix of ``game``'s record format (``.pgn``, ``.sgf``); None when it has none."""
    return RECORD_SUFFIXES.get(game.move_record_format or "")


def write_games(game: Game, records: list[GameRecord], path: str | pathlib.Path, event: str) -> pathlib.Path:
    """``records`` as one file in the game's record format (:attr:`Game.move_record_format`)."""
    writer = RECORD_WRITERS.get(game.move_record_format)
    if writer is None:
        raise ValueError(f"{game.name} has no game-record format (move_record_format={game.move_record_format!r})")
    path = pathlib.Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(writer(game, record, i + 1, event) for i, record in enumerate(records)))
    return path


def write_game_records(records: list[GameRecord], path: str | pathlib.Path, **fields) -> pathlib.Path:
    """Appends ``records`` to a JSON-lines file, one game a line (:meth:`GameRecord.to_dict` plus ``fields``, e.g. the
    match's event), for analyses that read moves and movers back."""
    path = pathlib.Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as stream:
        for record in records:
            stream.write(json.dumps({**fields, **record.to_dict()}) + "\n")
    return path


def read_game_records(path: str | pathlib.Path) -> list[GameRecord]:
    """The records of a file written by :func:`write_game_records` (extra fields dropped)."""
    names = {field.name for field in dataclasses.fields(GameRecord)}
    records = []
    for number, line in enumerate(pathlib.Path(path).read_text().splitlines(), 1):
        try:
            data = json.loads(line)
            records.append(GameRecord(**{key: value for key, value in data.items() if key in names}))
        except (json.JSONDecodeError, TypeError) as error:
            raise ValueError(f"{path}:{number}: not a game record ({error})") from error
    return records


def replay_moves(game: Game, actions: np.ndarray) -> list[str]:
    """Move texts of a game given as pgx actions from the game's start position."""
    step = game.jitted_step
    state = jax.device_get(jax.jit(game.init)(jax.random.key(0)))
    names = []
    for action in actions:
        names.append(game.action_to_text(int(action), state))
        state = jax.device_get(step(state, jnp.int32(action)))
    return names
