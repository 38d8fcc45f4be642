"""What synthesis sees of a page: one round trip of ``browser/observe.js``."""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING, Any
from urllib.parse import urldefrag

from pydantic import BaseModel, Field

from ..browser.chain import Chain
from ..browser.page import FAR_FRAMES, script
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
    within: str = ""
    """The chain of shadow hosts and frames the element is in (``ng-app >> iframe#x``),
    "" in the document itself."""
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
        if self.within:
            bits.append(f"inside {self.within}")
        if self.group:
            bits.append(f"item {self.group.index + 1} of {self.group.size}")
        return " ".join(bits)


class Heading(BaseModel):
    """A visible heading."""

    tag: str
    text: str
    selectors: list[Selector] = Field(default_factory=list)


class Media(BaseModel):
    """One ``<video>`` or ``<audio>`` element's playback state."""

    tag: str
    paused: bool = True
    ended: bool = False
    muted: bool = False
    volume: float = 1.0
    current_time: float = 0.0
    started: bool = False
    """It has played some of its media (``played`` is not empty)."""
    within: str = ""
    """The chain of shadow hosts and frames it is in, "" in the document itself."""


class Status(BaseModel):
    """An element that carries a state in an attribute (``data-status="idle"``)."""

    selector: str
    attr: str
    value: str = ""
    label: str = ""
    """The words that say what it is: its labels, classes and text."""


ARIA_BUDGET = 4000
"""Characters of a prompt's "What the page shows" (about a thousand tokens)."""


class Observation(BaseModel):
    """The page as synthesis sees it."""

    url: str
    title: str
    elements: list[ObservedElement] = Field(default_factory=list)
    headings: list[Heading] = Field(default_factory=list)
    media: list[Media] = Field(default_factory=list)
    statuses: list[Status] = Field(default_factory=list)
    text: str = ""
    screenshot: str | None = None
    aria: list[dict[str, Any]] = Field(default_factory=list)
    """The page as its users perceive it (:mod:`~pytest_netgent.browser.aria`'s nodes),
    its elements numbered as :attr:`elements` number them."""
    aria_cut: int = 0
    """Elements of a page too large for it that the page model did not read."""

    def element(self, mmid: int) -> ObservedElement | None:
        """The element numbered ``mmid``."""
        return next((e for e in self.elements if e.mmid == mmid), None)

    def around(self, index: int) -> set[int]:
        """The indexes of the :attr:`aria` nodes that hold node ``index`` (its parent, its
        parent's parent...)."""
        out: set[int] = set()
        parent = self.aria[index].get("p", -1)
        while isinstance(parent, int) and 0 <= parent < len(self.aria) and parent not in out:
            out.add(parent)
            parent = self.aria[parent].get("p", -1)
        return out

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

    def describe(self, near: str = "", budget: int = ARIA_BUDGET) -> str:
        """The page for a prompt: URL and title; the numbered elements an action may act
        on; then what the page shows, as its users perceive it (text, values, states),
        each of those elements in it as ``[ref=N]``, within ``budget`` characters, the
        parts that share words with ``near`` (an instruction) kept first."""
        lines = [f"URL: {self.url}", f"Title: {self.title}"]
        if self.headings and not self.aria:
            lines.append("Headings: " + " | ".join(h.text for h in self.headings[:10]))
        # the elements first, likeliest first: models (small ones most) favour what they
        # read first
        lines.append("Interactive elements:")
        lines += ["  " + e.describe() for e in self.elements]
        if self.aria:
            from ..browser.aria import from_entries

            page = from_entries(self.aria, self.aria_cut, numbered=[e.mmid for e in self.elements])
            lines.append("What the page shows ([ref=N] is element N above):")
            lines.append(page.text(budget, near.split()))
        return "\n".join(lines)


@cache
def _source() -> str:
    return script("deep.js") + script("observe.js")


def observe(driver: WebDriver, *, screenshot: bool = False, limit: int = 400) -> Observation:
    """Observe the page in one round trip (two with ``screenshot``), and one more for each
    frame of another origin (Chromium runs those in a process of their own: a page script
    cannot read them, WebDriver enters them); closed shadow roots the page's HTML declared
    are handed to the page's scripts first, through DevTools (a few round trips where the
    page has them)."""
    from ..browser.declared import adopt_declared_roots

    adopt_declared_roots(driver)  # closed roots the page's HTML declared: seen as a person does
    raw: dict[str, Any] = driver.execute_script(_source(), limit)
    if raw.get("frames"):
        _far_frames(driver, raw, limit)
    page = Observation.model_validate(raw)
    _read_aria(driver, page)
    if screenshot:
        page.screenshot = driver.get_screenshot_as_base64()
    return page


