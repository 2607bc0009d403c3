"""NVML product name -> GPU type: substrings, case, longest match, no match, ambiguity."""
import pytest

from telemetry.product_names import AmbiguousProductName, gpu_type_for_product

# The substrings the reference catalog gives its types (catalog.gpu_type_defaults).
CATALOG = [
    ("k80", ["Tesla K80"]),
    ("p100", ["P100"]),
    ("v100", ["V100"]),
    ("t4", ["Tesla T4"]),
    ("a100", ["A100"]),
    ("h100", ["H100"]),
    ("h200", ["H200"]),
]


@pytest.mark.parametrize(
    "product,expected",
    [
        ("Tesla V100-SXM2-16GB", "v100"),
        ("NVIDIA H100 80GB HBM3", "h100"),
        ("NVIDIA H200", "h200"),
        ("NVIDIA H200 NVL", "h200"),
        ("Tesla K80", "k80"),
        ("NVIDIA A100-SXM4-40GB", "a100"),
        ("Tesla T4", "t4"),
        ("Tesla P100-PCIE-16GB", "p100"),
        ("tesla v100-pcie-32gb", "v100"),
        ("  TESLA K80  ", "k80"),
    ],
)
def test_maps_real_product_names(product, expected):
    assert gpu_type_for_product(product, CATALOG) == expected


@pytest.mark.parametrize("product", ["NVIDIA GeForce RTX 4090", "Quadro RTX 8000", "", "   "])
def test_unknown_product_is_none(product):
    assert gpu_type_for_product(product, CATALOG) is None


def test_longest_substring_wins_whatever_the_order():
    patterns = [("a100", ["A100"]), ("a100-80gb", ["A100-SXM4-80GB", "A100 80GB"])]
    assert gpu_type_for_product("NVIDIA A100-SXM4-80GB", patterns) == "a100-80gb"
    assert gpu_type_for_product("NVIDIA A100-SXM4-80GB", list(reversed(patterns))) == "a100-80gb"
    assert gpu_type_for_product("NVIDIA A100-SXM4-40GB", patterns) == "a100"


def test_blank_and_non_string_substrings_match_nothing():
    assert gpu_type_for_product("Tesla T4", [("x", ["", "  ", None, 4])]) is None


def test_equally_long_matches_of_two_types_are_ambiguous():
    with pytest.raises(AmbiguousProductName, match="a, b"):
        gpu_type_for_product("Tesla V100", [("b", ["V100"]), ("a", ["v100"])])


def test_one_type_matching_twice_is_not_ambiguous():
    assert gpu_type_for_product("Tesla V100", [("v100", ["V100", "Tesla V"])]) == "v100"
