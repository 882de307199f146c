"""Stands in as harness.present.plots.tick in tests: the samples as a bar chart, saved by _figure."""

from harness.present.plots._figure import new_figure, save_figure


def render(document, stem):
    fig, ax = new_figure(4, 3)
    ax.bar(range(len(document["samples_mib_per_s"])), document["samples_mib_per_s"])
    ax.set_ylabel("MiB/s")
    return save_figure(fig, stem)
