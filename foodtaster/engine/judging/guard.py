"""A Python check run where it cannot take the job down: in a child process of the Spark
Python worker, with a time and a memory budget.

A check that raises fails its task with a traceback, which `foodtaster.engine.batch.crash` reads
as a data crash. A check that kills its process instead (`os._exit`, a signal such as
SIGSEGV, `sys.exit()`, the memory it asks for) would take the Spark Python worker with it,
and Spark says only "Python worker exited unexpectedly", the words of a lost machine; a
check that never returns would hold the batch forever. `guarded` runs a call of the check in
a forked child (the worker's memory is shared copy-on-write, nothing is sent to it) and
turns each such end into an exception of its own in the worker, which fails the task with
a traceback as a raise does: `CheckDied`, `CheckTimedOut`, `CheckOutOfMemory`, whose
message is the `why` a poison-list entry gets. A check that raises is raised again as it
is. No Spark here: plain Python in the worker.
"""

from __future__ import annotations

import ctypes
import os
import pickle
import resource
import select
import signal
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from foodtaster.registry import DEFAULT_PYTHON_CHECK_MEMORY_MB, DEFAULT_PYTHON_CHECK_TIMEOUT_S, DatasetConfig

T = TypeVar("T")
_TICK, _RESULT = b".", b"="  # the child's words on its pipe: a message begins, the result follows


@dataclass(frozen=True)
class Budget:
    """What one message may cost a Python check (`DatasetConfig.python_check_timeout_s`,
    `python_check_memory_mb`): seconds of wall time, and memory beyond what the worker holds."""

    timeout_s: float = DEFAULT_PYTHON_CHECK_TIMEOUT_S
    memory_mb: int = DEFAULT_PYTHON_CHECK_MEMORY_MB

    @classmethod
    def of(cls, config: DatasetConfig) -> Budget:
        return cls(config.python_check_timeout_s, config.python_check_memory_mb)


DEFAULT_BUDGET = Budget()


class CheckEnded(Exception):
    """A check's process ended without an answer; the message says how (`why`)."""


class CheckDied(CheckEnded):
    """The check's process died: a signal, an exit, `sys.exit()`."""


class CheckTimedOut(CheckEnded):
    """The check ran past its time budget on a message and was killed."""


class CheckOutOfMemory(CheckEnded):
    """The check asked for more memory than its budget."""


# What crash isolation reads in a traceback: these classes' messages are the whole `why`.
ENDINGS = frozenset(f"{__name__}.{cls.__name__}" for cls in (CheckDied, CheckTimedOut, CheckOutOfMemory))


def guarded(run: Callable[[Callable[[], None]], T], budget: Budget, what: str) -> T:
    """`run(tick)` in a child process, its result returned here; `run` calls `tick()` as it
    starts each message when it judges them one at a time, and each gets `budget.timeout_s`
    (else the whole call does). Raises what `run` raised, or a `CheckEnded` saying how the
    child ended: it died, ran past its budget (killed), or ran out of its memory."""
    read_end, write_end = os.pipe()
    parent = os.getpid()
    with warnings.catch_warnings():  # a worker's helper threads never run the check's code
        warnings.simplefilter("ignore", DeprecationWarning)
        pid = os.fork()
    if pid == 0:  # pragma: no cover - the child, which never returns
        os.close(read_end)
        _die_with(parent)
        _child(run, budget, write_end)
    os.close(write_end)
    try:
        answer = _read(read_end, budget.timeout_s)
    finally:
        os.close(read_end)
    if answer is None:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        raise CheckTimedOut(f"timeout: {what} ran past {budget.timeout_s:g} s on one message")
    _, status = os.waitpid(pid, 0)
    try:
        kind, value = pickle.loads(answer)
    except Exception:  # noqa: BLE001 - no answer, or half of one: the child died
        raise CheckDied(f"worker died: {_ending(status)}") from None
    if kind == "ok":
        return value
    if kind == "exit":
        raise CheckDied(f"worker died: exit {value} (sys.exit)")
    if kind == "memory":
        raise CheckOutOfMemory(f"killed: out of memory ({what} asked for more than {budget.memory_mb} MB)")
    raise value


def _child(run: Callable[[Callable[[], None]], object], budget: Budget,
           pipe: int) -> None:  # pragma: no cover - the child
    def tick() -> None:
        os.write(pipe, _TICK)

    try:
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # a segfault leaves no core of the worker
        _limit_memory(budget.memory_mb)
        outcome: tuple[str, object] = ("ok", run(tick))
    except SystemExit as ended:
        code = ended.code
        outcome = ("exit", 0 if code is None else code if isinstance(code, int) else 1)
    except MemoryError:
        outcome = ("memory", None)
    except BaseException as err:  # noqa: BLE001 - raised again in the worker, as it is
        outcome = ("raised", err)
    try:
        payload = pickle.dumps(outcome)
        pickle.loads(payload)  # an exception that cannot be rebuilt is sent by its words
    except Exception:  # noqa: BLE001
        raised = outcome[1]
        named = f"{type(raised).__module__}.{type(raised).__qualname__}: {raised}"
        payload = pickle.dumps(("raised", RuntimeError(named)))
    with os.fdopen(pipe, "wb") as writer:
        writer.write(_RESULT + payload)
    os._exit(0)


_PR_SET_PDEATHSIG = 1  # prctl(2)


def _die_with(parent: int) -> None:  # pragma: no cover - in the child
    """Be killed when the worker is (Spark kills the worker of a cancelled task): a check that
    never returns is never left running with no one to stop it."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):  # not Linux: the deadline alone stops it
        return
    if os.getppid() != parent:  # the worker died before the request was made
        os._exit(1)


def _limit_memory(memory_mb: int) -> None:  # pragma: no cover - in the child
    """Address space: what the worker held when it forked, plus the budget."""
    with open("/proc/self/statm") as statm:
        held = int(statm.read().split()[0]) * resource.getpagesize()
    limit = held + memory_mb * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def _read(pipe: int, timeout_s: float) -> bytes | None:
    """The child's result (empty if it ended without one), or None if it ran past `timeout_s`
    since it began or since its last tick."""
    deadline = time.monotonic() + timeout_s
    chunks: list[bytes] = []
    answered = False
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return None
        ready, _, _ = select.select([pipe], [], [], left)
        if not ready:
            continue
        chunk = os.read(pipe, 1 << 20)
        if not chunk:
            return b"".join(chunks)
        if answered:
            chunks.append(chunk)
            continue
        ticks, mark, rest = chunk.partition(_RESULT)
        if ticks:
            deadline = time.monotonic() + timeout_s
        if mark:
            answered = True
            chunks.append(rest)


def _ending(status: int) -> str:
    """How a child without an answer ended: `signal 11 (SIGSEGV)`, `exit 1`."""
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        try:
            name = signal.Signals(number).name
        except ValueError:
            name = "unknown"
        return f"signal {number} ({name})"
    return f"exit {os.WEXITSTATUS(status)}"
