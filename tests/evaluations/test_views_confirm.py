"""No silent destruction: deleting or archiving asks first and names what depends on it;
archived endpoints, models and evaluations can be restored."""

import pytest

from evaluations.models import Endpoint, Evaluation, SearchModel
from tests.evaluations.factories import (
    EndpointFactory,
    EvaluationFactory,
    KeywordFactory,
    SearchModelFactory,
    SnapshotFactory,
)

pytestmark = pytest.mark.django_db

ARCHIVED = "2025-01-01T00:00:00Z"


def login(client, user):
    client.force_login(user)
    return client


def confirm_texts(response) -> tuple[str, str, str]:
    context = response.context
    return context["dependents"], context["consequence"], context["button"]


def used_endpoint(team) -> Endpoint:
    """An endpoint with two search models and three evaluations on them."""
    endpoint = EndpointFactory(team=team, name="Shop")
    first, second = (SearchModelFactory(endpoint=endpoint) for _ in range(2))
    for model in (first, first, second):
        EvaluationFactory(model=model)
    return endpoint


# --- endpoints -------------------------------------------------------------------------


def test_deleting_a_used_endpoint_asks_first_naming_its_dependents(client, personas):
    endpoint = used_endpoint(personas.team)
    response = login(client, personas.admin).get(f"/endpoints/{endpoint.pk}/delete/")
    assert response.status_code == 200
    dependents, consequence, button = confirm_texts(response)
    assert dependents == "2 search models and 3 evaluations use this endpoint."
    assert consequence.startswith("So it will be archived, not deleted")
    assert button == "Archive endpoint"
    page = response.content.decode()
    assert "2 search models and 3 evaluations use this endpoint." in page
    assert '<a class="button" href="/endpoints/">Cancel</a>' in page
    endpoint.refresh_from_db()
    assert endpoint.archived_at is None  # asking changes nothing


def test_confirming_archives_a_used_endpoint_which_the_list_shows_apart(client, personas):
    endpoint = used_endpoint(personas.team)
    response = login(client, personas.admin).post(f"/endpoints/{endpoint.pk}/delete/")
    assert response.url == "/endpoints/"
    endpoint.refresh_from_db()
    assert endpoint.archived_at is not None
    listing = client.get("/endpoints/")
    assert list(listing.context["endpoints"]) == []
    assert list(listing.context["archived_endpoints"]) == [endpoint]
    assert f'action="/endpoints/{endpoint.pk}/restore/"' in listing.content.decode()
    # Asking again: it is archived already, nothing more to do.
    again = client.get(f"/endpoints/{endpoint.pk}/delete/")
    assert confirm_texts(again)[2] == "" and "cannot be deleted" in confirm_texts(again)[1]


def test_an_unused_endpoint_is_deleted_after_confirming(client, personas):
    endpoint = EndpointFactory(team=personas.team)
    login(client, personas.admin)
    dependents, consequence, button = confirm_texts(
        client.get(f"/endpoints/{endpoint.pk}/delete/"))
    assert (dependents, consequence, button) == (
        "Nothing uses this endpoint.", "It will be deleted for good.", "Delete endpoint")
    client.post(f"/endpoints/{endpoint.pk}/delete/")
    assert not Endpoint.objects.filter(pk=endpoint.pk).exists()


def test_restoring_brings_an_endpoint_back_into_the_lists(client, personas):
    endpoint = EndpointFactory(team=personas.team, archived_at=ARCHIVED)
    login(client, personas.admin)
    assert client.get(f"/endpoints/{endpoint.pk}/restore/").status_code == 405
    response = client.post(f"/endpoints/{endpoint.pk}/restore/", follow=True)
    assert f"Endpoint {endpoint.name} restored." in response.content.decode()
    endpoint.refresh_from_db()
    assert endpoint.archived_at is None
    assert list(response.context["endpoints"]) == [endpoint]
    assert list(response.context["archived_endpoints"]) == []
    assert list(client.get("/models/new/").context["form"].fields["endpoint"].queryset) == [
        endpoint]


