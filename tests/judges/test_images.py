"""A judge that sends images: the result's image URL goes with the prompt as the
protocol's content part when the judge has "send images" on and its template has
{{images}}; otherwise the prompt stays plain text. Checked on what a real local model
server received."""

import pytest

from evaluations.models import Snapshot
from judges import runs
from judges.core.prompts import IMAGES_NOTE
from judges.models import JudgeRun
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


def test_ollama_gets_no_image_and_no_note(personas):
    content = run_once(personas, OLLAMA)
    assert isinstance(content, str) and IMAGES_NOTE not in content
