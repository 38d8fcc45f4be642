"""A small town explorer built from Streamlit's stock widgets, as a data-app author writes one.

Served by ``streamlit run app.py`` (see corpus/launchers/streamlit_app.py). The seed is fixed:
24 made-up towns in six made-up regions, each with a population, a founding year and a
coastal flag. The sidebar filters them (region, minimum population, coastal only, a name
search); three tabs show the filtered table, a population chart and notes; a button writes a
summary; a chat at the bottom answers from the data with fixed, rule-based replies.
"""

import pandas as pd
import streamlit as st

REGIONS = ["Northmarch", "Eastvale", "Southreach", "Westmoor", "Highfold", "Lowmere"]
TOWNS = [
    ("Ashford", 0, 48200, 1123, True), ("Brindle", 0, 12800, 1310, False),
    ("Corrow", 0, 7300, 1502, True), ("Dunmere", 0, 91500, 982, False),
    ("Elmstead", 1, 23400, 1211, False), ("Fallowby", 1, 5600, 1648, False),
    ("Greywick", 1, 67100, 1067, True), ("Harrowgate", 1, 15900, 1399, False),
    ("Ivybridge", 2, 38800, 1186, True), ("Juniper Cove", 2, 9100, 1720, True),
    ("Kestrel Bay", 2, 55400, 1256, True), ("Larkspur", 2, 3900, 1834, False),
    ("Millbrook", 3, 27600, 1145, False), ("Netherby", 3, 14200, 1477, False),
    ("Oakhollow", 3, 6800, 1591, False), ("Pennock", 3, 73300, 1034, True),
    ("Quarrington", 4, 11700, 1362, False), ("Ravenscar", 4, 42900, 1198, False),
    ("Stonebury", 4, 8400, 1555, False), ("Thornfield", 4, 19600, 1423, False),
    ("Umberleigh", 5, 31200, 1239, True), ("Valewick", 5, 4700, 1781, True),
    ("Willowmere", 5, 86900, 1012, True), ("Yarrowby", 5, 16300, 1446, False),
]  # fmt: skip
DATA = pd.DataFrame(
    [(name, REGIONS[r], pop, year, coast) for name, r, pop, year, coast in TOWNS],
    columns=["Town", "Region", "Population", "Founded", "Coastal"],
)


def reply(prompt: str, shown: pd.DataFrame) -> str:
    """A fixed answer to a chat message, from the towns shown (no model)."""
    text = prompt.strip().lower()
    if text in ("help", "?"):
        return "Ask me: count, largest, smallest, or the name of a town."
    if "count" in text or "how many" in text:
        return f"{len(shown)} towns match the current filters."
    if "largest" in text or "biggest" in text:
        if shown.empty:
            return "No town matches the current filters."
        top = shown.loc[shown["Population"].idxmax()]
        return f"The largest is {top['Town']} with {top['Population']:,} people."
    if "smallest" in text:
        if shown.empty:
            return "No town matches the current filters."
        low = shown.loc[shown["Population"].idxmin()]
        return f"The smallest is {low['Town']} with {low['Population']:,} people."
    for row in DATA.itertuples():
        if row.Town.lower() in text:
            where = f"{row.Town} is in {row.Region}, founded {row.Founded}"
            return f"{where}, {row.Population:,} people."
    return f"You said: {prompt.strip()}"


st.set_page_config(page_title="Town explorer", layout="wide")
st.title("Town explorer")

with st.sidebar:
    st.header("Filters")
    region = st.selectbox("Region", ["All regions", *REGIONS])
    minimum = st.slider("Minimum population", 0, 100000, 0, step=5000)
    coastal = st.checkbox("Coastal towns only")
    search = st.text_input("Search towns", placeholder="Part of a town name")

shown = DATA[DATA["Population"] >= minimum]
if region != "All regions":
    shown = shown[shown["Region"] == region]
if coastal:
    shown = shown[shown["Coastal"]]
if search.strip():
    shown = shown[shown["Town"].str.contains(search.strip(), case=False, regex=False)]

left, right = st.columns(2)
left.metric("Towns shown", len(shown), delta=len(shown) - len(DATA))
right.metric("Total population", f"{int(shown['Population'].sum()):,}")

table, chart, notes = st.tabs(["Table", "Chart", "Notes"])
with table:
    st.dataframe(shown, hide_index=True, width="stretch")
    st.caption(f"{len(shown)} of {len(DATA)} towns")
with chart:
    st.bar_chart(shown, x="Town", y="Population")
with notes:
    st.markdown(
        f"The data set holds **{len(DATA)} towns** in **{len(REGIONS)} regions**: "
        + ", ".join(REGIONS)
        + ". Populations are made up; so are the towns."
    )

if st.button("Summarize selection", type="primary"):
    if shown.empty:
        st.warning("No town matches the current filters.")
    else:
        oldest = shown.loc[shown["Founded"].idxmin()]
        st.success(
            f"Summary: {len(shown)} towns, {int(shown['Population'].sum()):,} people; "
            f"the oldest is {oldest['Town']} (founded {oldest['Founded']})."
        )

st.subheader("Ask about the towns")
if "messages" not in st.session_state:
    st.session_state.messages = [("assistant", "Hello! Type help to see what I can answer.")]
if prompt := st.chat_input("Ask about the towns"):
    st.session_state.messages.append(("user", prompt))
    st.session_state.messages.append(("assistant", reply(prompt, shown)))
for role, content in st.session_state.messages:
    with st.chat_message(role):
        st.write(content)
