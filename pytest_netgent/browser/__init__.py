"""Everything that talks to the browser: sessions, checks evaluated in the page, actions."""
