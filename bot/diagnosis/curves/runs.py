"""Two runs in one log (a relaunch, an earlier attempt, a sweep's next trial): where the last one starts, so that
bot.diagnosis.curves.reader judges its curves alone."""

from __future__ import annotations

import bisect
import dataclasses
import math

from bot.diagnosis.curves.series import ACC, Curves, Point, Series

_RUN_COUNTERS = ("epoch", "round")  # counted once per run: going back means a new run


def _continues(losses: list[tuple[list[int], list[float]]], line: int, since: int) -> bool:
    """Every loss printed both before and from `line` goes on within a tenth of its last value, and one of them had
    fallen by a fifth or more since `since`: the same model trained further (more data, a resumed job counting its
    epochs anew), not a new one. Losses that never fell and start over at the same level are a relaunch of the same
    task. With no loss on both sides, the count going back is a second table over the same epochs (accuracies, then
    losses), not a second run."""
    spanned = fell = False
    for lines, values in losses:
        cut, start = bisect.bisect_left(lines, line), bisect.bisect_left(lines, since)
        if not start < cut < len(lines):
            continue
        last = values[cut - 1]
        if abs(values[cut] - last) > 0.1 * abs(last):
            return False
        spanned, fell = True, fell or last <= 0.8 * values[start]
    return fell or not spanned


def _counter_restart(curves: Curves) -> int | None:
    """The last line where the log's epoch (or boosting round) count goes back, over all its curves, after three or
    more counts and before two or more, with a loss printed on both sides that does not go on from where it was: a
    new run from scratch (a relaunch, the next trial of a sweep)."""
    counts = sorted(
        {(p.line, step[1]) for s in curves.series.values() for p in s.points if (step := p.count) and
         step[0] in _RUN_COUNTERS}
    )  # fmt: skip
    segments: list[tuple[int, set[float]]] = []  # (first line, counts) of each stretch the count never goes back in
    for index, (line, count) in enumerate(counts):
        if index == 0 or count < counts[index - 1][1]:
            segments.append((line, set()))
        segments[-1][1].add(count)
    # a new run: three or more counts before (not an epoch banner printed early) and two or more after it (not a
    # summary naming the best epoch: "val_loss 0.81 is worse than the best 0.49 (epoch 4)")
    jumps = [
        line for (_, before), (line, after) in zip(segments, segments[1:], strict=False)
        if len(before) >= 3 and len(after) >= 2
    ]  # fmt: skip
    if not jumps:
        return None
    losses = []
    for series in curves.series.values():
        points = sorted((p.line, p.value) for p in series.points if series.group != ACC and math.isfinite(p.value))
        if points:
            losses.append(([line for line, _ in points], [value for _, value in points]))
    starts = [-1, *jumps]
    return next(
        (line for line, since in zip(reversed(jumps), reversed(starts[:-1]), strict=True)
         if not _continues(losses, line, since)),
        None,
    )  # fmt: skip


def _step_restart(series: Series) -> int | None:
    """The last line where a falling curve's step (or iteration) count goes back and its value with it: above the
    middle of the stretch before, which fell by a fifth or more over three or more values. A batch counter that
    starts over every epoch continues the loss where it was: no restart."""
    points = [p for p in series.points if math.isfinite(p.value)]
    start, found = 0, None
    for index in range(1, len(points)):
        now, before = points[index].count, points[index - 1].count
        if now is None or before is None or now[0] != before[0] or now[0] in _RUN_COUNTERS or now[1] >= before[1]:
            continue
        stretch = points[start:index]
        first, last = stretch[0].value, stretch[-1].value
        if len(stretch) >= 3 and first > 0 and last <= 0.8 * first and points[index].value >= (first + last) / 2:
            found = points[index].line
        start = index
    return found


def _uncount_summary(points: list[Point]) -> list[Point]:
    """A series' last point whose count goes back below the one before it is a summary line naming another epoch
    ("val_loss 0.81 is worse than the best 0.49 (epoch 4)"): its value is the latest, its count is not."""
    if len(points) < 2:
        return points
    last, before = points[-1].count, points[-2].count
    if last is None or before is None or last[0] != before[0] or last[1] >= before[1]:
        return points
    return [*points[:-1], dataclasses.replace(points[-1], step=None)]


def keep_last_run(curves: Curves) -> None:
    """A log that holds two runs (a relaunch, an earlier attempt, a sweep's trials) is judged on the last one: the
    points before the line where it starts over are dropped, and the messages and rates printed with them. One
    metric name over both runs would read as one curve (the new run's high start as a spike, the old run's progress
    as this run's)."""
    cuts = [line for series in curves.series.values() if series.group != ACC and (line := _step_restart(series))]
    counted = _counter_restart(curves)
    if counted is not None:
        cuts.append(counted)
    for series in curves.series.values():
        series.points = _uncount_summary(series.points)
    if not cuts:
        return
    cut = max(cuts)
    curves.run_start = cut
    for series in curves.series.values():
        series.points = [p for p in series.points if p.line >= cut]
    curves.improve_messages = [m for m in curves.improve_messages if m[0] >= cut]
    curves.learning_rates = [r for r in curves.learning_rates if r[0] >= cut]
    curves.lr_reductions = [r for r in curves.lr_reductions if r[0] >= cut]
    curves.series = {norm: s for norm, s in curves.series.items() if s.points}
