"""Property: verify answers every mutation of a real bundle with a result, never an exception, and
never passes content the key did not sign (issue 14's fuzz, a small derandomized budget here;
bench/fuzz_verify.py runs the long one).

The bundle is the test plan's (tests/bundle_support.py): a completed step with an analysis module,
a failed one, a dependent one and a not-run one. Mutations are drawn in the gzip stream, in the
decompressed tar (re-gzipped canonically) and in one member (re-signed with the right key or not),
and one document field edited by hand and re-signed; a re-signed change verify accepts must be one
docs/bundle.md's inventory explains (tests/fuzz_support.py accepted_change).
No timing is asserted (the suite never times); bench/fuzz_verify.py reports time per input.
"""

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.bundle.read import read_all
from harness.run.assemble import assemble
from harness.signing.keys import load_public
from harness.verify import verify_bundle
from tests.bundle_probes import plan as test_plan
from tests.bundle_support import collect_test_plan, make_key
from tests.fuzz_support import OPS, Mutation, mutant, verdict

EXAMPLES = 1500  # about 30 s on a 2-core machine


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("fuzz")
    with pytest.MonkeyPatch.context() as patch:
        test_plan.install(patch)
        key, public = make_key(tmp / "k")
        path = tmp / "base.tar.gz"
        path.write_bytes(assemble(collect_test_plan(tmp), key))
        assert verify_bundle(path, load_public(public)).ok
        yield {
            "files": read_all(path),
            "archive": path.read_bytes(),
            "key": key,
            "public": load_public(public),
            "mutant": tmp / "mutant.tar.gz",
        }


def mutations():
    return st.sampled_from(sorted(OPS)).flatmap(
        lambda layer: st.builds(
            Mutation,
            layer=st.just(layer),
            op=st.sampled_from(OPS[layer]),
            where=st.floats(0, 1),
            value=st.binary(min_size=1, max_size=12),
            member=st.integers(0, 63),
            resign=st.booleans(),
        )
    )


@settings(
    max_examples=EXAMPLES,
    derandomize=True,
    deadline=None,
    database=None,
    print_blob=False,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(mutation=mutations())
def test_verify_answers_every_mutation_and_never_passes_unsigned_content(base, mutation):
    data = mutant(base["files"], base["archive"], mutation, base["key"])
    base["mutant"].write_bytes(data)
    result = verify_bundle(base["mutant"], base["public"])  # an exception here fails the property
    outcome = verdict(base["files"], base["mutant"], result, mutation.resigned)
    assert outcome.startswith(("refused: ", "accepted: ")), (mutation.describe(), outcome)
