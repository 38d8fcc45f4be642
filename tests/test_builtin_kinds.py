"""The kinds of steps the builtin synthesiser reads beyond literal names: media and count
triggers, sentences a message says, owned and placed targets, record ids in addresses,
and a verification replay the site answered otherwise. End to end on the corpus's real
applications in tests/test_corpus.py."""

from __future__ import annotations

import pytest

from pytest_netgent.replay.run import TimelineEvent
from pytest_netgent.replay.verify import answered_otherwise
from pytest_netgent.synthesis import Context, NothingApplies
from pytest_netgent.synthesis.builtin import BuiltinSynthesiser
from pytest_netgent.synthesis.counts import WrongCount, count_trigger
from pytest_netgent.synthesis.media import DEEP, LIGHT, NoMedia, media_trigger
from pytest_netgent.synthesis.observation import Media, Observation, Status
from pytest_netgent.synthesis.statuses import OtherStatus, status_trigger
from pytest_netgent.synthesis.triggers import NotHolding
from pytest_netgent.synthesis.words import parse_target
from pytest_netgent.workflow.spec import StateSpec

URL = "http://127.0.0.1:8000/index.html"


def page(*media: Media, text: str = "", url: str = URL) -> Observation:
    return Observation(url=url, title="t", media=list(media), text=text)


def test_media_triggers_read_the_media_elements_state() -> None:
    ready = Media(tag="video")
    playing = Media(tag="video", paused=False, current_time=3.2, started=True)
    paused = Media(tag="video", current_time=3.2, started=True, muted=True)
    check = media_trigger("The player has not started", page(ready))
    assert check is not None and check.type == "script"
    assert check.params["script"] == (
        f"((v) => v.length > 0 && v.every((m) => m.paused && m.played.length === 0))({LIGHT})"
    )
    with pytest.raises(NoMedia, match=r"no media element has not started .*playing at 3\.2 s"):
        media_trigger("The player has not started", page(playing))
    assert media_trigger("The video is playing", page(playing)) is not None
    assert media_trigger("The video has played 2 seconds", page(playing)) is not None
    with pytest.raises(NoMedia, match="has played 5 s"):
        media_trigger("The video has played 5 seconds", page(playing))
    assert media_trigger("The player is paused after starting", page(paused)) is not None
    assert media_trigger("The volume control shows muted", page(paused)) is not None
    with pytest.raises(NoMedia, match="has sound"):
        media_trigger("The volume is on", page(paused))
    with pytest.raises(NoMedia, match="has no video or audio element"):
        media_trigger("The video is playing", page())
    # a player in a shadow root or a frame: the check looks there too
    inside = Media(tag="video", paused=False, within="ng-player")
    deep = media_trigger("The video is playing", page(inside))
    assert deep is not None and DEEP in deep.params["script"]
    # not about media: other readings apply
    assert media_trigger("The Play button is visible", page(ready)) is None


def test_count_triggers_hold_on_that_number_only() -> None:
    results = page(text="Select user to change\n1 result (3 total)\n1 user")
    check = count_trigger("One user is listed", results)
    assert check is not None and check.type == "script"
    assert "1 user(?:es|s)?" in check.params["script"]
    assert count_trigger("There is exactly 1 user", results) is not None
    with pytest.raises(WrongCount, match="the page counts 11 of 'user', not 1"):
        count_trigger("One user is listed", page(text="11 users"))
    assert count_trigger("3 entries are shown", page(text="3 entries")) is not None
    # no count of those items: the trigger may name an element instead
    assert count_trigger("One user is listed", page(text="Users")) is None
    assert count_trigger("The user is listed", results) is None


@pytest.fixture
def ctx() -> Context:
    return Context(workflow="w", base_url="http://127.0.0.1:8000")


def test_a_message_sentence_holds_by_the_words_the_page_shows(ctx: Context) -> None:
    synth = BuiltinSynthesiser()
    saved = page(text="The group “night-shift” was added successfully.\nSelect group to change")
    spec = StateSpec(name="Added", triggers=["A message says the group was added successfully"])
    checks = synth.define_triggers(ctx, saved, spec)
    # the longest run of its words, and its other name the page shows: every word stands
    # for something checked ("was added successfully" alone holds for a user too)
    assert [c.params.get("text") for c in checks] == ["was added successfully", "group"]
    assert synth.verdict(ctx, saved, spec) == "yes"
    assert synth.verdict(ctx, page(text="Select group to change"), spec) == "unknown"


def test_a_state_waited_for_names_every_state_weighed(ctx: Context) -> None:
    synth = BuiltinSynthesiser()
    out = StateSpec(name="Output", triggers=["The cell output shows 42"], end="ran")
    playing = StateSpec(name="Playing", triggers=["The video is playing"])
    ctx.order = ["Output", "Playing"]
    with pytest.raises(NothingApplies) as caught:
        synth.select_state(ctx, page(Media(tag="video")), [out, playing])
    reason = caught.value.reason
    assert "'Output' (no, an end state: 'The cell output shows 42': the page does not" in reason
    assert "'Playing' (no: 'The video is playing': no media element is playing" in reason


