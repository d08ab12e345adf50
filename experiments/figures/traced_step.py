"""The traced-step studies' figure (experiments.bucket_timeline, experiments.pull_timeline): one
step's ops as bars on their rows, a panel per variant (`tfhp.plots.step_timelines`), from points
{"panel", "row", "start_ms", "end_ms"}, one per op."""
from tfhp import plots


def points(panel, by_row):
    """One point per op of a traced step: {row: [(start_ms, end_ms), ...]} of panel `panel`
    (`tfhp.profiling.timeline.rows`, `tfhp.profiling.push_pull.rows`)."""
    # Rounded to the trace's microseconds.
    return [{'panel': panel, 'row': row, 'start_ms': round(start, 3), 'end_ms': round(end, 3)}
            for row, spans in by_row.items() for start, end in spans]


def draw_data(path, header, data, caption):
    """Draws the points `data`: a panel per "panel" (in the order they first appear, titled by
    the header's "panel_titles" where it has one), the header's "rows" top to bottom, and its
    "marks" {label: [x_ms or None, one per panel]} as dashed lines."""
    panels = []
    for panel in dict.fromkeys(p['panel'] for p in data):
        by_row = {}
        for p in data:
            if p['panel'] == panel:
                by_row.setdefault(p['row'], []).append((p['start_ms'], p['end_ms']))
        panels.append((header.get('panel_titles', {}).get(panel, panel), by_row))
    plots.step_timelines(path, panels, header['rows'], header.get('marks'),
                         title=header['title'], caption=caption)
