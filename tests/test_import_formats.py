"""`prices import` and `fx import` tell a file's format from its name and header (tasks/pricing/formats.py).

    .venv/bin/pytest -q tests/test_import_formats.py
"""

from __future__ import annotations

import pytest

from tasks.errors import UserError
from tasks.pricing.formats import fx_format, price_format
from tests.conftest import REPO


@pytest.mark.parametrize("path, fmt", [
    ("deploy/prices/lambda.csv", "csv"), ("deploy/prices/examples/illustrative-cn.csv", "csv"),
    ("deploy/prices/examples/contract-example.yaml", "yaml"), ("deploy/fx_rates.csv", "fx"),
    ("tests/fixtures/skypilot/lambda-vms.csv", "skypilot"), ("tests/fixtures/skypilot/aws-vms-excerpt.csv", "skypilot"),
    ("tests/fixtures/skypilot/gcp-vms-excerpt.csv", "skypilot"),
])
def test_price_files_are_told_by_their_header_or_extension(path, fmt):
    assert price_format(str(REPO / path), None) == fmt


@pytest.mark.parametrize("path, fmt", [("deploy/fx_rates.csv", "csv"), ("tests/fixtures/ecb/eurofxref-hist.zip", "ecb")])
def test_fx_files_are_told_by_their_header_or_extension(path, fmt):
    assert fx_format(str(REPO / path), None) == fmt


def test_the_ecb_csv_inside_the_zip_is_told_too(tmp_path):
    ecb = tmp_path / "eurofxref-hist.csv"
    ecb.write_text("Date,USD,JPY,\n2026-10-30,1.16,177.5,\n")
    assert fx_format(str(ecb), None) == "ecb"
    with pytest.raises(UserError, match="the ECB's reference rates, not what this command reads: costgap fx import"):
        price_format(str(ecb), None)


def test_a_given_format_wins_and_a_bad_one_or_an_unsure_file_names_the_flag(tmp_path):
    odd = tmp_path / "odd.txt"
    odd.write_text("a,b\n1,2\n")
    assert price_format(str(odd), "csv") == "csv" and fx_format(str(odd), "csv") == "csv"
    with pytest.raises(UserError, match=r"--format 'xml': expected one of csv, yaml, skypilot, fx"):
        price_format(str(odd), "xml")
    with pytest.raises(UserError, match=r"cannot tell its format .* pass --format csv\|yaml\|skypilot\|fx"):
        price_format(str(odd), None)
    with pytest.raises(UserError, match=r"pass --format ecb\|csv"):
        fx_format(str(odd), None)
    with pytest.raises(UserError, match="a price book, not what this command reads: costgap prices import"):
        fx_format(str(REPO / "deploy/prices/lambda.csv"), None)
    with pytest.raises(UserError, match="no such file"):
        price_format(str(tmp_path / "missing.csv"), None)
