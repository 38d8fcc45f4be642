"""Key names as people write them ("Enter", "Page Down", "Ctrl+Shift+K") and the
WebDriver keys they stand for."""

from __future__ import annotations

_KEYS = {
    "enter": "ENTER",
    "return": "RETURN",
    "tab": "TAB",
    "escape": "ESCAPE",
    "esc": "ESCAPE",
    "space": "SPACE",
    "backspace": "BACKSPACE",
    "delete": "DELETE",
    "arrowdown": "ARROW_DOWN",
    "down": "ARROW_DOWN",
    "arrowup": "ARROW_UP",
    "up": "ARROW_UP",
    "arrowleft": "ARROW_LEFT",
    "left": "ARROW_LEFT",
    "arrowright": "ARROW_RIGHT",
    "right": "ARROW_RIGHT",
    "pagedown": "PAGE_DOWN",
    "pageup": "PAGE_UP",
    "home": "HOME",
    "end": "END",
    **{f"f{i}": f"F{i}" for i in range(1, 13)},
}


_MODIFIERS = {
    "shift": "SHIFT",
    "ctrl": "CONTROL",
    "control": "CONTROL",
    "alt": "ALT",
    "option": "ALT",
    "meta": "META",
    "cmd": "COMMAND",
    "command": "COMMAND",
}


def key_value(name: str) -> str:
    """The WebDriver key for ``name`` ("Enter", "Page Down", "a"); ``ValueError`` naming
    the keys there are."""
    from selenium.webdriver.common.keys import Keys

    if len(name) == 1:
        return name
    norm = name.lower().replace(" ", "").replace("_", "").replace("-", "")
    if norm in _KEYS:
        return str(getattr(Keys, _KEYS[norm]))
    raise ValueError(
        f"press_key: unknown key {name!r}; use a single character, one of "
        + ", ".join(sorted({k for k in _KEYS if len(k) > 2}))
        + ", or a chord such as 'Shift+Enter' or 'Ctrl+A' (modifiers: "
        + ", ".join(_MODIFIERS)
        + ")"
    )


def key_chord(name: str) -> tuple[list[str], str]:
    """``(modifiers, key)`` for "Shift+Enter", "Ctrl+Shift+K", "Enter" or "+";
    ``ValueError`` for an unknown key or modifier."""
    from selenium.webdriver.common.keys import Keys

    parts = name.split("+") if len(name) > 1 else [name]
    if len(parts) > 1 and parts[-1] == "":  # "Ctrl++": the plus key itself
        parts = [*parts[:-2], "+"]
    *mods, key = parts
    modifiers = []
    for mod in mods:
        norm = mod.strip().lower()
        if norm not in _MODIFIERS:
            raise ValueError(
                f"press_key: unknown modifier {mod.strip()!r} in {name!r}; use one of "
                + ", ".join(_MODIFIERS)
            )
        modifiers.append(str(getattr(Keys, _MODIFIERS[norm])))
    return modifiers, key_value(key.strip() if len(key.strip()) else key)
