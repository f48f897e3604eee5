"""`manage.py import_behaviour`: files in, a source out, or nothing and the lines named."""

import pytest
from django.core.management import CommandError, call_command

from behaviour.models import BehaviourSource
from tests.behaviour.test_imports import EVENTS, QUERIES

pytestmark = pytest.mark.django_db


def test_it_imports_a_ubi_log_from_files(personas, tmp_path, capsys):
    (tmp_path / "q.ndjson").write_bytes(b"".join(QUERIES))
    (tmp_path / "e.ndjson").write_bytes(b"".join(EVENTS))
    call_command("import_behaviour", "--team", str(personas.team.pk), "--name", "Nov",
                 "--ubi", str(tmp_path / "q.ndjson"), str(tmp_path / "e.ndjson"))
    source = BehaviourSource.objects.get()
    assert capsys.readouterr().out.strip() == (
        f"Source {source.pk} (ubi): 3 searches, 7 lines, 8 count rows.")


def test_a_bad_csv_imports_nothing_and_names_the_line(personas, tmp_path, capsys):
    (tmp_path / "c.csv").write_text("keyword,doc_id,position,impressions,clicks\n"
                                    "boots,d1,1,10,2\nboots,d2,0,10,2\n")
    with pytest.raises(CommandError, match="Nothing was imported"):
        call_command("import_behaviour", "--team", str(personas.team.pk), "--name", "C",
                     "--csv", str(tmp_path / "c.csv"))
    assert "file: CSV line 3, position: positions count from 1" in capsys.readouterr().err
    assert not BehaviourSource.objects.exists()


def test_a_csv_window_needs_a_time_zone(personas, tmp_path):
    (tmp_path / "c.csv").write_text("keyword,doc_id,position,impressions,clicks\n")
    with pytest.raises(CommandError, match="time zone"):
        call_command("import_behaviour", "--team", str(personas.team.pk), "--name", "C",
                     "--csv", str(tmp_path / "c.csv"), "--window-start", "2026-07-01")
