"""`bgix file inspect|build|query`: look inside one index file, build one from a Parquet file, or ask a
file index which rows a predicate may match (Paimon's file-index family lives in file_index_cmd).

Imports index_format, pyarrow and this package only (no fastapi, no pyspark).
"""
from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from index_format.errors import BgixError, InvalidOptionError, PredicateError
from index_format.file_index.detect import KINDS
from index_format.file_index.formats import INDEX_TYPES as FILE_INDEX_TYPES
from service.cli import file_index_cmd, fm_file_cmd, global_file_cmd


def configure(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="file_command", metavar="ACTION", required=True)
    ins = sub.add_parser("inspect", help="print any index file (kind detected from its bytes) as JSON; "
                                         "a global bitmap or btree index with --type: footer, blocks, keys, "
                                         "row ids; an fm index: footer, partitions, blocks and their checks")
    ins.add_argument("file", help="index file path")
    ins.add_argument("--type", dest="key_type", default=None,
                     help="column type where the format does not record it, e.g. string, INT, TIMESTAMP(3)")
    ins.add_argument("--index-type", default=None, choices=FILE_INDEX_TYPES,
                     help="the file is a bare file-index payload of this type")
    ins.add_argument("--schema", default=None, help="a container's columns, 'a:STRING,b:BIGINT' (decodes payloads)")
    ins.add_argument("--kind", default=None, choices=KINDS, help="skip detection: the file is of this kind")
    ins.add_argument("--json", action="store_true",
                     help="machine-readable output (global bitmap, btree or fm index)")
    ins.add_argument("--size", type=int, default=None, help="file size from the manifest (default: stat)")
    b = sub.add_parser("build", help="build a global bitmap index file, a file-index payload "
                                     "(--index-type) or a file-index container (--file-index-options)")
    b.add_argument("input", help="Parquet file")
    b.add_argument("--column", default=None, help="the indexed column (not with --file-index-options)")
    b.add_argument("--type", dest="key_type", default=None, help="column type (default: from the Parquet schema)")
    b.add_argument("--index-type", default=None, choices=FILE_INDEX_TYPES,
                   help="write this file-index payload of the column instead of a global bitmap index")
    b.add_argument("--options", default=None, help="with --index-type: payload options 'k=v;k=v' or 'k=v,k=v', "
                   "e.g. 'version=1;index-block-size=256b'; else the global index's options as create_global_index "
                   "takes them, e.g. 'bitmap-index.compression=zstd' (over --compression, --block-size, --level)")
    b.add_argument("--file-index-options", default=None,
                   help="Paimon table options 'file-index.bitmap.columns=a;file-index.bloom-filter.a.fpp=0.01;...': "
                        "write the file-index container Paimon's data-file writer would")
    b.add_argument("--schema", default=None, help="with --file-index-options: Paimon column types "
                                                  "'a:STRING,m:MAP<STRING,STRING>' (default: from Parquet)")
    b.add_argument("--row-id-column", default=None, help="column of local row ids (default: row positions)")
    b.add_argument("--compression", default="none", choices=["none", "zstd", "lz4"])
    b.add_argument("--level", type=int, default=1, help="zstd level")
    b.add_argument("--block-size", type=int, default=16384, help="dictionary block size in bytes")
    b.add_argument("-o", "--output", required=True)
    q = sub.add_parser("query", help="Paimon's pruning answer of a file-index payload or container, or the "
                                     "local row ids a global (bitmap, btree or fm) index file answers; one JSON "
                                     "element per predicate")
    q.add_argument("file", help="payload, container or global index file")
    q.add_argument("--index-type", default=None, choices=FILE_INDEX_TYPES, help="the file is a bare payload")
    q.add_argument("--type", dest="key_type", default=None,
                   help="the payload's or global index file's column type, e.g. STRING, INT")
    q.add_argument("--schema", default=None, help="the file is a container of these columns: 'a:STRING,b:BIGINT'")
    q.add_argument("--where", action="append", default=None,
                   help="SQL predicate (column v for a payload or global index file); may be repeated; "
                        "may end with ORDER BY col [DESC] [NULLS FIRST|LAST] LIMIT k")
    q.add_argument("--where-file", default=None, help="JSON list of SQL predicates")
    q.add_argument("--kind", default=None, choices=KINDS, help="skip detection: the file is of this kind")


