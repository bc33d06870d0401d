"""Static SVG bar charts for the HTML report, written by hand.

Two kinds of chart are all the report needs: one bar per item, and bars
grouped by category. Writing their SVG here, with ElementTree (which escapes
every label), keeps the report free of a plotting library (matplotlib would
add it, Pillow, fontTools, kiwisolver and contourpy to the install, and its
SVG draws each glyph as a path) and makes the same results give the same
bytes. Each bar is a ``<rect class="bar">`` with a ``<title>``, which a
browser shows on hover, and ``data-`` attributes a test or a script can read.
"""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from collections.abc import Callable, Sequence
from dataclasses import dataclass

WIDTH = 760
HEIGHT = 260
_LEFT, _RIGHT, _TOP, _BOTTOM = 56, 12, 28, 58  # margins: axis labels left, item labels below
_FONT = "font-family:system-ui,sans-serif;font-size:11px"


@dataclass(frozen=True)
class Bar:
    """One bar: its label under the axis, its value, its hover text and its CSS class."""

    label: str
    value: float
    title: str
    kind: str = "neutral"


@dataclass(frozen=True)
class Series:
    """One run's values over a grouped chart's categories."""

    label: str
    values: Sequence[float]
    colour: str


COLOURS = {
    "better": "#2e7d32",
    "worse": "#c62828",
    "same": "#9e9e9e",
    "neutral": "#1565c0",
}
SERIES_COLOURS = ("#1565c0", "#ef6c00")


def bar_chart(bars: Sequence[Bar], *, title: str, axis: str, signed: bool, name: str) -> str:
    """One bar per item, left to right; ``signed`` centres zero (differences), else 0 to 1.

    The scale of a signed chart is the largest absolute value (at least
    0.05), so small differences stay visible; labels are drawn when the bars
    are wide enough to hold them.
    """
    svg = _svg(title, name, len(bars))
    top = max([abs(bar.value) for bar in bars] + [0.05]) if signed else 1.0
    low = -top if signed else 0.0
    plot_height = HEIGHT - _TOP - _BOTTOM
    scale = plot_height / (top - low)

    def y(value: float) -> float:
        return _TOP + (top - value) * scale

    _axis(svg, [low, low / 2, 0.0, top / 2, top] if signed else [0, 0.25, 0.5, 0.75, 1], y)
    _text(svg, 14, _TOP + plot_height / 2, axis, rotate=True, anchor="middle")
    slot = (WIDTH - _LEFT - _RIGHT) / max(len(bars), 1)
    width = max(slot * 0.8, 1.0)
    for index, bar in enumerate(bars):
        x = _LEFT + index * slot + (slot - width) / 2
        base, tip = y(0.0), y(bar.value)
        height = max(abs(tip - base), 1.0)  # a zero still shows as a hairline
        rect = ET.SubElement(
            svg,
            "rect",
            {
                "class": f"bar {bar.kind}",
                "x": _n(x),
                "y": _n(min(tip, base) if bar.value else base - 0.5),
                "width": _n(width),
                "height": _n(height),
                "fill": COLOURS[bar.kind],
                "data-label": bar.label,
                "data-value": f"{bar.value:.6g}",
            },
        )
        ET.SubElement(rect, "title").text = bar.title
        if slot >= 9:
            label_y = HEIGHT - _BOTTOM + 6
            _text(svg, x + width / 2, label_y, bar.label, rotate=True, anchor="end", small=True)
    return ET.tostring(svg, encoding="unicode")


