"""analysis/formatting.py: the one place numbers get their units on the pages."""
import math

from analysis.formatting import MISSING, count


def test_a_count_of_one_takes_the_singular_and_every_other_the_plural():
    assert count(1, "request") == "1 request"
    assert count(0, "request") == "0 requests"
    assert count(1234, "request") == "1,234 requests"
    assert count(2.0, "request") == "2 requests"   # pandas hands counts over as floats


def test_a_missing_count_is_the_missing_mark():
    assert count(None, "request") == MISSING and count(math.nan, "request") == MISSING
