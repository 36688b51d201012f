"""`bgix file inspect` and `bgix file query` of fm global index files (Paimon's FM index over a STRING column).

Inspect walks the file as its format lays it out (container footer, container directory = the index metadata,
then each partition's footer and directory) and checks every block on its own (lengths, CRC-32, decompression)
and each partition's decoding, so a damaged file still shows its other partitions and names the bad block (exit
code 1). Query answers SQL predicates over column `v` through the fm reader and the predicate pipeline, as
local row ids (the file's rows, numbered from its index metadata's first row id). Imports index_format only.
"""
from __future__ import annotations

import argparse
import json
import struct
import sys
from collections import Counter
from typing import Any

from index_format.errors import IndexFormatError, InvalidOptionError

__all__ = ["inspect_fm", "query_fm"]

_FLAGS = {1: "sampled suffix array", 2: "dense quad wavelet", 4: "separator row ids",
          8: "exact-verification value pages"}


def _codec(codec_id: int) -> str:
    from index_format.fm.fm_format import CODEC_NAMES
    return CODEC_NAMES.get(codec_id, f"unknown({codec_id})")


def _block(info: Any, name: str, stored: bytes | memoryview, path: str, errors: list[str]) -> dict[str, Any]:
    """One block's place, codec and check ('ok' or 'error: …': lengths, CRC-32, decompression); a failed check's
    message (naming the file and the block) goes to `errors`."""
    from index_format.fm.fm_format import decode_block
    try:
        decode_block(stored, info, path=path, block=name)
        status = "ok"
    except IndexFormatError as exc:
        status = f"error: {exc.reason}"
        errors.append(str(exc))
    return {"block": name, "offset": info.offset, "stored": info.stored, "uncompressed": info.uncompressed,
            "codec": _codec(info.codec), "crc": status}


def _flag_names(flags: int) -> list[str]:
    return [name for bit, name in _FLAGS.items() if flags & bit]


def _partition(src: Any, reader: Any, i: int, pm: Any, path: str) -> tuple[dict[str, Any], list[str]]:
    """What partition `i` holds and how its blocks check: (its description, the errors found)."""
    from index_format.fm.fm_format import (
        FOOTER_SIZE,
        MAX_DIRECTORY,
        check_block,
        decode_directory,
        decode_partition_footer,
    )
    from index_format.storage.sources import read_exact

    name = f"partition {i}"
    doc: dict[str, Any] = {"partition": i, "offset": pm.start, "length": pm.end - pm.start,
                           "first_row_id": pm.first_row_id, "row_count": pm.row_count,
                           "row_ids": [pm.first_row_id, pm.first_row_id + pm.row_count - 1]}
    try:
        raw = memoryview(read_exact(src, pm.start, pm.end - pm.start, name))
        foot_at = pm.end - FOOTER_SIZE
        footer = decode_partition_footer(bytes(raw[foot_at - pm.start:]), path=path, offset=foot_at, name=name)
        if (footer.first_row_id, footer.row_count) != (pm.first_row_id, pm.row_count):
            raise IndexFormatError("partition footer and container directory disagree", path=path,
                                   block=f"{name} footer", offset=foot_at)
        check_block(footer.directory, pm.start, foot_at, MAX_DIRECTORY, path=path, block=f"{name} directory")
    except IndexFormatError as exc:
        doc["error"] = str(exc)
        return doc, [str(exc)]

    def stored(info: Any) -> memoryview:   # every block lies inside the partition (checked with its directory)
        return raw[info.offset - pm.start:info.offset - pm.start + info.stored]

    dinfo = footer.directory
    doc.update({"text_length": footer.text_length, "sample_rate": footer.sample_rate,
                "feature_flags": footer.flags})
    errors: list[str] = []
    blocks = [_block(dinfo, f"{name} directory", stored(dinfo), path, errors)]
    if not errors:
        from index_format.fm.fm_format import decode_block
        try:
            d = decode_directory(decode_block(stored(dinfo), dinfo, path=path, block=f"{name} directory"), footer,
                                 pm.start, path=path, name=name)
        except IndexFormatError as exc:
            errors.append(str(exc))
            d = None
        if d is not None:
            counts = [int(c) for c in (d.cumulative[1:] - d.cumulative[:-1])]
            byte_counts = {f"{b:02x}": counts[int(s)] for b, s in enumerate(d.byte_to_symbol.tolist()) if s >= 0}
            doc["symbols"] = {"total": d.text_length, "terminator": counts[0], "separators": counts[1],
                              "bytes": d.text_length - counts[0] - counts[1], "alphabet_size": d.alphabet_size,
                              "distinct_bytes": d.alphabet_size - 2, "byte_counts": byte_counts}
            doc.update({"wavelet_levels": d.level_count, "sampled_suffixes": d.sample_count,
                        "null_count": d.null_count, "verification_pages": len(d.pages)})
            groups = [(f"wavelet level {lv} block", bl) for lv, bl in enumerate(d.wavelets)]
            groups += [("sampled rows block", d.sampled_rows), ("sample values block", d.sample_values),
                       ("null rows block", d.null_rows), ("row boundaries block", d.boundaries)]
            for what, vector in groups:
                for k, vb in enumerate(vector):
                    blocks.append(_block(vb.info, f"{name} {what} {k}", stored(vb.info), path, errors))
            for k, page in enumerate(d.pages):
                blocks.append(_block(page, f"{name} verification page {k}", stored(page), path, errors))
    blocks.sort(key=lambda b: b["offset"])
    doc["blocks"] = blocks
    if errors:
        doc["decoded"] = "not tried: a block does not check"
    else:
        try:
            values = reader.partition_values(i)
        except IndexFormatError as exc:
            errors.append(str(exc))
            doc["decoded"] = f"error: {exc}"
        else:
            present = [v for v in values if v is not None]
            doc["decoded"] = "ok"
            doc["values"] = {"non_null": len(present), "distinct": len(set(present)),
                             "empty": sum(1 for v in present if not v)}
    return doc, errors


