"""Every op that has a cpu implementation has a cuda one (issue 4): the dispatch registry is enumerated, so an op
added to the NumPy backend without a Triton kernel fails here, by name."""

from tkernels.dispatch import implementations


def test_every_cpu_op_has_a_cuda_implementation():
    impls = implementations()
    missing = sorted(op for op, backends in impls.items() if "numpy" in backends and "triton" not in backends)
    assert not missing, f"ops with a cpu (numpy) implementation but no cuda (triton) one: {', '.join(missing)}"


def test_the_registry_is_populated():
    impls = implementations()
    # the check above must be able to fail: the registry really lists both backends of the core ops
    for op in ("add", "sum", "matmul", "softmax", "conv2d", "scaled_dot_product_attention"):
        assert {"numpy", "triton"} <= impls[op], (op, impls.get(op))
    assert len(impls) > 150
