"""Any keyword list written as each tool writes it is recognised as that tool's and reads
back as the same keywords: our CSV with a header (weights and tags too), a Workbench NDJSON
file, Quepid's basic CSV (one row a query, some unrated), and plain text."""

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from evaluations.models import Keyword
from evaluations.query_sets.file_formats import query_set_file_read
from evaluations.services.keyword_input import keywords_as_text
from evaluations.services.keywords import KeywordEntry, keyword_text_clean
from judgments.formats.quepid_csv import write_quepid_csv
from tests.property_depth import examples

# Keywords as they are stored (cleaned), distinct by their normalized form: what a list
# holds once it is saved. Commas, quotes and braces test the recogniser.
TEXT = st.text(st.characters(blacklist_categories=("Cs", "Cc", "Zl", "Zp"))
               | st.sampled_from(',"{}[]#|=+-@\''), min_size=1, max_size=12).map(
    keyword_text_clean).filter(bool).filter(lambda text: text[0] not in "{[")
TAGS = st.lists(st.from_regex(r"[a-z][a-z0-9:_-]{0,8}", fullmatch=True), max_size=3,
                unique=True).map(lambda tags: tuple(sorted(tags)))
ENTRIES = st.lists(st.builds(KeywordEntry, TEXT, st.integers(0, 10**6), TAGS), min_size=1,
                   max_size=8, unique_by=lambda entry: Keyword.normalize(entry.text))


def _quepid(texts: list[str]) -> str:
    """As our Quepid export writes it (judgments.formats.quepid_csv), formula cells
    protected."""
    return "".join(write_quepid_csv((text, "", None) if number % 2 else (text, f"d{number}", 1)
                                    for number, text in enumerate(texts)))


@settings(max_examples=examples(200), deadline=None)
@given(entries=ENTRIES)
def test_any_list_comes_back_from_each_tools_file(entries):
    texts = [entry.text for entry in entries]
    ours = "keyword,weight,tags\n" + keywords_as_text(entries) + "\n"
    read = query_set_file_read(filename="upload", content=ours.encode())
    assert (read.kind, read.entries) == ("csv", [
        KeywordEntry(entry.text, entry.weight, entry.tags) for entry in entries])

    workbench = "".join(json.dumps({"queryText": text, "referenceAnswer": "x"}) + "\n"
                        for text in texts)
    read = query_set_file_read(filename="upload", content=workbench.encode())
    assert (read.kind, [entry.text for entry in read.entries]) == ("workbench", texts)

    read = query_set_file_read(filename="upload", content=_quepid(texts).encode())
    assert (read.kind, [entry.text for entry in read.entries]) == ("quepid_csv", texts)

    plain = "".join(text + "\n" for text in texts)
    read = query_set_file_read(filename="list.txt", content=plain.encode())
    assert [entry.text for entry in read.entries] == texts
