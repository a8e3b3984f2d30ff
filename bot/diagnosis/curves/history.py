"""A metric's values saved as a list, one value a line: Keras' History written as JSON (`json.dump(history.history,
f, indent=...)`, a `history.json` committed beside the model), and the same dict pretty-printed by Python.

    "val_loss": [
        0.6931,
        0.6214,
        ...
    ],

Each value is the metric at the end of one epoch, in order: epoch 1, 2, ... The key names the series as any printed
key does (`loss`, `val_accuracy`). Every list's points carry their epoch, so a list after another starting again at
epoch 1 is another metric of the same run, never a second run (bot.diagnosis.curves.runs reads runs per series).
"""

from __future__ import annotations

import re

from bot.diagnosis.curves.series import Curves, Point, add_point, as_number, parse_key
from bot.intake.log_document import LogDocument

_NUM = r"nan|NaN|-?Infinity|[-+]?inf|[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"
_LIST_OPENS = re.compile(r"""^\s*["'](?P<key>[A-Za-z][\w/ .-]{0,60})["']\s*:\s*\[\s*$""")
_VALUE_LINE = re.compile(rf"^\s*(?P<value>{_NUM})\s*,?\s*$")
MIN_VALUES = 2


def read_value_list(curves: Curves, doc: LogDocument, index: int) -> int:
    """At a line that opens a metric's list (`"val_loss": [`): its values as points of epochs 1, 2, ...; the index
    of the list's last value line, or `index` when the line opens no such list."""
    opened = _LIST_OPENS.match(doc.lines[index].text)
    parsed = parse_key(opened.group("key")) if opened else None
    if opened is None or parsed is None:
        return index
    points: list[Point] = []
    line = index + 1
    while line < len(doc.lines):
        found = _VALUE_LINE.match(doc.lines[line].text)
        value = as_number(found.group("value").lower().replace("infinity", "inf")) if found else None
        if value is None:
            break
        points.append(Point(line, value, f"epoch {len(points) + 1}"))
        line += 1
    if len(points) < MIN_VALUES:
        return index
    for point in points:
        add_point(curves, parsed, opened.group("key"), point)
    curves.series[parsed.norm].listed = True
    return line - 1
