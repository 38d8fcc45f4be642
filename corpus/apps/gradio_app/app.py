"""A small plant-nursery catalogue built from Gradio's stock components, as a Gradio user
writes one.

Run by ``python app.py PORT`` (see corpus/launchers/gradio_app.py) in the run's folder. The
seed is fixed: 20 made-up plants in five categories, each with a price, a stock count and
a flowering season. The "Catalogue" tab filters them (category dropdown, price slider,
season checkboxes, sort radio, Filter button) into a table and a summary; the "Assistant"
tab is a chatbot with fixed, rule-based replies; the "Media" tab shows a picture and a
2-second clip, both drawn here at start (the clip with PyAV, VP8 in WebM).
"""

from __future__ import annotations

import sys
from pathlib import Path

import av
import gradio as gr
import numpy as np
import pandas as pd
from PIL import Image, ImageDraw

CATEGORIES = ["Trees", "Shrubs", "Herbs", "Vegetables", "Flowers"]
SEASONS = ["Spring", "Summer", "Autumn", "Winter"]
PLANTS = [
    ("Silver birch", 0, 34.0, 12, 0), ("Japanese maple", 0, 58.5, 4, 2),
    ("Crab apple", 0, 41.0, 7, 0), ("Rowan", 0, 29.9, 0, 1),
    ("Lavender", 1, 9.5, 40, 1), ("Hydrangea", 1, 18.0, 15, 1),
    ("Box hedge", 1, 6.2, 120, 0), ("Witch hazel", 1, 24.0, 6, 3),
    ("Basil", 2, 3.1, 60, 1), ("Rosemary", 2, 4.5, 35, 0),
    ("Thyme", 2, 3.8, 0, 1), ("Mint", 2, 2.9, 80, 1),
    ("Tomato 'Gardener's Delight'", 3, 2.5, 90, 1), ("Courgette", 3, 2.8, 45, 1),
    ("Runner bean", 3, 2.2, 70, 1), ("Kale", 3, 2.0, 0, 3),
    ("Tulip bulbs (10)", 4, 7.9, 55, 0), ("Dahlia", 4, 11.5, 22, 2),
    ("Snowdrop bulbs (20)", 4, 8.4, 30, 3), ("Sunflower", 4, 1.9, 100, 1),
]  # fmt: skip
DATA = pd.DataFrame(
    [(n, CATEGORIES[c], p, s, SEASONS[w]) for n, c, p, s, w in PLANTS],
    columns=["Plant", "Category", "Price", "Stock", "Season"],
)


def filter_plants(
    category: str, max_price: float, seasons: list[str], sort: str
) -> tuple[pd.DataFrame, str]:
    """The plants matching the filters, sorted, and a one-line summary of them."""
    shown = DATA[(DATA["Price"] <= max_price) & DATA["Season"].isin(seasons)]
    if category != "All categories":
        shown = shown[shown["Category"] == category]
    shown = shown.sort_values(sort, ascending=sort != "Stock", kind="stable")
    in_stock = int((shown["Stock"] > 0).sum())
    summary = f"**{len(shown)} plants** match ({in_stock} in stock)."
    return shown, summary


def reply(message: str, history: list[dict[str, str]]) -> tuple[str, list[dict[str, str]]]:
    """Appends the user's message and a fixed answer (no model) to the chat."""
    text = message.strip()
    lowered = text.lower()
    if not text:
        return "", history
    if lowered in ("help", "?"):
        answer = "Ask me: cheapest, out of stock, or the name of a plant."
    elif "cheapest" in lowered:
        row = DATA.loc[DATA["Price"].idxmin()]
        answer = f"The cheapest plant is {row['Plant']} at £{row['Price']:.2f}."
    elif "out of stock" in lowered:
        names = ", ".join(DATA[DATA["Stock"] == 0]["Plant"])
        answer = f"Out of stock: {names}."
    else:
        found = [r for r in DATA.itertuples() if r.Plant.lower().split(" (")[0] in lowered]
        if found:
            r = found[0]
            answer = f"{r.Plant} ({r.Category}): £{r.Price:.2f}, {r.Stock} in stock."
        else:
            answer = f"You said: {text}"
    turn = [{"role": "user", "content": text}, {"role": "assistant", "content": answer}]
    return "", [*history, *turn]


