"""judgments.grading is the one module that writes a slot's grade."""

from tests.source_scan import matching_lines

GRADE_WRITES = [
    r"^\s*[\w.]+\.grade\s*=[^=]",  # slot.grade = ...
    r"\.update\([^)]*\bgrade\s*=",  # QuerySet.update(grade=...)
    r'(?i)\bset\s+"?grade"?\s*=',  # SQL: SET "grade" = ...
    r'"grade"\s*=\s*%s',  # SQL: ..., "grade" = %s
    r'(?s)(update_fields|bulk_update\()[^)\]]*"grade"',  # save/bulk_update of the column
    r'"grade":\s*None',  # a reset through setattr
]


def test_only_the_grading_module_writes_grades():
    found = matching_lines(GRADE_WRITES)
    assert set(found) == {"judgments/grading.py"}, found


def test_the_scan_finds_every_kind_of_grade_write_in_the_grading_module():
    # Each kind of write the module holds is found: a scan that found nothing could not
    # fail. (It has no QuerySet.update of grades, the second pattern.)
    for pattern in GRADE_WRITES[:1] + GRADE_WRITES[2:]:
        assert set(matching_lines([pattern])) == {"judgments/grading.py"}, pattern