def grouped_bar_chart(
    categories: Sequence[str], series: Sequence[Series], *, title: str, axis: str, name: str
) -> str:
    """Bars side by side per category, one colour per series, with a legend."""
    svg = _svg(title, name, len(categories))
    step = _step(max([v for s in series for v in s.values] + [1.0]))
    top = step * math.ceil(max([v for s in series for v in s.values] + [1.0]) / step)
    plot_height = HEIGHT - _TOP - _BOTTOM

    def y(value: float) -> float:
        return _TOP + (top - value) * plot_height / top

    _axis(svg, [step * i for i in range(round(top / step) + 1)], y, whole=True)
    _text(svg, 14, _TOP + plot_height / 2, axis, rotate=True, anchor="middle")
    slot = (WIDTH - _LEFT - _RIGHT) / max(len(categories), 1)
    width = slot * 0.8 / max(len(series), 1)
    for index, category in enumerate(categories):
        for position, one in enumerate(series):
            value = one.values[index]
            x = _LEFT + index * slot + slot * 0.1 + position * width
            rect = ET.SubElement(
                svg,
                "rect",
                {
                    "class": "bar",
                    "x": _n(x),
                    "y": _n(y(value)),
                    "width": _n(width),
                    "height": _n(y(0) - y(value)),
                    "fill": one.colour,
                    "data-label": category,
                    "data-series": one.label,
                    "data-value": f"{value:g}",
                },
            )
            ET.SubElement(rect, "title").text = f"{one.label}, {category}: {value:g}"
        _text(svg, _LEFT + (index + 0.5) * slot, HEIGHT - _BOTTOM + 16, category, anchor="middle")
    for position, one in enumerate(series):  # the legend, top right
        x = WIDTH - _RIGHT - 240 * (len(series) - position)
        ET.SubElement(
            svg, "rect", {"x": _n(x), "y": "6", "width": "10", "height": "10", "fill": one.colour}
        )
        _text(svg, x + 14, 15, _short(one.label, 36), anchor="start")
    return ET.tostring(svg, encoding="unicode")


def _svg(title: str, name: str, items: int) -> ET.Element:
    svg = ET.Element(
        "svg",
        {
            "xmlns": "http://www.w3.org/2000/svg",
            "class": f"chart {name}",
            "viewBox": f"0 0 {WIDTH} {HEIGHT}",
            "width": str(WIDTH),
            "height": str(HEIGHT),
            "role": "img",
            "data-items": str(items),
        },
    )
    ET.SubElement(svg, "title").text = title
    return svg


def _axis(
    svg: ET.Element, ticks: Sequence[float], y: Callable[[float], float], *, whole: bool = False
) -> None:
    """Horizontal grid lines with their values; the zero line darker."""
    for tick in ticks:
        at = y(tick)
        colour = "#555" if tick == 0 else "#ddd"
        ET.SubElement(
            svg,
            "line",
            {
                "x1": str(_LEFT),
                "x2": str(WIDTH - _RIGHT),
                "y1": _n(at),
                "y2": _n(at),
                "stroke": colour,
                "stroke-width": "1",
            },
        )
        shown = f"{tick:.0f}" if whole else f"{tick:+.2f}".replace("+0.00", "0")
        _text(svg, _LEFT - 6, at + 4, shown, anchor="end")


def _text(
    svg: ET.Element,
    x: float,
    y: float,
    text: str,
    *,
    anchor: str,
    rotate: bool = False,
    small: bool = False,
) -> None:
    attributes = {"x": _n(x), "y": _n(y), "text-anchor": anchor, "style": _FONT}
    if small:
        attributes["style"] = _FONT.replace("11px", "9px")
    if rotate:
        attributes["transform"] = f"rotate(-90 {_n(x)} {_n(y)})"
    ET.SubElement(svg, "text", attributes).text = text


def _step(largest: float) -> float:
    """A round tick step (1, 2 or 5 times a power of ten) giving at most 5 intervals."""
    power = 10 ** math.floor(math.log10(largest / 5)) if largest > 5 else 1
    return next(power * m for m in (1, 2, 5, 10) if largest / (power * m) <= 5)


def _short(text: str, most: int) -> str:
    return text if len(text) <= most else "…" + text[-(most - 1) :]


def _n(value: float) -> str:
    """A coordinate with two decimals at most: smaller files, the same drawing."""
    return f"{value:.2f}".rstrip("0").rstrip(".")
