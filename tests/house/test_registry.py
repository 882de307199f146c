"""The registry resolves: every name an entry gives is a module, schema or function of this build,
so a missing one fails here, never inside a user's bundle; a name no entry gives is refused."""

import argparse
import importlib
import inspect

import pytest

from harness import registry
from harness.registry.steps import HostStep, ProbeStep
from harness.schemas import SCHEMA_DIR, load_schema

ENTRIES = registry.PROBES
IDS = [entry.name for entry in ENTRIES]


@pytest.mark.parametrize("entry", ENTRIES, ids=IDS)
def test_every_module_an_entry_names_imports_with_its_contract(entry):
    probe = importlib.import_module(f"harness.probes.{entry.name}")
    assert probe.OPTIONS is entry.options and callable(probe.build_parser) and callable(probe.measure)
    assert (SCHEMA_DIR / f"{entry.schema}.schema.json").is_file() and load_schema(entry.schema)
    if entry.analysis:
        analysis = registry.analysis_module(entry.analysis)
        assert callable(analysis.headlines) and callable(analysis.discrepancies)
    if entry.plots:
        render = importlib.import_module(registry.plot_module_name(entry.plots)).render
        assert list(inspect.signature(render).parameters) == ["document", "stem"]
    if entry.table:
        assert callable(registry.table_module(entry).render)


@pytest.mark.parametrize("entry", ENTRIES, ids=IDS)
def test_every_step_is_its_entrys_and_resolves(entry):
    for step in entry.steps:
        assert (SCHEMA_DIR / f"{step.schema}.schema.json").is_file(), step.step
        if isinstance(step, ProbeStep):
            assert (step.probe, step.schema, step.analysis) == (entry.name, entry.schema, entry.analysis), step.step
            assert step.plots in (entry.plots, None), step.step
        else:
            assert isinstance(step, HostStep) and callable(registry.host_function(step.function)), step.step
            assert step.function.startswith("harness.analysis."), step.step


def test_the_plan_is_every_entrys_steps_in_order_each_once():
    plan = registry.lab_plan()
    assert [s.order for s in plan] == sorted(s.order for s in plan)
    assert len({s.order for s in plan}) == len(plan), "two steps share a place in the order"
    assert len(set(registry.step_ids(plan))) == len(plan)
    for step in plan:
        assert all(
            need in registry.step_ids(plan)[: registry.step_ids(plan).index(step.step)]
            for need in getattr(step, "needs", ())
        ), step.step


def test_every_criterion_reads_steps_of_the_plan_and_has_one_name():
    ids = set(registry.step_ids())
    for criteria in (registry.lab_criteria(), registry.acceptance_criteria()):
        assert len({c.name for c in criteria}) == len(criteria)
        for criterion in criteria:
            assert criterion.steps and set(criterion.steps) <= ids, criterion.name


def test_options_are_declared_once_and_a_command_adds_no_second_one():
    for entry in ENTRIES:
        flags = [f for o in (*entry.host_options, *entry.command.host_options) for f in o.flags]
        assert len(flags) == len(set(flags)), entry.name
        parser = argparse.ArgumentParser()
        for option in entry.options:
            option.add_to(parser)  # argparse accepts every declaration as written
        for option in entry.run_options:
            # offered as `dossier NAME` offers it, or a probe option under the run's own name for it
            # (`--NAME-...`: `dossier run --stress-seconds` is stress's --seconds)
            renamed = option.flags[0].startswith(f"--{entry.name}-") and option not in entry.options
            assert option in entry.command.host_options or renamed, (entry.name, option.flags)


def test_names_no_entry_gives_are_refused_not_imported():
    with pytest.raises(registry.NotInRegistry, match="'os'"):
        registry.analysis_module("os")
    with pytest.raises(registry.NotInRegistry):
        registry.host_function("os:system")
    with pytest.raises(registry.NotInRegistry):
        registry.plot_module_name("health")  # health draws no plot
    with pytest.raises(registry.NotInRegistry):
        registry.spec("no-such-probe")
    assert registry.find(None) is None and registry.find(["health"]) is None


def test_criteria_are_listed_where_the_run_completes_their_evidence():
    assert [c.name for c in registry.lab_criteria()] == [
        "health",
        "bandwidth",
        "roofline",
        "precision",
        "allreduce",
        "transfer",
        "stress",
        "known-good",  # every headline rate against its known-good: its last evidence is the stress step's
        "idle-load",
    ]  # under load: during stress
    order = [c.name for c in registry.acceptance_criteria()]
    assert order.index("sku_matches_profile") < order.index("bandwidth_plateau") < order.index("gemm")
    assert order.index("clocks_rise_under_load") > order.index("ecc_uncorrectable_zero")


def test_every_plot_and_table_module_follows_its_contract():
    """Registered or not yet (stress, transfer): render(document, stem) -> paths; render(document) -> str."""
    import pkgutil

    from harness.present import plots, tables

    for package, parameters in ((plots, ["document", "stem"]), (tables, ["document"])):
        names = [m.name for m in pkgutil.iter_modules(package.__path__) if not m.name.startswith("_")]
        assert names, package.__name__
        for name in names:
            module = importlib.import_module(f"{package.__name__}.{name}")
            assert list(inspect.signature(module.render).parameters) == parameters, name
            for_sku = getattr(module, "render_for_sku", None)  # a plot that draws its SKU's known-good
            assert for_sku is None or list(inspect.signature(for_sku).parameters) == [*parameters, "sku_id"], name


def test_a_name_an_earlier_build_recorded_resolves_to_the_same_function():
    """Bundles of formats 1-4 name the health-diff function by its old module (tests/fixtures/h200/)."""
    assert registry.host_function("harness.analysis.health_diff:diff") is registry.host_function(
        "harness.analysis.health.diff:diff"
    )
    with pytest.raises(registry.NotInRegistry):
        registry.host_function("harness.analysis.health_diff:load_window_samples")
