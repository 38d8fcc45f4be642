"""What synthesis sees of a page: one round trip of ``browser/observe.js``."""

from __future__ import annotations

from functools import cache
from importlib import resources
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field

from ..workflow.messages import Element, Metadata

if TYPE_CHECKING:
    from selenium.webdriver.remote.webdriver import WebDriver


class Selector(BaseModel):
    """A locator verified to match exactly one element when observed."""

    by: str
    selector: str
    stable: bool = False


class Group(BaseModel):
    """An element's place in a list of similar items (results, posts)."""

    selector: str
    index: int
    size: int


class Option(BaseModel):
    """One option of a ``<select>``."""

    text: str
    value: str


class Box(BaseModel):
    """Centre and size of an element, in viewport pixels."""

    x: int
    y: int
    width: int
    height: int


class ObservedElement(BaseModel):
    """A visible interactive element, numbered by ``mmid`` for the model."""

    mmid: int
    tag: str
    role: str = ""
    name: str = ""
    label: str = ""
    text: str = ""
    attrs: dict[str, str] = Field(default_factory=dict)
    options: list[Option] | None = None
    region: str = ""
    chrome: bool = False
    """In the site's header, navigation or footer: present on every page."""
    selectors: list[Selector] = Field(default_factory=list)
    group: Group | None = None
    box: Box | None = None

    @property
    def best(self) -> Selector | None:
        """The most stable unique selector, if any."""
        return self.selectors[0] if self.selectors else None

    def to_element(self) -> Element:
        """This element as NetGent's :class:`~pytest_netgent.workflow.messages.Element` message."""
        css = next((s.selector for s in self.selectors if s.by == "css selector"), None)
        box = self.box
        return Element(
            enhanced_css_selector=css if self.best and self.best.stable else None,
            css_selector=css,
            aria_label=self.attrs.get("aria-label"),
            accessible_name=self.name or self.label or None,
            text=self.text or None,
            x=box.x if box else None,
            y=box.y if box else None,
            width=box.width if box else None,
            height=box.height if box else None,
        )

    def describe(self) -> str:
        """One line for prompts and reports."""
        bits = [f"[{self.mmid}] <{self.tag}>"]
        if self.role:
            bits.append(f"role={self.role}")
        if self.name:
            bits.append(repr(self.name))
        kind = self.attrs.get("type")
        if kind:
            bits.append(f"type={kind}")
        if self.options:
            bits.append("options=" + "|".join(o.text for o in self.options[:8]))
        if self.region:
            bits.append(f"in {self.region}")
        if self.group:
            bits.append(f"item {self.group.index + 1} of {self.group.size}")
        return " ".join(bits)


class Heading(BaseModel):
    """A visible heading."""

    tag: str
    text: str
    selectors: list[Selector] = Field(default_factory=list)


class Observation(BaseModel):
    """The page as synthesis sees it."""

    url: str
    title: str
    elements: list[ObservedElement] = Field(default_factory=list)
    headings: list[Heading] = Field(default_factory=list)
    text: str = ""
    screenshot: str | None = None

    def element(self, mmid: int) -> ObservedElement | None:
        """The element numbered ``mmid``."""
        return next((e for e in self.elements if e.mmid == mmid), None)

    def to_metadata(self, timestamp: int) -> Metadata:
        """This observation as NetGent's :class:`~pytest_netgent.workflow.messages.Metadata`."""
        return Metadata(
            timestamp=timestamp,
            elements={e.mmid: e.to_element().model_dump(exclude_none=True) for e in self.elements},
            element_description="\n".join(e.describe() for e in self.elements),
            screenshot=self.screenshot,
            url=self.url,
            title=self.title,
        )

    def describe(self) -> str:
        """The page in a few lines: URL, title, headings and numbered elements."""
        lines = [f"URL: {self.url}", f"Title: {self.title}"]
        if self.headings:
            lines.append("Headings: " + " | ".join(h.text for h in self.headings[:10]))
        lines.append("Interactive elements:")
        lines += ["  " + e.describe() for e in self.elements]
        return "\n".join(lines)


@cache
def _source() -> str:
    return resources.files("pytest_netgent.browser").joinpath("observe.js").read_text("utf-8")


def observe(driver: WebDriver, *, screenshot: bool = False, limit: int = 400) -> Observation:
    """Observe the page in one round trip (two with ``screenshot``)."""
    raw: dict[str, Any] = driver.execute_script(_source(), limit)
    page = Observation.model_validate(raw)
    if screenshot:
        page.screenshot = driver.get_screenshot_as_base64()
    return page
