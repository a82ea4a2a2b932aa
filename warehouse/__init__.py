"""The DuckDB warehouse: numbered migrations, SQL queries in files, and the connection."""
