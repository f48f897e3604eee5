"""Inserting many rows of one model in a few statements: PostgreSQL's COPY (psycopg 3's
`cursor.copy`), elsewhere multi-row INSERTs (bulk_create in batches).

A fetch stores 10 results a keyword with up to 3 grading slots each: 100,000 keywords are
a million snapshots and three million slots. bulk_create on PostgreSQL sends them as
INSERT … RETURNING statements whose parameters Django builds and PostgreSQL parses one by
one; COPY streams the rows in PostgreSQL's own text format, several times faster.

COPY returns nothing, so when the caller needs the new rows' ids (slots point at their
snapshot) they are drawn from the table's sequence first, in one statement, and copied
with the rows. Both paths run inside the caller's transaction: all the rows or none.
"""

import time
from collections.abc import Sequence
from functools import partial
from operator import attrgetter
from typing import TypeVar

from django.db import connections, models, router
from django.db.models import Model

M = TypeVar("M", bound=Model)

SQLITE_BATCH_SIZE = 500  # rows per INSERT at most; Django lowers it to SQLite's bound


# Fields whose Python value psycopg copies as the column's: their attribute goes as it
# is, skipping Django's per-value preparation, most of a row's cost. Others (JSON,
# auto_now dates, decimals, …) go through get_db_prep_save.
_AS_IS = (models.IntegerField, models.CharField, models.TextField, models.BooleanField,
          models.ForeignKey)


def _copied_as_is(field: models.Field) -> bool:
    if isinstance(field, models.DateField):
        return not (field.auto_now or field.auto_now_add)
    return isinstance(field, _AS_IS)


def _prepared(field: models.Field, connection, obj: Model):
    return field.get_db_prep_save(field.pre_save(obj, True), connection)


def bulk_insert(objs: Sequence[M], *, with_ids: bool = False) -> Sequence[M]:
    """Insert `objs` (all of one model, pks unset) and return them; with `with_ids` their
    pks are set, as bulk_create sets them. Model defaults apply as in bulk_create (the
    instances carry them); auto_now fields are filled by pre_save."""
    if not objs:
        return objs
    model = type(objs[0])
    using = router.db_for_write(model)
    connection = connections[using]
    if connection.vendor != "postgresql":
        return model.objects.using(using).bulk_create(objs, batch_size=SQLITE_BATCH_SIZE)
    opts = model._meta
    fields = [field for field in opts.concrete_fields if with_ids or not field.primary_key]
    with connection.cursor() as cursor:
        if with_ids:
            cursor.execute(
                "SELECT nextval(pg_get_serial_sequence(%s, %s)) "
                "FROM generate_series(1, %s)", [opts.db_table, opts.pk.column, len(objs)])
            for obj, (pk,) in zip(objs, cursor.fetchall(), strict=True):
                obj.pk = pk
        quote = connection.ops.quote_name
        sql = (f"COPY {quote(opts.db_table)} ("
               f"{', '.join(quote(field.column) for field in fields)}) FROM STDIN")
        started = time.monotonic()
        # The psycopg cursor under Django's wrapper: Django has no COPY of its own.
        getters = [attrgetter(field.attname) if _copied_as_is(field) else
                   partial(_prepared, field, connection) for field in fields]
        with cursor.cursor.copy(sql) as copy:
            for obj in objs:
                copy.write_row([get(obj) for get in getters])
        if connection.queries_logged:
            # Django logs what its cursor executes; COPY bypasses it, yet query-count tests
            # (and the debug toolbar) should see the statement.
            connection.queries_log.append({
                "sql": f"{sql} -- {len(objs)} rows",
                "time": f"{time.monotonic() - started:.3f}"})
    for obj in objs:
        obj._state.adding = False
        obj._state.db = using
    return objs
