"""The slot as the grading API answers it: one definition of its JSON fields.

Three things read it: the API serializers (judgments.api, for slots loaded as models), the
raw statement that reads an assigned slot on the hot path (judgments.queries, each column
named after its field) and the fast path that turns that row into the same JSON
(judgments.api.assigned_slot_data). A field added here appears in all three;
tests/judgments/test_slot_json.py checks that the two ways give identical JSON.
"""

from dataclasses import dataclass


@dataclass(frozen=True)
class SlotField:
    name: str  # the JSON key, and the raw row's column name
    kind: str  # "int", "str", "bool", "datetime" or "json"
    source: str  # where the serializer reads it on a FeedbackSlot
    column: str  # its SQL over the slot f, its snapshot s, keyword k, grader u, evaluation e
    nullable: bool = False
    help_text: str = ""


# Every slot (the evaluation's snapshot list shows these).
SLOT_FIELDS: tuple[SlotField, ...] = (
    SlotField("id", "int", "id", 'f."id"'),
    SlotField("index", "int", "index", 'f."index"'),
    SlotField("user", "str", "user.username", 'u."username"', nullable=True),
    SlotField("grade", "int", "grade", 'f."grade"', nullable=True),
    SlotField("unsure", "bool", "unsure", 'f."unsure"'),
    SlotField("note", "str", "note", 'f."note"'),
    SlotField("assigned_at", "datetime", "assigned_at", 'f."assigned_at"', nullable=True),
    SlotField("lease_expires_at", "datetime", "lease_expires_at", 'f."lease_expires_at"',
              nullable=True),
    SlotField("graded_at", "datetime", "graded_at", 'f."graded_at"', nullable=True),
    SlotField("reused_from", "int", "reused_from_id", 'f."reused_from_id"', nullable=True),
    SlotField("reused_from_pool", "int", "reused_from_pool_id", 'f."reused_from_pool_id"',
              nullable=True,
              help_text="The imported judgment this grade was copied from (no grader then)."),
)

# A slot handed to a grader also names its evaluation, result and keyword.
ASSIGNED_SLOT_FIELDS: tuple[SlotField, ...] = (
    *SLOT_FIELDS,
    SlotField("evaluation", "int", "evaluation_id", 'f."evaluation_id"'),
    SlotField("snapshot", "int", "snapshot_id", 'f."snapshot_id"'),
    SlotField("keyword", "str", "keyword.text", 'k."text"'),
    SlotField("position", "int", "engine_position",
              'CASE WHEN e."shuffle_results" THEN NULL ELSE s."position" END', nullable=True,
              help_text="Where the engine ranked the result; null when the evaluation "
                        "shuffles results (its graders never see the rank)."),
    SlotField("doc_id", "str", "snapshot.doc_id", 's."doc_id"'),
    SlotField("name", "str", "snapshot.name", 's."name"'),
    SlotField("image", "str", "snapshot.image", 's."image"'),
    SlotField("fields", "json", "snapshot.fields", 's."fields"'),
)
