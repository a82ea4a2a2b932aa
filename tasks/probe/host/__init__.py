"""What this machine is: the environment fingerprint, container, NVML telemetry, interconnect
topology, and the datasheet peaks of its GPU (gpu_specs.json, read only through specs.py)."""
