"""What users do, as numbers: click models (COEC, PBM by EM), online metrics and a
deterministic click simulator. Pure Python + numpy like metrics_engine: no Django, so the
Django app around it (behaviour/) and the benches call it with arrays and store what it
returns."""
