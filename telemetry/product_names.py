"""Which GPU type an NVML product name belongs to. Pure: no Django.

Agents report what NVML calls the device ("Tesla V100-SXM2-16GB", "NVIDIA H100 80GB HBM3");
each GPU type lists substrings that identify it. The longest matching substring wins, so a
specific pattern ("A100-SXM4-80GB") beats a general one ("A100") of another type. Two types
matching with equally long substrings is a catalog mistake, reported rather than guessed at.
"""
from collections.abc import Iterable


class AmbiguousProductName(ValueError):
    """Several GPU types claim the product name with equally specific substrings."""

    def __init__(self, product_name: str, type_names: list[str]):
        self.product_name, self.type_names = product_name, type_names
        super().__init__(
            f"{product_name!r} matches the GPU types {', '.join(type_names)} equally well; "
            "make one of their product names more specific."
        )


def gpu_type_for_product(product_name: str, patterns: Iterable[tuple[str, Iterable[str]]]) -> str | None:
    """The name of the GPU type whose substring matches `product_name` best, or None.

    `patterns` holds (type name, substrings) pairs. Matching ignores case and surrounding
    blanks; blank substrings match nothing (they would otherwise match everything).
    """
    wanted = product_name.strip().casefold()
    if not wanted:
        return None
    best_length, best_types = 0, set()
    for type_name, substrings in patterns:
        for substring in substrings:
            if not isinstance(substring, str):
                continue
            needle = substring.strip().casefold()
            if not needle or needle not in wanted:
                continue
            if len(needle) > best_length:
                best_length, best_types = len(needle), {type_name}
            elif len(needle) == best_length:
                best_types.add(type_name)
    if len(best_types) > 1:
        raise AmbiguousProductName(product_name, sorted(best_types))
    return next(iter(best_types), None)
