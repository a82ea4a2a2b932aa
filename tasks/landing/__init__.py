"""Landing: bundles into the warehouse (parse, validate, write, rebuild)."""
