"""Fuzz every importer of outside files: cut or damaged, a file is refused, or lands exactly what it says.

    .venv/bin/python -m pytest -q tests/test_fuzz_importers.py

Each shipped example and test fixture (price books CSV/YAML, costgap's FX CSV, the ECB history as CSV
and as zip, the SkyPilot catalog, a recorded Azure answer, a bundle) is cut at many byte offsets and has
single cells damaged (a digit dropped, a letter added, a sign flipped, a quote opened), from a fixed
seed. A cut that is not at a line end, a letter in a number, an opened quote: refused (UserError,
naming file and line). A cut at a line end, a dropped digit, a flipped sign where the column allows it:
refused, or read exactly as the plain csv/yaml reading of the same bytes (tests/fuzz_support.py), which
for a cut is the complete rows before it. The parsers are called directly (fast); a handful of variants
go through the real `costgap` CLI, which must exit 2, leave the warehouse byte-for-byte unchanged and
archive nothing. The count of variants tried is printed in the terminal summary.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import subprocess
import sys
import zipfile
from datetime import datetime, timezone
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cli.main import app
from tasks.bundle import BundleError, parse_bundle
from tasks.errors import UserError
from tasks.pricing import ecb, fx
from tasks.pricing.pricebook_file import PriceBookFile
from tasks.pricing.skypilot import SkyPilotCatalog
from tests import fuzz_support as fz
from tests.conftest import FUZZ, REPO
from tests.factories import bundle_doc

SEED = 26  # fixed: every run tries the same variants
FIXTURES = Path(__file__).parent / "fixtures"
WHEN = datetime(2026, 12, 1, tzinfo=timezone.utc)
TRIED: dict[str, int] = {}  # importer -> variants tried; printed at the end of the session


@pytest.fixture(autouse=True)
def _count(record_property):
    """Each test's variant counts travel in its report; tests/conftest.py sums and prints them at the end
    ("importer fuzz: N variants: all refused or exact"), also under pytest-xdist."""
    before = dict(TRIED)
    yield
    for name, tried in TRIED.items():
        if before.get(name) != tried:
            record_property(FUZZ, (name, tried))


def _price(rows) -> list[tuple]:
    return [(r.provider, r.region, r.instance_type, r.billing_mode, r.currency, float(r.original_amount),
             r.original_period, r.effective_from.date(), r.source) for r in rows]


def _ecb_csv_excerpt(lines: int = 60) -> bytes:
    with zipfile.ZipFile(FIXTURES / "ecb" / "eurofxref-hist.zip") as zf:
        text = zf.read("eurofxref-hist.csv").decode()
    return "".join(text.splitlines(keepends=True)[:lines]).encode()


# name -> (file name, bytes, importer reading a path -> canonical rows, reference reader on bytes)
def _cases(tmp: Path) -> dict:
    def book(fmt):
        return lambda p: _price(PriceBookFile(str(p), fmt).fetch())

    def sky(p):
        return [(r.instance_type, r.region, r.billing_mode, float(r.original_amount))
                for r in SkyPilotCatalog(str(p), "lambda", WHEN).fetch()]

    cases = {
        "price-csv lambda": ("lambda.csv", (REPO / "deploy/prices/lambda.csv").read_bytes(), book("csv"),
                             fz.ref_price_csv),
        "price-csv illustrative-cn": ("cn.csv", (REPO / "deploy/prices/examples/illustrative-cn.csv").read_bytes(),
                                      book("csv"), fz.ref_price_csv),
        "price-yaml contract": ("c.yaml", (REPO / "deploy/prices/examples/contract-example.yaml").read_bytes(),
                                book("yaml"), fz.ref_price_yaml),
        "fx-csv": ("fx.csv", (REPO / "deploy/fx_rates.csv").read_bytes(),
                   lambda p: [r[:4] for r in fx.read_fx_csv(str(p))], fz.ref_fx),
        "ecb-csv": ("eurofxref-hist.csv", _ecb_csv_excerpt(),
                    lambda p: [r[:3] for r in ecb.from_file(str(p)).rows()], fz.ref_ecb),
        "skypilot": ("lambda-vms.csv", (FIXTURES / "skypilot/lambda-vms.csv").read_bytes(), sky, fz.ref_skypilot),
    }
    if SHARED.is_file():
        cases["skypilot shared"] = ("lambda-vms.csv", SHARED.read_bytes(), sky, fz.ref_skypilot)
    return cases


def _outcome(read, path: Path, data: bytes):
    path.write_bytes(data)
    try:
        return read(path), None
    except UserError as e:
        return None, str(e)


def _reference(ref, data: bytes):
    try:
        return ref(data)
    except (ValueError, KeyError, TypeError, AttributeError, IndexError, ZeroDivisionError) as e:
        return e
    except Exception as e:  # noqa: BLE001 (csv.Error, yaml.YAMLError: the plain reading fails too)
        return e


CUTS, MUTATIONS = 120, 120  # per file; the SkyPilot catalog and the ECB excerpt get fewer (slower to read)
FEWER = {"skypilot": 50, "skypilot shared": 30, "ecb-csv": 60}


SHARED = REPO.parent / "shared" / "fixtures" / "skypilot" / "lambda-vms.csv"  # a second copy beside the checkout, where there is one
NAMES = ["price-csv lambda", "price-csv illustrative-cn", "price-yaml contract", "fx-csv", "ecb-csv", "skypilot"]
if SHARED.is_file() and SHARED.read_bytes() != (FIXTURES / "skypilot/lambda-vms.csv").read_bytes():
    NAMES.append("skypilot shared")


@pytest.mark.parametrize("name", NAMES)
def test_cut_or_damaged_files_are_refused_or_exact(name, tmp_path):
    fname, data, read, ref = _cases(tmp_path)[name]
    path = tmp_path / fname
    whole = read(_write(path, data))
    assert whole == ref(data) and whole, f"{name}: the shipped file itself must read exactly"
    rng = random.Random(f"{SEED}:{name}")
    ends = fz.line_end_offsets(data)
    tried = 0
    for k in fz.cut_offsets(data, rng, FEWER.get(name, CUTS)):
        got, err = _outcome(read, path, data[:k])
        tried += 1
        if k not in ends:
            assert err is not None, f"{name}: cut at byte {k} (inside a row) was accepted: {got!r:.300}"
            assert fname in err, err
            continue
        if err is None:
            expected = ref(data[:k])
            assert got == expected and whole[:len(got)] == got, f"{name}: cut at line end {k} read inexactly"
    for _ in range(FEWER.get(name, MUTATIONS)):
        bad, line, field, kind, cell = fz.mutate_csv(data, rng, skip_lines=1) if not name.startswith(
            "price-yaml") else _mutate_yaml(data, rng)
        got, err = _outcome(read, path, bad)
        tried += 1
        what = f"{name}: line {line} field {field} {kind} -> {cell!r}"
        if err is not None:
            assert fname in err, (what, err)
            continue
        assert kind not in ("open_quote",), f"{what}: an opened quote was accepted"
        expected = _reference(ref, bad)
        assert not isinstance(expected, Exception), f"{what}: accepted, but a plain reading fails ({expected})"
        assert got == expected, f"{what}: accepted inexactly"
    TRIED[name] = tried


def _write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def _mutate_yaml(data: bytes, rng: random.Random):
    """One value of one row of the YAML price book damaged (flow-mapping rows: key: value, ...)."""
    lines = data.decode().splitlines(keepends=True)
    rows = [i for i, ln in enumerate(lines) if ":" in ln and (ln.lstrip().startswith(("- {", "effective_from")))]
    while True:
        n = rng.choice(rows)
        spans = [(a, b) for a, b in fz.field_spans(lines[n]) if ":" in lines[n][a:b]]
        a, b = rng.choice(spans)
        cell = lines[n][a:b]
        at = cell.index(":") + 2
        kind = rng.choice(fz.KINDS)
        value = cell[at:].rstrip("}\n ")
        new = fz.mutate_cell(value, kind, rng)
        if new is None or not value:
            continue
        lines[n] = lines[n][:a] + cell[:at] + new + cell[at + len(value):] + lines[n][b:]
        return "".join(lines).encode(), n + 1, cell[:at], kind, new


def test_ecb_zip_cut_or_damaged_is_refused_or_exact(tmp_path):
    """The zip's own checks: a cut zip has no central directory; a damaged byte fails inflate or the CRC."""
    shipped = (FIXTURES / "ecb" / "eurofxref-hist.zip").read_bytes()
    rng = random.Random(f"{SEED}:ecb-zip")
    path, tried = tmp_path / "eurofxref-hist.zip", 0
    for k in rng.sample(range(1, len(shipped)), 40):  # the shipped 640 KB zip, cut anywhere
        _, err = _outcome(lambda p: ecb.from_file(str(p)).rows(), path, shipped[:k])
        assert err is not None and "eurofxref-hist.zip" in err, k
        tried += 1
    small = tmp_path / "small.zip"
    with zipfile.ZipFile(small, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("eurofxref-hist.csv", _ecb_csv_excerpt())
    data = small.read_bytes()
    whole = [r[:3] for r in ecb.from_file(str(small)).rows()]
    body = range(30 + len("eurofxref-hist.csv"), data.index(b"PK\x01\x02"))  # the deflated member
    for k in rng.sample(range(1, len(data)), 60):
        _, err = _outcome(lambda p: ecb.from_file(str(p)).rows(), path, data[:k])
        assert err is not None, k
        tried += 1
    for k in rng.sample(body, 60):
        bad = bytearray(data)
        bad[k] ^= 1 << rng.randrange(8)
        got, err = _outcome(lambda p: [r[:3] for r in ecb.from_file(str(p)).rows()], path, bytes(bad))
        assert err is not None or got == whole, f"byte {k} damaged, read inexactly"
        tried += 1
    TRIED["ecb-zip"] = tried


def test_recorded_answers_and_bundles_cut_or_damaged_are_refused(tmp_path):
    """JSON inputs: a recorded Azure answer and a bundle, cut anywhere or with a letter in a number."""
    from tasks.pricing.http import ReplayClient
    from tasks.pricing.sources import build_source

    replay = tmp_path / "azure"
    replay.mkdir()
    for f in (FIXTURES / "azure").iterdir():
        (replay / f.name).write_bytes(f.read_bytes())
    page = (FIXTURES / "azure" / "page1.json").read_bytes()
    whole = build_source("azure-gpu", ReplayClient(str(replay)), WHEN).fetch()
    rng = random.Random(f"{SEED}:json")
    numbers = _json_number_digits(page)
    tried = 0
    for k in rng.sample(range(1, len(page) - 2), 60) + [("letter", i) for i in rng.sample(numbers, 30)]:
        bad = page[:k] if isinstance(k, int) else page[:k[1]] + b"x" + page[k[1]:]
        (replay / "page1.json").write_bytes(bad)
        try:
            got = build_source("azure-gpu", ReplayClient(str(replay)), WHEN).fetch()
        except UserError:
            got = None
        assert got is None or (isinstance(k, int) and got == whole and not page[k:].strip()), k
        tried += 1
    tried += _cut_sdk_answers(tmp_path, rng)
    raw = json.dumps(bundle_doc()).encode()
    parse_bundle(raw, file="b.json")
    for k in rng.sample(range(1, len(raw) - 1), 60):
        with pytest.raises(BundleError, match="b.json"):
            parse_bundle(raw[:k], file="b.json")
        tried += 1
    TRIED["json answers and bundles"] = tried


def _cut_sdk_answers(tmp_path: Path, rng: random.Random) -> int:
    """Recorded Alibaba and Tencent answers cut anywhere: the source refuses, nothing is read from them."""
    from tasks.pricing import cloud
    from tasks.pricing.alibaba import AlibabaEcsPrices, ReplayEcs
    from tasks.pricing.config import TencentConfig
    from tasks.pricing.tencent import ReplayCvm, TencentCvmPrices

    def alibaba(d):
        return AlibabaEcsPrices(ReplayEcs(str(d)), [cloud.PricedTarget("A", "cn-hangzhou", "ecs.gn7i-c8g1.2xlarge")],
                                fetched_at=WHEN, sleep=lambda _s: None).fetch()

    def tencent(d):
        cfg = TencentConfig(zones={"ap-guangzhou": "ap-guangzhou-3"}, image_id="img-487zeit5", backoff_s=0.25)
        return TencentCvmPrices(ReplayCvm(str(d)), [cloud.PricedTarget("T", "ap-guangzhou", "GN10Xp.2XLARGE40")],
                                cfg, None, WHEN, sleep=lambda _s: None).fetch()

    tried = 0
    for provider, answer, fetch in (("alibaba", "gn7i-hour.json", alibaba), ("tencent", "gn10xp-hour.json", tencent)):
        d = tmp_path / provider
        d.mkdir()
        for f in (FIXTURES / provider).glob("*.json"):
            (d / f.name).write_bytes(f.read_bytes())
        (d / "errors").mkdir()
        for f in (FIXTURES / provider / "errors").iterdir():
            (d / "errors" / f.name).write_bytes(f.read_bytes())
        assert fetch(d), provider
        page = (FIXTURES / provider / answer).read_bytes()
        for k in rng.sample(range(1, len(page.rstrip())), 20):
            (d / answer).write_bytes(page[:k])
            with pytest.raises(UserError, match=answer):
                fetch(d)
            tried += 1
    return tried


def _json_number_digits(raw: bytes) -> list[int]:
    """Offsets of the digits of JSON numbers (not of digits inside strings)."""
    out, in_str, esc = [], False, False
    for i, b in enumerate(raw):
        ch = chr(b)
        if in_str:
            esc, in_str = (False, in_str) if esc else (ch == "\\", ch != '"')
        elif ch == '"':
            in_str = True
        elif ch.isdigit():
            out.append(i)
    return out


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _costgap(*args: str) -> subprocess.Popen:
    env = dict(os.environ, PREFECT_API_URL="http://127.0.0.1:9/api")  # a refusal must not need the API
    return subprocess.Popen([sys.executable, "-m", "cli.main", *args], cwd=REPO, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def test_the_cli_refuses_damaged_files_and_changes_nothing(tmp_path):
    """A handful of variants end to end: exit 2, file, line and field named, warehouse and store untouched."""
    from tests.cost_support import warehouse

    wh, store = tmp_path / "w.duckdb", tmp_path / "results"
    con = warehouse(wh)
    con.execute("insert into fx_rates values ('CNY', date '2026-10-30', 7.2, 'seed')")
    con.close()
    (store / "_prices").mkdir(parents=True)
    before = _sha(wh)
    with zipfile.ZipFile(FIXTURES / "ecb" / "eurofxref-hist.zip") as zf:
        lines = zf.read("eurofxref-hist.csv").decode().splitlines(keepends=True)
    cut = tmp_path / "cut.csv"  # the reproduction
    cut.write_text(lines[0] + next(ln for ln in lines if ln.startswith("2014-11-20")) + "2014-11-19,1.2535,147")
    sky = tmp_path / "lambda-vms.csv"
    sky.write_bytes((FIXTURES / "skypilot" / "lambda-vms.csv").read_bytes()[:52677])
    book = tmp_path / "book.csv"
    book.write_bytes((REPO / "deploy/prices/lambda.csv").read_bytes()[:-30])
    rates = tmp_path / "fx.csv"
    rates.write_text((REPO / "deploy/fx_rates.csv").read_text().replace("1.423558897243108", "1.42355x", 1))
    common = ("--warehouse", str(wh), "--results", str(store))
    proc = _costgap("fx", "import", str(cut), "--format", "ecb", *common)  # a real process: exit code 2
    out, err = proc.communicate(timeout=240)
    assert proc.returncode == 2 and not out.strip(), (out, err)
    assert "cut.csv:3: field 'JPY' = '147'" in err and "Traceback" not in err, err
    in_process = {  # the same CLI in this process (what main() prints with exit 2 is the UserError's text)
        "lambda-vms.csv:289: field 'GpuInfo'": ("prices", "import", str(sky), "--format", "skypilot"),
        "book.csv:3: field 'source'": ("prices", "import", str(book)),
        "fx.csv:2: field 'units_per_usd' = '1.42355x'": ("fx", "import", str(rates), "--format", "csv"),
    }
    for needle, args in in_process.items():
        got = CliRunner().invoke(app, [*args, *common])
        assert isinstance(got.exception, UserError) and needle in str(got.exception), (needle, got.output)
    assert _sha(wh) == before, "a refused file changed the warehouse"
    assert not any(store.rglob("*.jsonl*")), "a refused file was archived"
    whole = (REPO / "deploy/prices/lambda.csv").read_bytes()  # cut at a line end: the complete rows land
    book.write_bytes(whole[:whole.index(b"\n", whole.index(b"\n") + 1) + 1])
    other = tmp_path / "other.duckdb"
    got = CliRunner().invoke(app, ["prices", "import", str(book), "--warehouse", str(other), "--results", str(store)])
    assert got.exit_code == 0, got.output
    con = warehouse(other)
    landed = con.execute("select provider, region, instance_type, original_amount from prices").fetchall()
    con.close()
    assert landed == [("lambda", "us-east-1", "gpu_1x_a10", 0.75)]
    TRIED["cli end to end"] = 2 + len(in_process)
