"""The user guide's pages: the Markdown files of docs/guide, rendered to HTML.

The same files are read on GitHub and served at /help/, so they are written as plain
CommonMark with relative links between them (`metrics.md#bounds`). Rendering rewrites a link
to another guide page into its /help/ address; a relative link that leaves the guide (to the
operations docs or the repository's files, which the app does not serve) keeps its text and
loses its link, and a picture from the repository shows its alt text. Raw HTML in the
Markdown is shown as text, never passed through (markdown-it's `html` option off), and
markdown-it refuses javascript: and similar link schemes, so a page is only what Markdown
can say. docs/decisions/0011-the-user-guide-at-help.md has the why.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings
from django.urls import reverse
from django.utils.safestring import SafeString, mark_safe
from markdown_it import MarkdownIt
from markdown_it.token import Token

INDEX = "index"
# A page's name is its file's stem: lower-case words joined by hyphens.
PAGE_NAME = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
_LINK_TARGET = re.compile(r"^(?P<page>[a-z0-9]+(?:-[a-z0-9]+)*)\.md(?P<fragment>#[\w-]*)?$")
_EXTERNAL = re.compile(r"^(?:[a-z][a-z0-9+.-]*:|//)", re.IGNORECASE)


@dataclass(frozen=True)
class Page:
    name: str
    title: str
    html: SafeString


def guide_dir() -> Path:
    return Path(settings.BASE_DIR) / "docs" / "guide"


def page_names() -> list[str]:
    """Every page of the guide, the index first."""
    names = sorted(path.stem for path in guide_dir().glob("*.md") if PAGE_NAME.match(path.stem))
    return sorted(names, key=lambda name: name != INDEX)


def page_url(name: str) -> str:
    return reverse("guide:index") if name == INDEX else reverse("guide:page", args=[name])


def _parser() -> MarkdownIt:
    # CommonMark plus GitHub's tables; html off: raw HTML is escaped, not rendered.
    return MarkdownIt("commonmark", {"html": False, "linkify": False}).enable("table")


def slug(text: str) -> str:
    """A heading's anchor as GitHub makes it: lower case, punctuation dropped, spaces to
    hyphens ("Bounds under missing grades" -> "bounds-under-missing-grades")."""
    kept = re.sub(r"[^\w\- ]", "", text.strip().lower())
    return kept.replace(" ", "-")


def _link_href(href: str, names: set[str]) -> str | None:
    """The address a link in a guide page points to under /help/, or None to drop it."""
    if href.startswith("#") or _EXTERNAL.match(href):
        return href
    target = _LINK_TARGET.match(href.removeprefix("./"))
    if target and target["page"] in names:
        return page_url(target["page"]) + (target["fragment"] or "")
    return None


def _rewrite(tokens: list[Token], names: set[str]) -> str:
    title = ""
    for index, token in enumerate(tokens):
        if token.type == "heading_open":
            text = tokens[index + 1].content
            token.attrSet("id", slug(text))
            if token.tag == "h1" and not title:
                title = text
        if token.type == "table_open":
            # Wide tables scroll inside their own box on a phone.
            token.attrSet("class", "table")
        if token.children:
            kept: list[Token] = []
            dropped: list[bool] = []
            for child in token.children:
                if child.type == "image" and not _EXTERNAL.match(
                        str(child.attrGet("src") or "")):
                    # The repository's pictures are not served: the alt text stands in.
                    kept.append(Token("text", "", 0, content=child.content))
                    continue
                if child.type == "link_open":
                    href = _link_href(str(child.attrGet("href") or ""), names)
                    dropped.append(href is None)
                    if href is None:
                        continue
                    child.attrSet("href", href)
                elif child.type == "link_close" and dropped.pop():
                    continue
                kept.append(child)
            token.children = kept
    return title


def render(name: str) -> Page | None:
    """The page called `name`, or None when the guide has no such page."""
    names = set(page_names())
    if name not in names:
        return None
    text = (guide_dir() / f"{name}.md").read_text(encoding="utf-8")
    parser = _parser()
    tokens = parser.parse(text)
    title = _rewrite(tokens, names) or name
    html = parser.renderer.render(tokens, parser.options, {})
    # Safe: markdown-it escapes raw HTML (html off) and refuses unsafe link schemes.
    return Page(name=name, title=title, html=mark_safe(html))


def contents() -> list[tuple[str, str]]:
    """(address, title) of every page but the index, for the guide's side menu: in the
    order the index links them, then any page it does not link."""
    names = page_names()
    linked = re.findall(r"\]\(([a-z0-9-]+)\.md", (guide_dir() / f"{INDEX}.md").read_text(
        encoding="utf-8")) if INDEX in names else []
    ordered = list(dict.fromkeys(name for name in linked if name in names))
    ordered += [name for name in names if name not in ordered]
    pages = []
    for name in ordered:
        if name == INDEX:
            continue
        first = (guide_dir() / f"{name}.md").read_text(encoding="utf-8").split("\n", 1)[0]
        pages.append((page_url(name), first.lstrip("# ").strip() or name))
    return pages
