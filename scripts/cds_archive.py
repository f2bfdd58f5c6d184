"""Build the class-data-sharing archive of a local env's Spark JVMs (`make cds`).

    python scripts/cds_archive.py [ARCHIVE]   (default: build/spark-cds.jsa)

A training run: spark-submit of the validate job on a generated 300-message batch, as a local
env's Airflow task submits it, its JVM started with -XX:ArchiveClassesAtExit. The JVM writes the
archive as it exits (once a checkout); later JVMs started with -XX:SharedArchiveFile
(foodtaster_dev.localenv.small_spark_conf) map those classes instead of loading them from
Spark's jars (docs/decisions/009-short-jvms-class-data-sharing-and-c1.md). The archive holds
the class path it was made with: one made under another venv is stale, and the JVM falls back
to loading every class.

Never fails: without an archive everything works, only slower. It says why there is none and
exits 0. The JVM writes to a temporary name that is renamed once a JVM has mapped it: a
truncated archive (a JVM killed while writing it) crashes every JVM that maps it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the engine, when run from a checkout

from foodtaster.registry import PROJECT_ROOT  # noqa: E402
from foodtaster_airflow.spark_submit import job_name, submit_conf  # noqa: E402
from foodtaster_dev import sample  # noqa: E402
from foodtaster_dev.localenv import (  # noqa: E402
    CDS_ARCHIVE,
    LOCAL_SPARK,
    SMALL_JVM_OPTIONS,
    VENV_BIN,
    small_spark_conf,
)

MESSAGES = 300


def training_command(batch: Path, lake: Path, archive: Path) -> list[str]:
    """The validate job's spark-submit as ValidateBatchOperator runs it in a local env (its conf
    from the operator's own submit_conf), its JVMs writing `archive` at exit in place of mapping
    one: a JVM that maps an archive cannot write another."""
    dump = f"{SMALL_JVM_OPTIONS} -XX:ArchiveClassesAtExit={archive}"
    conf = submit_conf(sys.executable, small_spark_conf(None, dump))
    return [str(VENV_BIN / "spark-submit"), "--master", LOCAL_SPARK["host"],
            *(arg for key, value in conf.items() for arg in ("--conf", f"{key}={value}")),
            "--name", job_name("orders"),
            str(PROJECT_ROOT / "spark_jobs" / "validate_batch.py"), "--dataset", "orders",
            "--input", str(batch), "--batch-id", "cds", "--batch-date", "2026-11-20",
            "--lake", str(lake), "--no-publish"]


def build(archive: Path) -> str | None:
    """Make `archive`; None when done, else why not."""
    java = (os.path.join(os.environ["JAVA_HOME"], "bin", "java") if os.environ.get("JAVA_HOME")
            else shutil.which("java"))
    if java is None:
        return "no java on PATH or in JAVA_HOME"
    archive.parent.mkdir(parents=True, exist_ok=True)
    partial = archive.with_name(f"{archive.name}.{os.getpid()}.partial")
    with tempfile.TemporaryDirectory(prefix="foodtaster-cds-") as work:
        batch = Path(work) / "batch"
        kinds = [k for k in sample.POISON_KINDS if k != "oversized"]  # the dataset's limit is 1 MiB
        sample.generate_batch(batch, messages=MESSAGES, seed=3, poison_rate=0.1, kinds=kinds)
        env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}
        try:
            done = subprocess.run(training_command(batch, Path(work) / "lake", partial), cwd=work,
                                  env=env, capture_output=True, text=True, timeout=900)
            if done.returncode != 0:
                return f"the training job exited {done.returncode}: {(done.stderr or done.stdout)[-2000:]}"
            if not partial.is_file():
                return f"the training job's JVM wrote no archive: {done.stdout[-2000:]}"
            mapped = subprocess.run([java, f"-XX:SharedArchiveFile={partial}", "-version"],
                                    capture_output=True, text=True, timeout=120)
            if mapped.returncode != 0:
                return f"a JVM could not map the archive (exit {mapped.returncode}): {mapped.stdout[-2000:]}"
            os.replace(partial, archive)
        except (OSError, subprocess.SubprocessError) as err:
            return f"{type(err).__name__}: {err}"
        finally:
            partial.unlink(missing_ok=True)
    return None


def main(argv: list[str]) -> int:
    archive = Path(argv[0]).resolve() if argv else CDS_ARCHIVE
    why = build(archive)
    if why is None:
        print(f"class-data-sharing archive: {archive} ({archive.stat().st_size >> 20} MiB)")
    else:
        print(f"no class-data-sharing archive, Spark's JVMs start without one: {why}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
