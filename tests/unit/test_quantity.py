from fractions import Fraction

import pytest

from kubesched.api.quantity import (
    QuantityError,
    format_amount,
    milli_value,
    parse_quantity,
    resource_amount,
    value,
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1", Fraction(1)),
        ("100m", Fraction(1, 10)),
        ("0.1", Fraction(1, 10)),
        (".5", Fraction(1, 2)),
        ("1.", Fraction(1)),
        ("+2", Fraction(2)),
        ("-2", Fraction(-2)),
        ("5n", Fraction(5, 10**9)),
        ("5u", Fraction(5, 10**6)),
        ("1k", Fraction(1000)),
        ("1M", Fraction(10**6)),
        ("1G", Fraction(10**9)),
        ("1T", Fraction(10**12)),
        ("1P", Fraction(10**15)),
        ("1E", Fraction(10**18)),
        ("1Ki", Fraction(1024)),
        ("1Mi", Fraction(1024**2)),
        ("1.5Gi", Fraction(3 * 1024**3, 2)),
        ("1Ti", Fraction(1024**4)),
        ("1Pi", Fraction(1024**5)),
        ("1Ei", Fraction(1024**6)),
        ("1e3", Fraction(1000)),
        ("1E3", Fraction(1000)),
        ("12e-3", Fraction(12, 1000)),
        ("1.5e+2", Fraction(150)),
    ],
)
def test_every_suffix_and_exponent(text: str, expected: Fraction) -> None:
    assert parse_quantity(text) == expected


def test_yaml_numbers_are_quantities() -> None:
    assert parse_quantity(2) == 2
    assert parse_quantity(0.5) == Fraction(1, 2)
    assert parse_quantity(0.1) == Fraction(1, 10)  # not the binary float 0.1000000000000000055…


@pytest.mark.parametrize(
    "bad", ["", "abc", "1Ki2", "1KB", "1kk", "1 Gi", "Gi", "--1", "1e", "0x10"]
)
def test_malformed_quantities_are_refused(bad: str) -> None:
    with pytest.raises(QuantityError, match="quantities must match"):
        parse_quantity(bad)


def test_booleans_are_not_quantities() -> None:
    with pytest.raises(QuantityError):
        parse_quantity(True)


def test_milli_value_rounds_up() -> None:
    assert milli_value("0.1m") == 1  # MilliValue rounds up to the next milli-unit
    assert milli_value("1.0001m") == 2
    assert milli_value("250m") == 250
    assert milli_value("1") == 1000
    assert milli_value("1n") == 1


def test_value_rounds_up() -> None:
    assert value("1.5") == 2
    assert value("100m") == 1
    assert value("1Gi") == 1024**3
    assert value("128974848") == 128974848
    assert value("129e6") == 129_000_000
    assert value("123Mi") == 123 * 1024**2


def test_cpu_is_counted_in_milli_units_and_the_rest_in_units() -> None:
    assert resource_amount("cpu", "1.5") == 1500
    assert resource_amount("memory", "1.5Ki") == 1536
    assert resource_amount("nvidia.com/gpu", 2) == 2


def test_format_amount() -> None:
    assert format_amount("cpu", 2000) == "2"
    assert format_amount("cpu", 250) == "250m"
    assert format_amount("memory", 32 * 1024**3) == "32Gi"


@pytest.mark.timeout(30)
@pytest.mark.parametrize(
    "text", ["1e999999999", "1E+2147483647", "9" * 5000, "1e9223372036854775807"]
)
def test_huge_quantities_are_refused_at_once(text: str) -> None:
    with pytest.raises(QuantityError, match="too large"):
        parse_quantity(text)


def test_an_exponent_past_int64_is_a_bad_suffix() -> None:
    with pytest.raises(QuantityError, match="unable to parse quantity's suffix"):
        parse_quantity("1e9223372036854775808")


@pytest.mark.timeout(30)
@pytest.mark.parametrize(
    ("text", "nanos"),
    [
        ("1e-999999999", 1),  # rounded up to 1n, as ParseQuantity rounds (inf.RoundUp)
        ("0." + "0" * 5000 + "1", 1),
        ("0.5n", 1),
        ("-0.5n", -1),
        ("1." + "0" * 5000 + "1", 10**9 + 1),
        ("1.5Gi", 3 * 2**29 * 10**9),
    ],
)
def test_quantities_are_rounded_up_to_a_nano_in_bounded_time(text: str, nanos: int) -> None:
    assert parse_quantity(text) == Fraction(nanos, 10**9)


def test_quantities_hold_int64() -> None:
    assert parse_quantity("9223372036854775807") == 2**63 - 1
    assert parse_quantity(2**63 - 1) == 2**63 - 1
    assert parse_quantity("8Ei") == 2**63 - 1  # ParseQuantity caps BinarySI at maxAllowed
    for too_large in ("9223372036854775808", 2**63, "10E", "1e19"):
        with pytest.raises(QuantityError, match="too large"):
            parse_quantity(too_large)


def test_only_ascii_digits_are_digits() -> None:
    with pytest.raises(QuantityError, match="quantities must match"):
        parse_quantity("١٢")
