"""The CLI's command groups (one module each, `register(app)`), and the exit-code contract they share.

Every command exits with:
  0  EXIT_OK       everything landed or was already there, or there was nothing to do;
  1  EXIT_FAILED   an internal failure: a target's probe failed or crashed, the report could not be
                   built, no Prefect API could be reached; the last line says which and why;
  2  EXIT_REFUSED  user input refused: a bad argument, file or bundle (rejected or quarantined), an
                   overlapping price import, a busy warehouse; each refused item is named on a line.
"""

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_REFUSED = 2


def say(line: str) -> None:
    """Progress for a person: to stderr, so that stdout (tables, --json) stays machine-readable."""
    import typer

    typer.echo(line, err=True)
