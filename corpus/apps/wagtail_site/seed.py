"""The site's fixed content, made after ``migrate``: the superuser ``editor``, the home
page (the default site's root), a blog index with five published posts and one draft."""

from __future__ import annotations

import datetime
import json
import os

from django.contrib.auth import get_user_model
from wagtail.models import Page, Site

from wagtail_site.models import BlogIndexPage, BlogPage, HomePage

# (title, slug, date, intro, body: (heading, paragraph HTML) pairs)
POSTS = [
    (
        "Spring planting notes",
        "spring-planting-notes",
        "2024-03-18",
        "What went into the vegetable beds this year, and why.",
        [
            (
                "Beds and soil",
                "<p>We turned three raised beds and added <b>compost</b> from last "
                "autumn. The clay corner still drains slowly.</p>",
            ),
            (
                "What we sowed",
                "<p>Peas, broad beans and two rows of radishes. Tomatoes stay "
                "indoors until the nights are warmer.</p>",
            ),
        ],
    ),
    (
        "A week of sourdough",
        "a-week-of-sourdough",
        "2024-04-02",
        "Seven loaves, one starter, and a notebook of timings.",
        [
            (
                "The starter",
                "<p>Fed twice a day at room temperature, it doubled in about "
                "<i>six hours</i> by the fourth day.</p>",
            ),
            (
                "Results",
                "<p>The best loaf rose overnight in the fridge. See the "
                '<a href="/blog/">blog index</a> for the other experiments.</p>',
            ),
        ],
    ),
    (
        "Repairing an old bicycle",
        "repairing-an-old-bicycle",
        "2024-05-11",
        "New cables, a trued wheel and a chain that finally stopped squeaking.",
        [
            ("Brakes", "<p>Both brake cables were frayed; replacing them took an afternoon.</p>"),
            (
                "Wheels",
                "<p>The rear wheel had a slight wobble, fixed with a spoke key and patience.</p>",
            ),
        ],
    ),
    (
        "Night sky in June",
        "night-sky-in-june",
        "2024-06-21",
        "Short nights, but Jupiter and the Summer Triangle are worth staying up for.",
        [
            ("Planets", "<p>Jupiter rises before dawn late in the month.</p>"),
            ("Stars", "<p>Vega, Deneb and Altair form the <b>Summer Triangle</b> overhead.</p>"),
        ],
    ),
    (
        "Reading list for the holidays",
        "reading-list-for-the-holidays",
        "2024-07-30",
        "Five books to take on the train, from short stories to a long history.",
        [
            (
                "Fiction",
                "<ul><li>A collection of short stories</li><li>A slow detective novel</li></ul>",
            ),
            ("Non-fiction", "<p>A history of maps, and a field guide to clouds.</p>"),
        ],
    ),
]
DRAFT = ("Notes on composting (draft)", "notes-on-composting", "2024-08-15",
         "Work in progress: what goes into the heap and what stays out.",
         [("Greens and browns", "<p>To be written.</p>")])  # fmt: skip


def _body(pairs: list[tuple[str, str]]) -> str:
    blocks = []
    for heading, paragraph in pairs:
        blocks.append({"type": "heading", "value": heading})
        blocks.append({"type": "paragraph", "value": paragraph})
    return json.dumps(blocks)


def _post(index: BlogIndexPage, spec: tuple, publish: bool) -> None:
    title, slug, date, intro, pairs = spec
    page = BlogPage(title=title, slug=slug, date=datetime.date.fromisoformat(date),
                    intro=intro, body=_body(pairs), live=publish)  # fmt: skip
    index.add_child(instance=page)
    revision = page.save_revision()
    if publish:
        revision.publish()


def run() -> None:
    """Make the superuser, the pages and the site (on a freshly migrated database)."""
    get_user_model().objects.create_superuser(
        "editor", "editor@example.test", os.environ["CORPUS_EDITOR_PASSWORD"],
        first_name="Eddie", last_name="Editor",
    )  # fmt: skip
    root = Page.get_first_root_node()
    welcome = root.get_children().first()  # Wagtail's "Welcome to your new Wagtail site!"
    home = HomePage(
        title="Corpus Journal",
        slug="home-journal",
        intro="<p>Notes from the garden, the kitchen and the workshop.</p>",
    )
    root.add_child(instance=home)
    home.save_revision().publish()
    Site.objects.update(root_page=home, site_name="Corpus Journal", is_default_site=True)
    welcome.delete()
    home.slug = "home"
    home.save_revision().publish()
    # publishing saved the page's new URL path ("/home/") from the revision's copy: read it
    # back, or the children below are filed under the old one and have no URL on the site
    home.refresh_from_db()
    index = BlogIndexPage(
        title="Blog", slug="blog", intro="<p>Everything we have written, newest first.</p>"
    )
    home.add_child(instance=index)
    index.save_revision().publish()
    for spec in POSTS:
        _post(index, spec, publish=True)
    _post(index, DRAFT, publish=False)
