"""A kept pool-import preview is its owner's: another person who sends its token with
their own file imports their file and leaves the kept one alone; sent without a file, the
token imports nothing of the other person's."""

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from judgments.models import PoolImportUpload, PoolJudgment

pytestmark = pytest.mark.django_db
URL = "/pool/import/"


def _client(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def _post(client, content: bytes | None, **extra):
    data = {"scale": "graded", "format": "csv", **extra}
    if content is not None:
        data["file"] = SimpleUploadedFile("j.csv", content)
    return client.post(URL, data)


@pytest.fixture
def kept(personas):
    """The lead previewed a file: it is kept under a token."""
    response = _post(_client(personas.lead), b"laptop,d1,3\n", preview="1")
    assert response.status_code == 200
    upload = PoolImportUpload.objects.get()
    assert response.context["upload_token"] == upload.token
    return upload


def test_importing_your_own_file_with_anothers_token_keeps_their_preview(personas, kept):
    response = _post(_client(personas.admin), b"phone,d9,1\n", upload=kept.token,
                     **{"import": "1"})
    assert response.status_code == 302
    assert list(PoolJudgment.objects.values_list("text", "doc_id")) == [("phone", "d9")]
    assert PoolImportUpload.objects.filter(pk=kept.pk, user=personas.lead).exists()


def test_anothers_token_without_a_file_imports_nothing_of_theirs(personas, kept):
    response = _post(_client(personas.admin), None, upload=kept.token, **{"import": "1"})
    assert response.status_code == 400
    assert not PoolJudgment.objects.exists()
    assert PoolImportUpload.objects.filter(pk=kept.pk).exists()


def test_the_owner_imports_the_kept_file_and_it_is_discarded(personas, kept):
    response = _post(_client(personas.lead), None, upload=kept.token, **{"import": "1"})
    assert response.status_code == 302
    assert list(PoolJudgment.objects.values_list("text", "doc_id")) == [("laptop", "d1")]
    assert not PoolImportUpload.objects.exists()
