"""`bgix file inspect` of btree global index files and `bgix file query` of global index files (bitmap or btree; the
fm family's are in fm_file_cmd, which answers through `answer_predicates` here).

Inspect prints a btree file's footer, blocks (compression, CRC), key count, null rows, first/last keys and bloom
filter; with --type also every key and its row ids. Query answers SQL predicates over column `v` of one file
through its reader and the predicate pipeline, as local row ids. Imports index_format only.
"""
from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from index_format.errors import BgixError, InvalidOptionError, PredicateError

__all__ = ["GLOBAL_KINDS", "answer_predicates", "file_kind", "global_kind", "inspect_btree", "query_global"]


GLOBAL_KINDS = ("global-bitmap-index", "global-btree-index", "global-fm-index")


def file_kind(path: str) -> str | None:
    """The kind index_format.file_index.detect sees in the file's first and last bytes (None: no signature;
    a bare payload has none)."""
    from index_format.file_index.detect import detect_kind
    with open(path, "rb") as fh:
        head = fh.read(64)
        fh.seek(0, 2)
        size = fh.tell()
        fh.seek(max(0, size - 64))
        tail = fh.read()
    return detect_kind(head, tail, size)


def global_kind(path: str) -> str | None:
    """'global-bitmap-index', 'global-btree-index', 'global-fm-index' or None, from the file's last bytes."""
    kind = file_kind(path)
    return kind if kind in GLOBAL_KINDS else None


def _codec(type_id: int) -> str:
    from index_format.codecs import CODEC_NAMES
    return CODEC_NAMES.get(type_id, f"unknown({type_id})")


def _block_check(source: Any, path: str, offset: int, length: int, name: str) -> tuple[int, str]:
    """(compression byte, 'ok' or the error) of one trailed block."""
    from index_format.codecs import decode_block
    from index_format.layout import TRAILER_SIZE
    raw = source.read(offset, length + TRAILER_SIZE)
    try:
        decode_block(raw, path=path, block=name, offset=offset)
        status = "ok"
    except BgixError as exc:
        status = f"error: {exc}"
    return raw[length], status


def _structure(path: str, size: int | None) -> dict[str, Any]:
    """What a btree file says without its key type: footer, data blocks, bloom filter and null rows."""
    from index_format import codecs
    from index_format.btree.btree_footer import parse_btree_footer
    from index_format.btree.sst_blocks import decode_block_body, decode_handles
    from index_format.layout import BTREE_FOOTER_SIZE, TRAILER_SIZE
    from index_format.storage import open_file

    src = open_file(path, size)
    if src.size < BTREE_FOOTER_SIZE:
        parse_btree_footer(b"", src.size, path=path)   # raises the truncation error
    f = parse_btree_footer(src.read(src.size - BTREE_FOOTER_SIZE, BTREE_FOOTER_SIZE), src.size, path=path)
    index_codec, index_status = _block_check(src, path, f.index_offset, f.index_length, "index block")
    blocks = []
    if index_status == "ok":
        body = codecs.decode_block(src.read(f.index_offset, f.index_length + TRAILER_SIZE), path=path,
                                   block="index block", offset=f.index_offset)
        idx = decode_block_body(body, path=path, block="index block")
        offsets, sizes = decode_handles(idx, file_limit=f.index_offset, path=path, block="index block")
        for i, (off, length) in enumerate(zip(offsets.tolist(), sizes.tolist())):
            type_id, status = _block_check(src, path, off, length, f"data block at {off}")
            blocks.append({"block": i, "offset": off, "length": length, "last_key_hex": idx.key(i).hex(),
                           "codec": _codec(type_id), "crc": status})
    doc: dict[str, Any] = {
        "file": path, "file_size": src.size, "format": "btree", "version": f.version, "footer": f.to_dict(),
        "index_block": {"offset": f.index_offset, "length": f.index_length, "codec": _codec(index_codec),
                        "crc": index_status},
        "block_count": len(blocks),
        "compression": sorted({b["codec"] for b in blocks} | {_codec(index_codec)}),
        "bloom_filter": ({"offset": f.bloom_offset, "length": f.bloom_length,
                          "expected_entries": f.bloom_expected} if f.has_bloom else None),
        "blocks": blocks,
    }
    return doc


