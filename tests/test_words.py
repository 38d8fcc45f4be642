"""The words the builtin synthesiser matches by: Snowball English stems, stop words and
synonyms, the same for every inflection and the same on every run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_netgent.synthesis.words import canon, tokens

ROOT = Path(__file__).resolve().parent.parent

# A long page of prose in many inflections, none of them a synonym or a stop word, so
# that canon() is the Snowball stem of each word as written.
PARAGRAPH = (
    "Streaming networks measured latency while viewers played videos, paused them, "
    "skipped adverts and replayed highlights. Engineers compared caches, noticed "
    "congestion, and tuned buffers during evening broadcasts; status dashboards showed "
    "news channels, weather reports and sports scores updating quickly."
)
PAGE = " ".join(f"{PARAGRAPH} Section {n}: clicked {n} times." for n in range(200))


def test_stop_words_are_dropped_whatever_their_stem() -> None:
    # "this" was once stemmed to "thi" before the stop words were looked up
    assert tokens("this that your") == set()
    assert tokens("Click this link") == {"click", "link"}
    assert tokens("Open your inbox and read that message") == tokens("open inbox and read message")


def test_matches_and_match_are_one_word() -> None:
    assert tokens("matches") == tokens("match") == tokens("Match")


def test_searches_and_searching_fold_to_search() -> None:
    assert {canon(w) for w in ("search", "searches", "searching", "searched")} == {"search"}


def test_status_keeps_its_s() -> None:
    assert canon("status") == canon("Statuses") == "status"
    assert canon("status") not in ("statu", "stat")
    assert tokens("Status") != tokens("stats")


def test_news_is_not_new() -> None:
    assert canon("news") == "news"
    assert tokens("News") != tokens("New")
    assert tokens("Latest news") == {"latest", "news"}


@pytest.mark.parametrize(
    "forms",
    [
        ("play", "plays", "playing", "played"),
        ("click", "clicks", "clicking", "clicked"),
        ("type", "types", "typing", "typed"),
        ("add", "adds", "adding", "added"),  # "ad" before Snowball 3.0
        ("like", "likes", "liking", "liked"),
        ("watch", "watches", "watching", "watched"),
        ("mute", "mutes", "muting", "muted"),
    ],
    ids=lambda forms: forms[0],
)
def test_action_words_fold_in_every_inflection(forms: tuple[str, ...]) -> None:
    assert {canon(form) for form in forms} == {canon(forms[0])}
    assert len({canon(form.capitalize()) for form in forms}) == 1


@pytest.mark.parametrize(
    ("written", "canonical"),
    [
        ("Signed in", "Log in"),
        ("Logging out", "Sign out"),
        ("Entries", "Article"),
        ("Looking up", "Search"),
        ("Finding", "search"),
        ("Matches", "Results"),
        ("Sending", "Submit"),
    ],
)
def test_synonyms_fold_whatever_their_inflection(written: str, canonical: str) -> None:
    assert canon(written) == canon(canonical)
    assert tokens(f"the {written} button") == tokens(f"{canonical} button")


def test_each_of_repeated_synonyms_folds() -> None:
    # the space between two members once belonged to the first, so the second stayed
    assert canon("hit hit") == canon("result result")
    assert tokens("Hits, hits and matches") == {"result", "and"}


def test_placeholders_and_names_keep_their_letters() -> None:
    """A word with digits, braces or underscores is a name: "60fps" is not a plural."""
    assert canon("Type {queries} into the field") == "type {queries} into the field"
    assert tokens("720p videos at 60fps, 128kbps") == {"720p", "video", "at", "60fps", "128kbps"}


def test_the_stems_of_a_long_page_are_the_same_on_every_run() -> None:
    """The same page gives the same words: twice here, and in two fresh interpreters with
    other hash seeds; and they are Snowball's stems of the words as written."""
    from snowballstemmer.english_stemmer import EnglishStemmer

    first = canon(PAGE)
    assert canon(PAGE) == first
    assert tokens(PAGE) == tokens(PAGE) == set(first.split())
    stemmer = EnglishStemmer()
    words = PAGE.lower().replace(",", " ").replace(".", " ").replace(";", " ").replace(":", " ")
    assert first == " ".join(w if w.isdigit() else stemmer.stemWord(w) for w in words.split())
    script = (
        "import json, sys\n"
        "from pytest_netgent.synthesis.words import canon, tokens\n"
        "page = sys.stdin.read()\n"
        "print(json.dumps([canon(page), sorted(tokens(page))]))\n"
    )
    for seed in ("0", "1"):
        done = subprocess.run(
            [sys.executable, "-c", script],
            input=PAGE, capture_output=True, text=True, check=False, timeout=120, cwd=ROOT,
            env={**os.environ, "PYTHONHASHSEED": seed},
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout) == [first, sorted(tokens(PAGE))]


def test_the_stemmer_is_imported_when_first_used_not_at_start() -> None:
    """pytest's start (the plugin, the synthesis package) leaves snowballstemmer
    unimported; the first words read bring it in."""
    script = (
        "import sys\n"
        "import pytest_netgent.plugin\n"
        "from pytest_netgent.synthesis import words\n"
        "from pytest_netgent.synthesis.builtin import BuiltinSynthesiser\n"
        "assert 'snowballstemmer' not in sys.modules, 'imported at start'\n"
        "assert words.tokens('Click this') == {'click'}, words.tokens('Click this')\n"
        "assert 'snowballstemmer' in sys.modules, 'never used'\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=False,
        timeout=120, cwd=ROOT,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
