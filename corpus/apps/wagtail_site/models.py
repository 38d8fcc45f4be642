"""The site's page types: the home page, a blog index, and blog posts whose body is a
StreamField of headings and rich-text (Draftail) paragraphs."""

from __future__ import annotations

from typing import Any, ClassVar

from django.db import models
from wagtail import blocks
from wagtail.admin.panels import FieldPanel, Panel
from wagtail.fields import RichTextField, StreamField
from wagtail.models import Page
from wagtail.search import index


class HomePage(Page):
    """The site's root page: a welcome text and the latest posts."""

    intro = RichTextField(blank=True)
    content_panels: ClassVar[list[Panel]] = [*Page.content_panels, FieldPanel("intro")]
    subpage_types: ClassVar[list[str]] = ["wagtail_site.BlogIndexPage"]


class BlogIndexPage(Page):
    """Lists its published blog posts, newest first."""

    intro = RichTextField(blank=True)
    content_panels: ClassVar[list[Panel]] = [*Page.content_panels, FieldPanel("intro")]
    subpage_types: ClassVar[list[str]] = ["wagtail_site.BlogPage"]

    def get_context(self, request: Any, *args: Any, **kwargs: Any) -> dict[str, Any]:
        context = super().get_context(request, *args, **kwargs)
        context["posts"] = BlogPage.objects.child_of(self).live().order_by("-date")
        return context


class BlogPage(Page):
    """One post: its date, a short intro and a body of headings and paragraphs."""

    date = models.DateField("Post date")
    intro = models.CharField(max_length=250)
    body = StreamField(
        [
            ("heading", blocks.CharBlock(form_classname="title", icon="title")),
            ("paragraph", blocks.RichTextBlock()),
        ],
        blank=True,
    )
    search_fields: ClassVar[list[index.BaseField]] = [
        *Page.search_fields,
        index.SearchField("intro"),
        index.SearchField("body"),
    ]
    content_panels: ClassVar[list[Panel]] = [*Page.content_panels, FieldPanel("date"),
                                              FieldPanel("intro"), FieldPanel("body")]  # fmt: skip
    parent_page_types: ClassVar[list[str]] = ["wagtail_site.BlogIndexPage"]
    subpage_types: ClassVar[list[str]] = []
