"""Running an automaton on a browser: replay, and record's healing during it.

- :mod:`.runner`: the object behind the ``netgent_browser`` fixture;
- :mod:`.wiring`: one run wired, the engine with the recorder when states are synthesised;
- :mod:`.engine`: the state machine's loop, tick by tick;
- :mod:`.recorder`: synthesis of missing and stale states, healing, the cache written;
- :mod:`.run`: what one run is: its settings, timeline and result;
- :mod:`.diagnosis`: what went wrong, told from the page;
- :mod:`.settings`: what every run of one browser shares.
"""
