"""Load SkyPilot task files with SkyPilot's own loader; run by SkyPilot's interpreter, not costgap's.

    .venv-sky/bin/python tests/skypilot_check.py FILE.sky.yaml...   # HOME holds .sky/catalogs/v8/<cloud>/vms.csv

SkyPilot pins click < 8.2 and uvicorn < 0.36, which costgap's environment cannot take (huggingface_hub
needs click >= 8.4.2, kopf >= 8.2), so it lives in its own venv (`make sky`). Each file is loaded
(Task.from_yaml) and each of its resources is put to its cloud's get_feasible_launchable_resources,
the question SkyPilot's optimizer asks before a launch (the loader alone accepts, say, H100:8 on a
one-A10 instance type), for the clouds in $FEASIBLE_CLOUDS (default: aws, gcp, lambda, whose
catalogs or excerpts of them the tests hold); Kubernetes resources are only loaded (the live cluster
answers the rest).
Prints one JSON line per
file: {"file", "ok", "resources" or "error"}. Exit 0 when every file loaded.
"""

import json
import os
import sys


def main(files: list[str]) -> int:
    import sky

    feasible_clouds = set(os.environ.get("FEASIBLE_CLOUDS", "aws,gcp,lambda").split(","))
    bad = 0
    for path in files:
        try:
            task = sky.Task.from_yaml(path)
            res = [str(r) for r in task.resources]
            for r in task.resources:  # what SkyPilot's optimizer asks of each cloud before it launches
                if r.cloud is None or r.cloud.canonical_name() not in feasible_clouds:
                    continue  # Kubernetes: the live cluster answers
                feasible = r.cloud.get_feasible_launchable_resources(r)
                if not feasible.resources_list:
                    raise ValueError(f"no feasible resources for {r}: {feasible.hint or ''} "
                                     f"(close: {feasible.fuzzy_candidate_list})")
            autostop = [getattr(r, "autostop_config", None) for r in task.resources]
            print(json.dumps({"file": path, "ok": True, "resources": res, "name": task.name,
                              "autostop_down": [bool(a and a.down) for a in autostop]}))
        except Exception as e:  # the loader's refusal is the answer we want to see
            bad += 1
            print(json.dumps({"file": path, "ok": False, "error": f"{type(e).__name__}: {e}"}))
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
