"""A small city dashboard built from Panel's stock widgets, as a Panel user writes one.

Served by ``panel serve app.py`` (see corpus/__init__.py): a search box and button, a
country filter, and two tabs, one with the results and one with a short help text.
"""

import panel as pn

pn.extension()

CITIES = [
    ("Amsterdam", "Netherlands"),
    ("Antwerp", "Belgium"),
    ("Barcelona", "Spain"),
    ("Berlin", "Germany"),
    ("Bern", "Switzerland"),
    ("Bordeaux", "France"),
    ("Bremen", "Germany"),
    ("Brussels", "Belgium"),
    ("Geneva", "Switzerland"),
    ("Hamburg", "Germany"),
    ("Lisbon", "Portugal"),
    ("Lyon", "France"),
    ("Madrid", "Spain"),
    ("Marseille", "France"),
    ("Munich", "Germany"),
    ("Paris", "France"),
    ("Porto", "Portugal"),
    ("Rotterdam", "Netherlands"),
    ("Seville", "Spain"),
    ("Zurich", "Switzerland"),
]
COUNTRIES = ["All", *sorted({country for _, country in CITIES})]

city = pn.widgets.TextInput(name="City", placeholder="Part of a city name")
country = pn.widgets.Select(name="Country", options=COUNTRIES, value="All")
search = pn.widgets.Button(name="Search", button_type="primary")
summary = pn.pane.Markdown("Type a city and press Search.")
results = pn.pane.Markdown("")


def run_search(event=None):
    text = city.value.strip()
    found = [
        (name, where)
        for name, where in CITIES
        if text.lower() in name.lower() and country.value in ("All", where)
    ]
    label = text or "all cities"
    if country.value != "All":
        label += f" in {country.value}"
    summary.object = f"{len(found)} results for {label}"
    results.object = "\n".join(f"- {name} ({where})" for name, where in found) or "No city."


search.on_click(run_search)

# dynamic: a tab's content is rendered when the tab is shown (with every tab rendered,
# Bokeh laid out the hidden one visibly for a moment while the page loaded)
tabs = pn.Tabs(
    ("Results", pn.Column(summary, results)),
    ("About", pn.pane.Markdown(f"A list of {len(CITIES)} European cities.")),
    dynamic=True,
)

pn.Column(
    "# City dashboard",
    pn.Row(city, country),
    search,
    tabs,
).servable(title="City dashboard")
