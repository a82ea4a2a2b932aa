"""costgap flows: Prefect flows that sequence tasks, and the CLI that starts them."""
