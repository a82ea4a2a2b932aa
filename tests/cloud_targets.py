"""The cloud targets that the recorded SDK answers (tests/fixtures/alibaba, tests/fixtures/tencent) price,
named once for every test that lists them, as PricedTargets or as targets-file entries.

    .venv/bin/pytest -q tests/test_pricing_alibaba.py tests/test_pricing_tencent.py
"""

from __future__ import annotations

from tasks.pricing.cloud import PricedTarget

GN7I = PricedTarget("alibaba-gn7i-c8g1-2xlarge", "cn-hangzhou", "ecs.gn7i-c8g1.2xlarge")
GN7I_BEIJING = PricedTarget("alibaba-gn7i-beijing", "cn-beijing", "ecs.gn7i-c8g1.2xlarge")  # recorded: not sold
GN10XP = PricedTarget("tencent-gn10xp-2xlarge40", "ap-guangzhou", "GN10Xp.2XLARGE40")
GN10XP_SHANGHAI = PricedTarget("tencent-gn10xp-shanghai", "ap-shanghai", "GN10Xp.2XLARGE40")  # recorded: not sold


def targets_toml(*targets: PricedTarget) -> str:
    """deploy/targets.toml entries for `targets`; the provider is the id's first word."""
    return "".join(f'\n[[target]]\nid = "{t.id}"\nprovider = "{t.id.split("-")[0]}"\nregion = "{t.region}"\n'
                   f'instance_type = "{t.instance_type}"' for t in targets) + "\n"