def test_endpoint_confirm_and_restore_are_for_admins_of_the_team(client, personas):
    endpoint = EndpointFactory(team=personas.team, archived_at=ARCHIVED)
    for user, code in ((personas.lead, 403), (personas.grader, 403), (personas.outsider, 404)):
        login(client, user)
        assert client.get(f"/endpoints/{endpoint.pk}/delete/").status_code == code
        assert client.post(f"/endpoints/{endpoint.pk}/restore/").status_code == code
        assert client.post(f"/endpoints/{endpoint.pk}/delete/").status_code == code
    endpoint.refresh_from_db()
    assert endpoint.archived_at is not None
    assert login(client, personas.grader).get("/endpoints/").context["can_edit"] is False
    assert "Restore" not in client.get("/endpoints/").content.decode()
    assert login(client, personas.admin).post("/endpoints/999999/restore/").status_code == 404


# --- search models ---------------------------------------------------------------------


def test_deleting_a_used_model_asks_first_then_archives_it(client, personas):
    model = SearchModelFactory(endpoint__team=personas.team)
    EvaluationFactory(model=model)
    login(client, personas.admin)
    dependents, consequence, button = confirm_texts(client.get(f"/models/{model.pk}/delete/"))
    assert dependents == "1 evaluation uses this search model."
    assert "its evaluations cannot start until you restore it" in consequence
    assert button == "Archive search model"
    client.post(f"/models/{model.pk}/delete/")
    model.refresh_from_db()
    assert model.archived_at is not None
    listing = client.get("/models/")
    assert list(listing.context["models"]) == [] and list(listing.context["archived_models"]) \
        == [model]


def test_an_unused_model_is_deleted_after_confirming(client, personas):
    model = SearchModelFactory(endpoint__team=personas.team)
    login(client, personas.admin)
    assert confirm_texts(client.get(f"/models/{model.pk}/delete/")) == (
        "No evaluation uses this search model.", "It will be deleted for good.",
        "Delete search model")
    client.post(f"/models/{model.pk}/delete/")
    assert not SearchModel.objects.filter(pk=model.pk).exists()


def test_restoring_a_model_brings_it_back_to_the_evaluation_form(client, personas):
    model = SearchModelFactory(endpoint__team=personas.team, archived_at=ARCHIVED)
    login(client, personas.admin)
    response = client.post(f"/models/{model.pk}/restore/", follow=True)
    assert f"Search model {model.name} restored." in response.content.decode()
    assert list(response.context["models"]) == [model]
    assert model in client.get("/evaluations/new/").context["form"].fields["model"].queryset


def test_a_model_on_an_archived_endpoint_stays_archived(client, personas):
    model = SearchModelFactory(endpoint__team=personas.team, endpoint__archived_at=ARCHIVED,
                               archived_at=ARCHIVED)
    response = login(client, personas.admin).post(f"/models/{model.pk}/restore/", follow=True)
    assert "restore the endpoint first" in response.content.decode()
    model.refresh_from_db()
    assert model.archived_at is not None


def test_model_confirm_and_restore_are_for_admins_of_the_team(client, personas):
    model = SearchModelFactory(endpoint__team=personas.team, archived_at=ARCHIVED)
    for user, code in ((personas.lead, 403), (personas.outsider, 404)):
        login(client, user)
        assert client.get(f"/models/{model.pk}/delete/").status_code == code
        assert client.post(f"/models/{model.pk}/restore/").status_code == code
    assert login(client, personas.admin).get(f"/models/{model.pk}/restore/").status_code == 405
    model.refresh_from_db()
    assert model.archived_at is not None


# --- evaluations -----------------------------------------------------------------------


def evaluation_with_results(team) -> Evaluation:
    evaluation = EvaluationFactory(model__endpoint__team=team, status="active", name="Spring")
    for text in ("boots", "hats"):
        keyword = KeywordFactory(evaluation=evaluation, text=text, fetch_status="fetched")
        for position in (1, 2):
            SnapshotFactory(keyword=keyword, position=position, doc_id=f"{text}-{position}")
    return evaluation


