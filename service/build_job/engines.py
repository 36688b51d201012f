"""Run a BuildPlan, for every table kind: in-process (engine "local") or in Spark, one Spark task per plan
task (scan "direct"), or for plain tables mapInArrow over Spark's own scan (scan "spark"). All feed the same
worker code (worker.RangeBuilder).

The only module of the job that imports pyspark, and only inside the Spark functions.
"""
from __future__ import annotations

import logging
import math
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Iterator, MutableMapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlsplit

import pyarrow as pa

from index_format.errors import BgixError
from index_format.options import parse_options
from index_format.types import KeyType, from_arrow
from service.build_job.progress import Progress, TaskReports, TaskReportWriter
from service.build_job.worker import build_batches, build_tasks
from service.catalog.catalog_errors import RowIdError
from service.tables.build_tasks import BATCH_ROWS, RESULT_DDL, RESULT_SCHEMA, ROW_ID, BuildPlan, SparkScan

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

log = logging.getLogger("bgix.build_job.engines")


# -- local engine ---------------------------------------------------------------------------------

def run_local(plan: BuildPlan, progress: Progress, out: list[pa.RecordBatch]) -> pa.Table:
    """The same tasks and worker code as the Spark engine, one after another in this process; `out` holds
    the records of the files written so far (what a failure's cleanup removes)."""
    out.extend(build_tasks(range(plan.tasks), plan, progress.range_rows_done))
    return pa.Table.from_batches(out, schema=RESULT_SCHEMA)


# -- Spark engine ---------------------------------------------------------------------------------

def spark_process_env(env: MutableMapping[str, str]) -> MutableMapping[str, str]:
    """The defaults a plain shell lacks for Spark to run this package's Python code, put into `env` unless set
    there: Spark's Python (driver and workers) is this interpreter, not the first `python3` on PATH (which
    lacks bgix and pyarrow: "No module named 'service'"); this checkout is on the workers' PYTHONPATH (a
    source tree used without installing it); the driver binds to 127.0.0.1 (a cluster overrides that with
    spark.driver.host / bindAddress, see docs/operations.md). Used by the service's build runners and by
    `bgix build` alike, before the JVM starts."""
    env.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    env.setdefault("PYSPARK_PYTHON", sys.executable)
    env.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    root = Path(__file__).resolve().parents[2]   # the directory holding the service package
    paths = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    # an installed bgix is found by its own interpreter; a whole site-packages must not leak into another one
    if str(root) not in paths and root.name not in ("site-packages", "dist-packages"):
        env["PYTHONPATH"] = os.pathsep.join([*paths, str(root)])
    return env


def spark_session(master: str, conf: dict[str, str] | None = None) -> SparkSession:
    """The active session if there is one (tests share one), else a new one for `master`."""
    try:
        from pyspark.sql import SparkSession
    except ModuleNotFoundError as exc:   # `pip install bgix` without the spark extra: say what to do
        if exc.name != "pyspark":
            raise
        raise ModuleNotFoundError(
            "the Spark build engine needs pyspark, which is not installed: pip install 'bgix[spark]', or build "
            "without Spark (BGIX_BUILD_ENGINE=local; bgix build --engine local)", name="pyspark") from None
    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    spark_process_env(os.environ)   # read by the JVM and the Python workers it starts next
    builder = (SparkSession.builder.master(master).appName("bgix-build")
               .config("spark.ui.enabled", "false")
               .config("spark.sql.shuffle.partitions", "8")
               .config("spark.sql.execution.arrow.pyspark.enabled", "true"))
    for k, v in (conf or {}).items():
        builder = builder.config(k, v)
    return builder.getOrCreate()


# The driver JVM of a build whose workers read their own input (BuildPlan.light_driver) only schedules Python
# tasks and collects small file records, so it does not need the C2 compiler or a parallel collector; both
# cost seconds of CPU while the JVM starts (on 2 cores: about half of the session start). Class-data
# sharing cuts class loading too. The spec's spark_conf overrides all of these.
_JVM_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
_SPARK_CONF = {"spark.ui.showConsoleProgress": "false"}


