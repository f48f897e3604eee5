# The demo engine's text vectors stored with each product on PostgreSQL, computed once when
# a product is written: ranking with vectors computed per row and per query scanned the
# whole catalog through to_tsvector twice a search (~0.3 s a search, most of a demo fetch).

from django.db import migrations

VECTORS = """
ALTER TABLE evaluations_demoproduct
  ADD COLUMN search_vector tsvector GENERATED ALWAYS AS (
    to_tsvector('english', title || ' ' || description || ' ' || category || ' ' || brand
                || ' ' || color)) STORED,
  ADD COLUMN ranked_vector tsvector GENERATED ALWAYS AS (
    setweight(to_tsvector('english', title), 'A')
    || setweight(to_tsvector('english', color || ' ' || category), 'B')
    || setweight(to_tsvector('english', brand || ' ' || description), 'C')) STORED;
DROP INDEX IF EXISTS evaluations_demoproduct_tsv;
CREATE INDEX evaluations_demoproduct_search ON evaluations_demoproduct
  USING GIN (search_vector);
"""

PER_ROW = """
DROP INDEX IF EXISTS evaluations_demoproduct_search;
ALTER TABLE evaluations_demoproduct DROP COLUMN search_vector, DROP COLUMN ranked_vector;
CREATE INDEX IF NOT EXISTS evaluations_demoproduct_tsv ON evaluations_demoproduct
  USING GIN (to_tsvector('english', title || ' ' || description || ' ' || category || ' '
                         || brand || ' ' || color));
"""


def store_vectors(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(VECTORS)


def compute_per_row(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(PER_ROW)


class Migration(migrations.Migration):

    dependencies = [
        ("evaluations", "0019_offline_run_blocks"),
    ]

    operations = [
        migrations.RunPython(store_vectors, compute_per_row, elidable=False),
    ]
