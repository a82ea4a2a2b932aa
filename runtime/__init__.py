"""costgap's local runtime: where things live by default (settings.py), the Prefect API a command talks to
(api.py: PREFECT_API_URL, this machine's server in server.py, or a one-shot one), the warm process that
commands fork from (warm.py), the warehouse's one write slot (write_slot.py), process records (procs.py),
and the install's bytecode step (bytecode.py, which imports only the modules the Makefile names, by name).
Used by cli/ and flows/ (and deploy/); it stands on warehouse/ and tasks/errors.py only."""
