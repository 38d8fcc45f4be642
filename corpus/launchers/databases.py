"""Database browsers (Datasette, sqlite-web) over a database of made-up cities."""

from __future__ import annotations

from pathlib import Path

from corpus.serving import PYTHON, Launch, app, require


def cities_db(path: Path, rows: int = 600) -> None:
    """A SQLite database of made-up cities, the same every time."""
    import sqlite3

    countries = ["Atlantis", "Borduria", "Freedonia", "Genovia", "Latveria", "Ruritania"]
    con = sqlite3.connect(path)
    con.execute(
        "create table cities (id integer primary key, name text, country text, population integer)"
    )
    con.executemany(
        "insert into cities values (?, ?, ?, ?)",
        [
            (i, f"City {i:03d}", countries[i % len(countries)], (i * 7919) % 900_000 + 1000)
            for i in range(1, rows + 1)
        ],
    )
    con.commit()
    con.close()


@app("datasette")
def _datasette(folder: Path, port: int) -> Launch:
    """Datasette: a data browser with filter forms, facets and keyset pagination."""
    require("datasette")
    cities_db(folder / "atlas.db")
    command = [PYTHON, "-m", "datasette", "serve", "atlas.db", "-h", "127.0.0.1", "-p"]
    return Launch([*command, str(port), "--setting", "default_page_size", "50"])


@app("sqlite-web")
def _sqlite_web(folder: Path, port: int) -> Launch:
    """sqlite-web: a Flask database browser (tables, content pages, a SQL query form)."""
    require("sqlite_web")
    cities_db(folder / "atlas.db")
    command = [
        PYTHON,
        "-m",
        "sqlite_web.sqlite_web",
        "-H",
        "127.0.0.1",
        "-p",
        str(port),
        "-x",
        "-r",
    ]
    return Launch([*command, "atlas.db"])
