"""Storage: root confinement, range reads, atomic/exclusive writes, pickling; local, memory:// and moto S3."""
from __future__ import annotations

import os
import pickle
import socket
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from index_format.errors import (
    CorruptFileError,
    PathNotAllowedError,
    StorageUnavailableError,
    TruncatedFileError,
)
from index_format.storage import BytesSource, FsspecStorage, RangeSource, Storage


@pytest.fixture()
def local(tmp_path: Path) -> Storage:
    root = tmp_path / "wh"
    root.mkdir()
    return Storage(str(root))


@pytest.fixture()
def memory() -> Storage:
    # memory:// is process-global: a fresh root per test keeps tests independent.
    return Storage(f"memory://bgix-test-{uuid.uuid4().hex}")


# -- resolve / confinement ----------------------------------------------------------------------

def test_relative_paths_go_under_the_root(local: Storage) -> None:
    assert local.resolve("a/b.json") == os.path.join(local.root, "a", "b.json")
    assert local.resolve("a/./c/../b.json") == os.path.join(local.root, "a", "b.json")
    assert local.resolve("") == local.root
    assert local.resolve(f"file://{local.root}/x") == os.path.join(local.root, "x")
    assert local.resolve(f"file://localhost{local.root}/x") == os.path.join(local.root, "x")
    assert local.resolve(os.path.join(local.root, "y")) == os.path.join(local.root, "y")


def test_file_url_root_is_normalized(tmp_path: Path) -> None:
    s = Storage(f"file://{tmp_path}/wh/")
    assert s.root == os.path.realpath(tmp_path / "wh")


@pytest.mark.parametrize("bad", [
    "../escape", "a/../../escape", "/etc/passwd", "file:///etc/passwd", "file://evil.example/etc/passwd",
    "file:etc/passwd", "http://example.com/x.index", "https://example.com/x", "ftp://example.com/x",
    "s3://bucket/x", "memory://other/x", "a\x00b", "file:///{root}/../x", "{root}-sibling/x",
])
def test_paths_outside_the_roots_are_rejected(local: Storage, bad: str) -> None:
    bad = bad.replace("/{root}", local.root).replace("{root}", local.root)
    with pytest.raises(PathNotAllowedError) as info:
        local.resolve(bad)
    assert repr(bad) in str(info.value)  # the message names the offending path


