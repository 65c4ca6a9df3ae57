"""Value bins, the transformer's shapes and sizes, and the predictors' inputs."""

import chess
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from distill import bins
from distill.model import MODEL_SIZES, Transformer, init_params, parameter_count
from distill.predictors import PREDICTOR_NAMES, QUERY_TOKEN, Predictor


def test_bins_are_uniform_with_midpoints():
    np.testing.assert_allclose(bins.bin_edges(4), [0, 0.25, 0.5, 0.75, 1])
    np.testing.assert_allclose(bins.bin_midpoints(4), [0.125, 0.375, 0.625, 0.875])
    assert bins.win_probability_to_bin([0.0, 0.2499, 0.25, 0.5, 0.99, 1.0], 4).tolist() == [0, 0, 1, 2, 3, 3]
    assert bins.win_probability_to_bin(1.0, 128) == 127


def test_expected_win_probability_of_a_certain_bin_is_its_midpoint():
    logits = jnp.full((3, 8), -1e9).at[jnp.arange(3), jnp.array([0, 3, 7])].set(0.0)
    np.testing.assert_allclose(bins.expected_win_probability(logits), [1 / 16, 7 / 16, 15 / 16], atol=1e-6)
    np.testing.assert_allclose(bins.expected_win_probability_numpy(np.zeros(8)), 0.5)


def test_paper_sizes_have_their_parameter_counts():
    predictor = Predictor("action_value", 128)
    counts = {size: parameter_count(predictor.model_config(size)) for size in ("9M", "136M", "270M")}
    assert 8e6 < counts["9M"] < 10e6
    assert 130e6 < counts["136M"] < 140e6
    assert 260e6 < counts["270M"] < 280e6
    assert MODEL_SIZES["9M"] == dict(num_layers=8, embedding_dim=256, num_heads=8)


@pytest.mark.parametrize("name, dtype", [(name, "float32") for name in PREDICTOR_NAMES]
                         + [("action_value", "bfloat16")])
def test_forward_shapes(name, dtype):
    predictor = Predictor(name, num_bins=16)
    config = predictor.model_config("test", dtype=dtype)
    params = init_params(config, jax.random.key(0))
    board = chess.Board("r3k2r/pP6/8/8/8/8/8/R3K2R w KQkq - 0 1")
    moves = list(board.legal_moves)
    tokens = predictor.inputs(board, moves)
    expected_rows = {"action_value": len(moves), "state_value": len(moves) + 1, "behavioral_cloning": 1}[name]
    assert tokens.shape == (expected_rows, 78)
    assert tokens.max() < predictor.vocabulary_size
    logits = jax.jit(Transformer(config).apply)({"params": params}, jnp.asarray(tokens))
    assert logits.shape == (expected_rows, predictor.output_size) and logits.dtype == jnp.float32
    scores = predictor.move_scores(np.asarray(logits), moves)
    assert scores.shape == (len(moves),) and np.all(np.isfinite(scores))
    if predictor.scores_are_win_probabilities:
        assert np.all((scores >= 0) & (scores <= 1))
    else:
        np.testing.assert_allclose(np.exp(scores).sum(), 1.0, rtol=1e-5)


def test_training_examples_carry_the_right_query_and_target():
    from distill.tokenizer import ACTION_INDEX, NUM_CHARACTERS, tokenize

    board_tokens = tokenize(chess.STARTING_FEN)
    position = {"fen": chess.STARTING_FEN, "moves": ["e2e4", "g1f3"], "action_values": [0.55, 0.6], "value": 0.6}
    action_value = Predictor("action_value", 10)
    tokens, target = action_value.training_example({"fen": chess.STARTING_FEN, "move": "g1f3", "action_value": 0.55})
    # the board's 77 tokens, then the action's own token after the board characters; 0.55 falls in bin [0.5, 0.6)
    assert QUERY_TOKEN == NUM_CHARACTERS and len(board_tokens) == 77
    assert tokens.tolist() == [*board_tokens.tolist(), NUM_CHARACTERS + ACTION_INDEX["g1f3"]] and target == 5
    assert ACTION_INDEX["g1f3"] != ACTION_INDEX["e2e4"] and tokens[-1] < action_value.vocabulary_size
    # the policy's inputs for the same move are the same row
    assert action_value.inputs(chess.Board(), [chess.Move.from_uci("g1f3")])[0].tolist() == tokens.tolist()
    tokens, target = Predictor("state_value", 10).training_example(position)
    assert tokens.tolist() == [*board_tokens.tolist(), NUM_CHARACTERS] and target == 6
    tokens, target = Predictor("behavioral_cloning").training_example(position)
    assert tokens.tolist() == [*board_tokens.tolist(), NUM_CHARACTERS] and target == ACTION_INDEX["g1f3"]