def test_archiving_an_evaluation_asks_first_then_hides_it(client, personas):
    evaluation = evaluation_with_results(personas.team)
    login(client, personas.lead)
    detail = client.get(f"/evaluations/{evaluation.pk}/").content.decode()
    assert f'href="/evaluations/{evaluation.pk}/archive/">Archive…</a>' in detail
    dependents, consequence, button = confirm_texts(
        client.get(f"/evaluations/{evaluation.pk}/archive/"))
    assert dependents == "It has 2 keywords and 4 fetched results."
    assert "you can restore it" in consequence and button == "Archive evaluation"
    response = client.post(f"/evaluations/{evaluation.pk}/archive/")
    assert response.url == "/evaluations/"
    evaluation.refresh_from_db()
    assert evaluation.archived_at is not None and evaluation.keywords.count() == 2
    listing = client.get("/evaluations/")
    assert list(listing.context["page"].object_list) == []
    assert listing.context["archived_evaluations"] is None
    shown = client.get("/evaluations/?archived=1")
    assert list(shown.context["archived_evaluations"]) == [evaluation]
    assert f'action="/evaluations/{evaluation.pk}/restore/"' in shown.content.decode()


def test_restoring_an_evaluation_brings_it_back_to_the_list(client, personas):
    evaluation = EvaluationFactory(model__endpoint__team=personas.team, archived_at=ARCHIVED)
    login(client, personas.lead)
    detail = client.get(f"/evaluations/{evaluation.pk}/").content.decode()
    assert f'action="/evaluations/{evaluation.pk}/restore/"' in detail
    assert f'href="/evaluations/{evaluation.pk}/archive/"' not in detail
    assert client.get(f"/evaluations/{evaluation.pk}/restore/").status_code == 405
    response = client.post(f"/evaluations/{evaluation.pk}/restore/")
    assert response.url == f"/evaluations/{evaluation.pk}/"
    evaluation.refresh_from_db()
    assert evaluation.archived_at is None
    assert list(client.get("/evaluations/").context["page"].object_list) == [evaluation]


def test_a_fetching_evaluation_is_neither_archived_nor_deleted(client, personas):
    evaluation = EvaluationFactory(model__endpoint__team=personas.team, status="fetching")
    login(client, personas.lead)
    for action in ("archive", "delete"):
        page = client.get(f"/evaluations/{evaluation.pk}/{action}/")
        assert confirm_texts(page)[2] == "" and "Pause it before" in confirm_texts(page)[1]
        response = client.post(f"/evaluations/{evaluation.pk}/{action}/", follow=True)
        assert "Pause the evaluation before" in response.content.decode()
    evaluation.refresh_from_db()
    assert evaluation.archived_at is None


def test_deleting_an_evaluation_asks_first_naming_what_goes(client, personas):
    evaluation = evaluation_with_results(personas.team)
    login(client, personas.lead)
    detail = client.get(f"/evaluations/{evaluation.pk}/").content.decode()
    assert "onsubmit" not in detail  # the confirm page replaced the inline confirm()
    dependents, consequence, button = confirm_texts(
        client.get(f"/evaluations/{evaluation.pk}/delete/"))
    assert dependents == "It has 2 keywords and 4 fetched results."
    assert "every grade given to them, for good" in consequence
    assert button == "Delete evaluation"
    assert Evaluation.objects.filter(pk=evaluation.pk).exists()
    assert client.post(f"/evaluations/{evaluation.pk}/delete/").url == "/evaluations/"
    assert not Evaluation.objects.filter(pk=evaluation.pk).exists()


def test_evaluation_confirm_pages_are_for_leads_of_the_team(client, personas):
    evaluation = EvaluationFactory(model__endpoint__team=personas.team, archived_at=ARCHIVED)
    for user, code in ((personas.grader, 403), (personas.outsider, 404)):
        login(client, user)
        for action in ("archive", "delete"):
            assert client.get(f"/evaluations/{evaluation.pk}/{action}/").status_code == code
            assert client.post(f"/evaluations/{evaluation.pk}/{action}/").status_code == code
        assert client.post(f"/evaluations/{evaluation.pk}/restore/").status_code == code
    evaluation.refresh_from_db()
    assert evaluation.archived_at is not None
    assert login(client, personas.lead).put(f"/evaluations/{evaluation.pk}/archive/") \
        .status_code == 405
