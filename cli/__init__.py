"""costgap's command line: the `costgap` entry point (launch.py), the Typer app (main.py), one module per
command group (commands/), and the warm process's entry point (warm_serve.py). It stands on top: it calls
flows/, tasks/ and reports/, and uses runtime/ (settings, the Prefect API, the write slot); nothing imports it."""
