"""The judgments app's hand-written SQL: the grading API's reads and the queue's claims.

A grade costs two API requests and the ORM's query compilation was most of their CPU
(bench/grading.py), so what those requests run is written out here, with table names from
the models' `_meta` (searchtweak.sql runs them). The statements that write a grade are the
exception: they stay in judgments.grading, the one module that writes grades (a scan in
tests/judgments/test_grading.py holds it to that), built from the names below. Each
statement is tested against the ORM in tests/judgments/test_queries.py.
"""

from collections.abc import Callable
from dataclasses import dataclass

from django.db import connection

from evaluations.models import Evaluation, Keyword, Snapshot
from judgments.models import FeedbackSlot, GoldItem, SlotSkip
from judgments.slot_json import ASSIGNED_SLOT_FIELDS
from searchtweak import sql
from searchtweak.models import Membership, User

_q = connection.ops.quote_name
SLOTS = _q(FeedbackSlot._meta.db_table)
SKIPS = _q(SlotSkip._meta.db_table)
SNAPSHOTS = _q(Snapshot._meta.db_table)
KEYWORDS = _q(Keyword._meta.db_table)
EVALUATIONS = _q(Evaluation._meta.db_table)
MEMBERSHIPS = _q(Membership._meta.db_table)
USERS = _q(User._meta.db_table)
GOLD_ITEMS = _q(GoldItem._meta.db_table)

# --- the grading target: an evaluation or snapshot with the caller's role in its team ---

# `gold`: the evaluation slips gold probes in (a rate above 0 and gold items of its scale
# in the team; judgments.gold decides which are usable), read here at no statement more.
_TARGET_COLUMNS = ('e."id", e."team_id", e."status", e."scale", e."tags",'
                   ' e."shuffle_results", e."grading_order", e."strategy", m."role",'
                   f' (e."gold_rate" > 0 AND EXISTS (SELECT 1 FROM {GOLD_ITEMS} g'
                   ' WHERE g."team_id" = e."team_id" AND g."scale" = e."scale")) AS "gold"')
_MEMBER_JOIN = f'LEFT JOIN {MEMBERSHIPS} m ON m."team_id" = e."team_id" AND m."user_id" = %s'


def evaluation_target_row(*, user_id: int, evaluation_id: int) -> dict | None:
    """{id, team_id, status, scale, tags (JSON as the driver gives it), shuffle_results,
    grading_order, strategy, role (None: not a member), gold} of the evaluation, or None
    when there is none."""
    return sql.fetch_one(
        f'SELECT {_TARGET_COLUMNS} FROM {EVALUATIONS} e {_MEMBER_JOIN} WHERE e."id" = %s',
        [user_id, evaluation_id])


def snapshot_target_row(*, user_id: int, snapshot_id: int) -> dict | None:
    """evaluation_target_row of the snapshot's evaluation."""
    return sql.fetch_one(
        f'SELECT {_TARGET_COLUMNS} FROM {SNAPSHOTS} s'
        f' JOIN {KEYWORDS} k ON k."id" = s."keyword_id"'
        f' JOIN {EVALUATIONS} e ON e."id" = k."evaluation_id"'
        f' {_MEMBER_JOIN} WHERE s."id" = %s', [user_id, snapshot_id])


# --- the slot as the grading API answers it ---

# Columns and joins from a slot row named f: the slot, its grader, result, keyword and
# evaluation (whether it shuffles: then the engine's position is not shown),
# each column named after its field of the slot JSON (judgments.slot_json). judgments.queue
# reads it from a claim's RETURNING too.
ASSIGNED_SLOT_SELECT = (
    ", ".join(f"{field.column} AS {_q(field.name)}" for field in ASSIGNED_SLOT_FIELDS),
    f'JOIN {SNAPSHOTS} s ON s."id" = f."snapshot_id"'
    f' JOIN {KEYWORDS} k ON k."id" = f."keyword_id"'
    f' JOIN {EVALUATIONS} e ON e."id" = f."evaluation_id"'
    f' LEFT JOIN {USERS} u ON u."id" = f."user_id"',
)


def assigned_slot_row(*, slot_id: int) -> dict | None:
    columns, joins = ASSIGNED_SLOT_SELECT
    return sql.fetch_one(f'SELECT {columns} FROM {SLOTS} f {joins} WHERE f."id" = %s',
                         [slot_id])


