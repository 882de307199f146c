"""Stands in as harness.analysis.tick in tests: recomputes the mean from the samples."""


def headlines(document):
    samples = document["samples_mib_per_s"]
    return {"mean_mib_per_s": sum(samples) / len(samples), "samples_mib_per_s": samples}


def discrepancies(document):
    recomputed = headlines(document)["mean_mib_per_s"]
    stated = document.get("mean_mib_per_s")
    if stated is None or abs(stated - recomputed) > 1e-9 * max(1.0, abs(recomputed)):
        return [f"mean_mib_per_s states {stated} but the samples give {recomputed}"]
    return []
