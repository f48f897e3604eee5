"""On PostgreSQL the audit table refuses UPDATE and DELETE of its rows: the trail is
append-only whatever the application, a shell or a later bug does. TRUNCATE (the table
owner's, a statement no code path issues) stays possible for a retention job and for the
tests' clean-up. SQLite (development) has no such trigger; the application never updates
or deletes rows either way."""

from django.db import migrations

TABLE = "audit_auditevent"

FORWARD = f"""
CREATE FUNCTION audit_refuse_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'the audit trail is append-only: % refused on %', TG_OP, TG_TABLE_NAME
        USING ERRCODE = 'insufficient_privilege';
END $$;
CREATE TRIGGER audit_refuse_update_delete BEFORE UPDATE OR DELETE ON {TABLE}
    FOR EACH ROW EXECUTE FUNCTION audit_refuse_change();
"""

BACKWARD = f"""
DROP TRIGGER IF EXISTS audit_refuse_update_delete ON {TABLE};
DROP FUNCTION IF EXISTS audit_refuse_change();
"""


def forward(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(FORWARD, params=None)


def backward(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(BACKWARD, params=None)


class Migration(migrations.Migration):
    dependencies = [("audit", "0001_initial")]

    operations = [migrations.RunPython(forward, backward, elidable=False)]
