"""The targets file: the shipped examples parse, and every bad file names file, target and field.

    .venv/bin/pytest -q tests/test_targets.py
"""

from __future__ import annotations

import pytest

from tasks.dispatch.targets import TargetsError, load_targets, select

SHIPPED = "deploy/targets.toml"


def test_shipped_targets_cover_the_common_instance_types():
    targets = {t.id: t for t in load_targets(SHIPPED)}
    types = {t.instance_type for t in targets.values()}
    for wanted in ("ecs.gn7i-c8g1.2xlarge", "GN10Xp.2XLARGE40", "g5.xlarge", "p4d.24xlarge", "p5.48xlarge",
                   "a2-highgpu-1g", "a3-highgpu-8g", "gpu_1x_a10", "gpu_1x_h100_sxm5"):
        assert wanted in types
    assert targets["local"].dispatch == "local"
    pools = [t for t in targets.values() if t.dispatch == "pool"]
    assert pools and all(t.work_pool for t in pools)
    assert len({t.work_pool for t in pools}) == len(pools)  # one pool per instance type
    assert targets["aws-p5-48xlarge"].gpu_count == 8
    assert targets["aws-g5-xlarge"].deployment == "probe/aws-g5-xlarge"


GOOD = '[[target]]\nid = "a"\ndispatch = "pool"\nwork_pool = "pa"\n'


@pytest.mark.parametrize("body, target, field", [
    ('[[target]]\nid = "a"\ndispatch = "pool"\n', "a", "work_pool"),
    ('[[target]]\nid = "a"\ndispatch = "teleport"\n', "a", "dispatch"),
    ('[[target]]\nid = "a"\ngpu_count = -1\n', "a", "gpu_count"),
    ('[[target]]\nid = "a"\ngpu_count = "two"\n', "a", "gpu_count"),
    ('[[target]]\nid = "a"\nbilling_mode = "hourly"\n', "a", "billing_mode"),
    ('[[target]]\nid = "a"\ntimeout_s = 0\n', "a", "timeout_s"),
    ('[[target]]\nid = "a"\ndispatch = "import"\n', "a", "inbox"),
    ('[[target]]\nid = "a"\ngpu_model = "A10"\n', "a", "gpu_count"),
    ('[[target]]\nid = "a"\nwrok_pool = "x"\n', "a", "wrok_pool"),
    ('[[target]]\nid = "bad id!"\n', "bad id!", "id"),
    ('[[target]]\nprovider = "aws"\n', "#1", "id"),
    (GOOD + GOOD, "a", "id"),
])
def test_bad_target_names_file_target_and_field(tmp_path, body, target, field):
    f = tmp_path / "targets.toml"
    f.write_text(body)
    with pytest.raises(TargetsError) as e:
        load_targets(f)
    msg = str(e.value)
    assert str(f) in msg and f"target '{target}'" in msg and f"field '{field}'" in msg


@pytest.mark.parametrize("body, needle", [
    ("[[target]\nid=1", "not valid TOML"),
    ("", r"no \[\[target\]\] tables"),
    ('[defaults]\nx = 1\n' + GOOD, "unknown top-level key 'defaults'"),
])
def test_bad_file_structure(tmp_path, body, needle):
    f = tmp_path / "t.toml"
    f.write_text(body)
    with pytest.raises(TargetsError, match=needle):
        load_targets(f)


def test_missing_file_says_how_to_point_elsewhere(tmp_path):
    with pytest.raises(TargetsError, match="COSTGAP_TARGETS"):
        load_targets(tmp_path / "nope.toml")


def test_select_keeps_order_and_rejects_unknown():
    targets = load_targets(SHIPPED)
    picked = select(targets, ["aws-g5-xlarge", "local", "aws-g5-xlarge"])
    assert [t.id for t in picked] == ["aws-g5-xlarge", "local"]
    assert len(select(targets, None)) == len(targets)
    with pytest.raises(TargetsError, match="no target 'nope'"):
        select(targets, ["nope"], SHIPPED)


def test_default_file_absent_means_just_local_but_a_named_file_must_exist(tmp_path):
    from tasks.dispatch.targets import load_targets_or_local

    assert [t.id for t in load_targets_or_local(tmp_path / "none.toml", explicit=False)] == ["local"]
    with pytest.raises(TargetsError, match="cannot be read"):
        load_targets_or_local(tmp_path / "none.toml", explicit=True)
