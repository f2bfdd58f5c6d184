"""Build the SparkSession the same way under spark-submit, plain python and tests."""

from __future__ import annotations

import os
import shutil
import sys
from contextlib import ExitStack
from pathlib import Path

from pyspark import SparkConf, StorageLevel
from pyspark.sql import DataFrame, SparkSession

# The validation pass compiles to one large generated method a stage; HotSpot leaves methods
# over 8000 bytes of bytecode to the interpreter unless told otherwise, which the pass cannot
# afford (docs/decisions/010-engine-jvm-and-spark-settings.md).
JVM_OPTIONS = "-XX:-DontCompileHugeMethods"
# A broadcast join's hash table on a string key takes at least one memory page, and Spark's
# default page (64 MiB with a 6 GiB driver on two cores) made each small table the job
# broadcast hold 64 MiB of heap until released, most of the driver's live heap in local mode
# (docs/decisions/013-a-flat-driver-heap.md). A page of 4 MiB still holds any row; larger
# buffers take more pages.
PAGE_SIZE = "4m"
JVM_CONF = {
    "spark.driver.extraJavaOptions": JVM_OPTIONS, "spark.executor.extraJavaOptions": JVM_OPTIONS,
    "spark.buffer.pageSize": PAGE_SIZE,
}
# PySpark sends the JVM the Python call site of every Column function it runs, for the "DataFrame
# query context" of Spark's error messages: about seven Py4J calls an operation, most of those that
# build a contract's checks, paid in every fresh JVM
# (docs/decisions/010-engine-jvm-and-spark-settings.md). Off unless a --conf turns it on.
PYTHON_CALL_SITES = "spark.python.sql.dataFrameDebugging.enabled"
# The strict line parser (jvm/), built by `make jar`; a deployment may keep it elsewhere.
DEFAULT_JAR = Path(__file__).resolve().parents[2] / "build" / "foodtaster-jvm.jar"
# A class-data-sharing archive of the classes the job loads (`make cds`, scripts/cds_archive.py),
# beside the jar: a driver that maps it starts with Spark's classes parsed and verified, a fixed
# cost every fresh job pays otherwise, at any size
# (docs/decisions/009-short-jvms-class-data-sharing-and-c1.md). Used only where it was built: a
# stale one (other jars, another JDK) the JVM skips with one warning line.
CDS_ARCHIVE_ENV = "FOODTASTER_CDS_ARCHIVE"
DEFAULT_CDS_ARCHIVE = DEFAULT_JAR.with_name("spark-cds.jsa")


def parser_jar() -> str:
    """The built parser jar's path; a clear error when it was not built."""
    jar = Path(os.environ.get("FOODTASTER_JVM_JAR") or DEFAULT_JAR)
    if not jar.is_file():
        raise RuntimeError(
            f"the strict line parser jar {jar} was not built: run `make jar` (needs a JDK 17+ with "
            "javac: apt-get install openjdk-17-jdk-headless), or set FOODTASTER_JVM_JAR to a built one"
        )
    return str(jar)


def class_data_archive() -> Path | None:
    """The driver's class-data-sharing archive (FOODTASTER_CDS_ARCHIVE, else the one `make cds`
    builds) when that file exists."""
    archive = Path(os.environ.get(CDS_ARCHIVE_ENV) or DEFAULT_CDS_ARCHIVE)
    return archive if archive.is_file() else None


def with_cds(jvm_options: str, archive: Path | None) -> str:
    """`jvm_options`, plus the class-data-sharing archive when `archive` is a file."""
    if archive is None or not archive.is_file():
        return jvm_options
    return f"{jvm_options} -XX:SharedArchiveFile={archive}".lstrip()


def engine_conf() -> dict[str, str]:
    """JVM_CONF, with the driver mapping the class-data-sharing archive when one was built; the
    executors of a cluster may run where it is not."""
    driver = "spark.driver.extraJavaOptions"
    return {**JVM_CONF, driver: with_cds(JVM_CONF[driver], class_data_archive())}


def build_session(
    app_name: str, master: str | None = None, test_mode: bool = False,
    jvm_options: str | None = None,
) -> SparkSession:
    """A session on `master`, else spark-submit's master, else local[*].

    PYSPARK_PYTHON defaults to this interpreter so Python workers see pandera
    and the contracts; times are UTC so `created_at` means the same everywhere.
    `jvm_options`: the driver's and executors' JVM options when this process starts Spark
    (default: `engine_conf`'s).
    """
    if not shutil.which("java") and not os.environ.get("JAVA_HOME"):
        raise RuntimeError(
            "Java 17+ is required by Spark 4 and was not found: "
            "install it (apt-get install openjdk-17-jre-headless) or set JAVA_HOME"
        )
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    jar = parser_jar()
    builder = SparkSession.builder.appName(app_name)
    # Under spark-submit the JVM (and its --master, --conf) exists before Python does;
    # Python's SparkConf sees those settings only through that gateway.
    submitted = bool(os.environ.get("PYSPARK_GATEWAY_PORT"))
    given = SparkConf()  # what spark-submit or the environment set already: it wins over defaults
    if master:
        builder = builder.master(master)
    elif not (submitted or given.contains("spark.master")):
        builder = builder.master("local[*]")
    builder = (
        builder.config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.adaptive.enabled", "true")
        .config("spark.sql.sources.partitionOverwriteMode", "static")
        .config("spark.ui.showConsoleProgress", "false")
    )
    if not given.contains(PYTHON_CALL_SITES):
        builder = builder.config(PYTHON_CALL_SITES, "false")
    if not submitted:  # a --conf given to spark-submit wins; spark-submit is given --jars
        builder = builder.config("spark.sql.shuffle.partitions", "8")
        if not given.contains("spark.jars"):
            builder = builder.config("spark.jars", jar)
        conf = engine_conf()
        if jvm_options is not None:  # the caller's options replace the engine's, archive and all
            conf.update({key: jvm_options for key in conf if key.endswith(".extraJavaOptions")})
        for key, value in conf.items():
            if not given.contains(key):
                builder = builder.config(key, value)
    if test_mode:
        builder = builder.config("spark.ui.enabled", "false").config(
            "spark.sql.shuffle.partitions", "2"
        )
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("WARN")
    jars = session.conf.get("spark.jars", "") or ""  # typed Optional: a None default gives None
    if submitted and Path(jar).name not in jars:
        # spark-submit was not given --jars: add the parser to this session (driver and executors)
        session.sql(f"ADD JAR '{jar}'")
    return session


def keep(rows: DataFrame, held: ExitStack) -> DataFrame:
    """Materialise rows once, so each later action reads them instead of what they came from.

    A local checkpoint on disk keeps the rows as they are, serialized: cheaper to build than
    the columnar cache of `persist`, and it leaves the driver's heap flat in local mode
    (docs/decisions/003-the-pass-kept-on-disk.md). `release` frees it when `held` closes.
    """
    kept = rows.localCheckpoint(eager=True, storageLevel=StorageLevel.DISK_ONLY)
    held.callback(release, kept)
    return kept


def release(kept: DataFrame) -> None:
    """Free the blocks of a `keep` now, not when the JVM's garbage collector finds them.

    PySpark has no public unpersist for a checkpointed DataFrame, so this goes through its
    plan to the RDD. Spark then logs, as expected, a WARN that the RDD "was locally
    checkpointed ... and cannot be recomputed after unpersisting": nothing reads it after this.
    """
    kept._jdf.queryExecution().logical().rdd().unpersist(False)

