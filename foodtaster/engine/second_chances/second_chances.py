"""What the job adds to its pass for second chances: reference checks and conversation holds.

Read once at start (`prepare`: the referenced keys and the open groups, both small and
broadcast), joined in the pass (`mark`, `hold`), explained with the quarantine's other
reasons (`checks`), counted from what was written (`count`), and recorded at the end,
after the data (`record`: the batch's poison messages open or extend their groups).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, timedelta
from typing import Any

from pyspark.sql import Column, DataFrame, SparkSession

from foodtaster import contract_references
from foodtaster.contract.model import Key
from foodtaster.engine.judging import reference_checks
from foodtaster.engine.judging.judging import unique_key
from foodtaster.engine.judging.reasons import Check
from foodtaster.engine.judging.suspects import Watch
from foodtaster.engine.second_chances import retry
from foodtaster.engine.split import group_hold
from foodtaster.lineage import LINEAGE, lineage_key
from foodtaster.logs import BatchLogger
from foodtaster.registry import DatasetConfig, RegistryError
from foodtaster.state.dispositions import Dispositions, record_status
from foodtaster.state.groups import GroupLog, Poison
from foodtaster.state.lake import Lake


@dataclass
class Extras:
    config: DatasetConfig
    keyed: list[tuple[contract_references.Reference, DataFrame | None]]
    opened: list[Poison]  # the open groups' poison messages, as read at start
    key: Key | None = None  # the contract's unique key: it names a poison message (a conversation's)
    unchecked: list[str] = field(default_factory=list)  # references not checked (nothing published)
    poison: list[Poison] = field(default_factory=list)
    retrying: list[tuple[str, str]] = field(default_factory=list)  # (lineage key, next attempt), for the log
    # `_others` by batch: the watch and the hold read the same small frame
    _open_frames: dict[str, DataFrame | None] = field(default_factory=dict, init=False, repr=False)

    @property
    def grouped(self) -> bool:
        """The dataset's messages are conversations (`group_by`): a poison message holds its group."""
        return self.config.conversation is not None

    @property
    def retryable(self) -> dict[str, contract_references.RetryPolicy]:
        return contract_references.retryable([ref for ref, _ in self.keyed])

    def mark(self, rows: DataFrame) -> DataFrame:
        """The reference checks, in the pass: one broadcast join a reference."""
        return reference_checks.mark_references(rows, self.keyed) if self.keyed else rows

    def hold(self, suspects: DataFrame, batch_id: str) -> DataFrame:
        """Hold the later messages of groups with a poison message (this batch's or open ones),
        among `suspects`: every failed row of the batch and every row of a group that may be
        held (`group_watch`), so a window by group over them finds each group's earliest poison."""
        conversation = self.config.conversation
        if conversation is None:
            return suspects
        others = self._others(suspects.sparkSession, batch_id)
        return group_hold.mark_held(suspects, others, conversation.group_by, conversation.order_by, batch_id,
                                    key=self._key())

    def group_hash(self) -> Column | None:
        """A row's group hash (`group_hold.group_hash`), or None without `group_by`."""
        conversation = self.config.conversation
        return None if conversation is None else group_hold.group_hash(conversation.group_by)

    def group_watch(self, row_hash: Column, failed_groups: DataFrame, batch_id: str) -> Watch:
        """What `suspects` watches for the group hold (a `grouped` dataset's): the row's
        `group_hash` (`row_hash`) and the hashes of every group that may hold a row of the
        batch, its failed rows' (`failed_groups`: `group_hold.GROUP_HASH`) and the open groups'."""
        others = self._others(failed_groups.sparkSession, batch_id)
        return row_hash, group_hold.poisoned_groups(failed_groups, others)

    def _key(self) -> Key:
        assert self.key is not None, "prepare checks that a conversation's contract has a unique key"
        return self.key

    def _others(self, spark: SparkSession, batch_id: str) -> DataFrame | None:
        """The open groups' poison from other batches: a rerun judges the batch's own messages
        again, so its earlier poison holds nothing now."""
        if batch_id not in self._open_frames:
            self._open_frames[batch_id] = group_hold.open_frame(
                spark, [p for p in self.opened if p.batch_id != batch_id])
        return self._open_frames[batch_id]

    def checks(self) -> list[Check]:
        found = reference_checks.reference_checks([ref for ref, _ in self.keyed])
        conversation = self.config.conversation
        if conversation is not None:
            found.append(group_hold.group_check(conversation.group_by))
        return found

    def count(self, quarantine: DataFrame, batch_id: str, rows_by_rule: dict[str, int]) -> dict[str, Any]:
        """From the written quarantine and how many of its rows each rule caught: how many rows
        are retrying, how many held for their group; and the batch's poison messages and
        retrying rows, kept for `record`."""
        counts: dict[str, Any] = {"retrying": 0, "held_for_group": rows_by_rule.get(group_hold.RULE, 0)}
        policies = self.retryable
        if policies:
            retrying = quarantine.where(retry.only_retryable(policies))
            first = next(iter(policies.values())).wait_s(0)  # their status, with the first attempt's time
            self.retrying = [
                (lineage_key(r["_batch_id"], r["_source_file"], r["_line_number"]),
                 (r["_ingested_at"].astimezone(UTC) + timedelta(seconds=first)).isoformat())
                for r in retrying.select(*LINEAGE).collect()
            ]
            counts["retrying"] = len(self.retrying)
        conversation = self.config.conversation
        if conversation is not None:
            self.poison = [
                Poison(lineage_key(r["_batch_id"], r["_source_file"], r["_line_number"]), r["group"],
                       r["order"], r["message_id"], batch_id)
                for r in group_hold.poison_rows(quarantine, conversation.group_by,
                                                conversation.order_by, key=self._key()).collect()
            ]
        if self.unchecked:
            counts["references_unchecked"] = self.unchecked
        return counts

    def record(self, lake: Lake, batch_id: str) -> int | None:
        """Write the batch's retrying rows to the dispositions log and its poison messages to the
        groups log; returns how many groups are open."""
        # A rerun of the batch finds its rows already in the log (attempts made, published later):
        # the log is the one attempt counter, so they keep what they have.
        if self.retrying:  # the fold reads the whole log: only when there is something to record
            known = {lineage_key(*row) for row, _status in Dispositions(lake, self.config.name).state()}
            fresh = [(key, at) for key, at in self.retrying if key not in known]
        else:
            fresh = []
        record_status(lake, self.config.name, "retrying", [k for k, _ in fresh], by="job",
                      run=batch_id, why="failed retryable rules only", attempts=0,
                      next_at=[at for _, at in fresh])
        if not self.grouped:
            return None
        log = GroupLog(lake, self.config.name)
        # A rerun finds its poison open already: written again, it would only grow the log that
        # every later batch folds (a 2M batch's event names about 20,000 messages).
        already_open = {p.lineage for p in self.opened}
        log.poisoned(batch_id, [p for p in self.poison if p.lineage not in already_open])
        judged_again = {p.lineage for p in self.opened if p.batch_id == batch_id}
        log.release(judged_again - {p.lineage for p in self.poison},
                    why=f"the rerun of batch {batch_id} no longer quarantines it", by="job")
        return len(log.open_groups())


def prepare(spark: SparkSession, lake: Lake, config: DatasetConfig, log: BatchLogger) -> Extras:
    """Read the state the pass joins, once: referenced keys and open groups."""
    keyed, unchecked = [], []
    for ref in contract_references.read_references(config.load_contract()):
        keys = reference_checks.reference_keys(spark, lake, ref)
        if keys is None:
            unchecked.append(ref.rule)
            log.event("reference_unchecked", rule=ref.rule,
                      why=f"{ref.dataset} has published nothing yet")
        keyed.append((ref, keys))
    opened: list[Poison] = []
    key = None
    conversation = config.conversation
    if conversation is not None:
        contract = config.read_contract()
        paths = {f.name for f in contract.fields if not (f.is_object or f.is_array)}
        missing = [name for name in (*conversation.group_by, conversation.order_by) if name not in paths]
        key = unique_key(contract)
        if missing or key is None:
            raise RegistryError(
                f"{config.name}: group_by/order_by {missing} are not fields of {config.contract}"
                if missing else f"{config.name}: a conversation needs a unique key (its message id) "
                                f"to name its poison, {config.contract} has none")
        opened = GroupLog(lake, config.name).open_poison()
    return Extras(config, keyed, opened, key=key, unchecked=unchecked)
