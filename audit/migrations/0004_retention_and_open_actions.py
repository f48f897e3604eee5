"""The one way rows leave the trail: the retention job (audit.services.audit_events_prune).

The trigger of 0002 refused every UPDATE and DELETE. It now lets a DELETE through when the
deleting transaction has set `searchtweak.audit_prune_before` (a transaction-local setting
only the retention job sets) and the row is older than that instant; UPDATE stays refused,
as does any DELETE of a newer row or outside such a transaction. An index on `at` serves
the job's `WHERE at < cutoff`.

`action` drops its choices: the Action list grows with the apps that audit their own
actions, and a new member needs no migration (audit_record still refuses unknown ones)."""

from django.db import migrations, models

TABLE = "audit_auditevent"

RETENTION = """
CREATE OR REPLACE FUNCTION audit_refuse_change() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    prune_before text := current_setting('searchtweak.audit_prune_before', true);
BEGIN
    -- NULL when never set in this session, '' once a SET LOCAL's transaction ended.
    IF TG_OP = 'DELETE' AND coalesce(prune_before, '') <> ''
            AND OLD.at < prune_before::timestamptz THEN
        RETURN OLD;
    END IF;
    RAISE EXCEPTION 'the audit trail is append-only: % refused on %', TG_OP, TG_TABLE_NAME
        USING ERRCODE = 'insufficient_privilege';
END $$;
"""

APPEND_ONLY = """
CREATE OR REPLACE FUNCTION audit_refuse_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'the audit trail is append-only: % refused on %', TG_OP, TG_TABLE_NAME
        USING ERRCODE = 'insufficient_privilege';
END $$;
"""


def forward(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(RETENTION, params=None)


def backward(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(APPEND_ONLY, params=None)


class Migration(migrations.Migration):
    dependencies = [("audit", "0003_alter_auditevent_action")]

    operations = [
        migrations.RunPython(forward, backward, elidable=False),
        migrations.AlterField(model_name="auditevent", name="action",
                              field=models.CharField(max_length=40)),
        migrations.AddIndex(model_name="auditevent",
                            index=models.Index(fields=["at"], name="audit_at_idx")),
    ]