def light_driver_conf() -> dict[str, str]:
    """The Spark settings of a light driver's own session (see _JVM_OPTIONS)."""
    cds = class_data_sharing_options(Path(tempfile.gettempdir()) / f"bgix-spark-cds-{os.getuid()}")
    return {**_SPARK_CONF, "spark.driver.extraJavaOptions": f"{_JVM_OPTIONS} {cds}".strip()}


def build_session(plan: BuildPlan, master: str, conf: dict[str, str]) -> SparkSession:
    """The session a build starts for itself (the active one when there is one)."""
    return spark_session(master, {**(light_driver_conf() if plan.light_driver else {}), **conf})


# A runner's session keeps its Python workers (reuse) and forks them from a daemon that imported the build
# worker's modules once (spark_daemon), so a build's tasks start warm even after Spark retired idle workers.
_RUNNER_CONF = {"spark.python.worker.reuse": "true",
                "spark.python.daemon.module": "service.build_job.spark_daemon"}


def runner_session(master: str) -> SparkSession:
    """The long-lived session of a build runner (service.build_job.build_runner): a light driver (the runner's
    builds read their own input in their tasks) whose Python workers start warm."""
    return spark_session(master, {**light_driver_conf(), **_RUNNER_CONF})


def warm_workers(spark: SparkSession) -> None:
    """Run one tiny task per slot, so the Python daemon and a worker per slot are up before the first build."""
    slots = parallelism(str(spark.sparkContext.master), spark)
    spark.sparkContext.parallelize(range(slots), slots).mapPartitions(_warm_task).collect()


def _warm_task(items: Iterable[int]) -> Iterator[int]:
    yield sum(1 for _ in items)   # the daemon (spark_daemon) loaded the build's modules before forking us


def job_group(job_id: str) -> str:
    """The Spark job group of one build (what a cancel cancels)."""
    return f"bgix-{job_id}"


def local_cores(master: str) -> int | None:
    """Task slots of a `local`, `local[N]` or `local[*]` master (None: a cluster; ask the session)."""
    m = re.fullmatch(r"local(?:\[(\*|\d+)(?:,\d+)?\])?", master.strip())
    if m is None:
        return None
    n = m.group(1)
    return 1 if n is None else (os.cpu_count() or 1) if n == "*" else max(1, int(n))


def parallelism(master: str, spark: SparkSession) -> int:
    cores = local_cores(master)
    return cores if cores is not None else int(spark.sparkContext.defaultParallelism)


# -- JVM class-data sharing -------------------------------------------------------------------------

_CDS_RECORD_SECONDS = 600.0  # a recording claim older than this is abandoned (its JVM died or wrote nothing)
_CDS_SETTLE_SECONDS = 20.0  # a JVM writes its archive in ~3 s as it exits; a part unchanged for longer is complete
# Archives kept in the cache (~116 MB each): one per java + Spark install, so one per venv. Every new venv or
# fresh clone records its own; without a cap they piled up (21 archives, 2.7 GB in /tmp on a developer machine).
_CDS_KEEP = 4


def class_data_sharing_options(cache_dir: Path) -> str:
    """JVM options for a fresh driver: load Spark's classes from a class-data-sharing archive when there is
    one for this Java and this Spark, else record one when this JVM exits (for the next job).

    Loading and verifying Spark's classes is a large part of a fresh session's start on a small machine;
    an archive roughly halves the JVM's start-up CPU. The JVM checks an archive itself and runs without it
    when it does not match, so the worst case is today's start time. An archive is written under a part
    name (one JVM records at a time) and promoted by a later job once it has not changed for _CDS_SETTLE_SECONDS.
    `cache_dir` must be ours alone (an archive holds code): it is created 0700 and not used when another
    user owns it.
    """
    key = _cds_key()
    if key is None or _conf_dirs_on_classpath() or not _private_dir(cache_dir):
        return ""
    final = cache_dir / f"spark-{key}.jsa"
    _settle_parts(cache_dir, key, final)
    quiet = "-Xlog:cds=off -Xlog:cds+dynamic=off"  # its warnings list every class it skips
    if final.exists():
        _touch(final)   # least recently used goes first when the cache is pruned
        return f"-XX:SharedArchiveFile={final} {quiet}"
    if not _claim_recording(cache_dir / f"spark-{key}.recording"):
        return ""   # another JVM records the archive: recording costs ~3 CPU-s at exit and helps no one twice
    return f"-XX:ArchiveClassesAtExit={cache_dir / f'spark-{key}.{os.getpid()}.part'} {quiet}"


