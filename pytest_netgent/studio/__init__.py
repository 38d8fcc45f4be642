"""What the user sees of a run: the trace viewer.

A trace (``trace.zip``, written by ``--netgent-trace``) holds one item's runs: the
automaton's states, the path taken, every tick's check results, screenshots and DOM
snapshots around each action, console messages and requests. :mod:`.traces` reads and
checks such a file; :mod:`.viewer` serves it, with one self-contained page
(``viewer.html``), on a local HTTP server that ``netgent show-trace PATH`` starts. The
viewer works offline: the page loads nothing but the trace itself.
"""