def own_slot_row_for_update(*, snapshot_id: int, user_id: int) -> dict | None:
    """{id, grade, keyword_id} of the caller's slot on the snapshot, locked (PostgreSQL)."""
    return sql.fetch_one(
        f'SELECT "id", "grade", "keyword_id" FROM {SLOTS}'
        f' WHERE "snapshot_id" = %s AND "user_id" = %s{sql.for_update()}',
        [snapshot_id, user_id])


# --- claims (judgments.queue) ---

# One statement claims a slot: the first free one in hand-out order (slot_queue_idx), that
# the grader holds no other slot of the snapshot of. FOR UPDATE SKIP LOCKED (PostgreSQL)
# makes parallel claims pass over each other's rows instead of waiting or colliding.
CLAIM_SQL = f"""
UPDATE {SLOTS}
SET "user_id" = %s, "assigned_at" = %s, "lease_expires_at" = %s, "graded_at" = NULL,
    "unsure" = %s, "note" = '', "graded_by_id" = NULL
WHERE {{guard}}"id" = {{pick}}
RETURNING {{returning}}
"""
CLAIM_PICK = f"""(
    SELECT s."id" FROM {SLOTS} s{{join}}
    WHERE {{where}} AND {{ungraded}} AND (s."user_id" IS NULL OR s."lease_expires_at" < %s)
      AND NOT EXISTS (SELECT 1 FROM {SLOTS} o
                      WHERE o."snapshot_id" = s."snapshot_id" AND o."user_id" = %s
                        AND o."id" <> s."id"{{probe}})
      {{skips}}{{candidates}}
    ORDER BY {{order}} LIMIT 1{{lock}})"""
# The pick's "not already held by this grader, not skipped" checks end in PROBE, so each is
# one index look-up per slot the pick passes: LIMIT 1 OFFSET 0 (SQLite takes no OFFSET
# alone) keeps PostgreSQL from turning NOT EXISTS into an anti join, which it did guessing
# the grader holds about no slots, and which then scanned all the grader's slots on every
# claim: each grade they gave made their next claim slower.
PROBE = " LIMIT 1 OFFSET 0"
# An evaluation's pick walks its queue: slot_queue_idx, whose rows are the ungraded slots.
UNGRADED = 's."grade" IS NULL'
# A pick among one snapshot's few slots must take them by snapshot (slot_index_unique).
# Written as UNGRADED, the test matched slot_queue_idx's condition, and under statistics
# from before a large fetch PostgreSQL ANDed that whole index into every judge's pick.
# "+ 0" keeps the meaning and hides the index.
UNGRADED_BY_SNAPSHOT = '(s."grade" + 0) IS NULL'
NOT_SKIPPED = f"""AND NOT EXISTS (SELECT 1 FROM {SKIPS} k
                      WHERE k."snapshot_id" = s."snapshot_id" AND k."user_id" = %s{{probe}})"""
# The first slot the grader holds ungraded among some evaluations, its lease renewed.
RENEW_HELD_SQL = f"""
UPDATE {SLOTS} SET "lease_expires_at" = %s WHERE {{guard}}"id" = (
    SELECT "id" FROM {SLOTS}
    WHERE "user_id" = %s AND "evaluation_id" IN ({{marks}}) AND "grade" IS NULL
      AND "lease_expires_at" >= %s{{besides}}
    ORDER BY "assigned_at", "id" LIMIT 1)
RETURNING {{returning}}
"""
QUEUE_ORDER = 's."keyword_position", s."position", s."index"'


# --- shuffled evaluations (Evaluation.shuffle_results): each grader's own order ---

# A keyword's results go to a grader in the order of this key, a pseudo-random function of
# (evaluation, keyword, grader, position): the same on every claim and reload for that
# grader, another for the next one. Integer arithmetic that SQLite and PostgreSQL compute
# alike (every operand below 2**31, every product below 2**63), so the claim's ORDER BY and
# the shown position written with a grade agree; shuffle_key is the same in Python.
_SHUFFLE_MOD = 2147483647  # 2**31 - 1, a prime
_SHUFFLE_A = (1000003, 7919, 2654435, 40503, 0)  # evaluation, keyword, grader, position, +
_SHUFFLE_B = (69069, 1103515, 48271, 16807, 12345)


def shuffle_key(*, evaluation_id: int, keyword_id: int, user_id: int, position: int) -> int:
    """Where a result sorts in a grader's shuffled order of its keyword (ties: position)."""
    values = [evaluation_id % _SHUFFLE_MOD, keyword_id % _SHUFFLE_MOD,
              user_id % _SHUFFLE_MOD, position]

    def linear(factors: tuple[int, ...]) -> int:
        return (sum(f * v for f, v in zip(factors, values, strict=False)) + factors[-1]) \
            % _SHUFFLE_MOD

    return linear(_SHUFFLE_A) * linear(_SHUFFLE_B) % _SHUFFLE_MOD