def inspect_btree(args: argparse.Namespace) -> int:
    """Print a btree file (JSON with --json or without --type; else text)."""
    from index_format.btree.btree_reader import open_btree_index
    from index_format.literals import to_json
    from index_format.types import parse_type

    doc = _structure(args.file, args.size)
    if not args.key_type:
        doc["note"] = "pass --type to decode the keys and row ids"
        print(json.dumps(doc, ensure_ascii=False))
        return 0
    kt = parse_type(args.key_type)
    r = open_btree_index(args.file, kt, size=args.size)
    null_rows = sorted(r.null_rows())
    entries = [(value, ids) for value, ids in r.entries()]
    first, last = r.first_key(), r.last_key()
    doc.update({
        "type": kt.spelling, "key_order": r.key_order, "key_count": len(entries),
        "row_count": len(null_rows) + sum(len(ids) for _, ids in entries),
        "first_key": None if first is None else to_json(kt, first),
        "last_key": None if last is None else to_json(kt, last),
        "null_rows": null_rows,
        "values": [{"key": to_json(kt, v), "row_ids": list(ids)} for v, ids in entries],
    })
    if args.json:
        print(json.dumps(doc, ensure_ascii=False))
        return 0
    f = r.footer
    print(f"file {r.path} ({r.size} bytes), btree index version {f.version}, type {kt.spelling}, "
          f"key order {r.key_order}")
    print(f"footer: index block @{f.index_offset}+{f.index_length}, null bitmap "
          + (f"@{f.null_offset}+{f.null_length}" if f.has_nulls else "none") + ", bloom filter "
          + (f"@{f.bloom_offset}+{f.bloom_length} ({f.bloom_expected} entries)" if f.has_bloom else "none")
          + f", magic {f.magic:08x}")
    ib = doc["index_block"]
    print(f"index block: codec {ib['codec']}, crc {ib['crc']}; {doc['block_count']} data blocks, "
          f"compression {', '.join(doc['compression'])}")
    for b in doc["blocks"]:
        print(f"  data block {b['block']}: @{b['offset']}+{b['length']} codec {b['codec']} crc {b['crc']} "
              f"last key {b['last_key_hex']}")
    print(f"keys: {doc['key_count']}, first {json.dumps(doc['first_key'], ensure_ascii=False)}, "
          f"last {json.dumps(doc['last_key'], ensure_ascii=False)}; rows {doc['row_count']}")
    print(f"null rows ({len(null_rows)}): {_ids(null_rows)}")
    for v in doc["values"][:_TEXT_VALUES]:
        print(f"  {json.dumps(v['key'], ensure_ascii=False)}: {_ids(v['row_ids'])}")
    if len(doc["values"]) > _TEXT_VALUES:
        print(f"  … ({len(doc['values']) - _TEXT_VALUES} more keys; --json prints them all)")
    return 0


_TEXT_VALUES = 50


def _ids(ids: list[int], limit: int = 50) -> str:
    text = ", ".join(map(str, ids[:limit]))
    return text + (f", … ({len(ids) - limit} more)" if len(ids) > limit else "")


_SAMPLE_KEYS = 64
# key width → (the usual type, every type of that width) for the hint of a query without --type
_WIDTH_TYPES = {1: ("TINYINT", "BOOLEAN or TINYINT"), 2: ("SMALLINT", "SMALLINT"),
                4: ("INT", "INT, FLOAT, DATE or TIME"), 8: ("BIGINT", "BIGINT, DOUBLE or TIMESTAMP(3)")}


def _binary_width(raw: list[bytes]) -> int | None:
    """The width of keys that are all fixed-width binary values (1, 2, 4 or 8 bytes, a zero byte in each: the
    form of a number, date or time column read as STRING); None when they are not."""
    widths = {len(b) for b in raw}
    if len(widths) == 1 and widths <= set(_WIDTH_TYPES) and all(b"\x00" in b for b in raw):
        return widths.pop()
    return None