def run(args: argparse.Namespace) -> int:
    try:
        if args.file_command == "inspect":
            kind = args.kind or (None if args.index_type else global_file_cmd.global_kind(args.file))
            if kind == "global-btree-index":
                return global_file_cmd.inspect_btree(args)
            if kind == "global-fm-index":
                return fm_file_cmd.inspect_fm(args)
            done = file_index_cmd.inspect_file(args)
            return _inspect(args) if done is None else done
        if args.file_command == "query":
            return _query(args)
        file_index_cmd.output_path(args.output)   # refused before any work: -o's directory must exist
        if args.file_index_options is not None:
            return file_index_cmd.build_container(args)
        if args.index_type is not None:
            return file_index_cmd.build_payload(args)
        if not args.column:
            print("bgix file build: --column is required", file=sys.stderr)
            return 2
        return _build(args)
    except FileNotFoundError as exc:  # pyarrow's message is the bare path
        print(f"bgix file {args.file_command}: no such file: {exc.filename or exc}", file=sys.stderr)
        return 1
    except (InvalidOptionError, PredicateError) as exc:  # the command line is wrong, not the file
        print(f"bgix file {args.file_command}: {exc}", file=sys.stderr)
        return 2
    except (BgixError, OSError) as exc:
        print(f"bgix file {args.file_command}: {exc}", file=sys.stderr)
        return 1


def _query(args: argparse.Namespace) -> int:
    """Answer by what the file is (from its bytes), whatever the flags guessed: a global index read as a
    file-index payload would answer every predicate with no rows."""
    kind = args.kind or global_file_cmd.file_kind(args.file)
    what = f"{args.file} is a {kind.replace('-', ' ')} file" if kind else ""
    if kind in global_file_cmd.GLOBAL_KINDS:
        if args.schema:
            raise InvalidOptionError(f"{what}, not a file-index container: leave out --schema"
                                     + (" (it holds STRING values)" if kind == "global-fm-index" else
                                        " and give the column's type with --type"))
        if args.index_type:   # the intent is plain: ask this file; the answer is its own, not a payload's
            print(f"bgix file query: note: {what}, not a {args.index_type} file-index payload; answering it "
                  "as the global index (--index-type is not needed)", file=sys.stderr)
        if kind == "global-fm-index":
            return fm_file_cmd.query_fm(args, file_index_cmd.predicates(args))
        return global_file_cmd.query_global(args, kind, file_index_cmd.predicates(args))
    if kind == "file-index-container" and not args.schema:
        raise InvalidOptionError(f"{what}: give its columns' types with --schema 'a:STRING,b:BIGINT'"
                                 + (" instead of --index-type" if args.index_type else ""))
    if kind == "deletion-vector-index" and not args.index_type:
        raise InvalidOptionError(f"{what}; it answers no predicates (bgix file inspect shows it)")
    return file_index_cmd.query(args)


def _block_status(reader: Any, offset: int, length: int, name: str) -> tuple[int, str]:
    from index_format.codecs import decode_block
    from index_format.layout import TRAILER_SIZE
    raw = reader.source.read(offset, length + TRAILER_SIZE)
    try:
        decode_block(raw, path=reader.path, block=name, offset=offset)
        status = "ok"
    except BgixError as exc:
        status = f"error: {exc}"
    return raw[length], status


