"""class_data_sharing_options (engines) and the Paimon build's spark_conf that uses it.

The archive key stats the java binary Spark would launch and pyspark's jars; a stub `$JAVA_HOME/bin/java` is
enough (the options are only strings here: no JVM runs).
"""
from __future__ import annotations

import os
import re
import tempfile
import time
from pathlib import Path

import pytest

from service.build_job import engines
from service.build_job.engines import class_data_sharing_options

QUIET = "-Xlog:cds=off -Xlog:cds+dynamic=off"


@pytest.fixture
def java(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A stub java under $JAVA_HOME (the one Spark's launcher picks first)."""
    binary = tmp_path / "jdk" / "bin" / "java"
    binary.parent.mkdir(parents=True)
    binary.write_text("#!/bin/sh\n")
    binary.chmod(0o755)
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "jdk"))
    return binary


def _archive(options: str, flag: str) -> Path:
    found = re.fullmatch(rf"-XX:{flag}=(\S+) {re.escape(QUIET)}", options)
    assert found, options
    return Path(found.group(1))


def _age(path: Path, seconds: float) -> None:
    old = time.time() - seconds
    os.utime(path, (old, old))


def test_records_an_archive_in_a_new_private_dir(java: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache" / "cds"
    part = _archive(class_data_sharing_options(cache), "ArchiveClassesAtExit")
    assert part.parent == cache and part.name.endswith(f".{os.getpid()}.part") and not part.exists()
    st = cache.stat()
    assert st.st_uid == os.getuid() and st.st_mode & 0o777 == 0o700


def test_loads_the_archive_once_there_is_one(java: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cds"
    part = _archive(class_data_sharing_options(cache), "ArchiveClassesAtExit")
    final = cache / (part.name.split(".")[0] + ".jsa")
    final.write_bytes(b"archive")
    assert _archive(class_data_sharing_options(cache), "SharedArchiveFile") == final


def test_a_settled_part_is_promoted_and_later_parts_removed(java: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cds"
    part = _archive(class_data_sharing_options(cache), "ArchiveClassesAtExit")
    key = part.name.split(".")[0]
    fresh, settled, empty = (cache / f"{key}.{n}.part" for n in (101, 102, 103))
    for p, data in ((fresh, b"fresh"), (settled, b"settled"), (empty, b"")):
        p.write_bytes(data)
    for p in (settled, empty):
        _age(p, engines._CDS_SETTLE_SECONDS + 5)
    final = _archive(class_data_sharing_options(cache), "SharedArchiveFile")
    assert final == cache / f"{key}.jsa" and final.read_bytes() == b"settled"
    assert not empty.exists() and fresh.exists()  # a part still being written is left alone
    _age(fresh, engines._CDS_SETTLE_SECONDS + 5)
    assert _archive(class_data_sharing_options(cache), "SharedArchiveFile") == final
    assert not fresh.exists() and final.read_bytes() == b"settled"  # a redundant settled part is deleted


def test_a_new_archive_prunes_the_cache_to_the_most_recently_used(java: Path, tmp_path: Path) -> None:
    """Each java + Spark install (each venv) records its own ~116 MB archive: once a new one is promoted, the cache
    keeps the _CDS_KEEP most recently used (a load counts as a use) and drops other installs' day-old leftovers."""
    cache = tmp_path / "cds"
    part = _archive(class_data_sharing_options(cache), "ArchiveClassesAtExit")
    key = part.name.split(".")[0]
    others = [cache / f"spark-{n:016x}.jsa" for n in range(6)]
    for age, p in enumerate(others):
        p.write_bytes(b"other")
        _age(p, 3600 * (age + 1))          # others[0] used an hour ago ... others[5] six hours ago
    _age(others[4], 60)                    # ... but others[4] was loaded a minute ago
    old_part, new_part = cache / "spark-00000000000000ff.77.part", cache / "spark-00000000000000fe.78.part"
    old_claim = cache / "spark-00000000000000ff.recording"
    for p in (old_part, new_part, old_claim):
        p.write_bytes(b"")
    for p in (old_part, old_claim):
        _age(p, 86400 + 60)
    part.write_bytes(b"recorded")
    _age(part, engines._CDS_SETTLE_SECONDS + 5)
    final = _archive(class_data_sharing_options(cache), "SharedArchiveFile")
    assert final == cache / f"{key}.jsa" and final.read_bytes() == b"recorded"
    kept = sorted(p.name for p in cache.glob("spark-*.jsa"))
    assert kept == sorted([final.name] + [others[i].name for i in (4, 0, 1)][:engines._CDS_KEEP - 1]), kept
    assert not old_part.exists() and not old_claim.exists() and new_part.exists()
    assert time.time() - final.stat().st_mtime < 60   # loading it counts as a use


def test_the_archive_name_follows_java_and_spark(java: Path, tmp_path: Path) -> None:
    first = _archive(class_data_sharing_options(tmp_path / "a"), "ArchiveClassesAtExit").name.split(".")[0]
    assert _archive(class_data_sharing_options(tmp_path / "b"), "ArchiveClassesAtExit").name.split(".")[0] == first
    _age(java, 3600)  # another java binary (its mtime is part of the key)
    assert _archive(class_data_sharing_options(tmp_path / "a"), "ArchiveClassesAtExit").name.split(".")[0] != first


def test_the_archive_name_follows_the_jars_times(java: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The JVM refuses an archive once a class path jar's modification time changed (a venv made again at the same
    path): the key changes with it, so a new archive is recorded."""
    import importlib.util
    fake = tmp_path / "site" / "pyspark"
    (fake / "jars").mkdir(parents=True)
    (fake / "jars" / "spark-core.jar").write_bytes(b"jar")
    spec = importlib.util.spec_from_file_location("pyspark", fake / "__init__.py", submodule_search_locations=[str(fake)])
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: spec if name == "pyspark" else None)
    first = engines._cds_key()
    assert first is not None and engines._cds_key() == first
    _age(fake / "jars" / "spark-core.jar", 60)   # same name and size, another time: pip installed it again
    assert engines._cds_key() != first


def test_one_jvm_at_a_time_records_the_archive(java: Path, tmp_path: Path) -> None:
    """Sessions starting while one records run without an archive (recording costs CPU at exit, once is enough);
    an abandoned claim is taken over; once the archive is promoted every session loads it."""
    cache = tmp_path / "cds"
    part = _archive(class_data_sharing_options(cache), "ArchiveClassesAtExit")
    key = part.name.split(".")[0]
    assert class_data_sharing_options(cache) == ""            # the first is still recording
    _age(cache / f"{key}.recording", engines._CDS_RECORD_SECONDS + 5)
    again = _archive(class_data_sharing_options(cache), "ArchiveClassesAtExit")   # it died: taken over
    assert class_data_sharing_options(cache) == ""
    again.write_bytes(b"recorded")
    _age(again, engines._CDS_SETTLE_SECONDS + 5)
    assert _archive(class_data_sharing_options(cache), "SharedArchiveFile") == cache / f"{key}.jsa"
    assert not (cache / f"{key}.recording").exists()


def test_nothing_without_java(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    cache = tmp_path / "cds"
    assert class_data_sharing_options(cache) == ""
    assert not cache.exists()


def test_nothing_when_java_home_has_no_java(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "no-jdk"))
    assert class_data_sharing_options(tmp_path / "cds") == ""


def test_nothing_without_pyspark(java: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "pyspark" else real(name, *a))
    assert class_data_sharing_options(tmp_path / "cds") == ""


def test_nothing_in_a_dir_others_can_write(java: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cds"
    cache.mkdir()
    cache.chmod(0o777)
    assert class_data_sharing_options(cache) == ""
    cache.chmod(0o755)  # readable by others is fine: only writers could plant code
    assert class_data_sharing_options(cache) != ""


def test_nothing_in_a_dir_of_another_user(java: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cache = tmp_path / "cds"
    cache.mkdir(mode=0o700)
    monkeypatch.setattr(os, "getuid", lambda: cache.stat().st_uid + 1)
    assert class_data_sharing_options(cache) == ""


def test_nothing_when_the_dir_cannot_be_made(java: Path, tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")
    assert class_data_sharing_options(tmp_path / "file" / "cds") == ""


def test_spark_conf_uses_a_per_user_dir_under_tmp(java: Path, tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    opts = engines.light_driver_conf()["spark.driver.extraJavaOptions"]
    assert opts.startswith(engines._JVM_OPTIONS + " ")
    part = _archive(opts[len(engines._JVM_OPTIONS) + 1:], "ArchiveClassesAtExit")
    assert part.parent == tmp_path / f"bgix-spark-cds-{os.getuid()}"


def test_spark_conf_without_cds(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    conf = engines.light_driver_conf()
    assert conf["spark.driver.extraJavaOptions"] == engines._JVM_OPTIONS
    assert not any(tmp_path.iterdir())


@pytest.mark.parametrize("variable", ["SPARK_CONF_DIR", "HADOOP_CONF_DIR", "YARN_CONF_DIR"])
def test_no_archive_with_a_configuration_directory_on_the_class_path(
        java: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, variable: str) -> None:
    """Spark puts these directories on the class path, where a non-empty one makes the JVM refuse archives and
    print so on stdout after the build's result (a cluster test once read that line as the result)."""
    conf = tmp_path / "conf"
    conf.mkdir()
    monkeypatch.setenv(variable, str(conf))
    assert class_data_sharing_options(tmp_path / "a") != ""    # an empty directory is no obstacle
    (conf / "spark-defaults.conf").write_text("spark.executor.memory 1g\n")
    assert class_data_sharing_options(tmp_path / "b") == ""