def shuffle_key_sql(*, evaluation: str, keyword: str, user: str, position: str) -> str:
    """shuffle_key over SQL expressions (columns or %s)."""
    # %% is SQL's modulo once the driver has put the parameters in.
    values = [f"(CAST({evaluation} AS BIGINT) %% {_SHUFFLE_MOD})",
              f"(CAST({keyword} AS BIGINT) %% {_SHUFFLE_MOD})",
              f"(CAST({user} AS BIGINT) %% {_SHUFFLE_MOD})", f"CAST({position} AS BIGINT)"]

    def linear(factors: tuple[int, ...]) -> str:
        terms = " + ".join(f"{f} * {v}" for f, v in zip(factors, values, strict=False))
        return f"(({terms} + {factors[-1]}) %% {_SHUFFLE_MOD})"

    return f"({linear(_SHUFFLE_A)} * {linear(_SHUFFLE_B)} %% {_SHUFFLE_MOD})"


# A shuffled evaluation's hand-out order: keywords in order, each keyword's results in the
# grader's own order (one %s: the grader's id, twice). The index still finds the keyword;
# only that keyword's few slots are sorted.
SHUFFLED_QUEUE_ORDER = (
    's."keyword_position", '
    + shuffle_key_sql(evaluation='s."evaluation_id"', keyword='s."keyword_id"', user="%s",
                      position='s."position"')
    + ', s."position", s."index"')


# --- decisive evaluations (Evaluation.grading_order "decisive"): grade what decides first ---

# The ORDER BY key that puts first the slots whose grade can narrow the widest bounds most:
# `build(evaluation=..., keyword=..., snapshot=..., position=..., constants=...)` (SQL
# expressions, the evaluation a %s; `constants` an alias) returns (constants, candidates,
# key): a one-row SELECT of what every slot's key reads alike (the claim computes it once
# and names it `constants`), a query of the ids of the evaluation's keywords worth looking
# at (a few, the widest) and an expression, larger for the slot to hand out first; no
# parameter but the evaluation's (as many times as `evaluation` appears in each). The
# bounds are the metrics app's table, and metrics sits above judgments: it registers the
# builder at start-up (as judgments.grading.register_version_bump_cte). Without it,
# decisive evaluations hand out in position order.
_decisive_key: Callable[..., tuple[str, str, str]] | None = None
# The one-row constants of a decisive pick, as the key reads them.
DECISIVE_CONSTANTS = "d"
# The candidate keywords' alias, on PostgreSQL (decisive_queue_order).
DECISIVE_CANDIDATES = "dc"


def register_decisive_key(build: Callable[..., tuple[str, str, str]] | None) -> None:
    global _decisive_key
    _decisive_key = build


@dataclass(frozen=True)
class DecisiveOrder:
    """A decisive claim's first pick: among the free slots of the candidate keywords (the
    few widest, so the sort stays small: a condition in `candidates`, or on PostgreSQL
    rows in `join`), the largest key first, then position order; its parameters. When
    that finds nothing (every candidate's slots held, skipped or graded), the claim takes
    the first free slot in position order.

    `join` puts the key's constants beside the slots as one row, computed once: the
    planner neither copies their subqueries into every use (each copy planned anew on
    each claim) nor re-plans them per slot."""

    join: str
    join_params: list
    candidates: str
    candidate_params: list
    order: str
    order_params: list