def describe(path: str, size: int | None = None) -> tuple[dict[str, Any], list[str]]:
    """The file's structure and the errors of the blocks and partitions that do not check. A footer or container
    directory that does not read raises (nothing else can be found without them).

    Raises:
        IndexFormatError: the container footer or directory is corrupt (names the file and the part).
    """
    from index_format.fm.fm_format import FOOTER_SIZE, decode_container_footer
    from index_format.fm.fm_reader import FMIndexReader
    from index_format.storage import open_file
    from index_format.types import parse_type

    src = open_file(path, size)
    reader = FMIndexReader(src, parse_type("string"))   # checks the container footer and directory
    foot_at = src.size - FOOTER_SIZE
    raw = src.read(foot_at, FOOTER_SIZE)
    info, first, rows, count = decode_container_footer(raw, path=path, offset=foot_at)
    flags, _, version, magic, checksum = struct.unpack_from(">IIIII", raw, 44)
    meta = reader.meta
    doc: dict[str, Any] = {
        "file": path, "kind": "global-fm-index", "format": "fm", "file_size": src.size, "version": version,
        "footer": {"offset": foot_at, "directory": {"offset": info.offset, "stored": info.stored,
                                                     "uncompressed": info.uncompressed, "codec": _codec(info.codec),
                                                     "crc": "ok"},
                   "first_row_id": first, "row_count": rows, "partition_count": count, "feature_flags": flags,
                   "features": _flag_names(flags), "version": version, "magic": magic, "checksum": checksum},
        "first_row_id": meta.first_row_id, "row_count": meta.row_count, "partition_count": len(meta.partitions),
        "row_ids": [meta.first_row_id, meta.first_row_id + meta.row_count - 1],
    }
    errors: list[str] = []
    parts = []
    for i, pm in enumerate(meta.partitions):
        part, errs = _partition(src, reader, i, pm, path)
        parts.append(part)
        errors += errs
    known = [p for p in parts if "null_count" in p]
    doc["null_count"] = sum(p["null_count"] for p in known) if len(known) == len(parts) else None
    payload = [b for p in parts for b in p.get("blocks", ())]
    compressed = sorted({b["codec"] for b in payload} - {"none"})
    rates = sorted({p["sample_rate"] for p in parts if "sample_rate" in p})
    options: dict[str, str] = {}
    if rates:
        options["fm-index.sa-sample-rate"] = ",".join(map(str, rates))
    if payload:
        options["fm-index.compression"] = ",".join(compressed) or "none"
    doc["options"] = options
    doc["options_note"] = ("read from the partition footers (sample rate) and the partitions' blocks' codecs (a block "
                           "a codec would shrink by less than 1/8 is stored uncompressed, so 'none' may also mean "
                           "incompressible blocks); fm-index.partition-size, partition-row-count and "
                           "compression-level are not recorded: the partitions' lengths and row counts show where "
                           "the writer cut")
    doc["partitions"] = parts
    doc["container_directory"] = {"offset": info.offset, "stored": info.stored, "crc": "ok",
                                  "index_meta_hex": _meta_hex(reader)}
    return doc, errors


