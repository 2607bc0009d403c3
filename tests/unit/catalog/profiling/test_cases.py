"""The case list: the catalog's names and families, the sizes the issue asks for, the subsets."""
import collections

from catalog import gavel
from catalog.predictors.features import REFERENCE_FAMILIES
from catalog.profiling import cases, models

GAVEL = {(r.workload.name, r.num_gpus) for r in gavel.read_throughputs()}
REFERENCE = {name for name, _ in GAVEL}
NEW = {name for name, *_ in cases.NEW_WORKLOADS}


def test_every_reference_family_is_measured_alone_at_two_or_three_batch_sizes_when_it_has_them():
    sizes = collections.defaultdict(set)
    for case in cases.SINGLE_GPU_CASES:
        sizes[case.family].add(case.batch_size)
    assert set(gavel.FAMILY_DESCRIPTIONS) | {"GPT-2", "ViT"} == set(sizes)
    for family, batches in sizes.items():
        assert len(batches) == 1 if family in ("A3C", "CycleGAN") else 2 <= len(batches) <= 3, family


def test_names_are_the_catalogs_or_the_suites_new_workloads():
    for case in cases.CASES:
        assert case.workload in REFERENCE | NEW
        assert case.partner is None or case.partner in REFERENCE | NEW
        if case.num_gpus > 1 and case.workload in REFERENCE:
            assert (case.workload, case.num_gpus) in GAVEL  # a configuration the catalog can compare
    assert len(cases.BY_NAME) == len(cases.CASES)
    assert cases.BY_NAME["ResNet-50 (batch size 64) + LM (batch size 20)"].partner == "LM (batch size 20)"
    assert cases.BY_NAME["GPT-2 (batch size 8) x4"].num_gpus == 4


def test_every_family_has_a_model_and_features():
    for case in cases.CASES:
        assert case.family in models.FAMILIES
        assert case.family in REFERENCE_FAMILIES
    for name, family, batch_size, _ in cases.NEW_WORKLOADS:
        assert gavel.parse_workload(name) == gavel.GavelWorkload(name, family, batch_size)


def test_a_node_runs_the_data_parallel_cases_its_gpus_allow():
    def widths(gpus):
        return sorted({c.num_gpus for c in cases.cases_for(gpus)})

    assert widths(1) == [1]
    assert widths(3) == [1, 2]
    assert widths(8) == [1, 2, 4, 8]
    assert cases.cases_for(8) == list(cases.CASES)
    assert [c.name for c in cases.cases_for(1)][:2] == ["ResNet-18 (batch size 32)", "ResNet-18 (batch size 128)"]