def decisive_queue_order(*, evaluation_id: int) -> DecisiveOrder | None:
    """A decisive evaluation's order from the registered builder; None without one
    (position order)."""
    if _decisive_key is None:
        return None
    constants, candidates, key = _decisive_key(
        evaluation="%s", keyword='s."keyword_id"', snapshot='s."snapshot_id"',
        position='s."position"', constants=DECISIVE_CONSTANTS)
    join = f"\n    CROSS JOIN ({constants} LIMIT 1 OFFSET 0) {DECISIVE_CONSTANTS}"
    join_params = [evaluation_id] * constants.count("%s")
    order = f"{key} DESC, {QUEUE_ORDER}"
    order_params = [evaluation_id] * key.count("%s")
    if sql.is_postgresql():
        # The candidates as rows joined by keyword: an array computed once whose rows the
        # planner guesses few, so it looks each keyword's slots up (slot_keyword_idx). As a
        # filter (keyword_id = ANY(...)) it also ANDed in a bitmap of the whole evaluation's
        # ungraded slots (slot_eval_grade_idx), most of the pick's time.
        join += (f'\n    JOIN unnest(ARRAY({candidates})) {DECISIVE_CANDIDATES}("keyword_id")'
                 f' ON {DECISIVE_CANDIDATES}."keyword_id" = s."keyword_id"')
        join_params += [evaluation_id] * candidates.count("%s")
        return DecisiveOrder(join=join, join_params=join_params, candidates="",
                             candidate_params=[], order=order, order_params=order_params)
    return DecisiveOrder(
        join=join, join_params=join_params,
        candidates=f'\n      AND s."keyword_id" IN ({candidates})',
        candidate_params=[evaluation_id] * candidates.count("%s"),
        order=order, order_params=order_params)


def shown_position_sql(slot: str = "f") -> str:
    """Where the grader of the slot row `slot` (an alias, or the quoted table inside an
    UPDATE of it) was shown its result among the keyword's: its place in their shuffled
    order, or the engine's position. No parameters; judgments.grading writes it with each
    person's grade."""
    def key(alias: str) -> str:
        return shuffle_key_sql(
            evaluation=f'{slot}."evaluation_id"', keyword=f'{alias}."keyword_id"',
            user=f'{slot}."user_id"', position=f'{alias}."position"')

    return f"""(SELECT CASE WHEN e."shuffle_results" THEN 1 + (
        SELECT COUNT(*) FROM {SNAPSHOTS} t WHERE t."keyword_id" = s."keyword_id"
          AND ({key("t")} < {key("s")}
               OR ({key("t")} = {key("s")} AND t."position" < s."position")))
    ELSE s."position" END
    FROM {SNAPSHOTS} s JOIN {EVALUATIONS} e ON e."id" = {slot}."evaluation_id"
    WHERE s."id" = {slot}."snapshot_id")"""


SHOWN_POSITION_SQL = shown_position_sql()
# PostgreSQL renews a held slot or else claims a free one, and reads the slot as the
# grading API answers it, in one statement: each grade's request runs this. The slot's
# own columns come from RETURNING, since the outer SELECT sees the table as it was.
RENEW_OR_CLAIM_CTES = """held AS ({renew}), claimed AS ({claim}),
     f AS (SELECT * FROM held UNION ALL SELECT * FROM claimed)"""
HELD_FIRST = "NOT EXISTS (SELECT 1 FROM held) AND "


def claim_sql(*, user_id: int, now, lease_until, where: str, where_params: list, order: str,
              include_skipped: bool, guard: str = "",
              returning: str = '"id", "keyword_id"',
              order_params: list | None = None,
              decisive: DecisiveOrder | None = None,
              ungraded: str = UNGRADED) -> tuple[str, list]:
    """CLAIM_SQL for the first free slot (alias s) matching `where`, and its parameters;
    `guard` is a condition (ending in AND) that must hold for anything to be claimed. With
    `decisive`, its pick first and `order`'s when that finds nothing: still one statement
    (COALESCE runs the second pick only when the first is null)."""
    pick_params = [*where_params, sql.time_param(now), user_id]
    if not include_skipped:
        pick_params.append(user_id)

    def pick(order: str, candidates: str = "", join: str = "") -> str:
        # With a join, lock only the slot (FOR UPDATE alone would reach into the join too).
        lock = " FOR UPDATE OF s SKIP LOCKED" if join and sql.is_postgresql() \
            else sql.skip_locked()
        return CLAIM_PICK.format(
            where=where, order=order, lock=lock, join=join, probe=PROBE, ungraded=ungraded,
            skips="" if include_skipped else NOT_SKIPPED.format(probe=PROBE),
            candidates=candidates)

    if decisive is None:
        picked, params = pick(order), [*pick_params, *(order_params or [])]
    else:
        first = pick(decisive.order, decisive.candidates, decisive.join)
        picked = f"COALESCE({first}, {pick(order)})"
        params = [*decisive.join_params, *pick_params, *decisive.candidate_params,
                  *decisive.order_params, *pick_params, *(order_params or [])]
    statement = CLAIM_SQL.format(guard=guard, returning=returning, pick=picked)
    return statement, [user_id, sql.time_param(now), sql.time_param(lease_until), False,
                       *params]