def _type_hint(opener: Any, path: str) -> str:
    """A suggestion from the first keys' bytes (read as STRING, which any bytes are): text or a fixed width."""
    from itertools import islice

    from index_format.types import parse_type
    try:
        raw = [e[0].encode("utf-8", "surrogateescape")
               for e in islice(opener(path, parse_type("string")).entries(), _SAMPLE_KEYS)]
    except BgixError:
        raw = []
    width = _binary_width(raw)
    if width is not None:
        usual, every = _WIDTH_TYPES[width]
        return f"its keys are {width}-byte values of {every}: e.g. --type {usual}"
    if raw and all(b.decode("utf-8", "replace").isprintable() for b in raw):
        return "its keys read as text: --type STRING"
    return "e.g. --type STRING, --type BIGINT"


def _check_key_type(reader: Any, kt: Any, path: str, kind: str) -> None:
    """InvalidOptionError when the file's first keys cannot be keys of `kt`: the file does not record its
    column type, and a wrong --type would otherwise answer every predicate with no rows (or fail on a key's
    width with a message about bytes). Keys of another type of the same width (DOUBLE for BIGINT) cannot be
    told apart and are not caught."""
    from itertools import islice

    from index_format.errors import CorruptFileError

    what = f"{path} ({kind.replace('-', ' ')})"
    try:
        sample = [entry[0] for entry in islice(reader.entries(), _SAMPLE_KEYS)]
    except CorruptFileError as exc:
        if exc.block != "key":
            raise
        raise InvalidOptionError(f"{what} does not hold {kt.spelling.upper()} keys ({exc.reason}): --type must be "
                                 "the type of the column the file indexes") from None
    if kt.name == "string" and sample:
        raw = [v.encode("utf-8", "surrogateescape") for v in sample]
        width = _binary_width(raw)
        if width is not None:
            raise InvalidOptionError(f"{what} holds {width}-byte binary keys (e.g. {raw[0].hex()}), the form "
                                     "of a number, date or time column, not STRING: --type must be the type of the "
                                     "column the file indexes")


def query_global(args: argparse.Namespace, kind: str, texts: list[str]) -> int:
    """One JSON element per predicate over column `v`: the matching local row ids and their count."""
    from index_format.btree.btree_reader import open_btree_index
    from index_format.global_index.reader import open_index
    from index_format.types import parse_type

    opener = open_btree_index if kind == "global-btree-index" else open_index
    if not args.key_type:
        hint = _type_hint(opener, args.file)
        raise InvalidOptionError(f"{args.file} is a {kind.replace('-', ' ')} file, which does not record its "
                                 f"column type: add --type, the indexed column's type ({hint})")
    kt = parse_type(args.key_type)
    reader = opener(args.file, kt)
    _check_key_type(reader, kt, args.file, kind)
    return answer_predicates(reader, kt, args.file, texts)


def answer_predicates(reader: Any, kt: Any, path: str, texts: list[str], **column: Any) -> int:
    """Print one JSON element per predicate over column `v` of the one file `reader` reads, answered by the
    predicate pipeline (`column`: ColumnIndex fields such as the family's `seeks`); 2 for a predicate that
    does not parse or bind."""
    from index_format.global_index.filemeta import FileMeta
    from index_format.predicate.answer import ColumnIndex, IndexFileRef, answer_over_files
    from index_format.predicate.bind import bind
    from index_format.predicate.sql import parse_where

    # no manifest: bounds that prune nothing; the file's own rows (null and non-null) are the universe
    meta = FileMeta(None, None, True, False)
    ref = IndexFileRef(path, 0, (1 << 62), meta, reader.size, lambda: reader)
    index = ColumnIndex("v", kt, [ref], sparse=True, **column)
    answers: list[dict[str, object]] = []
    for i, text in enumerate(texts):
        try:
            bound = bind(parse_where(text), {"v": kt})
            ans = answer_over_files(bound, {"v": index}, with_unknown=False)
        except PredicateError as exc:
            print(f"bgix file query: predicate {i + 1} {text!r}: {exc}", file=sys.stderr)
            return 2
        if not ans.supported:
            answers.append({"supported": False})
            continue
        answers.append({"rows": list(ans.rows), "count": len(ans.rows)})
    print(json.dumps(answers, separators=(",", ":")))
    return 0