def _claim_recording(marker: Path) -> bool:
    """Whether this JVM records the archive: one at a time (a fresh machine starting several sessions at once would
    otherwise have each dump ~100 MB as it exits: ~3 CPU-s each, against ~3 CPU-s an archive saves per start). A
    claim older than _CDS_RECORD_SECONDS is a recorder that died or could not write: taken over."""
    for _ in range(2):
        try:
            os.close(os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
            return True
        except FileExistsError:
            try:
                if time.time() - marker.stat().st_mtime <= _CDS_RECORD_SECONDS:
                    return False
                marker.unlink()
            except OSError:
                continue
        except OSError:
            return False
    return False


# Spark's launcher puts its configuration directory (and Hadoop's and YARN's) on the JVM's class path; with a
# non-empty directory there the JVM can neither use nor write an archive, and says so on stdout as it exits
# ("Cannot have non-empty directory in paths"), after the build's result line.


def _conf_dirs_on_classpath() -> bool:
    """Whether a configuration directory Spark adds to the class path holds files (no archive then)."""
    import pyspark
    spark_conf = os.environ.get("SPARK_CONF_DIR") or str(
        Path(os.environ.get("SPARK_HOME") or Path(pyspark.__file__).parent, "conf"))   # the launcher's default
    for d in (spark_conf, os.environ.get("HADOOP_CONF_DIR"), os.environ.get("YARN_CONF_DIR")):
        try:
            if d and any(Path(d).iterdir()):
                return True
        except OSError:
            continue
    return False


def _cds_key() -> str | None:
    """What an archive depends on: the java binary Spark launches and the Spark jars (None: no java). The JVM
    refuses an archive whose class path jars changed size or modification time, silently with its logs off: a
    venv made again at the same path (new jar mtimes) under the old key would never use or record one again."""
    import hashlib
    import importlib.util
    import shutil
    java_home = os.environ.get("JAVA_HOME")  # as Spark's launcher picks java
    java = str(Path(java_home, "bin", "java")) if java_home else shutil.which("java")
    spec = importlib.util.find_spec("pyspark")
    if not java or spec is None or not spec.submodule_search_locations:
        return None
    jars = Path(next(iter(spec.submodule_search_locations)), "jars")
    java_real = Path(java).resolve()
    try:
        parts = [str(java_real), str(java_real.stat().st_mtime_ns), str(jars),
                 *sorted(f"{p.name}:{p.stat().st_size}:{p.stat().st_mtime_ns}" for p in jars.glob("*.jar"))]
    except OSError:
        return None
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]


def _private_dir(path: Path) -> bool:
    try:
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
        st = path.stat()
    except OSError:
        return False
    return st.st_uid == os.getuid() and not st.st_mode & 0o022


def _settle_parts(cache_dir: Path, key: str, final: Path) -> None:
    """Promote the first settled part archive to `final` (and drop the recording claim); delete settled parts
    once `final` exists (each is about 100 MB)."""
    if final.exists():
        (cache_dir / f"spark-{key}.recording").unlink(missing_ok=True)
    for part in cache_dir.glob(f"spark-{key}.*.part"):
        try:
            st = part.stat()
            if time.time() - st.st_mtime <= _CDS_SETTLE_SECONDS:
                continue
            if final.exists() or st.st_size == 0:
                part.unlink()
            else:
                os.replace(part, final)
                (cache_dir / f"spark-{key}.recording").unlink(missing_ok=True)
                _prune(cache_dir, final)
        except OSError:  # another job promoted or removed it meanwhile
            continue


def _touch(path: Path) -> None:
    try:
        os.utime(path)
    except OSError:
        pass


def _prune(cache_dir: Path, kept: Path) -> None:
    """Once a new archive is in place: keep the _CDS_KEEP most recently used archives (`kept` among them) and
    drop other installs' parts and claims left for a day (a JVM still mapping a deleted archive keeps its copy;
    the next one of that install records again)."""
    def mtime(p: Path) -> float:
        try:
            return p.stat().st_mtime
        except OSError:
            return 0.0
    archives = sorted((p for p in cache_dir.glob("spark-*.jsa") if p != kept), key=mtime, reverse=True)
    stale = archives[_CDS_KEEP - 1:]
    stale += [p for pattern in ("spark-*.part", "spark-*.recording") for p in cache_dir.glob(pattern)
              if not p.name.startswith(kept.name[:-len(".jsa")] + ".") and time.time() - mtime(p) > 86400]
    for p in stale:
        p.unlink(missing_ok=True)