def _queue_order(*, user_id: int, evaluation_id: int, shuffled: bool,
                 decisive: bool) -> tuple[str, list, DecisiveOrder | None]:
    if decisive:  # never with shuffled (evaluations.services refuses both)
        return QUEUE_ORDER, [], decisive_queue_order(evaluation_id=evaluation_id)
    if shuffled:
        return SHUFFLED_QUEUE_ORDER, [user_id, user_id], None
    return QUEUE_ORDER, [], None


def queue_claim_sql(*, user_id: int, now, lease_until, evaluation_id: int,
                    include_skipped: bool, besides_snapshot_id: int | None = None,
                    guard: str = "", shuffled: bool = False,
                    decisive: bool = False) -> tuple[str, list]:
    """claim_sql for an evaluation's queue in hand-out order (the grader's own order of
    each keyword's results when `shuffled`, what decides first when `decisive`), returning
    the whole slot."""
    where, where_params = 's."evaluation_id" = %s', [evaluation_id]
    if besides_snapshot_id is not None:
        where, where_params = where + ' AND s."snapshot_id" <> %s', [
            evaluation_id, besides_snapshot_id]
    order, order_params, decisive_order = _queue_order(
        user_id=user_id, evaluation_id=evaluation_id, shuffled=shuffled, decisive=decisive)
    return claim_sql(user_id=user_id, now=now, lease_until=lease_until, where=where,
                     where_params=where_params, order=order, order_params=order_params,
                     include_skipped=include_skipped, guard=guard, returning="*",
                     decisive=decisive_order)


def evaluation_claim_sql(*, user_id: int, now, lease_until, evaluation_id: int,
                         include_skipped: bool, shuffled: bool = False,
                         decisive: bool = False) -> tuple[str, list]:
    """claim_sql for an evaluation's queue in hand-out order: the slot's id and keyword_id."""
    order, order_params, decisive_order = _queue_order(
        user_id=user_id, evaluation_id=evaluation_id, shuffled=shuffled, decisive=decisive)
    return claim_sql(user_id=user_id, now=now, lease_until=lease_until,
                     where='s."evaluation_id" = %s', where_params=[evaluation_id],
                     order=order, order_params=order_params, include_skipped=include_skipped,
                     decisive=decisive_order)


def snapshot_claim_sql(*, user_id: int, now, lease_until, snapshot_id: int
                       ) -> tuple[str, list]:
    """claim_sql for a free slot of one snapshot, skipped or not: id and keyword_id."""
    return claim_sql(user_id=user_id, now=now, lease_until=lease_until,
                     where='s."snapshot_id" = %s', where_params=[snapshot_id],
                     order='s."index"', include_skipped=True, ungraded=UNGRADED_BY_SNAPSHOT)


def snapshots_claim_sql(*, user_id: int, now, lease_until, snapshot_ids: list[int]
                        ) -> tuple[str, list]:
    """snapshot_claim_sql for several snapshots in one statement (a judge's batch): one
    pick per snapshot, each the same locked pick as a person's claim, the UPDATE taking
    the slots they found; returns id and snapshot_id of each claimed slot."""
    pick = CLAIM_PICK.format(where='s."snapshot_id" = %s', order='s."index"',
                             lock=sql.skip_locked(), join="", probe=PROBE, skips="",
                             candidates="", ungraded=UNGRADED_BY_SNAPSHOT)
    statement = CLAIM_SQL.format(guard="", returning='"id", "snapshot_id"', pick="ANY").replace(
        '"id" = ANY', '"id" IN (' + ", ".join([pick] * len(snapshot_ids)) + ")")
    params = [user_id, sql.time_param(now), sql.time_param(lease_until), False]
    for snapshot_id in snapshot_ids:
        params += [snapshot_id, sql.time_param(now), user_id]
    return statement, params


def renew_held_sql(*, user_id: int, evaluation_ids: list[int], now, lease_until,
                   guard: str = "", besides_snapshot_id: int | None = None,
                   returning: str = '"id"') -> tuple[str, list]:
    """RENEW_HELD_SQL for the user's first held slot among the evaluations."""
    statement = RENEW_HELD_SQL.format(
        marks=", ".join(["%s"] * len(evaluation_ids)), guard=guard, returning=returning,
        besides="" if besides_snapshot_id is None else ' AND "snapshot_id" <> %s')
    params = [sql.time_param(lease_until), user_id, *evaluation_ids, sql.time_param(now)]
    return statement, params if besides_snapshot_id is None else [*params, besides_snapshot_id]
