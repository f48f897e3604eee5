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

import json
import time
from collections.abc import Iterable, Sequence
from functools import partial
from operator import attrgetter
from typing import Any, TypeVar

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


def _json_text(field: models.JSONField, value: Any) -> str | None:
    """A JSON field's value as the text COPY gives the column: what Django's preparation
    sends (json.dumps with the field's encoder, None as SQL NULL) without its adapter
    object per value, most of a snapshot's cost when a fetch copies 100,000 of them."""
    return None if value is None else json.dumps(value, cls=field.encoder)


def _getter(field: models.Field, connection):
    if _copied_as_is(field):
        return attrgetter(field.attname)
    if isinstance(field, models.JSONField):
        return lambda obj: _json_text(field, getattr(obj, field.attname))
    return partial(_prepared, field, connection)


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
        getters = [_getter(field, connection) for field in fields]
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


def bulk_insert_rows(template: M, attnames: Sequence[str],
                     rows: Iterable[Sequence[Any]]) -> int:
    """Insert one row of `template`'s model per item of `rows`: the values of `attnames`
    (a one-to-one primary key among them) from the item, every other column `template`'s
    (its defaults and auto_now fields prepared once); how many rows. For rows nobody reads
    back (a fetch's feedback slots, ten to thirty a keyword): building a model instance
    per row cost more than its COPY.
    Without PostgreSQL, instances through bulk_insert."""
    model = type(template)
    using = router.db_for_write(model)
    connection = connections[using]
    opts = model._meta
    varying = list(attnames)
    if connection.vendor != "postgresql":
        shared = {field.attname: getattr(template, field.attname)
                  for field in opts.concrete_fields
                  if not field.primary_key and field.attname not in varying}
        objs = [model(**shared, **dict(zip(varying, row, strict=True))) for row in rows]
        bulk_insert(objs)
        return len(objs)
    fixed = [field for field in opts.concrete_fields
             if not field.primary_key and field.attname not in varying]
    fixed_values = [_prepared(field, connection, template) for field in fixed]
    by_attname = {field.attname: field for field in opts.concrete_fields}
    # A varying value psycopg cannot copy as it is (a JSON field's dict) is prepared.
    preparers = [None if _copied_as_is(by_attname[name]) else
                 partial(_json_text, by_attname[name])
                 if isinstance(by_attname[name], models.JSONField) else
                 partial(by_attname[name].get_db_prep_save, connection=connection)
                 for name in varying]
    if any(preparers):
        rows = ([value if prepare is None else prepare(value)
                 for prepare, value in zip(preparers, row, strict=True)] for row in rows)
    quote = connection.ops.quote_name
    columns = [by_attname[name].column for name in varying] + [f.column for f in fixed]
    sql = (f"COPY {quote(opts.db_table)} ({', '.join(quote(c) for c in columns)}) "
           f"FROM STDIN")
    count = 0
    started = time.monotonic()
    with connection.cursor() as cursor, cursor.cursor.copy(sql) as copy:
        for row in rows:
            copy.write_row([*row, *fixed_values])
            count += 1
    if connection.queries_logged:
        connection.queries_log.append({"sql": f"{sql} -- {count} rows",
                                       "time": f"{time.monotonic() - started:.3f}"})
    return count


def bulk_update(objs: Sequence[M], fields: Sequence[str]) -> int:
    """Write `fields` of `objs` (saved rows of one model), each row its own values; how
    many rows matched. On PostgreSQL one UPDATE … FROM unnest(one array per column):
    Django's bulk_update builds a CASE WHEN per field and row, whose expressions cost more
    Python time than the statement costs PostgreSQL (a fetch's store of 100 keywords
    spent most of its time there), while the worker's request threads wait for the GIL.
    Elsewhere Django's bulk_update."""
    if not objs:
        return 0
    model = type(objs[0])
    using = router.db_for_write(model)
    connection = connections[using]
    if connection.vendor != "postgresql":
        return model.objects.using(using).bulk_update(objs, fields)
    opts = model._meta
    columns = [opts.get_field(name) for name in fields]
    quote = connection.ops.quote_name
    table = quote(opts.db_table)
    # Each column one array parameter of the column's own type; the pk's type as a key
    # (an identity column's db_type carries no array-able name).
    arrays = [(opts.pk, opts.pk.rel_db_type(connection))] + [
        (field, field.db_type(connection)) for field in columns]
    names = [f"c{n}" for n in range(len(arrays))]
    sets = ", ".join(f"{quote(field.column)} = v.{name}"
                     for field, name in zip(columns, names[1:], strict=True))
    unnest = ", ".join(f"%s::{db_type}[]" for _, db_type in arrays)
    sql = (f"UPDATE {table} SET {sets} FROM unnest({unnest}) AS v({', '.join(names)}) "
           f"WHERE {table}.{quote(opts.pk.column)} = v.{names[0]}")
    params = [[field.get_db_prep_save(getattr(obj, field.attname), connection)
               for obj in objs] for field, _ in arrays]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.rowcount