def _quoted(column: str) -> str:
    return "`" + column.replace("`", "``") + "`"


def spark_frame(spark: SparkSession, scan: SparkScan) -> DataFrame:
    """(ROW_ID, columns…): the row id computed in the JVM, so only the keys and one long cross into Python.

    Position ids: `first_row_id + _metadata.row_index`, with first_row_id joined (broadcast) on
    `_metadata.file_path` spelled exactly as Spark spells it (DataFrame.inputFiles()). A row whose file
    is not matched gets a null id, which the worker rejects; it is never silently dropped.
    """
    from pyspark.sql import functions as F
    fmt = scan.format
    rid = scan.row_id_column
    if fmt != "parquet" and not rid:
        raise RowIdError(f"table format {fmt!r}: Spark exposes no row position (_metadata.row_index) for it; "
                         "give the table a row_id_column or use engine 'local'")
    reader = spark.read.format(fmt)
    if fmt == "csv":
        reader = reader.option("header", "true").option("inferSchema", "true")
    df = reader.load([_spark_path(path) for path, _ in scan.files])
    keys = [F.col(_quoted(c)).alias(c) for c in scan.columns]
    if rid:
        return df.select(F.col(_quoted(rid)).cast("long").alias(ROW_ID), *keys)
    bases = dict(scan.files)
    pairs: dict[str, int] = {}
    for spelled in df.inputFiles():
        path = from_spark_path(spelled)
        if path in bases:
            for variant in _spellings(spelled):
                pairs[variant] = bases[path]
    missing = sorted(set(bases) - {from_spark_path(p) for p in pairs})
    if missing:
        raise RowIdError(f"Spark did not list data file(s) {missing[:3]} of the plan")
    mapping = spark.createDataFrame(sorted(pairs.items()), "fp string, base long")
    rows = df.select(*keys, F.col("_metadata.file_path").alias("fp"), F.col("_metadata.row_index").alias("pos"))
    joined = rows.join(F.broadcast(mapping), on="fp", how="left")
    return joined.select((F.col("base") + F.col("pos")).alias(ROW_ID), *(_quoted(c) for c in scan.columns))


def _spellings(url: str) -> list[str]:
    """inputFiles() says `file:///x` where `_metadata.file_path` says `file:/x`; accept both spellings
    (an exact string join is much cheaper per row than normalizing every row's path)."""
    out = [url]
    if url.startswith("file:///"):
        out.append("file:/" + url[len("file:///"):])
    elif url.startswith("file:/"):
        out.append("file:///" + url[len("file:/"):])
    return out


def _spark_path(path: str) -> str:
    if path.startswith("s3://"):
        return "s3a://" + path[len("s3://"):]
    return path if "://" in path else "file://" + path


def from_spark_path(path: str) -> str:
    """Spark spells files as URLs (`file:/a%20b/x.parquet`, `s3a://b/k`); the catalog uses resolved
    paths (`/a b/x.parquet`, `s3://b/k`)."""
    if path.startswith("file:"):
        return unquote(urlsplit(path).path)
    for scheme in ("s3a://", "s3n://"):
        if path.startswith(scheme):
            return "s3://" + path[len(scheme):]
    return path


def spark_key_type(df: DataFrame, column: str) -> KeyType:
    """The column's key type as Spark reads it (an ARRAY column's: its elements', which a multivalue index holds)."""
    from pyspark.sql.pandas.types import to_arrow_type
    arrow_type = to_arrow_type(df.schema[column].dataType)
    if pa.types.is_list(arrow_type) or pa.types.is_large_list(arrow_type):
        arrow_type = arrow_type.value_type
    return from_arrow(arrow_type)


def _split_bytes(plan: BuildPlan, scan: SparkScan) -> int:
    # Parallelism follows the ranges (spec §7.2), capped by max-parallelism: aim for one split per range.
    tasks = max(1, min(len(plan.ranges), parse_options(plan.options).max_parallelism))
    return max(1 << 20, math.ceil(scan.bytes / tasks))


