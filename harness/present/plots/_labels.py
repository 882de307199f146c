"""Point labels that do not overlap: each label takes the nearest free place around its point.

A label is tried at growing distances (in points) and in several directions around its point;
it takes the first place where its text lies inside the axes and clear of every label placed
before, every marker and the artists to avoid (the legend). Far from its point it gets a thin
leader line. Crowded points are placed first, so they get the near places. Deterministic: the
same points give the same places (text extents come from the figure's own renderer).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from matplotlib.transforms import Bbox

FONT_SIZE = 6.5
MARKER_RADIUS_PT = 4.5  # the scatter markers (s=46 points^2) with a little room
DISTANCES_PT = (3, 8, 14, 22, 32, 45, 60, 80, 105, 135, 170, 210)
ANGLES_DEG = (30, -30, 150, -150, 90, -90, 0, 180, 60, -60, 120, -120, 15, -15, 165, -165)
LEADER_FROM_PT = 8  # labels this far or further get a leader line to their point
CROWD_RADIUS_PX = 40


def _alignment(angle_deg: float) -> tuple[str, str]:
    dx, dy = math.cos(math.radians(angle_deg)), math.sin(math.radians(angle_deg))
    ha = "left" if dx > 0.3 else "right" if dx < -0.3 else "center"
    va = "bottom" if dy > 0.3 else "top" if dy < -0.3 else "center"
    return ha, va


def _padded(box: Bbox, pad: float) -> Bbox:
    return Bbox.from_extents(box.x0 - pad, box.y0 - pad, box.x1 + pad, box.y1 + pad)


def _candidates() -> list[tuple[float, float, str, str]]:
    found = []
    for distance in DISTANCES_PT:
        for angle in ANGLES_DEG:
            ha, va = _alignment(angle)
            found.append((distance * math.cos(math.radians(angle)), distance * math.sin(math.radians(angle)), ha, va))
    return found


def line_boxes(line, renderer, step_px: float = 3.0) -> list[Bbox]:
    """Small boxes along a drawn line (e.g. the roof), so that no label is written across it."""
    xy = line.get_transform().transform(line.get_xydata())
    half = max(line.get_linewidth() * line.figure.dpi / 72, 1.0)
    boxes = []
    for (x0, y0), (x1, y1) in zip(xy[:-1], xy[1:], strict=False):
        steps = max(1, int(math.dist((x0, y0), (x1, y1)) / step_px))
        for k in range(steps + 1):
            x, y = x0 + (x1 - x0) * k / steps, y0 + (y1 - y0) * k / steps
            boxes.append(Bbox.from_extents(x - half, y - half, x + half, y + half))
    return boxes


def _nearest_free(text, renderer, axes_box: Bbox, occupied: list[Bbox]) -> tuple[float, float, str, str, Bbox | None]:
    """The first candidate place (offset, alignment) where TEXT lies inside the axes and clear of every
    occupied box, and the box it takes there; nowhere free, the nearest place and no box."""
    for dx, dy, ha, va in _candidates():
        text.xyann = (dx, dy)
        text.set_horizontalalignment(ha)
        text.set_verticalalignment(va)
        box = text.get_window_extent(renderer)
        if (
            axes_box.contains(box.x0, box.y0)
            and axes_box.contains(box.x1, box.y1)
            and not any(_padded(box, 1).overlaps(other) for other in occupied)
        ):
            return dx, dy, ha, va, box
    dx, dy, ha, va = _candidates()[0]  # nowhere free: the nearest place (a test on real data catches this)
    return dx, dy, ha, va, None


def place_labels(
    ax,
    items: Sequence[tuple[str, float, float]],
    avoid: Sequence = (),
    lines: Sequence = (),
    colors: Sequence[str] | None = None,
    markers: Sequence[tuple[float, float]] = (),
) -> list:
    """Annotate each (label, x, y) in data coordinates without overlaps; returns the annotations.
    `avoid`: artists no label may cover (the legend); `lines`: lines no label may cross; `colors`:
    each label's colour (default black); `markers`: unlabelled points (x, y) no label may cover. Call it
    after the axes' scales and limits are final."""
    fig = ax.figure
    renderer = fig.canvas.get_renderer()
    px_per_pt = fig.dpi / 72
    axes_box = ax.get_window_extent(renderer)
    centres = [tuple(ax.transData.transform((x, y))) for _, x, y in items]
    radius = MARKER_RADIUS_PT * px_per_pt
    unlabelled = [tuple(ax.transData.transform(point)) for point in markers]
    occupied = [
        Bbox.from_extents(cx - radius, cy - radius, cx + radius, cy + radius) for cx, cy in centres + unlabelled
    ]
    occupied += [artist.get_window_extent(renderer) for artist in avoid]
    occupied += [box for line in lines for box in line_boxes(line, renderer)]

    def crowd(i: int) -> int:
        return sum(math.dist(centres[i], c) < CROWD_RADIUS_PX for c in centres)

    order = sorted(range(len(items)), key=lambda i: (-crowd(i), -centres[i][1], centres[i][0]))
    annotations = [None] * len(items)
    for i in order:
        label, x, y = items[i]
        text = ax.annotate(label, (x, y), textcoords="offset points", xytext=(0, 0), fontsize=FONT_SIZE)
        dx, dy, ha, va, box = _nearest_free(text, renderer, axes_box, occupied)
        text.remove()
        leader = math.hypot(dx, dy) >= LEADER_FROM_PT
        annotations[i] = ax.annotate(
            label,
            (x, y),
            textcoords="offset points",
            xytext=(dx, dy),
            fontsize=FONT_SIZE,
            ha=ha,
            va=va,
            zorder=4,
            color=colors[i] if colors else "black",
            arrowprops=dict(arrowstyle="-", color="0.35", linewidth=0.5, shrinkA=1, shrinkB=2) if leader else None,
        )
        if box is not None:
            occupied.append(box)
    return annotations