def test_an_end_state_holds_by_its_literal_triggers_when_others_do_not_parse(
    ctx: Context,
) -> None:
    synth = BuiltinSynthesiser()
    end = StateSpec(
        name="User page",
        triggers=["'Change user' is shown", "The Username field holds the user's name"],
        end="opened",
    )
    listing = StateSpec(name="User list", triggers=["The search box is visible"])
    ctx.order, ctx.history = ["Search", "User list", "User page"], ["Search"]
    user = page(text="Change user\ncarol", url="http://127.0.0.1:8000/admin/auth/user/4/change/")
    assert synth.verdict(ctx, user, end) == "partial"
    # the state declared next cannot be read here; the later one is verified
    assert synth.select_state(ctx, user, [listing, end]).name == "User page"
    with pytest.raises(NotHolding):
        synth.define_triggers(ctx, page(text="Users"), end)


def test_a_record_id_in_the_address_is_any_id(ctx: Context) -> None:
    synth = BuiltinSynthesiser()
    spec = StateSpec(name="User", triggers=["The URL is the user's page"])
    url = "http://127.0.0.1:8000/admin/auth/user/4/change/?_changelist_filters=q%3Dcarol"
    (address, *_) = synth.define_triggers(ctx, page(url=url), spec)
    assert address.params == {
        "url": r"/admin/auth/user/[^/]+/change/(?:[?#]|$)",
        "match": "pattern",
    }
    run = f"{url.split('/user/')[0]}/user/8d3f0a2b-77c1/change/"
    (uuid, *_) = synth.define_triggers(ctx, page(url=run), spec)
    assert uuid.params["url"] == address.params["url"]


def test_targets_owned_by_an_item_or_placed_in_a_region() -> None:
    t = parse_target("the first row's View link")
    assert (t.phrase, t.role, t.ordinal, t.owner) == ("View", "link", 0, "row")
    t = parse_target("the last row's 'Edit' button")
    assert (t.phrase, t.quoted, t.ordinal, t.owner) == ("Edit", True, -1, "row")
    t = parse_target("the first cell's editor")
    assert (t.phrase, t.role, t.role_only, t.owner) == ("editor", "text", True, "cell")
    t = parse_target("analysis.ipynb in the file list")
    assert (t.phrase, t.container) == ("analysis.ipynb", "file list")
    t = parse_target("the 'Sign in' link in the navigation")
    assert (t.phrase, t.quoted, t.role, t.container) == ("Sign in", True, "link", "navigation")
    # a name, not an owner; words in quotes are never split
    assert parse_target("Today's picks").phrase == "Today's picks"
    assert parse_target("the 'Log in to the site' button").phrase == "Log in to the site"


def _events(*path: tuple[str, str]) -> list[TimelineEvent]:
    return [TimelineEvent(event="state", at="", elapsed=0.0, state=s, url=u) for s, u in path]


def test_a_verification_replay_the_site_answered_otherwise_is_told_apart() -> None:
    form = ("Form", "/group/add/")
    recorded = _events(("Login", "/login/"), ("List", "/group/"), form, ("Added", "/group/"))
    # the same states on the same pages, until the site answered the form otherwise
    replay = _events(("Login", "/login/"), ("List", "/group/"), form, form, form)
    assert answered_otherwise(recorded, replay) == (
        "verified by replay up to state 'Form'; after its actions the site answered with "
        "/group/add/ instead of /group/"
    )
    # another state on the page the recording saw: the states are at fault
    assert answered_otherwise(recorded, _events(("Login", "/login/"), ("Form", "/group/"))) == ""
    # the replay went elsewhere from its first page: nothing was verified
    assert answered_otherwise(recorded, _events(("Form", "/group/add/"))) == ""


def test_status_triggers_read_an_attribute_the_subject_carries(ctx: Context) -> None:
    indicator = Status(
        selector="div.jp-Notebook-ExecutionIndicator",
        attr="data-status",
        value="idle",
        label="Kernel status jp-Notebook-ExecutionIndicator Kernel status: Idle",
    )
    check = status_trigger("The kernel is idle", page_with(indicator))
    assert check is not None and check.params == {
        "by": "css selector",
        "selector": 'div.jp-Notebook-ExecutionIndicator[data-status="idle"]',
        "visible": False,
    }
    busy = indicator.model_copy(update={"value": "busy"})
    with pytest.raises(OtherStatus, match="the kernel is busy, not idle"):
        status_trigger("The kernel is idle", page_with(busy))
    # nothing on the page says what a "call" is, and "shown" is another reading
    assert status_trigger("The call is connected", page_with(indicator)) is None
    assert status_trigger("The kernel is shown", page_with(indicator)) is None


def page_with(*statuses: Status) -> Observation:
    return Observation(url=URL, title="t", statuses=list(statuses))


def test_keys_with_modifiers_are_pressed_not_clicked(ctx: Context) -> None:
    synth = BuiltinSynthesiser()
    spec = StateSpec(name="S", actions=["x"], end="done")
    pairs = [("Press Shift+Enter", "Shift+Enter"), ("Press ctrl + k", "Ctrl+k"),
             ("Press the Page Down key", "PageDown"), ("Press Enter", "Enter")]  # fmt: skip
    for written, key in pairs:
        (action,), _ = synth.resolve_instruction(ctx, page(), spec, written, [])
        assert (action.type, action.params) == ("press_key", {"key": key}), written