def _inspect(args: argparse.Namespace) -> int:
    from index_format.codecs import CODEC_NAMES
    from index_format.global_index.filemeta import build_meta
    from index_format.keys import sort_key
    from index_format.literals import to_json
    from index_format.global_index.reader import open_index
    from index_format.types import parse_type

    kt = parse_type(args.key_type)
    r = open_index(args.file, kt, size=args.size)
    f = r.footer
    index_type, index_status = _block_status(r, f.index_offset, f.index_length, "block index")
    blocks = []
    for i, (block_first, off, length) in enumerate(r.block_info()):
        type_id, status = _block_status(r, off, length, f"dictionary block {i}")
        blocks.append({"block": i, "offset": off, "length": length, "first_key_hex": block_first.hex(),
                       "codec": CODEC_NAMES.get(type_id, f"unknown({type_id})"), "crc": status})
    values = []
    for value, off, length in r.located_entries():
        values.append((value, off, length, sorted(r.bitmap_at(off, length))))
    null_rows = sorted(r.null_rows())
    non_null = sorted(r.non_null_rows())
    keys = [v[0] for v in values]
    first = min(keys, key=lambda v: sort_key(kt, v)) if keys else None
    last = max(keys, key=lambda v: sort_key(kt, v)) if keys else None
    meta = build_meta(kt, first, last, bool(null_rows))
    if args.json:
        doc = {
            "file": r.path, "file_size": r.size, "type": kt.spelling, "key_order": r.key_order,
            "footer": f.to_dict(),
            "block_index": {"offset": f.index_offset, "length": f.index_length,
                            "codec": CODEC_NAMES.get(index_type, f"unknown({index_type})"), "crc": index_status},
            "blocks": blocks,
            "null_rows": null_rows,
            "non_null_rows": non_null,
            "values": [{"key": to_json(kt, v), "offset": o, "length": n, "row_ids": ids}
                       for v, o, n, ids in values],
            "meta_hex": meta.hex(),
        }
        print(json.dumps(doc, ensure_ascii=False))
        return 0
    print(f"file {r.path} ({r.size} bytes), type {kt.spelling}, key order {r.key_order}")
    print(f"footer: null rows @{f.null_offset}+{f.null_length}, non-null rows @{f.non_null_offset}"
          f"+{f.non_null_length}, block index @{f.index_offset}+{f.index_length}, "
          f"{f.value_count} values, version {f.version}, magic {f.magic:08x}")
    print(f"block index: codec {CODEC_NAMES.get(index_type, index_type)}, crc {index_status}")
    for b in blocks:
        print(f"  dictionary block {b['block']}: @{b['offset']}+{b['length']} codec {b['codec']} "
              f"crc {b['crc']} first key {b['first_key_hex']}")
    print(f"null rows ({len(null_rows)}): {_ids(null_rows)}")
    print(f"non-null rows ({len(non_null)}): {_ids(non_null)}")
    for v, o, n, ids in values:
        print(f"  {json.dumps(to_json(kt, v), ensure_ascii=False)} @{o}+{n}: {_ids(ids)}")
    print(f"meta {meta.hex()}")
    return 0


def _ids(ids: list[int], limit: int = 50) -> str:
    text = ", ".join(map(str, ids[:limit]))
    return text + (f", … ({len(ids) - limit} more)" if len(ids) > limit else "")


def _is_text(t: Any) -> bool:
    import pyarrow as pa
    return bool(pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t)
                or pa.types.is_large_binary(t))


def _build(args: argparse.Namespace) -> int:
    from service.cli.parquet_input import ParquetInput, check_key_type

    columns = [args.column] + ([args.row_id_column] if args.row_id_column else [])
    with ParquetInput(args.input) as probe:
        names = probe.schema.names
        missing = [c for c in columns if c not in names]
        if missing:  # checked here: pyarrow would raise a bare ArrowInvalid with a traceback
            print(f"bgix file build: no column {missing[0]!r} in {args.input}; columns: {', '.join(names)}",
                  file=sys.stderr)
            return 2
        text = _is_text(probe.schema.field(args.column).type)
    # a string column read as Parquet stores it, dictionary-encoded: the writer ranks each chunk's dictionary
    # instead of hashing every row
    with ParquetInput(args.input, dictionary=[args.column] if text else ()) as source:
        table_of = source.read_in_background(columns)
        try:   # the writer's modules load while pyarrow reads the file
            import numpy as np

            from index_format.global_index.writer import write_index_bytes
            from index_format.options import IndexOptions, given_options
            from index_format.types import from_arrow, parse_type
        finally:
            table = table_of()   # the read ends before the file closes, whatever happened
    if args.row_id_column and table.column(args.row_id_column).null_count:
        print(f"bgix file build: row-id column {args.row_id_column!r} has "
              f"{table.column(args.row_id_column).null_count} null values; every row needs an id",
              file=sys.stderr)
        return 2
    keys = table.column(args.column)
    kt = parse_type(args.key_type) if args.key_type else from_arrow(keys.type)
    if args.key_type:
        check_key_type(args.input, args.column, keys.type, kt)
    if args.row_id_column:
        row_ids = table.column(args.row_id_column)  # the writer reads it from its buffer (to_numpy imports pandas)
    else:
        row_ids = np.arange(table.num_rows, dtype=np.int64)
    fields: dict[str, Any] = {"dictionary_block_size": args.block_size, "compression": args.compression,
                              "compression_level": args.level}
    if args.options:   # Paimon's option keys, as create_global_index takes them; over the flags
        fields.update(given_options(args.options))
    opts = IndexOptions(**fields)
    data, written = write_index_bytes(keys, row_ids, kt, opts)
    file_index_cmd.write_output(args.output, data)
    print(f"wrote {args.output}: {written.file_size} bytes, {written.value_count} values")
    print(f"row_count {written.row_count}")
    print(f"meta {written.meta.hex()}")
    return 0