def test_symlink_out_of_the_root_is_rejected(local: Storage, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret").write_bytes(b"s")
    os.symlink(outside, os.path.join(local.root, "link"))
    with pytest.raises(PathNotAllowedError, match="symlink"):
        local.resolve("link/secret")
    with pytest.raises(PathNotAllowedError):
        local.read_bytes("link/secret")


def test_symlink_inside_the_root_is_followed(local: Storage) -> None:
    os.makedirs(os.path.join(local.root, "real"))
    os.symlink(os.path.join(local.root, "real"), os.path.join(local.root, "alias"))
    assert local.resolve("alias/f") == os.path.join(local.root, "real", "f")


def test_allowed_roots_extend_access(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / "part-0.parquet").write_bytes(b"PAR1")
    s = Storage(str(tmp_path / "wh"), allowed_roots=[str(data)])
    assert s.read_bytes(str(data / "part-0.parquet")) == b"PAR1"
    assert s.read_bytes(f"file://{data}/part-0.parquet") == b"PAR1"
    # relative paths still go under the main root only
    assert s.resolve("x") == os.path.join(s.root, "x")
    with pytest.raises(PathNotAllowedError):
        s.resolve(str(tmp_path / "other"))


def test_url_roots_check_protocol_and_prefix() -> None:
    s = Storage("s3://bucket/wh", allowed_roots=["s3://data-bucket/tables/"])
    assert s.root == "s3://bucket/wh"
    assert s.resolve("a/b") == "s3://bucket/wh/a/b"
    assert s.resolve("s3://bucket/wh/x/../y") == "s3://bucket/wh/y"
    assert s.resolve("s3://data-bucket/tables/t/f.parquet") == "s3://data-bucket/tables/t/f.parquet"
    for bad in ["s3://bucket/wh2/x", "s3://bucket/x", "s3://bucket/wh/../x", "../x", "/tmp/x",
                "gs://bucket/wh/x", "http://bucket/wh/x", "s3://data-bucket/tablesX"]:
        with pytest.raises(PathNotAllowedError):
            s.resolve(bad)


def test_unknown_root_protocol_is_rejected() -> None:
    with pytest.raises(PathNotAllowedError, match="http"):
        Storage("http://example.com/wh")


# -- reads and writes ---------------------------------------------------------------------------

def _roundtrip(s: Storage) -> None:
    s.write_atomic("t/a.bin", b"0123456789")
    assert s.exists("t/a.bin")
    assert not s.exists("t/missing")
    assert s.size("t/a.bin") == 10
    size, mtime = s.stat("t/a.bin")
    assert size == 10 and isinstance(mtime, float)
    with pytest.raises(FileNotFoundError):
        s.stat("t/missing")
    assert s.read_bytes("t/a.bin") == b"0123456789"
    assert s.read_range("t/a.bin", 3, 4) == b"3456"
    assert s.read_range("t/a.bin", 10, 0) == b""
    with pytest.raises(TruncatedFileError) as info:
        s.read_range("t/a.bin", 8, 5)
    assert "a.bin" in str(info.value)
    with pytest.raises(CorruptFileError):
        s.read_range("t/a.bin", -1, 2)
    src = s.open_source("t/a.bin")
    assert isinstance(src, RangeSource)
    assert src.size == 10 and src.name == s.resolve("t/a.bin")
    assert src.read(0, 2) == b"01" and src.read(8, 2) == b"89"
    with pytest.raises(TruncatedFileError):
        src.read(9, 2)
    # the manifest size wins over the real size (spec §2.2)
    with pytest.raises(TruncatedFileError):
        s.open_source("t/a.bin", size=20).read(5, 10)
    s.write_atomic("t/a.bin", b"new")
    assert s.read_bytes("t/a.bin") == b"new"
    assert s.write_if_absent("t/b.json", b"first") is True
    assert s.write_if_absent("t/b.json", b"second") is False
    assert s.read_bytes("t/b.json") == b"first"
    s.write_atomic("t/sub/c", b"c")
    assert s.list("t") == [s.resolve("t/a.bin"), s.resolve("t/b.json"), s.resolve("t/sub")]
    assert s.list("t", recursive=True) == [s.resolve(p) for p in ("t/a.bin", "t/b.json", "t/sub/c")]
    assert s.list("nope") == []
    with pytest.raises(FileNotFoundError):
        s.read_bytes("t/missing")
    with pytest.raises(FileNotFoundError):
        s.size("t/missing")
    s.delete("t/a.bin")
    s.delete("t/a.bin")  # missing → no error
    assert not s.exists("t/a.bin")
    s.delete("t", recursive=True)
    assert s.list("", recursive=True) == []


def test_local_roundtrip(local: Storage) -> None:
    _roundtrip(local)
    assert not [n for n in os.listdir(local.root) if n.startswith(".tmp-")]


def test_memory_roundtrip(memory: Storage) -> None:
    _roundtrip(memory)


def test_local_write_leaves_no_temp_files(local: Storage) -> None:
    local.write_atomic("d/x", b"1")
    local.write_if_absent("d/y", b"2")
    local.write_if_absent("d/y", b"3")
    assert sorted(os.listdir(os.path.join(local.root, "d"))) == ["x", "y"]


def test_write_if_absent_has_one_winner_under_contention(local: Storage) -> None:
    results: list[bool] = []
    barrier = threading.Barrier(8)

    def attempt(i: int) -> None:
        barrier.wait()
        results.append(local.write_if_absent("commit/0001.json", f"writer {i}".encode()))

    threads = [threading.Thread(target=attempt, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert sorted(results) == [False] * 7 + [True]
    assert local.read_bytes("commit/0001.json").startswith(b"writer ")


def test_delete_refuses_the_root(local: Storage) -> None:
    with pytest.raises(PathNotAllowedError):
        local.delete("", recursive=True)


def test_reading_a_directory_is_not_a_storage_outage(local: Storage) -> None:
    os.makedirs(os.path.join(local.root, "dir"))
    with pytest.raises(IsADirectoryError):
        local.read_bytes("dir")


def test_bytes_source() -> None:
    src = BytesSource(b"abcdef", name="mem.idx")
    assert src.read(1, 3) == b"bcd"
    with pytest.raises(TruncatedFileError, match="mem.idx"):
        src.read(4, 3)


def test_pickles_without_cached_file_systems(memory: Storage) -> None:
    memory.write_atomic("p", b"x")  # populates the fs cache
    clone = pickle.loads(pickle.dumps(memory))
    assert clone.read_bytes("p") == b"x"
    assert Storage.from_config(memory.to_config()).root == memory.root
    assert FsspecStorage is Storage
    cfg = Storage("s3://b/wh", ["s3://c/d"], {"anon": True}).to_config()
    assert cfg == {"root": "s3://b/wh", "allowed_roots": ["s3://c/d"], "storage_options": {"anon": True}}
    assert pickle.loads(pickle.dumps(cfg)) == cfg


def test_local_source_pickles(local: Storage) -> None:
    local.write_atomic("f", b"hello")
    src = local.open_source("f")
    assert src.read(0, 1) == b"h"
    clone = pickle.loads(pickle.dumps(src))
    assert clone.read(1, 4) == b"ello"


def test_unreachable_store_is_storage_unavailable() -> None:
    port = _free_port()  # nothing listens there
    s = Storage("s3://bucket/wh", storage_options={
        "key": "k", "secret": "s", "client_kwargs": {"endpoint_url": f"http://127.0.0.1:{port}"},
        "config_kwargs": {"connect_timeout": 1, "read_timeout": 1, "retries": {"max_attempts": 1}},
    })
    with pytest.raises(StorageUnavailableError, match="bucket/wh/x"):
        s.read_bytes("x")


# -- S3 via moto --------------------------------------------------------------------------------

def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="module")
def moto_endpoint() -> Iterator[str]:
    from moto.server import ThreadedMotoServer

    port = _free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.stop()


@pytest.fixture()
def s3(moto_endpoint: str) -> Storage:
    import boto3

    bucket = f"bgix-{uuid.uuid4().hex[:12]}"
    boto3.client("s3", endpoint_url=moto_endpoint, region_name="us-east-1",
                 aws_access_key_id="testing", aws_secret_access_key="testing").create_bucket(Bucket=bucket)
    return Storage(f"s3://{bucket}/warehouse", storage_options={
        "key": "testing", "secret": "testing",
        "client_kwargs": {"endpoint_url": moto_endpoint, "region_name": "us-east-1"},
    })


@pytest.mark.s3
def test_s3_roundtrip(s3: Storage) -> None:
    _roundtrip(s3)


@pytest.mark.s3
def test_s3_storage_pickles_into_a_worker(s3: Storage) -> None:
    s3.write_atomic("w/x", b"payload")
    clone = pickle.loads(pickle.dumps(s3))
    assert clone.read_range("w/x", 3, 4) == b"load"
    assert clone.open_source(s3.resolve("w/x")).read(0, 3) == b"pay"


@pytest.mark.s3
def test_s3_sees_writes_from_other_processes(s3: Storage, moto_endpoint: str) -> None:
    import boto3

    s3.write_atomic("snapshots/1.json", b"1")
    assert len(s3.list("snapshots")) == 1  # s3fs now holds a cached listing
    bucket, key = s3.resolve("snapshots/2.json")[len("s3://"):].split("/", 1)
    boto3.client("s3", endpoint_url=moto_endpoint, region_name="us-east-1", aws_access_key_id="testing",
                 aws_secret_access_key="testing").put_object(Bucket=bucket, Key=key, Body=b"2")
    assert s3.list("snapshots") == [s3.resolve("snapshots/1.json"), s3.resolve("snapshots/2.json")]
    assert s3.exists("snapshots/2.json")
    assert s3.write_if_absent("snapshots/2.json", b"mine") is False


@pytest.mark.s3
def test_s3_write_if_absent_has_one_winner(s3: Storage) -> None:
    results: list[bool] = []
    barrier = threading.Barrier(4)

    def attempt(i: int) -> None:
        clone = pickle.loads(pickle.dumps(s3))  # like separate workers
        barrier.wait()
        results.append(clone.write_if_absent("commit/7.json", f"writer {i}".encode()))

    threads = [threading.Thread(target=attempt, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert sorted(results) == [False, False, False, True]


def test_root_reached_through_a_symlink_alias(tmp_path: Path) -> None:
    real = tmp_path / "real-wh"
    real.mkdir()
    alias = tmp_path / "alias-wh"
    os.symlink(real, alias)
    s = Storage(str(alias))
    assert s.root == str(real)
    assert s.resolve(str(alias / "x")) == str(real / "x")
    assert s.resolve("x") == str(real / "x")


def test_relative_to_root() -> None:
    s = Storage("s3://bucket/wh")
    assert s.relative("s3://bucket/wh/tables/t/table.json") == "tables/t/table.json"
    assert s.relative("tables") == "tables"
    assert s.relative("") == ""
    m = Storage("memory://")
    assert m.relative("a/b") == "a/b"
    assert Storage("s3://bucket/wh", ["s3://other/x"]).join("s3://other/x", "y") == "s3://other/x/y"
    with pytest.raises(PathNotAllowedError):
        Storage("s3://bucket/wh", ["s3://other/x"]).relative("s3://other/x/y")


def test_open_file_reads_one_local_file_with_an_optional_recorded_size(tmp_path: Path) -> None:
    from index_format.storage import SizedSource, open_file
    p = tmp_path / "f.bin"
    p.write_bytes(b"0123456789")
    src = open_file(str(p))
    assert isinstance(src, RangeSource) and src.size == 10 and src.read(2, 3) == b"234"
    short = open_file(str(p), size=4)
    assert short.read(0, 4) == b"0123"
    with pytest.raises(TruncatedFileError):
        short.read(2, 4)
    with pytest.raises(FileNotFoundError):
        open_file(str(tmp_path / "missing.bin"))
    sized = SizedSource(BytesSource(b"abcdef", "mem"), 3)
    assert sized.read(0, 3) == b"abc" and sized.name == "mem"
    with pytest.raises(TruncatedFileError):
        sized.read(1, 3)
