"""A judge that sends images: the result's image URL goes with the prompt as the
protocol's content part when the judge has "send images" on and its template has
{{images}}; otherwise the prompt stays plain text. Checked on what a real local model
server received."""

import base64
import json

import pytest

from evaluations.models import Snapshot
from judges import runs
from judges.core.prompts import IMAGES_NOTE
from judges.models import JudgeCall, JudgeRun
from tests.evaluations.servers import Reply, running_server
from tests.judges.builders import judge_for
from tests.judges.fake_providers import ANTHROPIC, OLLAMA, OPENAI, fake_provider, grade_all
from tests.judgments.builders import evaluation_with_slots

pytestmark = pytest.mark.django_db(transaction=True)

TEMPLATE = "{{keyword}}\n{{documents}}\n{{images}}"
URL = "https://img.example.test/boots-{}.jpg"
PARTS = {
    OPENAI: lambda url: {"type": "image_url", "image_url": {"url": url}},
    ANTHROPIC: lambda url: {"type": "image", "source": {"type": "url", "url": url}},
}


def run_once(personas, protocol, *, send_images=True, template=TEMPLATE):
    evaluation = evaluation_with_slots(personas.team, texts=["boots"], positions=2)
    # The first result has an image, the second none.
    Snapshot.objects.filter(doc_id="boots-d1").update(image=URL.format(1))
    with fake_provider(protocol) as provider:
        provider.default = grade_all()
        judge = judge_for(personas.team, provider, counts=False, send_images=send_images,
                          prompt_templates={"graded": template})
        run = runs.run_start(judge=judge, evaluation=evaluation, mode=JudgeRun.Mode.SHADOW,
                             started_by=None)
    run.refresh_from_db()
    assert (run.status, run.done_count) == ("done", 2)
    [body] = provider.bodies()
    return next(m for m in body["messages"] if m["role"] == "user")["content"]


@pytest.mark.parametrize("protocol", [OPENAI, ANTHROPIC])
def test_the_image_goes_as_a_content_part(personas, protocol):
    content = run_once(personas, protocol)
    assert content[0]["type"] == "text" and content[0]["text"].endswith(IMAGES_NOTE)
    assert content[1:] == [{"type": "text", "text": "Image of document boots-d1:"},
                           PARTS[protocol](URL.format(1))]


@pytest.mark.parametrize("send_images, template", [
    (False, TEMPLATE), (True, "{{keyword}}\n{{documents}}")])
def test_no_image_without_the_setting_or_the_placeholder(personas, send_images, template):
    content = run_once(personas, OPENAI, send_images=send_images, template=template)
    assert isinstance(content, str) and "img.example.test" not in content
    assert IMAGES_NOTE not in content


PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4  # any bytes: the model reads them


def run_ollama(personas, image_url: str):
    """One Ollama run whose first result's image is at `image_url`: what the model got,
    and the call log's request."""
    evaluation = evaluation_with_slots(personas.team, texts=["boots"], positions=2)
    Snapshot.objects.filter(doc_id="boots-d1").update(image=image_url)
    with fake_provider(OLLAMA) as provider:
        provider.default = grade_all()
        judge = judge_for(personas.team, provider, counts=False, send_images=True,
                          prompt_templates={"graded": TEMPLATE})
        run = runs.run_start(judge=judge, evaluation=evaluation, mode=JudgeRun.Mode.SHADOW,
                             started_by=None)
    run.refresh_from_db()
    assert (run.status, run.done_count) == ("done", 2)
    [body] = provider.bodies()
    [call] = JudgeCall.objects.filter(run=run)
    return next(m for m in body["messages"] if m["role"] == "user"), call.request


def test_ollama_gets_the_image_fetched_as_base64_and_named_in_the_text(personas):
    with running_server() as images:
        images.handler = lambda request: Reply(body=PNG, headers={"Content-Type": "image/png"})
        message, logged = run_ollama(personas, f"{images.url}/boots-1.png")
        [fetch] = images.received
    assert (fetch.method, fetch.path) == ("GET", "/boots-1.png")
    assert "authorization" not in fetch.headers  # the judge's key stays with the judge
    assert message["images"] == [base64.b64encode(PNG).decode()]
    assert message["content"].endswith(f"{IMAGES_NOTE}\n\nImage 1 is of document boots-d1.")
    # The log names the image; it does not carry its bytes.
    [logged_message] = [m for m in logged["body"]["messages"] if m["role"] == "user"]
    assert logged_message["images"] == [
        f"[image of document boots-d1: {len(PNG)} bytes from {images.url}/boots-1.png]"]
    assert base64.b64encode(PNG).decode() not in json.dumps(logged)


@pytest.mark.parametrize("reply", [
    Reply(status=404, body="gone", headers={"Content-Type": "text/plain"}),
    Reply(body="<html>login</html>", headers={"Content-Type": "text/html"}),
    Reply(body=PNG, headers={"Content-Type": "image/png"}),  # over the cap below
], ids=["404", "not an image", "too large"])
def test_an_image_that_cannot_be_had_is_named_missing_and_the_call_goes_on(
        personas, settings, reply):
    settings.JUDGE_IMAGE_MAX_BYTES = len(PNG) - 1
    with running_server() as images:
        images.handler = lambda request: reply
        message, _ = run_ollama(personas, f"{images.url}/boots-1.png")
    assert message["images"] == []
    assert message["content"].endswith("The image of document boots-d1 could not be fetched.")


def test_an_image_at_a_refused_address_is_never_fetched(personas, settings):
    # The image host's address is refused by the outbound policy (as cloud metadata's is in
    # production); the model server on 127.0.0.1 is not.
    settings.OUTBOUND_DENY_NETWORKS = ["127.0.0.2/32"]
    with running_server(host="127.0.0.2") as images:
        images.handler = lambda request: Reply(body=PNG, headers={"Content-Type": "image/png"})
        message, _ = run_ollama(personas, f"{images.url}/boots-1.png")
        assert images.received == []
    assert message["images"] == []
    assert message["content"].endswith("The image of document boots-d1 could not be fetched.")