def run_spark_scan(spark: SparkSession, plan: BuildPlan, df: DataFrame, progress: Progress,
                   job_group: str, what: str) -> pa.Table:
    """Scan "spark" (plain tables): mapInArrow over Spark's own scan; each task builds the ranges its rows
    fall in."""
    assert plan.spark_scan is not None
    acc = _range_accumulator(spark)
    reports = _task_reports(progress, str(spark.sparkContext.master))

    def task(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        live = _live_writer(reports)
        yield from build_batches(batches, plan, _reporter(acc, live))
        if live is not None:
            live.write()

    conf = {"spark.sql.files.maxPartitionBytes": str(_split_bytes(plan, plan.spark_scan)),
            "spark.sql.execution.arrow.maxRecordsPerBatch": str(BATCH_ROWS)}
    return _collect(spark, lambda: df.mapInArrow(task, RESULT_DDL).toArrow(), conf, acc, progress, job_group,
                    what, reports)


def run_spark_direct(spark: SparkSession, plan: BuildPlan, progress: Progress, job_group: str,
                     what: str) -> pa.Table:
    """Scan "direct": the plan's tasks dealt into one Spark task per slot (at most max-parallelism, spec §7.2),
    each slot's share as even in rows as can be; the Python worker reads its input through the plan's
    TaskReader, so only task ids go in and only file records come back. A plain RDD of task ids, not
    mapInArrow: the SQL Arrow runner cost ~2 s more per 10M-row Paimon build on 2 cores (measured). One Spark
    task per slot, not per plan task: a Python task costs Spark about 25–40 ms on this kind of machine, a second
    of a 1M-row build of 16 small plan tasks (measured)."""
    acc = _range_accumulator(spark)
    slots = max(1, min(plan.tasks, parse_options(plan.options).max_parallelism,
                       parallelism(str(spark.sparkContext.master), spark)))
    shares = deal(plan.task_rows, slots)
    ids = spark.sparkContext.parallelize(shares, len(shares))
    reports = _task_reports(progress, str(spark.sparkContext.master))

    def task(shares: Iterable[list[int]]) -> Iterator[pa.RecordBatch]:
        live = _live_writer(reports)
        yield from build_tasks([t for share in shares for t in share], plan, _reporter(acc, live))
        if live is not None:
            live.write()

    def run() -> pa.Table:
        return pa.Table.from_batches(ids.mapPartitions(task).collect(), schema=RESULT_SCHEMA)

    return _collect(spark, run, {}, acc, progress, job_group, what, reports)


def deal(task_rows: Sequence[int], slots: int) -> list[list[int]]:
    """Task ids dealt into at most `slots` shares, biggest task first to the share with the fewest rows so far
    (each share's tasks biggest first)."""
    shares: list[list[int]] = [[] for _ in range(min(slots, len(task_rows)))]
    loads = [0] * len(shares)
    for t in sorted(range(len(task_rows)), key=lambda i: -task_rows[i]):
        k = loads.index(min(loads))
        shares[k].append(t)
        loads[k] += task_rows[t]
    return [s for s in shares if s]


def _task_reports(progress: Progress, master: str) -> TaskReports | None:
    """Where this build's tasks report as they go. None: no catalog to show progress in, or a warehouse on the
    driver's local disk that a cluster's executors do not see (they would write beside nothing on their hosts;
    progress then moves as Spark tasks end)."""
    if progress.catalog is None:
        return None
    if local_cores(master) is None and "://" not in progress.catalog.storage.root:
        return None
    return TaskReports.for_job(progress.catalog, progress.job_id)


def _live_writer(reports: TaskReports | None) -> TaskReportWriter | None:
    """In a Spark task: its report writer, named by its partition (a retried task replaces its counts)."""
    if reports is None:
        return None
    from pyspark import TaskContext
    ctx = TaskContext.get()
    return reports.writer(ctx.partitionId() if ctx is not None else 0)


def _reporter(acc: Any, live: TaskReportWriter | None) -> Callable[[int, int], None]:
    def report(unit: int, rows: int) -> None:
        acc.add({unit: rows})          # exact, but reaches the driver only when the Spark task ends
        if live is not None:
            live.add(unit, rows)       # what the driver shows meanwhile
    return report


def _range_accumulator(spark: SparkSession) -> Any:
    from pyspark.accumulators import AccumulatorParam

    class _DictSum(AccumulatorParam[dict[int, int]]):
        def zero(self, value: dict[int, int]) -> dict[int, int]:
            return {}

        def addInPlace(self, a: dict[int, int], b: dict[int, int]) -> dict[int, int]:
            for k, v in b.items():
                a[k] = a.get(k, 0) + v
            return a

    return spark.sparkContext.accumulator({}, _DictSum())


def _collect(spark: SparkSession, run: Callable[[], pa.Table], conf: dict[str, str], acc: Any, progress: Progress,
             job_group: str, what: str, reports: TaskReports | None = None) -> pa.Table:
    """`run()` (a Spark job yielding the written files' records) under a job group, with `conf` set for its
    length and a progress poller (of the accumulator and the tasks' `reports`)."""
    sc = spark.sparkContext
    saved = {k: spark.conf.get(k, None) for k in conf}
    for k, v in conf.items():
        spark.conf.set(k, v)
    sc.setJobGroup(job_group, f"bgix build {what}", interruptOnCancel=True)
    stop = threading.Event()
    poller = threading.Thread(target=_poll, args=(sc, job_group, acc, progress, stop, reports), daemon=True)
    poller.start()
    try:
        written = run()
    except BaseException as exc:
        # Spark's whole report (the worker's traceback, the JVM's stack) goes to the build's log
        log.warning("Spark job group %s failed: %s", job_group, exc)
        died = jvm_died(spark, exc)
        if died is not None:   # nothing to cancel or wait for: its tasks and Python workers went with it
            raise died from exc
        sc.cancelJobGroup(job_group)  # e.g. SIGTERM while the driver waited: stop the tasks too
        _wait_for_tasks(sc, job_group, timeout=30.0)  # so the caller's cleanup does not race a writer
        if isinstance(exc, Exception) and not isinstance(exc, BgixError):
            raise worker_error(exc) from exc
        raise
    finally:
        stop.set()
        poller.join(timeout=10)
        if reports is not None and progress.catalog is not None:
            try:
                reports.remove(progress.catalog.storage)
            except Exception:   # a leftover report directory is harmless
                pass
        try:
            for k, old in saved.items():
                if old is None:
                    spark.conf.unset(k)
                else:
                    spark.conf.set(k, old)
        except Exception as restoring:
            if jvm_died(spark, restoring) is None:
                raise   # else the failure already raised says so; a dead JVM has no conf to restore
    progress.set_range_totals(dict(acc.value))
    return written.cast(RESULT_SCHEMA)


def _wait_for_tasks(sc: Any, group: str, timeout: float) -> None:
    tracker = sc.statusTracker()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        active = 0
        for job_id in tracker.getJobIdsForGroup(group):
            info = tracker.getJobInfo(job_id)
            for stage_id in (info.stageIds if info else []):
                stage = tracker.getStageInfo(stage_id)
                active += stage.numActiveTasks if stage is not None else 0
        if not active:
            return
        time.sleep(0.2)


class WorkerFailedError(BgixError):
    """A Spark task failed; the message is the worker's own error line (e.g. a RowIdError)."""


class SparkJvmDiedError(BgixError):
    """The build's Spark JVM (its driver; a local master's executors too) died: killed, out of memory, crashed."""


def jvm_exit(spark: SparkSession, wait_s: float = 0.0) -> str | None:
    """How the session's JVM ended ("killed by signal 9 (SIGKILL)", "exit status 1", "no answer"), None while
    it runs. The JVM pyspark started is this process's child, so its status is known without asking it; one
    that started this process (spark-submit) is dead when a call to it finds no connection. `wait_s`: how long a
    child JVM may take to be seen ended (a killed process closes its sockets before it becomes a zombie, so the
    connection error can come first)."""
    gateway = getattr(spark.sparkContext, "_gateway", None)
    proc = getattr(gateway, "proc", None)
    if proc is not None:
        code = proc.poll()
        if code is None and wait_s > 0:
            try:
                code = proc.wait(timeout=wait_s)
            except subprocess.TimeoutExpired:
                code = None
        if code is None:
            return None
        if code < 0:
            try:
                return f"killed by signal {-code} ({signal.Signals(-code).name})"
            except ValueError:
                return f"killed by signal {-code}"
        return f"exit status {code}"
    from py4j.protocol import Py4JNetworkError
    try:
        jvm = spark.sparkContext._jvm
        if jvm is None:   # no gateway to ask (the call would fail, and an error here means it lives)
            return None
        jvm.java.lang.System.nanoTime()
    except (Py4JNetworkError, ConnectionError) as exc:
        return f"no answer: {type(exc).__name__}"
    except Exception:   # answered, with an error: it lives
        return None
    return None


def jvm_died(spark: SparkSession | None, failure: BaseException | None = None) -> SparkJvmDiedError | None:
    """The error a build fails with when its Spark JVM is dead (instead of the connection error pyspark
    raises), None while it lives. A `failure` that is a lost connection gives the JVM a few seconds to be seen
    ended."""
    how = None if spark is None else jvm_exit(spark, _JVM_EXIT_WAIT_S if _connection_lost(failure) else 0.0)
    if how is None:
        return None
    return SparkJvmDiedError(f"the build's Spark JVM died ({how}) while the build ran: killed, out of memory, or "
                             "crashed; the files its tasks wrote are removed, and the build runner's log has the "
                             "JVM's last words")


_JVM_EXIT_WAIT_S = 5.0


def _connection_lost(failure: BaseException | None) -> bool:
    """Whether `failure`, or an error it came from, is a lost connection (to the JVM)."""
    seen = 0
    while failure is not None and seen < 16:
        if isinstance(failure, ConnectionError) or type(failure).__name__ == "Py4JNetworkError":
            return True
        failure = failure.__cause__ or failure.__context__
        seen += 1
    return False


_CRASHED = "Python worker exited unexpectedly (crashed)"
_ERROR_LINE = re.compile(r"^\s*([\w.]+(?:Error|Exception|Failure)): (.*)$", re.M)


def worker_error(exc: Exception) -> BgixError:
    """Turn Spark's wrapped Python worker exception back into a typed, readable BgixError."""
    text = str(exc)
    if _CRASHED in text:   # no Python error line: the worker process died (OOM killer, a signal, a native crash)
        return WorkerFailedError(f"Spark task failed: a {_CRASHED} — its process died (out of memory, killed by "
                                 "a signal, or a crash in native code); the runner's log has Spark's report")
    found = _ERROR_LINE.findall(text)
    worker = [(name, msg) for name, msg in found if not name.startswith(("org.", "java.", "py4j", "pyspark"))]
    name, msg = (worker or found or [("", text.strip().splitlines()[0] if text.strip() else repr(exc))])[-1]
    if name.endswith("RowIdError"):
        return RowIdError(msg)
    return WorkerFailedError(f"Spark task failed: {name + ': ' if name else ''}{msg}")


def _poll(sc: Any, group: str, acc: Any, progress: Progress, stop: threading.Event,
          reports: TaskReports | None = None) -> None:
    """Driver-side progress: finished tasks / all tasks of the job group, the row accumulator (tasks that ended)
    and the running tasks' reports."""
    tracker = sc.statusTracker()
    next_read = 0.0
    while not stop.wait(0.5):
        if progress.check is not None:
            try:
                progress.check()
            except Exception:   # a cancel that came before the job group's jobs were submitted, too
                sc.cancelJobGroup(group)
        try:
            done = total = 0
            for job_id in tracker.getJobIdsForGroup(group):
                info = tracker.getJobInfo(job_id)
                for stage_id in (info.stageIds if info else []):
                    s = tracker.getStageInfo(stage_id)
                    if s is not None:
                        done += s.numCompletedTasks
                        total += s.numTasks
            if total:
                progress.task_fraction = done / total
            totals = dict(acc.value)
            if reports is not None and progress.catalog is not None and time.monotonic() >= next_read:
                counts, files = reports.read(progress.catalog.storage)
                # a read costs a GET per task on an object store: many tasks, fewer reads
                next_read = time.monotonic() + 0.05 * files
                for unit, rows in counts.items():   # a unit's count never goes backwards (set_range_totals)
                    totals[unit] = max(totals.get(unit, 0), rows)
            progress.set_range_totals(totals)
        except Exception:  # progress is best effort; the build itself reports real failures
            continue
