"""SentencePiece model files (`spiece.model`, `sentencepiece.bpe.model`): their pieces read, and a
model written from pieces, so the ids the model gives are the checkpoint's ids.

A `.model` file is a protocol buffer (sentencepiece's `ModelProto`). The few fields used here are
read and written on the wire format directly: sentencepiece's generated module refuses to load
beside TensorFlow's protobuf runtime (a gencode newer than the runtime), see docs/design.md.
"""

import struct

NORMAL, UNKNOWN, CONTROL, USER_DEFINED, UNUSED, BYTE = 1, 2, 3, 4, 5, 6
UNIGRAM, BPE = 1, 2
# ModelProto: 1 pieces, 2 trainer_spec, 3 normalizer_spec; SentencePiece: 1 piece, 2 score, 3 type;
# TrainerSpec: 3 model_type, 35 byte_fallback, 40 unk_id, 41 bos_id, 42 eos_id, 43 pad_id;
# NormalizerSpec: 1 name, 2 precompiled_charsmap, 3 add_dummy_prefix, 4 remove_extra_whitespaces.


def _varint(data, i):
    value = shift = 0
    while True:
        byte = data[i]
        value |= (byte & 0x7F) << shift
        i, shift = i + 1, shift + 7
        if byte < 0x80:
            return value, i


def _fields(data):
    """(field number, wire type, value) of a message: ints for varints, bytes otherwise."""
    i = 0
    while i < len(data):
        key, i = _varint(data, i)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, i = _varint(data, i)
        elif wire == 1:
            value, i = data[i:i + 8], i + 8
        elif wire == 2:
            size, i = _varint(data, i)
            value, i = data[i:i + size], i + size
        elif wire == 5:
            value, i = data[i:i + 4], i + 4
        else:
            raise ValueError(f"wire type {wire}")
        yield number, wire, value


def _key(number, wire):
    return _encode_varint(number << 3 | wire)


def _encode_varint(value):
    value &= (1 << 64) - 1  # a negative int32 is ten bytes, two's complement
    out = bytearray()
    while True:
        out.append((value & 0x7F) | (0x80 if value > 0x7F else 0))
        value >>= 7
        if not value:
            return bytes(out)


def _message(number, payload):
    return _key(number, 2) + _encode_varint(len(payload)) + payload


def _int(number, value):
    return _key(number, 0) + _encode_varint(value)


def read_model(data, source="the SentencePiece model"):
    """(pieces, model_type, normalizer) of a `.model` file's bytes: pieces as (piece, score, type),
    model_type UNIGRAM or BPE, normalizer the raw NormalizerSpec bytes.

    Raises:
        ValueError: bytes that are not a SentencePiece model (named with `source`).
    Example:
        ```python
        from keras_bert_lib.text.sentencepiece_model import UNIGRAM, read_model, write_model
        data = write_model([("<unk>", 0.0, 2), ("▁a", -1.0, 1)], UNIGRAM, unk_id=0)
        read_model(data)[0]   # [("<unk>", 0.0, 2), ("▁a", -1.0, 1)]
        ```
    """
    pieces, model_type, normalizer = [], UNIGRAM, b""
    try:
        for number, _, value in _fields(bytes(data)):
            if number == 1:
                piece, score, kind = "", 0.0, NORMAL
                for n, _, v in _fields(value):
                    if n == 1:
                        piece = v.decode("utf-8")
                    elif n == 2:
                        score = struct.unpack("<f", v)[0]
                    elif n == 3:
                        kind = v
                pieces.append((piece, score, kind))
            elif number == 2:
                model_type = dict((n, v) for n, _, v in _fields(value)).get(3, UNIGRAM)
            elif number == 3:
                normalizer = value
    except (ValueError, IndexError, UnicodeDecodeError, struct.error):
        pieces = []
    if not pieces or model_type not in (UNIGRAM, BPE):
        raise ValueError(f"{source} is not a SentencePiece unigram or BPE model (a .model file from "
                         "sentencepiece's trainer).")
    return pieces, model_type, normalizer


def maps_characters(normalizer):
    """Whether a NormalizerSpec (bytes) rewrites characters (a precompiled map: NFKC and friends,
    which also drop control and format characters) rather than keep them (identity)."""
    fields = {n: v for n, _, v in _fields(bytes(normalizer))}
    return bool(fields.get(2)) or fields.get(1, b"") not in (b"", b"identity")


def normalizer_spec(precompiled_charsmap=b"", add_dummy_prefix=True, remove_extra_whitespaces=True):
    """A NormalizerSpec's bytes: a precompiled character map (HuggingFace's `Precompiled`
    normaliser) or none (identity), the dummy prefix ("▁" before the text) and the clean-up of
    spaces at both ends and in runs."""
    return (_message(1, b"user_defined" if precompiled_charsmap else b"identity")
            + (_message(2, precompiled_charsmap) if precompiled_charsmap else b"")
            + _int(3, int(add_dummy_prefix)) + _int(4, int(remove_extra_whitespaces)) + _int(5, 1))


def write_model(pieces, model_type, unk_id, normalizer=None, byte_fallback=False):
    """A `.model` file's bytes from pieces (piece, score, type), in id order.

    Args:
        pieces: list of (piece, score, type), type NORMAL, UNKNOWN, CONTROL, USER_DEFINED or BYTE.
        model_type: UNIGRAM or BPE.
        unk_id: int. The position of the one UNKNOWN piece.
        normalizer: NormalizerSpec bytes (`normalizer_spec`) or None for the identity.
        byte_fallback: bool. Unknown characters become their UTF-8 bytes' `<0xNN>` pieces.
    """
    out = bytearray()
    for piece, score, kind in pieces:
        out += _message(1, _message(1, piece.encode("utf-8")) + _key(2, 5) + struct.pack("<f", score)
                        + _int(3, kind))
    trainer = (_int(3, model_type) + _int(4, len(pieces)) + _int(35, int(byte_fallback)) + _int(40, unk_id)
               + _int(41, -1) + _int(42, -1) + _int(43, -1))
    out += _message(2, trainer)
    out += _message(3, normalizer if normalizer is not None else normalizer_spec())
    return bytes(out)
