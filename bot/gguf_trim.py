"""A GGUF whose vocabulary keeps only the tokens of Latin-script text, punctuation and emoji.

The bundled Gemma 3 270M ties its output layer to a 262,144 x 640 embedding
table (Q8_0, 178 MB): every decoded token reads all of it, and on 2 CPU cores
that is most of a decode step. Most of its rows are tokens of other scripts.
This writes a copy of the model whose vocabulary keeps the tokens made only
of characters in ``KEPT_RANGES`` (ASCII, the Latin supplements, general
punctuation, currency, arrows and symbols, emoji), every control, byte and
user-defined token, and the embedding rows of those tokens, in their
original order. Nothing else changes: the other tensors are copied byte for
byte, and a kept token's logit is the same dot product as before.

Why tokenization is unchanged for text made of kept characters: llama.cpp's
SentencePiece tokenizer merges adjacent pieces into the best-scoring token
that exists, starting from single characters. Every piece of such text, and
every intermediate merge, is made of kept characters, so it is a kept token
whenever it was a token; the kept vocabulary offers every merge the full one
would choose, and the run is identical. Other text (CJK, Cyrillic, ...)
still tokenizes, through the byte tokens, and reads worse: the engine is then
the wrong choice (``HIPPOBOT_LLAMACPP_VOCAB=full``).

The file records the original id of each kept token under
``hippobot.vocab.kept_ids``, for comparisons on the same ids (bench/engines.py).
"""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np

log = logging.getLogger(__name__)

KEPT_IDS_KEY = "hippobot.vocab.kept_ids"
RULE_KEY = "hippobot.vocab.rule"
RULE = "latin-punct-emoji-v1"
NORMAL = 1  # llama.cpp's token type of ordinary tokens; the others (control, byte, user-defined, unused) are kept
SPACE = "\u2581"  # SentencePiece's word boundary
KEPT_RANGES = (  # inclusive code point ranges of the characters whose tokens are kept
    (0x0000, 0x024F),  # ASCII, Latin-1 supplement, Latin extended A and B
    (0x2000, 0x206F),  # general punctuation: ’ “ ” — … and zero-width joiners
    (0x20A0, 0x20CF),  # currency symbols
    (0x2100, 0x23FF),  # letterlike symbols, number forms, arrows, mathematical operators, technical
    (0x2500, 0x27BF),  # box drawing, geometric shapes, miscellaneous symbols, dingbats
    (0x2B00, 0x2BFF),  # miscellaneous symbols and arrows
    (0xFE00, 0xFE0F),  # variation selectors (emoji presentation)
    (0x1F000, 0x1FAFF),  # emoji and pictographs
)


def keeps_character(ch: str) -> bool:
    cp = ord(ch)
    return ch == SPACE or any(lo <= cp <= hi for lo, hi in KEPT_RANGES)


def kept_ids(tokens: list[str], types: np.ndarray) -> np.ndarray:
    """The original ids kept, ascending: every token that is not ordinary, and ordinary ones of kept characters."""
    keep = [
        i
        for i, (text, kind) in enumerate(zip(tokens, types))
        if kind != NORMAL or all(keeps_character(ch) for ch in text)
    ]
    return np.asarray(keep, dtype=np.int32)


def trim(src: Path, dst: Path) -> dict[str, int]:
    """Write ``src`` with the trimmed vocabulary to ``dst`` (through a temporary file); its sizes before and after."""
    import gguf

    reader = gguf.GGUFReader(str(src))
    fields = reader.fields
    tokens = [
        bytes(fields["tokenizer.ggml.tokens"].parts[i]).decode("utf-8") for i in fields["tokenizer.ggml.tokens"].data
    ]
    types = np.asarray(
        [fields["tokenizer.ggml.token_type"].parts[i][0] for i in fields["tokenizer.ggml.token_type"].data]
    )
    scores = np.asarray(
        [fields["tokenizer.ggml.scores"].parts[i][0] for i in fields["tokenizer.ggml.scores"].data], dtype=np.float32
    )
    keep = kept_ids(tokens, types)
    new_id = {int(old): new for new, old in enumerate(keep)}
    arch = bytes(fields["general.architecture"].parts[fields["general.architecture"].data[0]]).decode()
    tmp = dst.with_name(dst.name + ".part")
    writer = gguf.GGUFWriter(str(tmp), arch)
    for name, field in fields.items():
        if name.startswith("GGUF.") or name == "general.architecture":
            continue  # the writer adds these itself
        kind = field.types[0]
        if name == "tokenizer.ggml.tokens":
            writer.add_key_value(name, [tokens[i] for i in keep], kind, gguf.GGUFValueType.STRING)
        elif name == "tokenizer.ggml.scores":
            writer.add_key_value(name, scores[keep].tolist(), kind, gguf.GGUFValueType.FLOAT32)
        elif name == "tokenizer.ggml.token_type":
            writer.add_key_value(name, types[keep].astype(int).tolist(), kind, gguf.GGUFValueType.INT32)
        elif name.startswith("tokenizer.ggml.") and name.endswith("_token_id"):
            old = int(field.parts[field.data[0]][0])
            if old not in new_id:
                raise ValueError(f"{name} {old} ({tokens[old]!r}) would be trimmed")
            writer.add_key_value(name, new_id[old], kind)
        elif kind == gguf.GGUFValueType.ARRAY:
            sub = field.types[-1]
            if sub == gguf.GGUFValueType.STRING:
                values: object = [bytes(field.parts[i]).decode("utf-8") for i in field.data]
            else:
                values = [field.parts[i][0].item() for i in field.data]
            writer.add_key_value(name, values, kind, sub)
        elif kind == gguf.GGUFValueType.STRING:
            writer.add_key_value(name, bytes(field.parts[field.data[0]]).decode("utf-8"), kind)
        else:
            writer.add_key_value(name, field.parts[field.data[0]][0].item(), kind)
    writer.add_key_value(KEPT_IDS_KEY, keep.tolist(), gguf.GGUFValueType.ARRAY, gguf.GGUFValueType.INT32)
    writer.add_key_value(RULE_KEY, RULE, gguf.GGUFValueType.STRING)
    vocab_rows = len(tokens)
    for t in reader.tensors:
        data = np.asarray(t.data)  # rows as stored: a quantized row is its blocks' bytes
        if t.name in ("token_embd.weight", "output.weight") and data.shape[0] == vocab_rows:
            data = data[keep]
        writer.add_tensor(t.name, data, raw_dtype=t.tensor_type)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    tmp.replace(dst)
    log.info("trimmed %s: %d of %d tokens kept", src.name, len(keep), vocab_rows)
    return {"tokens": vocab_rows, "kept": int(len(keep))}


def read_kept_ids(path: Path) -> np.ndarray | None:
    """The original ids of a trimmed file's tokens (its id i was ``kept[i]``); None for an untrimmed file."""
    import gguf

    field = gguf.GGUFReader(str(path)).fields.get(KEPT_IDS_KEY)
    if field is None:
        return None
    return np.asarray([field.parts[i][0] for i in field.data], dtype=np.int64)