def _read_aria(driver: WebDriver, page: Observation) -> None:
    """The page model's reading of the page, its elements numbered as ``page``'s are
    (found by their first selector; those in frames of another site are not in it)."""
    from ..browser.aria import read

    refs = [
        (e.mmid, e.selectors[0].by, e.selectors[0].selector) for e in page.elements if e.selectors
    ]
    answer = read(driver, refs=refs)
    page.aria, page.aria_cut = answer["nodes"], answer["cut"]


def _far_frames(driver: WebDriver, raw: dict[str, Any], limit: int) -> None:
    """Add to ``raw`` what each frame of another origin shows, its selectors chained from
    the page (``iframe#widget >> #message``) and its boxes in the page's viewport."""
    from selenium.common.exceptions import WebDriverException

    chain = Chain(driver)
    queue = [(str(f["chain"]), int(f["x"]), int(f["y"])) for f in raw["frames"]]
    seen = 0
    try:
        while queue and seen < FAR_FRAMES and len(raw["elements"]) < limit:
            path, x, y = queue.pop(0)
            seen += 1
            try:
                if not chain.enter(path):
                    continue
                inner: dict[str, Any] = driver.execute_script(
                    _source(), limit - len(raw["elements"])
                )
            except WebDriverException:
                continue  # a frame that went away or never loaded: nothing to see in it
            finally:
                chain.leave()
            _merge(raw, inner, path, x, y)
            queue += [(f"{path} >> {f['chain']}", x + f["x"], y + f["y"]) for f in inner["frames"]]
    finally:
        chain.leave()


def _merge(raw: dict[str, Any], inner: dict[str, Any], path: str, x: int, y: int) -> None:
    """Put the observation ``inner`` of the frame at ``path`` into the page's ``raw``."""

    def chained(selectors: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [{**s, "selector": f"{path} >> {s['selector']}"} for s in selectors]

    for element in inner["elements"]:
        element["mmid"] = len(raw["elements"]) + 1
        element["selectors"] = chained(element["selectors"])
        element["within"] = f"{path} >> {element['within']}" if element["within"] else path
        if element.get("group"):
            element["group"]["selector"] = f"{path} >> {element['group']['selector']}"
        box = element["box"]
        box["x"], box["y"] = box["x"] + x, box["y"] + y
        raw["elements"].append(element)
    for heading in inner["headings"]:
        heading["selectors"] = chained(heading["selectors"])
        raw["headings"].append(heading)
    for media in inner.get("media", []):
        media["within"] = f"{path} >> {media['within']}" if media["within"] else path
        raw.setdefault("media", []).append(media)
    raw["text"] = f"{raw['text']}\n{inner['text']}".strip()[:4000]


def same_page(a: Observation, b: Observation) -> bool:
    """Whether ``a`` and ``b`` show the same: the address (its fragment aside), title,
    text, headings, elements (where they sit aside: a page scrolled), media and statuses.
    What a page read this way does not show (what was typed into a field) does not count."""

    def shown(page: Observation) -> tuple[str, dict[str, Any]]:
        left = page.model_dump(exclude=_NOT_SHOWN)
        return urldefrag(page.url)[0], left

    return shown(a) == shown(b)


_NOT_SHOWN: Any = {
    "url": True,
    "screenshot": True,
    "elements": {"__all__": {"box"}},
    "aria": True,  # what it says the rest says too; its focus and media times move on
    "aria_cut": True,
}


def distinct_texts(before: Observation, now: Observation) -> list[str]:
    """Short texts the page ``before`` showed and the page ``now`` does not, most telling
    first: headings, then what elements say, then lines of its text."""
    texts = [h.text for h in before.headings]
    texts += [e.text or e.name for e in before.elements]
    texts += before.text.splitlines()
    out: list[str] = []
    for text in (" ".join(t.split()) for t in texts):
        if 3 <= len(text) <= 60 and text not in now.text and text not in out:
            out.append(text)
    return out[:20]