def _meta_hex(reader: Any) -> str:
    from index_format.fm.fm_format import encode_index_meta
    return encode_index_meta(reader.meta).hex()


def inspect_fm(args: argparse.Namespace) -> int:
    """Print an fm file's structure (JSON with --json); 1 when a block or partition does not check."""
    if args.key_type:
        _string_type(args.key_type, args.file)
    doc, errors = describe(args.file, args.size)
    if args.json:
        print(json.dumps(doc, ensure_ascii=False))
    else:
        _print_text(doc)
    for e in errors[:5]:
        print(f"bgix file inspect: {e}", file=sys.stderr)
    if len(errors) > 5:
        print(f"bgix file inspect: … and {len(errors) - 5} more errors", file=sys.stderr)
    return 1 if errors else 0


def _print_text(doc: dict[str, Any]) -> None:
    f = doc["footer"]
    a, b = doc["row_ids"]
    print(f"file {doc['file']} ({doc['file_size']} bytes), fm index version {doc['version']}, "
          f"{doc['row_count']} rows (local row ids {a}–{b}), {doc['partition_count']} partitions")
    d = f["directory"]
    print(f"footer: container directory @{d['offset']}+{d['stored']} ({d['codec']}), feature flags "
          f"{f['feature_flags']} ({', '.join(f['features'])}), magic {f['magic']:08x}, crc ok")
    print("options in the file: " + (", ".join(f"{k}={v}" for k, v in doc["options"].items()) or "none found"))
    print(f"null rows: {doc['null_count'] if doc['null_count'] is not None else 'unknown (a partition is damaged)'}")
    for p in doc["partitions"]:
        a, b = p["row_ids"]
        head = f"partition {p['partition']}: @{p['offset']}+{p['length']}, rows {a}–{b} ({p['row_count']})"
        if "error" in p:
            print(f"{head}: {p['error']}")
            continue
        s = p.get("symbols")
        if s:
            head += (f", text {s['total']} symbols ({s['bytes']} bytes, {s['separators']} separators, "
                     f"{s['terminator']} terminator), alphabet {s['alphabet_size']} ({s['distinct_bytes']} distinct "
                     f"bytes), {p['wavelet_levels']} wavelet levels, sample rate {p['sample_rate']}, "
                     f"{p['null_count']} nulls")
        print(f"{head}; decoded {p['decoded']}")
        if "values" in p:
            v = p["values"]
            print(f"  values: {v['non_null']} non-null, {v['distinct']} distinct, {v['empty']} empty")
        codecs = Counter(bl["codec"] for bl in p["blocks"])
        bad = [bl for bl in p["blocks"] if bl["crc"] != "ok"]
        print(f"  {len(p['blocks'])} blocks (" + ", ".join(f"{c} {n}" for c, n in sorted(codecs.items()))
              + f"), {'all ok' if not bad else f'{len(bad)} bad'}")
        for bl in p["blocks"]:
            print(f"    {bl['block']}: @{bl['offset']}+{bl['stored']} ({bl['uncompressed']} bytes) {bl['codec']} "
                  f"crc {bl['crc']}")


def _string_type(key_type: str, path: str) -> Any:
    from index_format.types import parse_type
    kt = parse_type(key_type)
    if kt.name != "string":
        raise InvalidOptionError(f"{path} is an fm index file, which holds STRING values: leave out --type or give "
                                 f"--type STRING, not {key_type}")
    return kt


def query_fm(args: argparse.Namespace, texts: list[str]) -> int:
    """One JSON element per predicate over column `v` (STRING): the matching local row ids and their count.

    Every predicate is answered from the file (its decoded values are the column's): the family's own searches
    (LIKE, =, IN, IS NULL, …) and, for comparisons an fm index has no key order for, every value compared."""
    from index_format.families import FM
    from index_format.fm.fm_reader import open_fm_index
    from service.cli.global_file_cmd import answer_predicates

    kt = _string_type(args.key_type or "string", args.file)
    reader = open_fm_index(args.file, kt)
    return answer_predicates(reader, kt, args.file, texts, family=FM.name, seeks=FM.seeks, rank=FM.rank)