def test_action_square_markers_sit_on_the_board_tokens_of_the_moves_squares():
    from distill.model import ActionSquareMarkers
    from distill.tokenizer import CHARACTERS

    board = chess.Board("r1bqk2r/pP3ppp/2n2n2/4p3/1bB1P3/2N2N2/P2P1PPP/R1BQK2R w KQkq - 0 8")
    moves = list(board.legal_moves)
    tokens = Predictor("action_value").inputs(board, moves)
    markers = ActionSquareMarkers(embedding_dim=3)
    variables = markers.init(jax.random.key(0), tokens)
    origin, destination = np.asarray(variables["params"]["markers"])
    marked = np.asarray(markers.apply(variables, tokens))  # [moves, 78, 3]
    for move, row, row_tokens in zip(moves, marked, tokens):
        at_origin = [i for i in range(78) if np.allclose(row[i], origin)]
        at_destination = [i for i in range(78) if np.allclose(row[i], destination)]
        assert len(at_origin) == len(at_destination) == 1
        assert np.count_nonzero(np.abs(row).sum(-1)) == 2
        piece = board.piece_at(move.from_square)
        assert CHARACTERS[row_tokens[at_origin[0]]] == piece.symbol()
        captured = board.piece_at(move.to_square)
        assert CHARACTERS[row_tokens[at_destination[0]]] == (captured.symbol() if captured else ".")


def test_action_square_markers_need_action_tokens_and_count_two_vectors():
    predictor = Predictor("action_value", 16)
    plain, marked = (predictor.model_config("test", mark_action_squares=flag) for flag in (False, True))
    assert parameter_count(marked) - parameter_count(plain) == 2 * MODEL_SIZES["test"]["embedding_dim"]
    init_params(marked, jax.random.key(0))  # after parameter_count: the cached initialiser holds no tracer
    with pytest.raises(ValueError, match="mark_action_squares"):
        Predictor("state_value", 16).model_config("test", mark_action_squares=True)


def _layer_norm(x, params, epsilon=1e-6):
    mean, var = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + epsilon) * params["scale"] + params["bias"]


def _attention(x, params, num_heads):
    """Multi-head self-attention from its definition: per head h (features h·D/H .. (h+1)·D/H of the query, key and
    value projections), softmax(q kᵀ / √(D/H)) v; the heads side by side, projected."""
    batch, length, width = x.shape
    head_dim = width // num_heads
    query, key, value = np.split(x @ params["qkv"]["kernel"], 3, axis=-1)
    mixed = np.zeros_like(query)
    for b in range(batch):
        for h in range(num_heads):
            features = slice(h * head_dim, (h + 1) * head_dim)
            scores = query[b, :, features] @ key[b, :, features].T / np.sqrt(head_dim)
            weights = np.exp(scores - scores.max(-1, keepdims=True))
            mixed[b, :, features] = weights / weights.sum(-1, keepdims=True) @ value[b, :, features]
    return mixed @ params["output"]["kernel"]


def _swiglu(x, params):
    gate, up = x @ params["gate"]["kernel"], x @ params["up"]["kernel"]
    return (gate / (1 + np.exp(-gate)) * up) @ params["down"]["kernel"]


@pytest.mark.parametrize("normalization", ["post", "pre"])
def test_blocks_place_their_layer_norms_as_the_option_says(normalization):
    """post (the paper's): LN(x + Attn(x)) then LN(y + MLP(y)); pre: x + Attn(LN(x)) then y + MLP(LN(y)); each part
    written in numpy from its definition (attention scaled by √(D/H), SwiGLU, LayerNorm) with the block's
    parameters."""
    from distill.model import TransformerBlock

    config = Predictor("action_value", 16).model_config("test", normalization=normalization)
    assert config.num_heads > 1  # √D and √(D/H) differ
    block = TransformerBlock(config)
    x = jax.random.normal(jax.random.key(0), (2, 5, config.embedding_dim))
    params = block.init(jax.random.key(1), x)["params"]
    params = jax.tree.map(lambda p: p + 0.2 * jax.random.normal(jax.random.key(2), p.shape), params)  # LN scales ≠ 1
    out = block.apply({"params": params}, x)
    p, x = jax.tree.map(lambda leaf: np.asarray(leaf, np.float64), params), np.asarray(x, np.float64)

    def attention(value):
        return _attention(value, p["attention"], config.num_heads)

    if normalization == "post":
        y = _layer_norm(x + attention(x), p["attention_norm"])
        expected = _layer_norm(y + _swiglu(y, p["mlp"]), p["mlp_norm"])
    else:
        y = x + attention(_layer_norm(x, p["attention_norm"]))
        expected = y + _swiglu(_layer_norm(y, p["mlp_norm"]), p["mlp"])
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-5)
    tokens = np.zeros((1, config.sequence_length), np.int32)
    names = set(Transformer(config).init(jax.random.key(0), tokens)["params"])
    assert ("final_norm" in names) == (normalization == "pre")  # a post-LN tower already ends normalised


def test_checkpoints_written_before_the_option_are_pre_layer_norm():
    from distill.model import TransformerConfig

    saved = Predictor("action_value", 16).model_config("test", normalization="pre").to_dict()
    del saved["normalization"]
    assert TransformerConfig.from_saved(saved).normalization == "pre"
    assert Predictor("action_value", 16).model_config("test").normalization == "post"  # the paper's by default
    with pytest.raises(ValueError, match="normalization must be one of"):
        Predictor("action_value", 16).model_config("test", normalization="sandwich")