def picture() -> Image.Image:
    """A bar chart of the stock of each category, drawn with PIL."""
    image = Image.new("RGB", (480, 270), "white")
    draw = ImageDraw.Draw(image)
    totals = DATA.groupby("Category", sort=False)["Stock"].sum()
    colours = ["#2e7d32", "#558b2f", "#9e9d24", "#ef6c00", "#ad1457"]
    for i, (name, total) in enumerate(totals.items()):
        x = 30 + i * 90
        draw.rectangle((x, 240 - int(total * 0.8), x + 60, 240), fill=colours[i])
        draw.text((x, 246), str(name), fill="black")
        draw.text((x + 18, 226 - int(total * 0.8)), str(int(total)), fill="black")
    return image


def clip(path: Path) -> str:
    """A 2-second VP8 clip of a square crossing a gradient (48 frames at 24 fps)."""
    with av.open(str(path), "w") as container:
        stream = container.add_stream("libvpx", rate=24)
        stream.width, stream.height, stream.pix_fmt = 320, 180, "yuv420p"
        ramp = np.linspace(40, 200, 320, dtype=np.uint8)
        for index in range(48):
            frame = np.zeros((180, 320, 3), np.uint8)
            frame[:, :, 1] = ramp
            frame[:, :, 2] = 255 - ramp
            x = index * 5
            frame[60:120, x : x + 60] = (250, 220, 40)
            picture = av.VideoFrame.from_ndarray(frame, format="rgb24")
            container.mux(stream.encode(picture))
        container.mux(stream.encode(None))
    return str(path)


def build() -> gr.Blocks:
    """The page: a header and the three tabs."""
    with gr.Blocks(title="Nursery catalogue") as demo:
        gr.Markdown("# Nursery catalogue")
        with gr.Tabs():
            with gr.Tab("Catalogue"):
                with gr.Row():
                    category = gr.Dropdown(
                        ["All categories", *CATEGORIES], value="All categories", label="Category"
                    )
                    max_price = gr.Slider(1, 60, value=60, step=1, label="Maximum price (£)")
                with gr.Row():
                    seasons = gr.CheckboxGroup(SEASONS, value=SEASONS, label="Flowering season")
                    sort = gr.Radio(["Plant", "Price", "Stock"], value="Plant", label="Sort by")
                button = gr.Button("Filter", variant="primary")
                first, text = filter_plants("All categories", 60, SEASONS, "Plant")
                summary = gr.Markdown(text)
                table = gr.Dataframe(first, label="Plants", interactive=False)
                inputs = [category, max_price, seasons, sort]
                button.click(filter_plants, inputs, [table, summary])
            with gr.Tab("Assistant"):
                chatbot = gr.Chatbot(
                    [{"role": "assistant", "content": "Hello! Type help to see what I know."}],
                    label="Nursery assistant",
                )
                message = gr.Textbox(label="Message", placeholder="Ask about the plants")
                send = gr.Button("Send")
                message.submit(reply, [message, chatbot], [message, chatbot])
                send.click(reply, [message, chatbot], [message, chatbot])
            with gr.Tab("Media"):
                gr.Image(picture(), label="Stock by category", format="png")
                gr.Video(clip(Path.cwd() / "greenhouse.webm"), label="Greenhouse tour", height=320)
    return demo


if __name__ == "__main__":
    theme = gr.themes.Default(
        font=[gr.themes.Font("sans-serif")], font_mono=[gr.themes.Font("monospace")]
    )
    build().launch(
        server_name="127.0.0.1", server_port=int(sys.argv[1]), share=False,
        prevent_thread_lock=False, ssr_mode=False, pwa=False, mcp_server=False,
        enable_monitoring=False, footer_links=["api", "settings"], theme=theme,
    )  # fmt: skip
